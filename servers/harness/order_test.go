package harness

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

// A memory_operation whose request ended before the Run's next yield point
// never runs, and does not keep the next one busy.
func TestAbandonedMemoryOperation(t *testing.T) {
	var ran []string
	s := New(&Options{MemoryOperation: func(_ context.Context, _ *Run, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
		ran = append(ran, p.Operation)
		return &agentpmmachine.MemoryOperationResult{Package: p.Package, Operation: p.Operation}, nil
	}})
	r := newRun(&session{s: s, id: "sess-1"}, &agentpmmachine.StartRunParams{}, "in")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.queueMemory(ctx, &agentpmmachine.MemoryOperationParams{Package: "@acme/mem", Operation: "abandoned"}); err == nil {
		t.Fatal("an abandoned operation succeeded")
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.queueMemory(context.Background(), &agentpmmachine.MemoryOperationParams{Package: "@acme/mem", Operation: "next"})
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		r.memMu.Lock()
		queued := r.mem != nil && r.mem.p.Operation == "next"
		r.memMu.Unlock()
		if queued {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the next operation was not queued: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the next operation was not queued")
		}
	}
	r.Yield(context.Background())
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the next operation: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next operation did not run at the yield point")
	}
	if !slices.Equal(ran, []string{"next"}) {
		t.Fatalf("ran %v", ran)
	}
}
