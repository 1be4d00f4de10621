// Package proctest helps tests check that the processes bridgekit starts
// are gone: no child, grandchild or background job outlives what should
// end it. It is for tests only.
package proctest

import (
	"crypto/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/internal/supervisor"
)

// Alive reports whether pid is a process that runs: a zombie, which has
// exited, does not. Off Linux it asks kill(pid, 0) alone.
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux"
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// Gone waits up to within for pid to stop running. If it still runs, the
// test fails and pid is killed, so that it does not outlive the test.
func Gone(tb testing.TB, pid int, within time.Duration) {
	tb.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !Alive(pid) {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	tb.Errorf("process %d still runs after %v", pid, within)
}

// GoneFromFile is Gone for the process whose pid a test's child wrote to
// path (a background grandchild the test cannot otherwise name).
func GoneFromFile(tb testing.TB, path string, within time.Duration) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	Gone(tb, pid, within)
}

// IgnoreSpawner is the goleak option a package whose tests start children
// needs: the goroutine that starts supervisors runs for the life of the
// program (internal/supervisor's SpawnLoop).
func IgnoreSpawner() goleak.Option { return goleak.IgnoreTopFunction(supervisor.SpawnLoop) }

// markVar is the environment variable Mark sets.
const markVar = "BRIDGEKIT_PROCTEST_MARK"

// Mark returns a NAME=value environment entry unique to this call. Give
// it to a command (its environment, which what it starts inherits) and
// find its processes with Marked, wherever they run: a process in a PID
// namespace of its own knows only its pid there, which names another
// process here, so a test cannot go by the pids a command prints.
func Mark(tb testing.TB) string {
	tb.Helper()
	return markVar + "=" + rand.Text()
}

// Marked lists the pids (here) of the running processes whose environment
// holds mark, a Mark entry, supervisors aside. A process whose environment this one may not
// read (another user's, a supervisor that made itself undumpable) is not
// listed. Off Linux it lists nothing.
func Marked(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		env := strings.Split(string(b), "\x00")
		// A supervisor (internal/supervisor) inherits the mark too; it is
		// not one of the command's processes.
		if slices.Contains(env, mark) && !slices.Contains(env, "BRIDGEKIT_SUPERVISOR=1") && Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// WaitMarked waits up to within for at least n processes holding mark to
// run, and returns their pids; the test fails if they do not.
func WaitMarked(tb testing.TB, mark string, n int, within time.Duration) []int {
	tb.Helper()
	var pids []int
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids = Marked(mark); len(pids) >= n {
			return pids
		}
	}
	tb.Fatalf("%d processes of %s run, want at least %d", len(pids), mark, n)
	return nil
}

// MarkedGone waits up to within for every process holding mark to stop
// running. If some still run, the test fails and they are killed, with
// the supervisors holding mark (KillMarked), so that they do not outlive
// the test.
func MarkedGone(tb testing.TB, mark string, within time.Duration) {
	tb.Helper()
	var pids []int
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids = Marked(mark); len(pids) == 0 {
			return
		}
	}
	KillMarked(mark)
	tb.Errorf("processes %v of %s still run after %v", pids, mark, within)
}

// passVar carries a mark to a test's helper host (PassMark).
const passVar = "BRIDGEKIT_PROCTEST_PASS"

// PassMark is the environment entry that gives mark to a helper host (a
// test binary started as a host) without marking the host itself: its
// RunRole adopts the mark, so that the commands it starts inherit it.
func PassMark(mark string) string {
	_, v, _ := strings.Cut(mark, "=")
	return passVar + "=" + v
}

// Inherited is this process's own mark entry (a helper host's, adopted
// from PassMark), "" when it has none: for a helper to pass on to the
// commands it starts with an environment of their own.
func Inherited() string {
	if v, ok := os.LookupEnv(markVar); ok {
		return markVar + "=" + v
	}
	return ""
}

// EachMeans runs f once for each means of containment
// (internal/supervisor's), as a subtest named for it, with
// BRIDGEKIT_CONTAINMENT asking for it (so that f must not be parallel). A
// means this system does not allow is skipped, but PID namespaces fail the
// test when CI is set: CI's machines have user namespaces (a cgroup the
// host may make depends on how the machine runs it).
func EachMeans(t *testing.T, f func(t *testing.T, m supervisor.Means)) {
	t.Helper()
	for _, m := range []supervisor.Means{supervisor.PIDNamespace, supervisor.Cgroup, supervisor.Subreaper} {
		t.Run(m.String(), func(t *testing.T) {
			t.Setenv("BRIDGEKIT_CONTAINMENT", m.String())
			if c := supervisor.Current(); c.Err != nil {
				if os.Getenv("CI") != "" && m == supervisor.PIDNamespace {
					t.Fatalf("CI: %v", c.Err)
				}
				t.Skip(c.Err)
			}
			f(t, m)
		})
	}
}

// Supervisors lists the pids of the running supervisors
// (internal/supervisor) whose environment holds mark: a test stops one to
// play a supervisor that does not answer. One this process may not read
// (an undumpable init, unless this process has CAP_SYS_PTRACE) is not
// listed.
func Supervisors(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		env := strings.Split(string(b), "\x00")
		if slices.Contains(env, mark) && slices.Contains(env, "BRIDGEKIT_SUPERVISOR=1") && Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// KillMarked kills every process holding mark, then the supervisors
// holding it: a supervisor the red team stopped (SIGSTOP) whose host was
// SIGKILLed stays stopped for ever otherwise (under Cgroup and Subreaper
// nothing is left to kill it: README, "Containment"), one more orphaned
// test binary at each run.
func KillMarked(mark string) {
	for _, p := range Marked(mark) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	for _, p := range Supervisors(mark) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}
