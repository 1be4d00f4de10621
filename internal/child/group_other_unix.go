//go:build unix && !linux

package child

import "syscall"

func deathSignal(*syscall.SysProcAttr) {}
