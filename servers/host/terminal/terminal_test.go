//go:build unix

package terminal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/internal/supervisor"
)

func posix(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("POSIX commands")
	}
}

func newManager(t *testing.T, lim *Limits) *Manager {
	t.Helper()
	m := New(lim)
	t.Cleanup(func() { m.Close(5 * time.Second) })
	return m
}

func waitFor(t *testing.T, m *Manager, id string) Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := m.Wait(ctx, "s", id)
	if err != nil {
		t.Fatalf("wait %s: %v", id, err)
	}
	return o
}

func TestRun(t *testing.T) {
	posix(t)
	m := newManager(t, nil)
	dir := t.TempDir()
	id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", `echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`}, Dir: dir, Env: []string{"GREETING=hi"}})
	if err != nil {
		t.Fatal(err)
	}
	o := waitFor(t, m, id)
	if o.Status.ExitCode == nil || *o.Status.ExitCode != 3 || o.Combined != "hi from "+dir+"\noops\n" || o.Truncated {
		t.Fatalf("%+v", o)
	}
	if _, err := m.Output("other", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("another session's terminal: %v", err)
	}
	// Split output, and nothing of the host's environment.
	t.Setenv("HOST_SECRET", "x")
	id, err = m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", `echo "[$HOST_SECRET]"; echo err >&2`}, Split: true})
	if err != nil {
		t.Fatal(err)
	}
	o = waitFor(t, m, id)
	if o.Stdout != "[]\n" || o.Stderr != "err\n" || !strings.Contains(o.Combined, "[]") || !strings.Contains(o.Combined, "err") {
		t.Fatalf("%+v", o)
	}
	if _, err := m.Start(context.Background(), Spec{Session: "s", Program: "no-such-program-x"}); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing program: %v", err)
	}
	if err := m.Release("s", id); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Output("s", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("released: %v", err)
	}
}

func TestSignalled(t *testing.T) {
	posix(t)
	m := newManager(t, nil)
	id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sleep", Args: []string{"100"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Kill("s", id); err != nil {
		t.Fatal(err)
	}
	if o := waitFor(t, m, id); o.Status.Signal != "SIGKILL" || o.Status.ExitCode != nil {
		t.Fatalf("%+v", o.Status)
	}
}

// background starts a command that leaves `sleep 100 &` behind (and one
// in a session of its own where setsid exists), and waits for them all to
// run; its processes carry the mark it returns.
func background(t *testing.T, m *Manager) (string, string) {
	t.Helper()
	mark := proctest.Mark(t)
	script := `sleep 100 & if command -v setsid >/dev/null; then setsid sleep 100 & fi; sleep 100`
	id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", script}, Env: []string{"PATH=" + os.Getenv("PATH"), mark}})
	if err != nil {
		t.Fatal(err)
	}
	want := 2 // the shell (or its last sleep) and the background sleep
	if _, err := exec.LookPath("setsid"); err == nil {
		want = 3
	}
	proctest.WaitMarked(t, mark, want, 10*time.Second)
	return id, mark
}

// TestBackgroundKilled: what a command leaves running is gone after
// terminal/kill, terminal/release and the host's Close, under every means
// of containment.
func TestBackgroundKilled(t *testing.T) {
	posix(t)
	proctest.EachMeans(t, func(t *testing.T, _ supervisor.Means) {
		m := newManager(t, nil)
		for _, how := range []string{"kill", "release", "close"} {
			t.Run(how, func(t *testing.T) {
				id, mark := background(t, m)
				switch how {
				case "kill":
					m.Kill("s", id)
				case "release":
					m.Release("s", id)
				case "close":
					m.Close(5 * time.Second)
				}
				proctest.MarkedGone(t, mark, 10*time.Second)
			})
		}
	})
}

