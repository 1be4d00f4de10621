package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// EnvBinary is the environment variable that names the agentpm binary
// when Options.Path is empty.
const EnvBinary = "AGENTPM"

// DefaultStderrTail is how many bytes of the Harness's stderr a client
// keeps for its errors unless Options.StderrTail says otherwise.
const DefaultStderrTail = 8 << 10

// Command returns the command Start runs: `agentpm harness [AGENT]
// [--config F] [--state-dir D] [--scope K=V]... [ARGS...] --machine`, with
// the scopes in key order, in o.Dir and with o.Env. The binary is o.Path,
// else $AGENTPM, else agentpm found on PATH.
func Command(o *Options) (*exec.Cmd, error) {
	if o == nil {
		o = &Options{}
	}
	path := o.Path
	if path == "" {
		path = os.Getenv(EnvBinary)
	}
	if path == "" {
		p, err := exec.LookPath("agentpm")
		if err != nil {
			return nil, fmt.Errorf("harness: no agentpm binary: set Options.Path or $%s, or put agentpm on PATH: %w", EnvBinary, err)
		}
		path = p
	}
	args := []string{"harness"}
	if o.Agent != "" {
		args = append(args, o.Agent)
	}
	if o.Config != "" {
		args = append(args, "--config", o.Config)
	}
	if o.StateDir != "" {
		args = append(args, "--state-dir", o.StateDir)
	}
	keys := make([]string, 0, len(o.Scopes))
	for k := range o.Scopes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--scope", k+"="+o.Scopes[k])
	}
	args = append(args, o.Args...)
	args = append(args, "--machine")
	cmd := exec.Command(path, args...)
	cmd.Dir = o.Dir
	cmd.Env = o.Env
	return cmd, nil
}

// process is a started Harness.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the child's stdin
	stderr *tail
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's error, set before exited is closed
}

// start starts cmd with pipes of our own (exec.Cmd.Wait would close our
// end of stdout as soon as the child exits, losing what it wrote last).
func start(cmd *exec.Cmd, o *Options) (p *process, stdout *os.File, err error) {
	childIn, toChild, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	fromChild, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		toChild.Close()
		return nil, nil, err
	}
	p = &process{cmd: cmd, stdin: toChild, stderr: newTail(o.StderrTail), exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	cmd.Stderr = p.stderr
	if o.Stderr != nil {
		cmd.Stderr = &teeWriter{p.stderr, o.Stderr}
	}
	// A grandchild holding stderr open must not hold up Wait for long.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		toChild.Close()
		fromChild.Close()
		return nil, nil, fmt.Errorf("harness: start %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, fromChild, nil
}

// done reports whether the process has exited.
func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended; nil for a clean exit.
func (p *process) exitError(beforeFrame bool) *ExitError {
	e := &ExitError{Path: p.cmd.Path, Code: -1, Stderr: p.stderr.String(), BeforeFrame: beforeFrame, Err: p.err}
	if st := p.cmd.ProcessState; st != nil {
		e.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Code, e.Signal = -1, ws.Signal()
		}
	}
	if e.Code == 0 && !beforeFrame {
		return nil
	}
	return e
}

// stop ends the process: stdin is closed (the Harness ends its session at
// end of input), then after grace SIGTERM, then after grace SIGKILL. It
// returns once the process has exited.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	for _, sig := range []os.Signal{nil, syscall.SIGTERM, os.Kill} {
		if sig != nil {
			if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
				_ = p.cmd.Process.Kill()
			}
		}
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
			t.Stop()
			return
		case <-t.C:
		}
	}
	<-p.exited
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost bool // bytes were dropped from the front
}

func newTail(max int) *tail {
	if max <= 0 {
		max = DefaultStderrTail
	}
	return &tail{max: max}
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.lost = true
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns what was kept, marked with "…" when the start was lost.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost {
		b := t.buf
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
		return "…" + string(b)
	}
	return string(t.buf)
}

// teeWriter writes to the tail and to the caller's writer, whose errors
// are ignored (the Harness must never block on them).
type teeWriter struct {
	t *tail
	w interface{ Write([]byte) (int, error) }
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.t.Write(p)
	_, _ = w.w.Write(p)
	return len(p), nil
}
