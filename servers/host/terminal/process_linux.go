package terminal

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/bridgekit/bridgekit/internal/supervisor"
)

// process is a started command under its supervisor
// (internal/supervisor's StartTree), which ends the whole tree when the
// terminal is killed or released, or the host ends however it ends.
type process struct {
	tree *supervisor.Tree
}

func startSupervised(c *exec.Cmd) (*process, error) {
	t, err := supervisor.StartTree(c)
	if err != nil {
		return nil, err
	}
	return &process{tree: t}, nil
}

// wait waits for the supervisor to be gone (with the whole tree, or
// released); the output is copied by then.
func (p *process) wait() { p.tree.Wait() }

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

// killNow kills the tree, supervisor included, from the host at once.
func (p *process) killNow() { p.tree.KillNow() }

// openDir names the open directory f for exec.Cmd.Dir: the starting
// process changes into /proc/self/fd/N, the very directory f is, whatever
// its path dir leads to by then. Without /proc, dir is used.
func openDir(f *os.File, dir string) string {
	if !procFD() {
		return dir
	}
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
}

var procFD = sync.OnceValue(func() bool {
	fi, err := os.Stat("/proc/self/fd")
	return err == nil && fi.IsDir()
})

// enterable reports why a process could not change into dir, if it could
// not.
func enterable(dir string) error { return syscall.Access(dir, 1) } // X_OK
