package child

import (
	"io"
	"os"
	"os/exec"
	"time"
)

// Process is a started child: our ends of its stdin and stdout, the end of
// its stderr, and its exit. With Spec.Group it leads a process group of its
// own, and Stop ends the whole group: what the child started goes with it.
type Process struct {
	Cmd    *exec.Cmd
	Stdin  *os.File // our end of the child's stdin
	Stdout *os.File // our end of the child's stdout

	stderr *Tail
	group  bool
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's error, set before exited is closed
}

// Spec says how Spawn starts a child.
type Spec struct {
	// Group starts the child in a process group of its own (where the
	// platform has them), which Stop signals whole.
	Group bool
	// StderrTail is how many bytes of the child's stderr are kept for
	// Stderr (at least 1; 0 means 8 KiB).
	StderrTail int
	// Stderr, if set, gets a copy of everything the child writes on stderr
	// (a failing Stderr never stalls the child).
	Stderr io.Writer
	// WaitDelay bounds how long Wait waits for the child's stderr to close
	// after it exited, while a grandchild still holds it (default 1s).
	WaitDelay time.Duration
}

// Spawn starts cmd as Start does, keeping the end of its stderr; cmd's
// Stdin, Stdout and Stderr must be nil.
func Spawn(cmd *exec.Cmd, s Spec) (*Process, error) {
	p := &Process{Cmd: cmd, stderr: &Tail{Max: s.StderrTail, Tee: s.Stderr}, group: s.Group && groupsSupported, exited: make(chan struct{})}
	if p.stderr.Max <= 0 {
		p.stderr.Max = 8 << 10
	}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = s.WaitDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = time.Second
	}
	if p.group {
		ownGroup(cmd)
	}
	var err error
	if p.Stdin, p.Stdout, err = Start(cmd); err != nil {
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed once the child has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is the child's exit error (exec.Cmd.Wait's) once Exited is closed;
// nil before.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Stderr is the end of what the child wrote on stderr (see Tail.String).
func (p *Process) Stderr() string { return p.stderr.String() }

// Stop ends the child: its stdin is closed (a stdio peer ends at end of
// input), then after grace it is asked to stop (SIGTERM), then after
// another grace it is killed. With Spec.Group each signal goes to the whole
// group, and once the child has exited what is left of its group is
// killed. Stop returns once the child has exited; it may be called more
// than once.
func (p *Process) Stop(grace time.Duration) {
	p.Stdin.Close()
	for _, step := range []func(){p.terminate, p.kill, nil} {
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
			t.Stop()
			step = nil
		case <-t.C:
		}
		if step == nil {
			break
		}
		step()
	}
	<-p.exited
	if p.group {
		killGroup(p.Cmd.Process.Pid) // the child's leftovers
	}
}

func (p *Process) terminate() {
	if p.group {
		termGroup(p.Cmd.Process.Pid)
		return
	}
	Terminate(p.Cmd.Process)
}

func (p *Process) kill() {
	if p.group {
		killGroup(p.Cmd.Process.Pid)
	}
	_ = p.Cmd.Process.Kill()
}
