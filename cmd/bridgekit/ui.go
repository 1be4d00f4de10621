package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// uiMemory bounds what `trace --ui` keeps of a session for the inspector.
const uiMemory = 128 << 20

func checkListenAddr(addr string, remote bool) error { return inspect.CheckAddr(addr, remote) }

// serveUI serves the inspector over src on addr until Close.
type uiServer struct {
	srv *http.Server
	ln  net.Listener
	*inspect.Memory
}

func listenUI(env *Env, addr string, src inspect.Source, remote bool) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: inspect.NewHandler(src, inspectOptions(!remote)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(env.Stderr, "bridgekit: inspector on http://%s/\n", ln.Addr())
	return srv, ln, nil
}

func startLiveUI(env *Env, addr string, remote bool) (*uiServer, error) {
	mem := inspect.NewMemory(uiMemory)
	srv, ln, err := listenUI(env, addr, mem, remote)
	if err != nil {
		return nil, err
	}
	return &uiServer{srv: srv, ln: ln, Memory: mem}, nil
}

func (u *uiServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := u.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// uiKeeperEnv, in the environment of a bridgekit process, makes it the
// keeper of a page `trace --ui-keep` handed over (runUIKeeper): "loopback"
// or "remote", as --ui-allow-remote said.
const uiKeeperEnv = "BRIDGEKIT_INTERNAL_UI_KEEPER"

// keepUI keeps the inspector of a session that has ended up until SIGINT
// or SIGTERM (--ui-keep). Run at a terminal, trace itself waits. Run by a
// client (its stdin not a terminal), trace hands the page over to a
// process of its own and exits, so that a client waiting for its agent to
// exit (after a SIGTERM, at the end of its input) is not kept waiting, and
// the page outlives the client: the keeper serves the same listening
// socket with the records trace held, and neither holds the client's
// stdin or stdout (nor its stderr, unless that is a terminal).
func keepUI(ctx context.Context, env *Env, ui *uiServer, remote bool, sigs <-chan os.Signal) {
	// (Signals is nil when a test runs the command in-process: the
	// executable is then no bridgekit to hand over to.)
	if !env.Interactive && env.Signals != nil {
		pid, err := ui.handOver(env, remote)
		if err == nil {
			fmt.Fprintf(env.Stderr, "bridgekit trace: the session has ended; the inspector stays up on http://%s/ (process %d) until SIGINT or SIGTERM\n", ui.ln.Addr(), pid)
			return
		}
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		fmt.Fprintf(env.Stderr, "bridgekit trace: --ui-keep: no process to keep the inspector (%v): trace keeps it\n", err)
	}
	fmt.Fprintf(env.Stderr, "bridgekit trace: the session has ended; the inspector stays up on http://%s/ until SIGINT or SIGTERM\n", ui.ln.Addr())
	select {
	case <-sigs:
	case <-ctx.Done():
	}
}

// handOver starts the keeper: this executable, with uiKeeperEnv set, the
// listening socket as its fd 3 and the records u holds, as trace JSONL,
// on its stdin. It returns the keeper's PID once the records are written.
func (u *uiServer) handOver(env *Env, remote bool) (int, error) {
	tl, ok := u.ln.(*net.TCPListener)
	if !ok {
		return 0, fmt.Errorf("listener %T", u.ln)
	}
	lf, err := tl.File()
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer pw.Close()
	mode := "loopback"
	if remote {
		mode = "remote"
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), uiKeeperEnv+"="+mode)
	cmd.Stdin = pr
	if env.Terminal {
		cmd.Stderr = os.Stderr
	}
	cmd.ExtraFiles = []*os.File{lf}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	// The keeper outlives trace: nothing waits for it here.
	_ = cmd.Process.Release()
	w := bufio.NewWriterSize(pw, 64<<10)
	ss, err := u.Sessions(context.Background())
	if err != nil {
		return pid, err
	}
	var line []byte
	for i := len(ss) - 1; i >= 0; i-- { // oldest first
		recs, _ := u.Records(context.Background(), ss[i].ID, -1, 0)
		for _, r := range recs {
			if line, err = r.Marshal(line[:0]); err == nil {
				_, err = w.Write(line)
			}
			if err != nil {
				return pid, fmt.Errorf("handing the records over: %w", err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return pid, fmt.Errorf("handing the records over: %w", err)
	}
	return pid, nil
}

// runUIKeeper is the keeper's main: it reads the records on stdin, then
// serves them on the listener at fd 3 until SIGINT, SIGTERM or SIGHUP.
func runUIKeeper(mode string, sigs <-chan os.Signal) int {
	ln, err := net.FileListener(os.NewFile(3, "inspector"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "bridgekit: keeping the inspector: %v\n", err)
		return 1
	}
	mem := inspect.NewMemory(uiMemory)
	rd := tracelog.NewReader(os.Stdin, 0)
	for {
		r, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "bridgekit: keeping the inspector: %v (serving what was read)\n", err)
			}
			break
		}
		mem.Put(r)
	}
	os.Stdin.Close()
	srv := &http.Server{Handler: inspect.NewHandler(mem, inspectOptions(mode != "remote")), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	<-sigs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	return 0
}
