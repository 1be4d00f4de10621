package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// storeSessions opens the store at path (as every reader does) and
// returns its sessions.
func storeSessions(t *testing.T, path string) []store.Session {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ss, err := db.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// A trace ended by SIGINT, SIGTERM or SIGHUP (forwarded to COMMAND, which
// dies of it) ends its store session: ended, with the status and signal,
// not unclean.
func TestTraceEndedBySignalEndsItsStoreSession(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGINT, "interrupt"}, {syscall.SIGTERM, "terminated"}, {syscall.SIGHUP, "hangup"}} {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "s.db")
			tr := startTrace(t, []string{"--store", db}, "sh", "-c", `echo ready; exec sleep 60`)
			line, err := bufio.NewReader(tr.stdout).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("%q %v", line, err)
			}
			if err := tr.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			if status := tr.wait(t); status != 128+int(c.sig) {
				t.Fatalf("status %d; stderr:\n%s", status, tr.stderr.String())
			}
			ss := storeSessions(t, db)
			if len(ss) != 1 || ss[0].Ended == nil || ss[0].Unclean || ss[0].Status == nil || *ss[0].Status != 128+int(c.sig) || ss[0].Signal != c.name {
				t.Fatalf("store sessions %+v; want one ended by %s", ss, c.name)
			}
		})
	}
}

// inspectProc is a bridgekit inspect process serving on a port of its
// choosing.
type inspectProc struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT
	errs *lockedText
	done chan struct{}
}

// lockedText is a strings.Builder that one goroutine writes while
// another reads it.
type lockedText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedText) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listening reads stderr until the line naming the inspector's address,
// then keeps copying it into errs.
func listening(t *testing.T, stderr io.Reader, errs *lockedText) (string, chan struct{}) {
	t.Helper()
	br := bufio.NewReader(stderr)
	got := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sent := false
		for {
			line, err := br.ReadString('\n')
			errs.WriteString(line)
			if _, url, ok := strings.Cut(line, "inspector on "); ok && !sent {
				got <- strings.TrimSuffix(strings.TrimSpace(url), "/")
				sent = true
			}
			if err != nil {
				if !sent {
					close(got)
				}
				return
			}
		}
	}()
	select {
	case base, ok := <-got:
		if !ok {
			t.Fatalf("no inspector address on stderr:\n%s", errs.String())
		}
		return base, done
	case <-time.After(30 * time.Second):
		t.Fatalf("no inspector address on stderr within 30s:\n%s", errs.String())
	}
	return "", nil
}

func startInspect(t *testing.T, file string) *inspectProc {
	t.Helper()
	return startServing(t, exec.Command(bins.bridgekit, "inspect", "--addr", "127.0.0.1:0", file))
}

