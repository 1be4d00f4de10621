//go:build linux

package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroup is a cgroup (v2) of one supervisor and everything below it,
// made below this program's own cgroup.
type cgroup struct {
	dir     string
	f       *os.File // the directory, for the start (clone3's CLONE_INTO_CGROUP)
	removed atomic.Bool
}

// cgroupBase is the directory of this program's own cgroup, where it may
// make cgroups; an error says why it may not. It is probed once, by making
// and removing one.
var cgroupBase = sync.OnceValues(func() (string, error) {
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	rel, ok := strings.CutPrefix(own, root)
	if !ok {
		return "", fmt.Errorf("this program's cgroup %s is outside the cgroup2 mount's root %s", own, root)
	}
	base := filepath.Join(mount, rel)
	removeStale(base)
	probe := filepath.Join(base, "bridgekit-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", fmt.Errorf("cannot make a cgroup in %s: %w", base, err)
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		if _, err := os.Stat(filepath.Join(probe, "cgroup.freeze")); err != nil {
			return "", fmt.Errorf("cgroups in %s have neither cgroup.kill nor cgroup.freeze", base)
		}
	}
	return base, nil
})

// ownCgroup is this program's cgroup v2 path ("0::/PATH" in
// /proc/self/cgroup).
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy")
}

// cgroup2Mount finds where the cgroup2 hierarchy is mounted, and the
// hierarchy's path its root shows.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 {
			return unescape(f[4]), unescape(f[3]), nil
		}
	}
	return "", "", errors.New("no cgroup2 file system mounted")
}

// unescape undoes mountinfo's octal escapes (\040 for a blank).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var cgroupSeq atomic.Int64

// newCgroup makes a cgroup for one supervisor.
func newCgroup() (*cgroup, error) {
	base, err := cgroupBase()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, "bridgekit-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(cgroupSeq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroup{dir: dir, f: f}, nil
}

// kill kills every process in the cgroup: through cgroup.kill, else by
// freezing it, killing each process and thawing it. It never blocks long.
func (g *cgroup) kill() {
	if g.removed.Load() {
		return
	}
	if os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	freeze := filepath.Join(g.dir, "cgroup.freeze")
	if os.WriteFile(freeze, []byte("1"), 0) != nil {
		return
	}
	defer os.WriteFile(freeze, []byte("0"), 0)
	for range 3 { // a process forking while the freeze spreads is caught next time
		b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// remove kills what is left in the cgroup and removes it, retrying for a
// few seconds while it empties, on a goroutine of its own.
func (g *cgroup) remove() {
	if g.removed.Swap(true) {
		return
	}
	go func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
			if err := os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
		}
	}()
}

// removeStale removes the empty cgroups that hosts which are gone left in
// base (a host killed with SIGKILL removes none): "bridgekit-PID-N" whose
// PID runs no more.
func removeStale(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "bridgekit-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 || !errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			continue
		}
		_ = os.Remove(filepath.Join(base, e.Name())) // fails while processes are in it
	}
}
