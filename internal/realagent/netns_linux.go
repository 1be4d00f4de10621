package realagent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// netns is a network namespace of its own with only a loopback interface,
// up, and the listeners opened in it. The namespace lives while the file
// (and anything else in it) is open.
type netns struct {
	file *os.File // the namespace, /proc/thread-self/ns/net as it was opened
	ino  uint64   // its inode number, as /proc/PID/ns/net shows it
}

// errNoNetns wraps every failure to make a namespace: the process lacks
// CAP_SYS_ADMIN (not root, or a container that forbids it).
var errNoNetns = errors.New("realagent: cannot create a network namespace (needs root, or CAP_SYS_ADMIN)")

// newNetns creates a network namespace, brings its loopback up and opens
// one TCP listener in it on 127.0.0.1 for each port. The calling goroutine
// is locked to its thread meanwhile and returned to the thread's own
// namespace after.
func newNetns(ports ...int) (_ *netns, _ []net.Listener, err error) {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, nil, fmt.Errorf("%w: %v", errNoNetns, err)
	}
	defer orig.Close()
	restored := true
	defer func() {
		if restored {
			runtime.UnlockOSThread()
		} // else: the thread stays locked and ends with this goroutine, so no other goroutine runs in the namespace
	}()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, nil, fmt.Errorf("%w: unshare: %v", errNoNetns, err)
	}
	restored = false
	defer func() {
		if e := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); e != nil {
			err = errors.Join(err, fmt.Errorf("realagent: returning to the test's network namespace: %w", e))
		} else {
			restored = true
		}
	}()
	ns, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, nil, fmt.Errorf("realagent: opening the namespace: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &st); err != nil {
		ns.Close()
		return nil, nil, fmt.Errorf("realagent: %w", err)
	}
	if err := loopbackUp(); err != nil {
		ns.Close()
		return nil, nil, fmt.Errorf("realagent: bringing lo up: %w", err)
	}
	var lns []net.Listener
	for _, p := range ports {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			ns.Close()
			return nil, nil, fmt.Errorf("realagent: listening in the namespace: %w", err)
		}
		lns = append(lns, ln)
	}
	return &netns{file: ns, ino: st.Ino}, lns, nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// path returns a path through which any process of this user can enter
// the namespace (nsenter --net=PATH) while the test runs.
func (n *netns) path() string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), n.file.Fd())
}

func (n *netns) close() error { return n.file.Close() }
