package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

func TestNotificationsHandledInArrivalOrder(t *testing.T) {
	for _, n := range []int{0, 8} {
		t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", n), func(t *testing.T) {
			var got []int
			p := newRawPeer(t, methods{
				"note": func(_ context.Context, req *Request) (any, error) {
					var i int
					if err := json.Unmarshal(req.Params, &i); err != nil {
						return nil, err
					}
					got = append(got, i) // only ever called from the dispatcher
					return nil, nil
				},
				"count": func(context.Context, *Request) (any, error) { return len(got), nil },
			}, &Options{MaxConcurrentRequests: n})
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
}

func TestRequestsHandledOneAtATimeByDefault(t *testing.T) {
	for _, n := range []int{0, 1} {
		t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", n), func(t *testing.T) {
			var active, maxActive atomic.Int32
			p := newRawPeer(t, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
				a := active.Add(1)
				if a > maxActive.Load() {
					maxActive.Store(a)
				}
				time.Sleep(time.Millisecond)
				active.Add(-1)
				return nil, nil
			}), &Options{MaxConcurrentRequests: n})
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
}

func TestConcurrentRequestsStartInOrderUpToTheLimit(t *testing.T) {
	const limit, total = 4, 12
	started := make(chan int, total)
	release := make(chan struct{})
	p := newRawPeer(t, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		var i int
		fmt.Sscan(req.ID.String(), &i)
		started <- i
		<-release
		return i, nil
	}), &Options{MaxConcurrentRequests: limit})
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
}

func TestNilHandler(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	p.send(`{"jsonrpc":"2.0","method":"note"}`, `{"jsonrpc":"2.0","id":1,"method":"x/y"}`)
	r := parseReply(t, p.recv())
	if string(r.ID) != "1" || !errors.Is(r.Error, ErrMethodNotFound) || !strings.Contains(r.Error.Message, "x/y") {
		t.Fatalf("reply id=%s error=%v", r.ID, r.Error)
	}
	p.expectSilence()
}

func TestHandlerErrors(t *testing.T) {
	p := newRawPeer(t, methods{
		"plain":   func(context.Context, *Request) (any, error) { return nil, errors.New("plain failure") },
		"wrapped": func(context.Context, *Request) (any, error) { return nil, fmt.Errorf("ctx: %w", ErrInvalidParams) },
	}, nil)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"unknown"}`)
	p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: unknown"}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"plain"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"plain failure"}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"wrapped"}`)
	p.expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"invalid params"}}`)
	// Notifications never get replies, even on error.
	p.send(`{"jsonrpc":"2.0","method":"unknown"}`, `{"jsonrpc":"2.0","method":"plain"}`, `{"jsonrpc":"2.0","method":"wrapped"}`)
	p.expectSilence()
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHandlerPanicRecovered(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", n), func(t *testing.T) {
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			p := newRawPeer(t, methods{
				"boom": func(context.Context, *Request) (any, error) { panic("kaboom") },
				"ok":   okHandler,
			}, &Options{Logger: logger, MaxConcurrentRequests: n})
			p.send(`{"jsonrpc":"2.0","id":1,"method":"boom"}`)
			r := parseReply(t, p.recv())
			if string(r.ID) != "1" || !errors.Is(r.Error, ErrInternal) {
				t.Fatalf("reply id=%s error=%v", r.ID, r.Error)
			}
			p.send(`{"jsonrpc":"2.0","method":"boom"}`, `{"jsonrpc":"2.0","id":2,"method":"ok"}`)
			p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
			if !strings.Contains(logs.String(), "kaboom") {
				t.Errorf("panic not logged; log:\n%s", logs.String())
			}
		})
	}
}

func TestHandlerContext(t *testing.T) {
	for _, tt := range []struct {
		n      int
		inline bool
	}{{1, true}, {4, false}} {
		t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", tt.n), func(t *testing.T) {
			type seen struct {
				mark     *handlerMark
				ctx      context.Context
				isNotify bool
			}
			got := make(chan seen, 2)
			p := newRawPeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				got <- seen{ctx.Value(handlerKey{}).(*handlerMark), ctx, req.IsNotification()}
				return nil, nil
			}), &Options{MaxConcurrentRequests: tt.n})
			p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`, `{"jsonrpc":"2.0","method":"n"}`)
			for range 2 {
				s := wait(t, got)
				if s.mark.conn != p.c || s.mark.inline != (tt.inline || s.isNotify) {
					t.Errorf("notification=%v: mark = %+v", s.isNotify, s.mark)
				}
				if p.c.mark(s.ctx) == nil || (&Conn{}).mark(s.ctx) != nil {
					t.Error("mark not matched to its conn")
				}
				if s.ctx.Err() != nil {
					t.Error("handler context already done")
				}
				defer func() {
					if s.ctx.Err() == nil || !errors.Is(context.Cause(s.ctx), ErrClosed) {
						t.Errorf("handler context not cancelled by Close: %v", context.Cause(s.ctx))
					}
				}()
			}
			p.recv()
			p.c.Close()
		})
	}
}

