package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
