package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// PeerEnv is the environment variable that turns a benchmark binary (the
// test binary or cmd/benchreport) into a child peer: it then serves the
// benchmark methods on stdin/stdout with the runtime it names and exits
// when the connection ends.
const PeerEnv = "BRIDGEKIT_BENCH_PEER"

// MaybeRunPeer runs the child peer and exits if PeerEnv is set, and returns
// otherwise. Call it first thing in main or TestMain.
func MaybeRunPeer() {
	name := os.Getenv(PeerEnv)
	if name == "" {
		return
	}
	rt, err := Lookup(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench peer:", err)
		os.Exit(2)
	}
	c := rt.Open(os.Stdin, os.Stdout, &Service{})
	<-c.Done()
	if err := c.Err(); err != nil && !isEOFish(err) {
		fmt.Fprintf(os.Stderr, "bench peer %s: connection ended: %v\n", rt.Name(), err)
		os.Exit(1)
	}
	os.Exit(0)
}

func isEOFish(err error) bool {
	s := err.Error()
	return strings.Contains(s, "EOF") || strings.Contains(s, "peer connection closed") ||
		s == "connection closed" || strings.Contains(s, "file already closed")
}

// Child is a peer process serving the benchmark methods on its stdin and
// stdout, with Conn the client side of that connection.
type Child struct {
	Conn   Conn
	cmd    *exec.Cmd
	stderr *capped
	waited chan error
	exited chan struct{} // closed once Close has reaped the child
}

// StartChild starts exe (a binary that calls MaybeRunPeer) as a child peer
// for rt and connects to it over real OS pipes.
func StartChild(rt Runtime, exe string) (*Child, error) {
	inR, inW, err := os.Pipe() // child's stdin
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // child's stdout
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	ch := &Child{stderr: &capped{max: 4096}, waited: make(chan error, 1), exited: make(chan struct{})}
	ch.cmd = exec.Command(exe)
	ch.cmd.Env = append(os.Environ(), PeerEnv+"="+rt.Key())
	ch.cmd.Stdin = inR
	ch.cmd.Stdout = outW
	ch.cmd.Stderr = ch.stderr
	if err := ch.cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	inR.Close()
	outW.Close()
	go func() { ch.waited <- ch.cmd.Wait() }()
	ch.Conn = rt.Open(outR, inW, nil)
	return ch, nil
}

// Usage returns the CPU time and context switches the child used in its
// whole life (start-up included), once Close has returned.
func (ch *Child) Usage() (Usage, bool) {
	select {
	case <-ch.exited:
		return exitedUsage(ch.cmd.ProcessState)
	default:
		return Usage{}, false
	}
}

// Stderr returns the start of what the child wrote to stderr.
func (ch *Child) Stderr() string { return strings.TrimSpace(ch.stderr.String()) }

// Close closes the connection, which makes the child exit, and waits for
// it, killing it after timeout.
func (ch *Child) Close(timeout time.Duration) error {
	closeErr := closeWithin(ch.Conn, timeout)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-ch.waited:
		close(ch.exited)
		if closeErr != nil {
			return closeErr
		}
		if err != nil {
			return fmt.Errorf("peer: %v: %s", err, ch.Stderr())
		}
		return nil
	case <-t.C:
		ch.cmd.Process.Kill()
		<-ch.waited
		close(ch.exited)
		return fmt.Errorf("peer did not exit within %v; killed", timeout)
	}
}

// capped is a concurrency-safe buffer keeping the first max bytes written.
type capped struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
