package harness

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// EnvBinary is the environment variable that names the agentpm binary
// when Options.Path is empty.
const EnvBinary = "AGENTPM"

// DefaultStderrTail is how many bytes of the Harness's stderr a client
// keeps for its errors unless Options.StderrTail says otherwise.
const DefaultStderrTail = 8 << 10

// Command returns the command Start runs: `agentpm harness [AGENT]
// [--config F] [--state-dir D] [--scope K=V]... [ARGS...] --machine`, with
// the scopes in key order, in o.Dir and with o.Env (when nil, the
// allow-listed environment: child.BaselineEnv and o.PassEnv). The binary
// is o.Path, else $AGENTPM, else agentpm found on PATH.
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
	if cmd.Env == nil {
		cmd.Env = child.Environ(o.PassEnv, nil)
	}
	return cmd, nil
}

// process is a started Harness.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the child's stdin
	stderr *child.Tail
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's error, set before exited is closed
}

// start starts cmd, keeping the end of its stderr.
func start(cmd *exec.Cmd, o *Options) (p *process, stdout *os.File, err error) {
	p = &process{cmd: cmd, stderr: &child.Tail{Max: o.StderrTail, Tee: o.Stderr, Redact: redactor(cmd, o)}, exited: make(chan struct{})}
	if p.stderr.Max <= 0 {
		p.stderr.Max = DefaultStderrTail
	}
	cmd.Stderr = p.stderr
	// A grandchild holding stderr open must not hold up Wait for long.
	cmd.WaitDelay = time.Second
	if p.stdin, stdout, err = child.Start(cmd); err != nil {
		return nil, nil, fmt.Errorf("harness: start %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		child.Reap(cmd.Process) // nothing it started outlives it
		close(p.exited)
	}()
	return p, stdout, nil
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
// end of input), then after grace SIGTERM to its process group, then after
// grace SIGKILL. It returns once the process has exited, and whatever it
// started is gone.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	child.Stop(p.cmd.Process, p.exited, grace, grace)
}

// redactor masks what the Harness writes: the values of the variables
// passed to it (PassEnv, and the secret-looking ones of its environment)
// and token shapes.
func redactor(cmd *exec.Cmd, o *Options) *redact.Redactor {
	return child.Redactor(cmd.Env, o.PassEnv, nil)
}
