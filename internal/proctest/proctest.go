// Package proctest helps tests check that the processes bridgekit starts
// are gone: no child, grandchild or background job outlives what should
// end it. It is for tests only.
package proctest

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
