//go:build unix

package child

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Contain makes cmd start in a process group of its own and, on Linux,
// get SIGKILL when this process dies. It keeps the rest of
// cmd.SysProcAttr. Start calls it.
func Contain(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	deathSignal(cmd.SysProcAttr)
}

// Signal sends sig to the process group p leads (Contain), or to p alone
// when it leads none.
func Signal(p *os.Process, sig syscall.Signal) error {
	if err := signalGroup(p.Pid, sig); err == nil {
		return nil
	}
	err := p.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return syscall.EINVAL
	}
	pgid, err := syscall.Getpgid(pid)
	if err == nil && pgid != pid {
		return syscall.EPERM // p is alive and leads no group: not ours to signal as one
	}
	return syscall.Kill(-pid, sig)
}

const groupsSupported = true

// ownGroup, termGroup and killGroup are Process's names for Contain and
// the group signals.
func ownGroup(cmd *exec.Cmd) { Contain(cmd) }
func termGroup(pid int)      { _ = signalGroup(pid, syscall.SIGTERM) }
func killGroup(pid int)      { _ = signalGroup(pid, syscall.SIGKILL) }
