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
	forTransports(t, func(t *testing.T, tr transport) {
		const n = 50
		var handled atomic.Int64
		p := tr.rawPeer(t, methods{
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
	})
}

// An error reply, or a reply the connection refuses, holds the caller
// back the same way: the notifications read before it are handled first.
func TestErrorReplyWaitsForNotificationsBeforeIt(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const n = 20
		release := make(chan struct{})
		var handled atomic.Int64
		p := tr.rawPeer(t, methods{
			"progress": func(context.Context, *rpc.Request) (any, error) {
				<-release
				handled.Add(1)
				return nil, nil
			},
		}, &rpc.Options{MaxFrame: 1 << 10})
		for i, reply := range []string{
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"failed"}}`,
			`{"jsonrpc":"2.0","id":2,"result":"` + strings.Repeat("x", 2<<10) + `"}`, // over MaxFrame
		} {
			done := callAsync(context.Background(), p.c, "prompt", nil, nil)
			p.recv()
			for range n {
				p.send(`{"jsonrpc":"2.0","method":"progress"}`)
			}
			p.send(reply)
			select {
			case err := <-done:
				t.Fatalf("reply %d: Call returned %v with notifications unhandled", i, err)
			case <-time.After(20 * time.Millisecond):
			}
			release <- struct{}{}
			for range n - 1 {
				release <- struct{}{}
			}
			if err := wait(t, done); err == nil {
				t.Fatalf("reply %d: Call succeeded", i)
			}
			if got := handled.Load(); got != int64((i+1)*n) {
				t.Fatalf("reply %d: Call returned after %d of %d notifications", i, got, (i+1)*n)
			}
		}
	})
}

func TestCallFromNotificationHandlerSkipsBarrier(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		results := make(chan error, 1)
		var p *rawPeer
		p = tr.rawPeer(t, methods{
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
	})
}

func TestBarrierHonoursContext(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		release := make(chan struct{})
		defer close(release)
		p := tr.rawPeer(t, methods{
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
	})
}
