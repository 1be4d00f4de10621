//go:build !unix

package child

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Contain does nothing where there are no process groups.
func Contain(*exec.Cmd) {}

// Signal kills p (the only signal there is) where there are no process
// groups.
func Signal(p *os.Process, _ syscall.Signal) error { return p.Kill() }

func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }

const groupsSupported = false

func ownGroup(*exec.Cmd) {}
func termGroup(int)      {}
func killGroup(int)      {}
