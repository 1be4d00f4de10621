package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestNotificationsHandledInArrivalOrder(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, n := range []int{0, 8} {
			t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", n), func(t *testing.T) {
				var got []int
				p := tr.rawPeer(t, methods{
					"note": func(_ context.Context, req *rpc.Request) (any, error) {
						var i int
						if err := json.Unmarshal(req.Params, &i); err != nil {
							return nil, err
						}
						got = append(got, i) // only ever called from the dispatcher
						return nil, nil
					},
					"count": func(context.Context, *rpc.Request) (any, error) { return len(got), nil },
				}, &rpc.Options{MaxConcurrentRequests: n})
				const total = 2000
				var lines []string
				for i := range total {
					lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":%d}`, i))
				}
				p.send(lines...)
				p.send(`{"jsonrpc":"2.0","id":1,"method":"count"}`)
				p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":%d}`, total))
				for i, v := range got {
					if v != i {
						t.Fatalf("notification %d handled at position %d", v, i)
					}
				}
			})
		}
	})
}

func TestRequestsHandledOneAtATimeByDefault(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, n := range []int{0, 1} {
			t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", n), func(t *testing.T) {
				var active, maxActive atomic.Int32
				p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
					a := active.Add(1)
					if a > maxActive.Load() {
						maxActive.Store(a)
					}
					time.Sleep(time.Millisecond)
					active.Add(-1)
					return nil, nil
				}), &rpc.Options{MaxConcurrentRequests: n})
				for i := range 20 {
					p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i))
				}
				for i := range 20 {
					p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":null}`, i))
				}
				if m := maxActive.Load(); m != 1 {
					t.Fatalf("%d requests ran concurrently", m)
				}
			})
		}
	})
}

func TestConcurrentRequestsStartInOrderUpToTheLimit(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const limit, total = 4, 12
		started := make(chan int, total)
		release := make(chan struct{})
		p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			var i int
			fmt.Sscan(req.ID.String(), &i)
			started <- i
			<-release
			return i, nil
		}), &rpc.Options{MaxConcurrentRequests: limit})
		for i := range total {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i))
		}
		first := map[int]bool{}
		for range limit {
			first[wait(t, started)] = true
		}
		if len(first) != limit || !first[0] || !first[limit-1] {
			t.Fatalf("first handlers started: %v, want 0..%d", first, limit-1)
		}
		select {
		case i := <-started:
			t.Fatalf("request %d started while %d were running", i, limit)
		case <-time.After(50 * time.Millisecond):
		}
		for next := limit; next < total; next++ {
			release <- struct{}{}
			p.recv()
			if i := wait(t, started); i != next {
				t.Fatalf("started request %d, want %d", i, next)
			}
		}
		close(release)
		for range limit {
			p.recv()
		}
	})
}

func TestNilHandler(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		p.send(`{"jsonrpc":"2.0","method":"note"}`, `{"jsonrpc":"2.0","id":1,"method":"x/y"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: x/y"}}`)
		p.expectSilence()
	})
}

func TestHandlerErrors(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, methods{
			"plain": func(context.Context, *rpc.Request) (any, error) { return nil, errors.New("plain failure") },
			"wrapped": func(context.Context, *rpc.Request) (any, error) {
				return nil, fmt.Errorf("ctx: %w", rpc.ErrInvalidParams)
			},
			"ctx": func(context.Context, *rpc.Request) (any, error) {
				return nil, fmt.Errorf("gave up: %w", context.Canceled) // not the request's own context
			},
		}, nil)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"unknown"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: unknown"}}`)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"plain"}`)
		p.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"plain failure"}}`)
		p.send(`{"jsonrpc":"2.0","id":3,"method":"wrapped"}`)
		p.expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"invalid params"}}`)
		p.send(`{"jsonrpc":"2.0","id":4,"method":"ctx"}`)
		p.expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"gave up: context canceled"}}`)
		// Notifications never get replies, even on error.
		p.send(`{"jsonrpc":"2.0","method":"unknown"}`, `{"jsonrpc":"2.0","method":"plain"}`, `{"jsonrpc":"2.0","method":"wrapped"}`)
		p.expectSilence()
	})
}

func TestHandlerPanicRecovered(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, n := range []int{1, 4} {
			t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", n), func(t *testing.T) {
				logs := newLogSink()
				logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				p := tr.rawPeer(t, methods{
					"boom": func(context.Context, *rpc.Request) (any, error) { panic("kaboom") },
					"ok":   okHandler,
				}, &rpc.Options{Logger: logger, MaxConcurrentRequests: n})
				p.send(`{"jsonrpc":"2.0","id":1,"method":"boom"}`)
				p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error: handler panicked"}}`)
				p.send(`{"jsonrpc":"2.0","method":"boom"}`, `{"jsonrpc":"2.0","id":2,"method":"ok"}`)
				p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
				// Diagnostics are logged from a goroutine of their own.
				logs.waitFor(t, "kaboom", 2)
			})
		}
	})
}

// TestHandlerContext: a handler's context is live while it runs and ends,
// with ErrClosed as its cause, when the connection is closed.
func TestHandlerContext(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, n := range []int{1, 4} {
			for _, line := range []string{`{"jsonrpc":"2.0","id":1,"method":"m"}`, `{"jsonrpc":"2.0","method":"n"}`} {
				t.Run(fmt.Sprintf("MaxConcurrentRequests=%d/%s", n, line[18:22]), func(t *testing.T) {
					started := make(chan error, 1)
					ended := make(chan error, 1)
					p := tr.rawPeer(t, rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
						started <- ctx.Err()
						<-ctx.Done()
						ended <- context.Cause(ctx)
						return nil, ctx.Err()
					}), &rpc.Options{MaxConcurrentRequests: n})
					p.send(line)
					if err := wait(t, started); err != nil {
						t.Fatalf("handler context already done: %v", err)
					}
					p.c.Close()
					select {
					case err := <-ended:
						if !errors.Is(err, rpc.ErrClosed) {
							t.Errorf("handler context cause %v, want ErrClosed", err)
						}
					default:
						t.Error("Close returned before the handler did")
					}
				})
			}
		}
	})
}