func TestQuotas(t *testing.T) {
	posix(t)
	m := newManager(t, &Limits{MaxTerminals: 3, MaxPerSession: 2, MaxSessionIDBytes: 8})
	start := func(session string) error {
		_, err := m.Start(context.Background(), Spec{Session: session, Program: "true"})
		return err
	}
	for _, c := range []struct {
		session string
		err     error
	}{{"a", nil}, {"a", nil}, {"a", ErrQuota}, {"b", nil}, {"c", ErrQuota}, {"123456789", ErrInvalid}} {
		if err := start(c.session); !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("start in %s: %v, want %v", c.session, err, c.err)
		}
	}
	// Output kept is bounded by the total.
	m2 := newManager(t, &Limits{MaxTotalOutput: 3 << 20, DefaultOutputBytes: 1 << 20})
	if _, err := m2.Start(context.Background(), Spec{Session: "s", Program: "true", Split: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Start(context.Background(), Spec{Session: "s", Program: "true"}); !errors.Is(err, ErrQuota) {
		t.Errorf("past the total output: %v", err)
	}
}

// TestCreateFlood: 10,000 starts past the cap are refused at once, and
// nothing more runs.
func TestCreateFlood(t *testing.T) {
	posix(t)
	m := newManager(t, &Limits{MaxTerminals: 4})
	refused := 0
	for range 10000 {
		_, err := m.Start(context.Background(), Spec{Session: "s", Program: "sleep", Args: []string{"100"}})
		if errors.Is(err, ErrQuota) {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if refused != 10000-4 || m.Held() != 4 {
		t.Fatalf("refused %d, held %d", refused, m.Held())
	}
}

// TestOutputFlood: a command printing without end keeps only its limit,
// and a reply fits MaxReplyBytes however the text escapes.
func TestOutputFlood(t *testing.T) {
	posix(t)
	m := newManager(t, &Limits{MaxReplyBytes: 64 << 10})
	// Control characters: 6 bytes each in JSON.
	id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", `head -c 20000000 /dev/zero`}, OutputBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	o := waitFor(t, m, id)
	if !o.Truncated || 2+6*len(o.Combined) > 64<<10 || len(o.Combined) == 0 {
		t.Fatalf("kept %d bytes, truncated %v", len(o.Combined), o.Truncated)
	}
}

// TestWaitsEndOnClose: pending waits end when the Manager closes, and no
// more than MaxWaits are pending.
func TestWaitsEndOnClose(t *testing.T) {
	posix(t)
	m := newManager(t, &Limits{MaxWaits: 8})
	id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sleep", Args: []string{"100"}})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := m.Wait(context.Background(), "s", id)
			errs <- err
		}()
	}
	for m.Pending() < 8 {
		time.Sleep(time.Millisecond)
	}
	if _, err := m.Wait(context.Background(), "s", id); !errors.Is(err, ErrQuota) {
		t.Errorf("a ninth wait: %v", err)
	}
	// Kill is answered while every wait is pending, and ends them.
	if err := m.Kill("s", id); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("wait after kill: %v", err)
		}
	}
	id, _ = m.Start(context.Background(), Spec{Session: "s", Program: "sleep", Args: []string{"100"}})
	go func() {
		_, err := m.Wait(context.Background(), "s", id)
		errs <- err
	}()
	for m.Pending() < 1 {
		time.Sleep(time.Millisecond)
	}
	m.Close(5 * time.Second)
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Errorf("wait at Close: %v", err)
	}
	if _, err := m.Start(context.Background(), Spec{Session: "s", Program: "true"}); !errors.Is(err, ErrClosed) {
		t.Errorf("start after Close: %v", err)
	}
}

func TestRing(t *testing.T) {
	r := newRing(8)
	for _, s := range []string{"abc", "defgh", "ij", "klmnopqrstuv", "w"} {
		r.Write([]byte(s))
	}
	if got, trunc := r.read(); got != "pqrstuvw" || !trunc {
		t.Fatalf("%q %v", got, trunc)
	}
	r = newRing(4)
	r.Write([]byte("a€")) // a + 3 bytes
	r.Write([]byte("b"))  // drops "a": the kept text starts inside nothing
	if got, _ := r.read(); got != "€b" {
		t.Fatalf("%q", got)
	}
	r.Write([]byte("c")) // drops the first byte of €
	if got, _ := r.read(); got != "bc" {
		t.Fatalf("cut inside a character: %q", got)
	}
}

// TestHostKilled is in kill_test.go.
var _ = filepath.Join
