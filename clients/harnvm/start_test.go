package harnvm

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Start's context bounds the host: when it ends, calls in flight fail and a
// host that ignores its input ending is stopped.
func TestStartContextStopsTheHost(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, exec.Command("sleep", "1000"), nil)
	if err != nil {
		t.Fatal(err)
	}
	called := make(chan error, 1)
	go func() {
		_, err := c.HostCapabilities(context.Background(), nil)
		called <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-called:
		if !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("call: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call outlived Start's context")
	}
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the host outlived Start's context")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("stopping took %v", took)
	}
	if err := c.Close(); err == nil {
		t.Error("Close reports no exit error for a host that was terminated")
	}
}

// Close does not wait for ever for a host that ignores both its input
// ending and SIGTERM: it kills it.
func TestCloseKillsAHostThatWillNotStop(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 100 * time.Millisecond
	c, err := Start(context.Background(), exec.Command("sh", "-c", `trap "" TERM; while :; do sleep 0.05; done`), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the trap is set
	start := time.Now()
	err = c.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v", took)
	}
}

func TestStartRefusesSetStreams(t *testing.T) {
	cmd := exec.Command("true")
	cmd.Stdout = new(nopWriter)
	if _, err := Start(context.Background(), cmd, nil); err == nil {
		t.Fatal("Start took a command whose stdout is set")
	}
}

type nopWriter struct{}

func (*nopWriter) Write(p []byte) (int, error) { return len(p), nil }