// TestConcurrencyBound: at most MaxConcurrentRequests requests run at once,
// and that many do when enough wait; requests one after the other are
// served all along.
func TestConcurrencyBound(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		synctest.Test(t, func(t *testing.T) { testConcurrencyBound(t, tr) })
	})
}

func testConcurrencyBound(t *testing.T, tr transport) {
	{
		const slots = 3
		p, hold := newHoldingPeer(t, tr, slots)
		for i := range 50 {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
			p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"pong"}`, i))
		}
		// Twice as many held requests as slots: `slots` run at once, no more.
		hold.start(p, 2*slots)
		hold.waitRunning(t, slots)
		hold.finish(p, 2*slots)
		if most := hold.most(); most != slots {
			t.Errorf("at most %d requests ran at once, want %d", most, slots)
		}
	}
}

// TestConcurrentHandlersExit: a request handled concurrently runs on a
// worker, which then waits for the next request rather than exiting (it keeps
// the stack its handler grew); the workers never outnumber the concurrency
// slots, later requests reuse them, and they exit when the connection ends
// (the package's goleak check).
func TestConcurrentHandlersExit(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		synctest.Test(t, func(t *testing.T) {
			const slots = 3
			p, hold := newHoldingPeer(t, tr, slots)
			hold.start(p, slots)
			hold.waitRunning(t, slots)
			busy := runtime.NumGoroutine()
			hold.finish(p, slots)
			synctest.Wait()
			if n := runtime.NumGoroutine(); n > busy {
				t.Fatalf("%d goroutines once the requests were answered, %d with %d requests running", n, busy, slots)
			}
			if n := workerCount(); n != slots {
				t.Fatalf("%d workers once the requests were answered, want %d idle", n, slots)
			}
			for round := range 3 {
				for i := range 2 * slots {
					p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
					p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"pong"}`, i))
				}
				hold.release = make(chan struct{}) // the handlers read it after the requests reach them
				hold.start(p, slots)
				hold.waitRunning(t, slots)
				if n, w := runtime.NumGoroutine(), workerCount(); n > busy || w != slots {
					close(hold.release)
					t.Fatalf("round %d: %d goroutines and %d workers with %d requests running, want at most %d and %d: the workers were not reused", round, n, w, slots, busy, slots)
				}
				hold.finish(p, slots)
				synctest.Wait()
			}
		})
	})
}

// workerCount counts the goroutines of the process that are an rpc.Conn's workers.
func workerCount() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("rpc.(*Conn).worker("))
}

// holds counts the "hold" requests of a peer made by newHoldingPeer, which
// run until release is closed.
type holds struct {
	mu            sync.Mutex
	running, peak int
	release       chan struct{}
}

func (h *holds) add(d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running += d
	h.peak = max(h.peak, h.running)
}

func (h *holds) most() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}

// start sends n hold requests.
func (h *holds) start(p *rawPeer, n int) {
	for i := range n {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"hold"}`, 100+i))
	}
}

// waitRunning checks, in a testing/synctest bubble, that n hold requests run once every goroutine is
// blocked: as many as may have started, and no more.
func (h *holds) waitRunning(t *testing.T, n int) {
	t.Helper()
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running != n {
		t.Fatalf("%d requests running, want %d", h.running, n)
	}
}

// finish releases the hold requests and reads their n replies.
func (h *holds) finish(p *rawPeer, n int) {
	close(h.release)
	for range n {
		p.recv()
	}
}

// newHoldingPeer serves "ping" and "hold" with up to slots requests at once.
func newHoldingPeer(t *testing.T, tr transport, slots int) (*rawPeer, *holds) {
	h := &holds{release: make(chan struct{})}
	p := tr.rawPeer(t, methods{
		"ping": func(context.Context, *rpc.Request) (any, error) { return "pong", nil },
		"hold": func(context.Context, *rpc.Request) (any, error) {
			h.add(1)
			defer h.add(-1)
			<-h.release
			return nil, nil
		},
	}, &rpc.Options{MaxConcurrentRequests: slots})
	return p, h
}

// TestConcurrentRequestWaitsForTheNotificationBeforeIt: with requests
// handled concurrently, a request that arrives while a notification's handler
// runs starts once that handler has returned, and one that arrives with
// nothing before it starts at once (the reader hands it over itself).
func TestConcurrentRequestWaitsForTheNotificationBeforeIt(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			var noteDone, reqStarted atomic.Bool
			p := tr.rawPeer(t, methods{
				"note": func(context.Context, *rpc.Request) (any, error) {
					<-release
					noteDone.Store(true)
					return nil, nil
				},
				"req": func(context.Context, *rpc.Request) (any, error) {
					reqStarted.Store(true)
					return noteDone.Load(), nil
				},
			}, &rpc.Options{MaxConcurrentRequests: 4})
			p.send(`{"jsonrpc":"2.0","id":1,"method":"req"}`)
			p.expect(`{"jsonrpc":"2.0","id":1,"result":false}`)
			reqStarted.Store(false)
			p.send(`{"jsonrpc":"2.0","method":"note"}`, `{"jsonrpc":"2.0","id":2,"method":"req"}`)
			synctest.Wait()
			if reqStarted.Load() {
				t.Fatal("the request started while the notification before it was being handled")
			}
			close(release)
			p.expect(`{"jsonrpc":"2.0","id":2,"result":true}`)
		})
	})
}
