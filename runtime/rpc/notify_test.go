package rpc_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// What a notification's handler may do, and what others see meanwhile: it
// may call the peer, it may be slow, it keeps its params, and the order of
// handling is the order of arrival.

// A notification's handler that calls the peer gets its reply: reading
// goes on while it waits.
func TestNotificationCallsBack(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		var p *rawPeer
		got := make(chan string, 1)
		p = tr.rawPeer(t, methods{
			"note": func(ctx context.Context, req *rpc.Request) (any, error) {
				var s string
				err := p.c.Call(ctx, "ask", nil, &s)
				got <- s + fmt.Sprint(err)
				return nil, nil
			},
			"req": func(context.Context, *rpc.Request) (any, error) { return "ok", nil },
		}, nil)
		p.send(`{"jsonrpc":"2.0","method":"note"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"method":"ask","params":{}}`)
		p.send(`{"jsonrpc":"2.0","id":1,"result":"answer"}`)
		if s := wait(t, got); s != "answer<nil>" {
			t.Fatalf("the handler's call returned %q", s)
		}
		p.send(`{"jsonrpc":"2.0","id":2,"method":"req"}`)
		p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
	})
}

// While a notification's handler runs long, replies to other callers and
// cancel messages are still read; what arrives after the notification is
// handled after it, in order; and the handler's params stay intact though
// reading went on.
func TestSlowNotification(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		release := make(chan struct{})
		var mu sync.Mutex
		var order []string
		params := make(chan string, 1)
		canceled := make(chan struct{})
		var p *rawPeer
		p = tr.rawPeer(t, methods{
			"slow": func(ctx context.Context, req *rpc.Request) (any, error) {
				<-release
				params <- string(req.Params) // read after reading moved on
				mu.Lock()
				order = append(order, "slow")
				mu.Unlock()
				return nil, nil
			},
			"next": func(_ context.Context, req *rpc.Request) (any, error) {
				mu.Lock()
				order = append(order, "next "+string(req.Params))
				mu.Unlock()
				return nil, nil
			},
			"task": func(ctx context.Context, _ *rpc.Request) (any, error) {
				<-ctx.Done()
				close(canceled)
				return nil, ctx.Err()
			},
			// relay asks the peer a question and answers with the reply; a
			// handler's call does not wait for notifications that came first.
			"relay": func(ctx context.Context, _ *rpc.Request) (any, error) {
				var s string
				err := p.c.Call(ctx, "question", nil, &s)
				return s, err
			},
		}, &rpc.Options{MaxConcurrentRequests: 4, Cancels: []rpc.CancelRule{{Method: "$/cancel_request", ByID: "requestId"}}})

		// A call of a handler's is pending when the slow notification arrives.
		p.send(`{"jsonrpc":"2.0","id":"r","method":"relay"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"method":"question","params":{}}`)
		p.send(`{"jsonrpc":"2.0","id":"t","method":"task"}`)
		big := `"` + strings.Repeat("p", 100<<10) + `"`
		p.send(`{"jsonrpc":"2.0","method":"slow","params":` + big + `}`)
		p.send(`{"jsonrpc":"2.0","method":"next","params":1}`, `{"jsonrpc":"2.0","method":"next","params":2}`)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"t"}}`)
		wait(t, canceled)
		p.send(`{"jsonrpc":"2.0","id":1,"result":"answer"}`)
		// The task's cancelled reply and relay's answer, in either order.
		got := []string{p.recv(), p.recv()}
		slices.Sort(got)
		want := []string{
			`{"jsonrpc":"2.0","id":"r","result":"answer"}`,
			`{"jsonrpc":"2.0","id":"t","error":{"code":-32800,"message":"request cancelled: context canceled"}}`,
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Conn wrote %q, want %q", got, want)
		}
		// Only now does the slow handler finish; the others waited for it.
		mu.Lock()
		if len(order) != 0 {
			t.Fatalf("handled before the slow notification finished: %q", order)
		}
		mu.Unlock()
		close(release)
		if got := wait(t, params); got != big {
			t.Fatalf("the slow handler's params changed while reading went on: %.40q", got)
		}
		p.send(`{"jsonrpc":"2.0","id":9,"method":"next","params":3}`)
		p.expect(`{"jsonrpc":"2.0","id":9,"result":null}`)
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(order) != "[slow next 1 next 2 next 3]" {
			t.Fatalf("handled in order %q", order)
		}
	})
}

// Many notifications in a burst are each handled once, in order, handlers
// slow now and then or not.
func TestNotificationBurstOrder(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		var mu sync.Mutex
		var got []string
		p := tr.rawPeer(t, methods{
			"n": func(_ context.Context, req *rpc.Request) (any, error) {
				if len(got)%100 == 0 {
					time.Sleep(2 * time.Millisecond) // now and then: the burst queues up
				}
				mu.Lock()
				got = append(got, string(req.Params))
				mu.Unlock()
				return nil, nil
			},
			"count": func(context.Context, *rpc.Request) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				return len(got), nil
			},
		}, nil)
		const n = 2000
		var lines []string
		for i := range n {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":%d}`, i))
		}
		go p.send(append(lines, `{"jsonrpc":"2.0","id":1,"method":"count"}`)...)
		p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":%d}`, n)) // after the burst
		mu.Lock()
		defer mu.Unlock()
		for i, s := range got {
			if s != fmt.Sprint(i) {
				t.Fatalf("notification %s handled in place %d", s, i)
			}
		}
	})
}

// The connection ends cleanly when the peer's input ends, or Close is
// called, while a notification's handler runs: once the handler returns,
// nothing is left waiting (goleak checks the lanes).
func TestInputEndsDuringNotification(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, how := range []string{"eof", "close"} {
			t.Run(how, func(t *testing.T) {
				entered := make(chan context.Context, 1)
				release := make(chan struct{})
				p := tr.rawPeer(t, methods{
					"slow": func(ctx context.Context, _ *rpc.Request) (any, error) {
						entered <- ctx
						<-release
						return nil, nil
					},
				}, nil)
				pending := callAsync(context.Background(), p.c, "m", nil, nil)
				p.recv()
				p.send(`{"jsonrpc":"2.0","method":"slow"}`)
				ctx := wait(t, entered)
				closed := make(chan error, 1)
				if how == "eof" {
					p.w.Close()
					wait(t, pending) // fails once the input has ended
				} else {
					go func() { closed <- p.c.Close() }()
					wait(t, ctx.Done()) // Close has begun
				}
				close(release)
				select {
				case <-p.c.Done():
				case <-time.After(timeout):
					t.Fatal("the connection did not end after the handler returned")
				}
				if how == "close" {
					if err := wait(t, closed); err != nil {
						t.Fatalf("Close: %v", err)
					}
				}
			})
		}
	})
}