// goroutineID returns the id of the calling goroutine, from its stack
// header ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// TestWorkersReused checks how concurrent requests are run: workers are
// reused, and at most MaxConcurrentRequests requests run at once.
func TestWorkersReused(t *testing.T) {
	const slots = 3
	p, hold := newHoldingPeer(t, slots)
	who := func(id int) string {
		t.Helper()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"who"}`, id))
		var r struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal([]byte(p.recv()), &r); err != nil || r.Result == "" {
			t.Fatalf("who: %v %+v", err, r)
		}
		return r.Result
	}

	// A request may get its slot before the worker that freed it waits for
	// more, and then a second worker starts; with one request at a time
	// there is never a third (workers idle for less than workerIdle).
	seen := map[string]bool{}
	for i := range 50 {
		seen[who(1+i)] = true
	}
	if len(seen) > 2 {
		t.Fatalf("50 requests one after the other ran on %d goroutines, want at most 2", len(seen))
	}

	// Twice as many held requests as slots: `slots` run at once, no more.
	hold.start(p, 2*slots)
	hold.waitRunning(t, slots)
	time.Sleep(20 * time.Millisecond) // room for a request beyond the bound to start
	hold.finish(p, 2*slots)
	if most := hold.most(); most != slots {
		t.Errorf("at most %d requests ran at once, want %d", most, slots)
	}
}

// TestIdleWorkersRetire checks that workers idle for a whole check period
// exit, and that requests are served after that.
func TestIdleWorkersRetire(t *testing.T) {
	saved := workerIdle
	t.Cleanup(func() { workerIdle = saved }) // after the peer's cleanup has stopped its workers
	workerIdle = 20 * time.Millisecond
	const slots = 3
	p, hold := newHoldingPeer(t, slots)
	hold.start(p, slots)
	hold.waitRunning(t, slots)
	busy := runtime.NumGoroutine()
	hold.finish(p, slots)
	waitUntil(t, func() bool { return runtime.NumGoroutine() <= busy-slots }, func() string {
		return fmt.Sprintf("%d goroutines after an idle spell, %d with %d requests running: idle workers did not exit", runtime.NumGoroutine(), busy, slots)
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"who"}`)
	p.recv()
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

// waitRunning waits until n hold requests run at once.
func (h *holds) waitRunning(t *testing.T, n int) {
	t.Helper()
	running := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.running
	}
	waitUntil(t, func() bool { return running() == n }, func() string {
		return fmt.Sprintf("%d requests running, want %d", running(), n)
	})
}

// finish releases the hold requests and reads their n replies.
func (h *holds) finish(p *rawPeer, n int) {
	close(h.release)
	for range n {
		p.recv()
	}
}

// newHoldingPeer serves "who" (the id of the goroutine that runs it) and
// "hold" with up to slots requests at once.
func newHoldingPeer(t *testing.T, slots int) (*rawPeer, *holds) {
	h := &holds{release: make(chan struct{})}
	p := newRawPeer(t, methods{
		"who": func(context.Context, *Request) (any, error) { return goroutineID(), nil },
		"hold": func(context.Context, *Request) (any, error) {
			h.add(1)
			defer h.add(-1)
			<-h.release
			return nil, nil
		},
	}, &Options{MaxConcurrentRequests: slots})
	return p, h
}
