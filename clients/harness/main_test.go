package harness_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/internal/proctest"

	"github.com/bridgekit/bridgekit/clients/harness"
)

// fakeHarness is examples/fakeharness, built once for the tests: the
// Harness the client starts over real pipes.
var fakeHarness string

func TestMain(m *testing.M) {
	if os.Getenv(ctrlCEnv) != "" {
		os.Exit(ctrlCClient())
	}
	dir, err := os.MkdirTemp("", "fakeharness")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeHarness = filepath.Join(dir, "fakeharness")
	build := exec.Command("go", "build", "-o", fakeHarness, "../../examples/fakeharness")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building examples/fakeharness:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(proctest.IgnoreSpawner()); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// script writes a fake Harness script and returns its path.
func script(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// start starts the fake Harness with a script (empty for none).
func start(t *testing.T, text string, o *harness.Options) *harness.Client {
	t.Helper()
	if o == nil {
		o = &harness.Options{}
	}
	o.Path = fakeHarness
	if text != "" {
		o.Config = script(t, text)
	}
	if o.StopGrace == 0 {
		o.StopGrace = 2 * time.Second
	}
	c, err := harness.Start(timeout(t, 20*time.Second), o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
