package child

import "syscall"

// deathSignal makes the child get SIGKILL when the thread that started it
// dies, which for a Go program is when the program dies (the runtime does
// not end threads that started children unless they were locked).
func deathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
