package harness_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

const preflightFrame = `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"preflight","payload":{"status":"ready","report":{"status":"ready","diagnostics":[]}}}`

// An event callback that never returns (one writing to a stdout nobody
// reads) cannot hold Close: it gives up after StopGrace.
func TestCloseDoesNotWaitForAStuckCallback(t *testing.T) {
	ctx := timeout(t, 20*time.Second)
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	defer toHarness.Close()
	defer fromHarness.Close()
	go io.Copy(io.Discard, toHarness)
	entered, release := make(chan struct{}), make(chan struct{})
	onEvent := func(ev harness.Event) {
		if ev.Harness != nil {
			close(entered)
			<-release
		}
	}
	go fromHarness.Write([]byte(preflightFrame + "\n"))
	c, err := harness.Connect(ctx, toClient, fromClient, &harness.Options{OnEvent: onEvent, StopGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go fromHarness.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","payload":{"schema_version":1,"event_id":"e1","session_id":"s","session_sequence":1,"timestamp":"2025-01-01T00:00:00Z","event_type":"run_started","payload":{"payload_type":"empty"}}}` + "\n"))
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the event was not delivered")
	}
	closed := make(chan struct{})
	began := time.Now()
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		close(release)
		<-closed
		t.Fatal("Close waited for the stuck callback")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("Close took %v", took)
	}
	select {
	case <-c.Done():
		t.Fatal("Done closed while a callback still runs")
	default:
	}
	close(release)
	<-c.Done()
}

// Close ends a StartRun at once, even one waiting out CancelGrace after
// its context ended, while the Harness (which ignores both cancel_run and
// the end of its input) is still being stopped.
func TestCloseEndsStartRun(t *testing.T) {
	dir := t.TempDir()
	deaf := filepath.Join(dir, "deaf")
	if err := os.WriteFile(deaf, []byte("#!/bin/sh\necho '"+preflightFrame+"'\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cancelFirst := range []bool{false, true} {
		name := "pending"
		if cancelFirst {
			name = "grace"
		}
		t.Run(name, func(t *testing.T) {
			c, err := harness.Start(timeout(t, 20*time.Second), &harness.Options{Path: deaf, StopGrace: 2 * time.Second, CancelGrace: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := c.StartRun(ctx, "go", nil)
				errc <- err
			}()
			time.Sleep(100 * time.Millisecond)
			if cancelFirst {
				cancel()
				time.Sleep(200 * time.Millisecond) // into the grace
			}
			closed := make(chan struct{})
			go func() {
				c.Close()
				close(closed)
			}()
			defer func() { <-closed }()
			began := time.Now()
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				t.Fatal("StartRun did not return")
			}
			if took := time.Since(began); took > time.Second {
				t.Errorf("StartRun returned %v after Close", took)
			}
			want := rpc.ErrClosed
			if cancelFirst {
				want = context.Canceled
			}
			if !errors.Is(err, want) {
				t.Errorf("StartRun: %v, want %v", err, want)
			}
			if !cancelFirst && !strings.Contains(err.Error(), "closing") {
				t.Errorf("StartRun: %v", err)
			}
		})
	}
}
