//go:build linux

package workspace

import (
	"os"
	"strconv"
	"syscall"
)

const oNoCtty = syscall.O_NOCTTY

// fdPath reads back the path of f's descriptor from /proc.
func fdPath(f *os.File) (string, bool, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return "", false, err
	}
	return p, true, nil
}
