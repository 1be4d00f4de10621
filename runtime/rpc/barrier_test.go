package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestCallWaitsForNotificationsBeforeItsResponse(t *testing.T) {
	const n = 50
	var handled atomic.Int64
	p := newRawPeer(t, methods{
		"progress": func(context.Context, *rpc.Request) (any, error) {
			time.Sleep(200 * time.Microsecond)
			handled.Add(1)
			return nil, nil
		},
	}, nil)
	for round := 1; round <= 3; round++ {
		done := callAsync(context.Background(), p.c, "prompt", nil, nil)
		p.recv()
		lines := make([]string, 0, n+1)
		for range n {
			lines = append(lines, `{"jsonrpc":"2.0","method":"progress"}`)
		}
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"done"}`, round))
		p.send(strings.Join(lines, "\n"))
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
		if got := handled.Load(); got != int64(round*n) {
			t.Fatalf("round %d: Call returned after %d of %d notifications were handled", round, got, round*n)
		}
	}
}

func TestCallFromNotificationHandlerSkipsBarrier(t *testing.T) {
	results := make(chan error, 1)
	var p *rawPeer
	p = newRawPeer(t, methods{
		"note": func(ctx context.Context, _ *rpc.Request) (any, error) {
			results <- p.c.Call(ctx, "ask", nil, nil)
			return nil, nil
		},
	}, nil)
	p.send(`{"jsonrpc":"2.0","method":"note"}`)
	p.expect(`{"jsonrpc":"2.0","id":1,"method":"ask","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"result":null}`)
	if err := wait(t, results); err != nil {
		t.Fatal(err)
	}
}

func TestBarrierHonoursContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p := newRawPeer(t, methods{
		"stuck": func(context.Context, *rpc.Request) (any, error) { <-release; return nil, nil },
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := callAsync(ctx, p.c, "m", nil, nil)
	p.recv()
	p.send(`{"jsonrpc":"2.0","method":"stuck"}`, `{"jsonrpc":"2.0","id":1,"result":null}`)
	if err := wait(t, done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}