// startServing starts cmd, a bridgekit that serves an inspector (its other
// pipes set up by the caller), and waits for the page's address on its
// stderr; cmd is killed when t ends, unless it has been waited for.
func startServing(t *testing.T, cmd *exec.Cmd) *inspectProc {
	t.Helper()
	p := &inspectProc{cmd: cmd, errs: &lockedText{}}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	p.base, p.done = listening(t, stderr, p.errs)
	return p
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// A trace killed with SIGKILL leaves its store session without an end;
// the next bridgekit to open the store (inspect here) shows it ended
// unclean, in its listing's JSON, with its request unanswered.
func TestSIGKILLedTraceSessionIsEndedUnclean(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	// The agent reads and never answers; at the end of its input it exits.
	tr := startTrace(t, []string{"--store", db}, "sh", "-c", `cat >/dev/null`)
	req := `{"jsonrpc":"2.0","id":41,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}` + "\n"
	if _, err := io.WriteString(tr.stdin, req); err != nil {
		t.Fatal(err)
	}
	// Wait for the request to reach the store (it is written in batches).
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == ""; {
		if ss := storeSessions(t, db); len(ss) == 1 && ss[0].Frames == 1 {
			if ss[0].Ended != nil {
				t.Fatalf("the session ended while trace runs: %+v", ss[0])
			}
			id = ss[0].ID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request never reached the store; stderr:\n%s", tr.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the store for the event
	}
	if err := tr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if status := tr.wait(t); status != -1 {
		t.Fatalf("trace exited %d, want killed", status)
	}

	p := startInspect(t, db)
	var ss []store.Session
	getJSON(t, p.base+"/api/sessions", &ss)
	if len(ss) != 1 || ss[0].ID != id || !ss[0].Unclean || ss[0].Ended == nil || ss[0].Status != nil {
		t.Fatalf("inspect lists %+v; want %s ended unclean", ss, id)
	}
	var recs []*tracelog.Record
	getJSON(t, p.base+"/api/records?session="+id, &recs)
	end := recs[len(recs)-1]
	if end.Type != tracelog.TypeEnd || !end.Unclean || len(end.Unanswered) != 1 || end.Unanswered[0].ID != "41" || end.Unanswered[0].Method != "session/prompt" {
		b, _ := json.Marshal(recs)
		t.Fatalf("records %s; want an unclean end with request 41 unanswered", b)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("inspect after SIGINT: %v\n%s", err, p.errs.String())
	}
	// Every reader sees the same: validate reports the request unanswered.
	status, stdout, stderr := runCmd(t, "", "validate", db)
	if status != 1 || !strings.Contains(stdout+stderr, "never answered") {
		t.Errorf("validate: status %d\n%s%s", status, stdout, stderr)
	}
}

// processGone reports whether process pid has exited (a zombie not yet
// reaped counts as exited).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// --ui-keep, run by a client (pipes, no terminal): the client SIGTERMs
// its agent (trace), which exits at once with the agent's status, as a
// client waiting for it needs; the client then goes away, and the page is
// still served, with the whole session, until Ctrl-C (SIGINT) stops it.
func TestUIKeepOutlivesAClientThatSIGTERMsItsAgent(t *testing.T) {
	agent := `while read -r line; do printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'; done`
	cmd := exec.Command(bins.bridgekit, "trace", "--ui", "127.0.0.1:0", "--ui-keep", "--", "sh", "-c", agent)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := startServing(t, cmd)
	base, stderrDone, errs := p.base, p.done, p.errs

	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("reply %q, %v", line, err)
	}
	// The client is done: SIGTERM to its agent, and it waits for it.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { <-stderrDone; exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("trace --ui-keep did not exit after SIGTERM; stderr:\n%s", errs.String())
	}
	if st := cmd.ProcessState.ExitCode(); st != 128+int(syscall.SIGTERM) {
		t.Fatalf("trace exited %d, want %d; stderr:\n%s", st, 128+int(syscall.SIGTERM), errs.String())
	}
	stdin.Close() // the client goes away
	stdout.Close()
	_, after, ok := strings.Cut(errs.String(), "(process ")
	keeper, err := strconv.Atoi(strings.SplitN(after, ")", 2)[0])
	if !ok || err != nil {
		t.Fatalf("no keeper named on stderr:\n%s", errs.String())
	}
	t.Cleanup(func() { syscall.Kill(keeper, syscall.SIGKILL) })

	var ss []store.Session
	getJSON(t, base+"/api/sessions", &ss)
	if len(ss) != 1 || ss[0].Ended == nil || ss[0].Status == nil || *ss[0].Status != 128+int(syscall.SIGTERM) || ss[0].Frames != 2 {
		t.Fatalf("the kept page lists %+v; want the session, ended by SIGTERM, with its 2 frames", ss)
	}
	var recs []*tracelog.Record
	getJSON(t, base+"/api/records?session="+ss[0].ID, &recs)
	if len(recs) != 3 || recs[0].Method != "initialize" || recs[1].ReplyTo != 1 || recs[2].Type != tracelog.TypeEnd {
		b, _ := json.Marshal(recs)
		t.Fatalf("the kept page's records: %s", b)
	}

	// Ctrl-C: the page goes away and so does its process.
	if err := syscall.Kill(keeper, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(base, "http://")
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err != nil && processGone(keeper) {
			break
		}
		if c != nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page or its process %d is still up 30s after SIGINT", keeper)
		}
		time.Sleep(20 * time.Millisecond) // polling for the keeper's exit, which is not our child's
	}
}

// openTerminal opens a pseudo-terminal and returns its controlling end
// and the terminal itself.
func openTerminal(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Skipf("TIOCGPTN: %v", e)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Skipf("TIOCSPTLCK: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the terminal: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// --ui-keep run at a terminal (a person, not a client): trace itself keeps
// the page after COMMAND has exited, until Ctrl-C (SIGINT), and then
// exits with COMMAND's status.
func TestUIKeepAtATerminalWaitsForCtrlC(t *testing.T) {
	_, tty := openTerminal(t)
	cmd := exec.Command(bins.bridgekit, "trace", "--ui", "127.0.0.1:0", "--ui-keep", "--", "sh", "-c", "exit 3")
	cmd.Stdin = tty
	p := startServing(t, cmd)
	base, stderrDone, errs := p.base, p.done, p.errs
	// COMMAND has exited; the page stays, served by trace itself.
	var ss []store.Session
	for deadline := time.Now().Add(30 * time.Second); len(ss) == 0 || ss[0].Ended == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the session never ended: %+v\n%s", ss, errs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the page for the session's end
		getJSON(t, base+"/api/sessions", &ss)
	}
	if *ss[0].Status != 3 || cmd.ProcessState != nil || strings.Contains(errs.String(), "(process ") {
		t.Fatalf("session %+v; trace %v; want it kept by trace itself\n%s", ss[0], cmd.ProcessState, errs.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-stderrDone
	cmd.Wait()
	if st := cmd.ProcessState.ExitCode(); st != 3 {
		t.Fatalf("trace exited %d after Ctrl-C, want COMMAND's 3\n%s", st, errs.String())
	}
	if c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://")); err == nil {
		c.Close()
		t.Error("the page is still up after trace exited")
	}
}
