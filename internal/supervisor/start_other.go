//go:build !linux

package supervisor

import (
	"os"
	"os/exec"
)

// Available reports whether commands are started under a supervisor: only
// on Linux.
var Available = func() bool { return false }

// Current reports the containment in force: None, the command started
// directly in a process group of its own (only Linux has the supervisor).
func Current() Containment {
	c := Containment{Unavailable: []string{"no supervisor on this system"}}
	if want, err := asked(); err != nil {
		c.Err = err
	} else if want != None {
		c.Asked, c.Err = want, errUnsupported
	}
	return c
}

var errUnsupported = errorString(containmentEnv + ": only Linux has a supervisor")

type errorString string

func (e errorString) Error() string { return string(e) }

// Start is cmd.Start: only Linux has the supervisor.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// KillAll kills p.
func KillAll(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}
