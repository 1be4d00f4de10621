package terminal

import (
	"os/exec"

	"github.com/bridgekit/bridgekit/internal/supervisor"
)

// process is a started command under its supervisor
// (internal/supervisor's StartTree), which ends the whole tree when the
// terminal is killed or released, or the host ends however it ends.
type process struct {
	cmd  *exec.Cmd // the supervisor's
	tree *supervisor.Tree
}

func startSupervised(c *exec.Cmd) (*process, error) {
	t, err := supervisor.StartTree(c)
	if err != nil {
		return nil, err
	}
	return &process{cmd: t.Cmd, tree: t}, nil
}

// status waits for the command's exit; it is called once.
func (p *process) status() Status {
	e := p.tree.Exit()
	if e.Signal != 0 {
		return Status{Signal: signalName(e.Signal)}
	}
	code := e.Code
	return Status{ExitCode: &code}
}

// kill kills the tree; the supervisor stays to report the exit.
func (p *process) kill() { p.tree.Kill() }

// release kills the tree and lets the supervisor exit.
func (p *process) release() { p.tree.Release() }
