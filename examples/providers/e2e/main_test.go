package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/service"
	"github.com/bridgekit/bridgekit/internal/proctest"
)

// bin is the folder holding the providers built from the example mains.
var bin string

var providers = []string{"knowledge", "embedding", "memory", "hook", "approval"}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bridgekit-providers-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	status := build(dir)
	if status == 0 {
		bin = dir
		status = m.Run()
		if status == 0 {
			if err := goleak.Find(proctest.IgnoreSpawner()); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				status = 1
			}
		}
	}
	os.RemoveAll(dir)
	os.Exit(status)
}

// build compiles every example provider into dir.
func build(dir string) int {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	for _, p := range providers {
		args = append(args, "../"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the example providers:", err)
		return 1
	}
	return 0
}

// command is the argv of an example provider.
func command(name string, args ...string) []string {
	return append([]string{filepath.Join(bin, name)}, args...)
}

// startClient starts a provider through clients/service and stops it at
// the end of the test.
func startClient(t *testing.T, cfg service.Config) *service.Client {
	t.Helper()
	if cfg.StartupTimeout == 0 {
		cfg.StartupTimeout = 20 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 20 * time.Second
	}
	cfg.Stderr = testWriter{t}
	c, err := service.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// testWriter sends a provider's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("provider stderr: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// raw is a provider started with pipes of its own, for frames written by
// hand.
type raw struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner

	waited   bool // the test waited for the exit itself
	waitOnce sync.Once
	waitErr  error
}

// startRaw starts a provider; at the end of the test it closes its stdin
// and expects it to exit cleanly, unless the test waited for it itself.
func startRaw(t *testing.T, argv ...string) *raw {
	t.Helper()
	r := &raw{t: t, cmd: exec.Command(argv[0], argv[1:]...)}
	r.cmd.Stderr = testWriter{t}
	in, err := r.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.in, r.lines = in, bufio.NewScanner(out)
	t.Cleanup(func() {
		in.Close()
		if err := r.collect(); err != nil && !r.waited {
			t.Errorf("provider exit at the end of its input: %v", err)
		}
	})
	return r
}

// wait waits for the provider to exit and returns its exit error.
func (r *raw) wait() error {
	r.waited = true
	return r.collect()
}

// collect waits (10s at most, then kills) for the provider's exit, once.
func (r *raw) collect() error {
	r.waitOnce.Do(func() {
		done := make(chan error, 1)
		go func() { done <- r.cmd.Wait() }()
		select {
		case r.waitErr = <-done:
		case <-time.After(10 * time.Second):
			r.cmd.Process.Kill()
			<-done
			r.waitErr = errors.New("the provider did not exit within 10s")
		}
	})
	return r.waitErr
}

func (r *raw) ask(line string) string {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
	if !r.lines.Scan() {
		r.t.Fatalf("no answer to %s", line)
	}
	return r.lines.Text()
}

func ptr[T any](v T) *T { return &v }
