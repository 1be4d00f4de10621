package memory

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/internal/proctest"
)

// childEnv turns the test binary into a writer process that the crash test
// kills: it writes records, states and lifecycle commits to the store named
// by the variable, printing a line after each call returns.
const childEnv = "BRIDGEKIT_MEMORY_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(crashChild(path))
	}
	goleak.VerifyTestMain(m, proctest.IgnoreSpawner())
}

func crashChild(path string) int {
	s, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	scope := Scope{"user": "crash"}
	for i := 0; i < 1_000_000; i++ {
		var line string
		switch i % 3 {
		case 0, 1:
			r, err := s.Write(ctx, note(scope, fmt.Sprintf(`{"n":%d,"text":"%s"}`, i, strings.Repeat("x", i%500))))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			line = fmt.Sprintf("write %s %d", r.RecordID, i)
		case 2:
			out := note(scope, fmt.Sprintf(`{"n":%d}`, i))
			out.Space = "summaries"
			res, err := s.CommitLifecycle(ctx, CommitRequest{Package: pkg, PackageVersion: ver, Operation: "op",
				OutputWrites:   []WriteRequest{out},
				OperationState: jsontext.Value(fmt.Sprintf(`{"scope":{"user":"crash"},"n":%d}`, i))})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			line = fmt.Sprintf("commit %s %d", res.OutputRecordIDs[0], i)
		}
		// Printed only after the call returned, i.e. after the fsync.
		fmt.Println(line)
	}
	return 0
}

// A provider process killed with SIGKILL in the middle of writing loses
// nothing it reported written, and leaves a consistent file.
func TestKilledMidSessionLosesNothing(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	for round := range 3 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		type written struct {
			kind, id string
			n        int
		}
		var done []written
		for len(done) < 60 && sc.Scan() {
			var w written
			if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &w.kind, &w.id, &w.n); err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			done = append(done, w)
		}
		// Kill it while it is writing: it does not stop between lines.
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() { // lines written before the kill also count
			var w written
			if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &w.kind, &w.id, &w.n); err == nil {
				done = append(done, w)
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child was not killed: %v", err)
		}
		if len(done) < 60 {
			t.Fatalf("child reported only %d writes", len(done))
		}

		s, err := Open(path, Options{LockTimeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		if err := s.Check(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, w := range done {
			space := "notes"
			if w.kind == "commit" {
				space = "summaries"
			}
			recs, err := s.Read(ctx, ReadRequest{Package: pkg, PackageVersion: ver, Space: space, Scope: Scope{"user": "crash"},
				Mode: ModeKey, RecordID: w.id})
			if err != nil || len(recs) != 1 || !strings.HasPrefix(string(recs[0].Content), fmt.Sprintf(`{"n":%d`, w.n)) {
				t.Fatalf("round %d: %s %s (n %d) lost after the kill: %v, %v", round, w.kind, w.id, w.n, recs, err)
			}
		}
		last := done[len(done)-1]
		st, err := s.LoadOperationState(ctx, StateKey{Package: pkg, PackageVersion: ver, Operation: "op", Scope: Scope{"user": "crash"}})
		if err != nil || st == nil {
			t.Fatalf("round %d: operation state lost: %v", round, err)
		}
		t.Logf("round %d: %d calls reported before the kill, last %s %d; state %s", round, len(done), last.kind, last.n, st)
		s.Close()
	}
}
