//go:build !linux

package terminal

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// process is a started command, in a process group of its own where there
// are groups.
type process struct {
	cmd      *exec.Cmd
	statusCh chan Status   // receives the command's status once
	waited   chan struct{} // closed once Wait has returned
}

// startSupervised starts c itself, in a process group of its own where
// there are groups. Without Linux's subreaper and parent-death signal, a
// host that is killed outright leaves the command running.
func startSupervised(c *exec.Cmd) (*process, error) {
	ownGroup(c)
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: c, statusCh: make(chan Status, 1), waited: make(chan struct{})}
	go func() {
		err := c.Wait()
		defer close(p.waited)
		var st Status
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				st.Signal = signalName(ws.Signal())
			} else {
				code := ee.ExitCode()
				st.ExitCode = &code
			}
		} else if c.ProcessState != nil {
			code := c.ProcessState.ExitCode()
			st.ExitCode = &code
		} else {
			st.Signal = "SIGKILL" // no status: it was killed
		}
		p.statusCh <- st
	}()
	return p, nil
}

// status waits for the command's exit; it is called once.
func (p *process) status() Status { return <-p.statusCh }

func (p *process) kill()    { killGroup(p.cmd.Process) }
func (p *process) release() { killGroup(p.cmd.Process) }
func (p *process) killNow() { killGroup(p.cmd.Process) }

// wait waits for the command's end (statusCh is filled by then).
func (p *process) wait() { <-p.waited }

// openDir names the open directory f for exec.Cmd.Dir: its path dir, for
// want of a way to start a command in an open directory here.
func openDir(_ *os.File, dir string) string { return dir }

// enterable is not needed where openDir returns the path itself.
func enterable(string) error { return nil }
