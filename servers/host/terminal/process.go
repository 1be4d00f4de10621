package terminal

import (
	"fmt"
	"syscall"
)

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
