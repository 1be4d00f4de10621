//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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

// mkdirChain makes names one inside the other in dir, each by mkdirat in
// the one before, which is opened without following a link (O_NOFOLLOW):
// a directory swapped for a link meanwhile stops it with ErrLink, nothing
// made elsewhere. One that exists already (made concurrently) is used.
func mkdirChain(_ *os.Root, dir *os.File, names []string) error {
	fd, err := syscall.Dup(int(dir.Fd()))
	if err != nil {
		return err
	}
	defer func() { syscall.Close(fd) }()
	for _, n := range names {
		if err := syscall.Mkdirat(fd, n, 0o755); err != nil && err != syscall.EEXIST {
			return &os.PathError{Op: "mkdir", Path: n, Err: err}
		}
		if afterMkdir != nil {
			afterMkdir(n)
		}
		next, err := syscall.Openat(fd, n, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err == syscall.ELOOP || err == syscall.ENOTDIR {
			return fmt.Errorf("%s changed while it was made: %w", n, ErrLink)
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: n, Err: err}
		}
		syscall.Close(fd)
		fd = next
	}
	return nil
}

// realPath is the path p leads to, every link followed: the kernel opens
// it (O_PATH, which needs no permission on the file) and /proc reads the
// path back, in time linear in p's length, where filepath.EvalSymlinks
// takes a lstat of each prefix (quadratic). Without /proc it is
// EvalSymlinks'.
func realPath(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(real) {
		return filepath.EvalSymlinks(p)
	}
	return real, nil
}
