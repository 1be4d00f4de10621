//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// processCPU returns the user+system CPU time used by this process so far.
func processCPU() time.Duration {
	u, _ := processUsage()
	return u.User + u.System
}

// processUsage returns the resources this process (all its threads) has
// used so far, from getrusage(RUSAGE_SELF).
func processUsage() (Usage, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}, false
	}
	return usageOf(&ru), true
}

// exitedUsage returns the resources an exited child used in its whole
// life, from the rusage wait4 reported.
func exitedUsage(ps *os.ProcessState) (Usage, bool) {
	if ps == nil {
		return Usage{}, false
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return Usage{}, false
	}
	return usageOf(ru), true
}

func usageOf(ru *syscall.Rusage) Usage {
	return Usage{
		User:        time.Duration(ru.Utime.Nano()),
		System:      time.Duration(ru.Stime.Nano()),
		Voluntary:   int64(ru.Nvcsw),
		Involuntary: int64(ru.Nivcsw),
	}
}
