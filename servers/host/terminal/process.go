package terminal

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// process is a started command: on Linux its supervisor (see
// supervisor_linux.go), elsewhere the command itself in a process group of
// its own.
type process struct {
	cmd      *exec.Cmd
	ctlMu    sync.Mutex
	ctl      *os.File    // Linux: the control pipe's write end; nil once released
	statusCh chan Status // receives the command's status once
}

// Status is how a command ended.
type Status struct {
	// ExitCode is the exit status, when the command exited.
	ExitCode *int
	// Signal is the name of the signal that ended it ("SIGKILL"), when
	// one did.
	Signal string
}

// signalName is a signal's conventional name ("SIGKILL").
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGABRT: "SIGABRT", syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
