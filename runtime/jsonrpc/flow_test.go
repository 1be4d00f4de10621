package jsonrpc

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// connPair returns two Conns wired back to back over pipes made by pipe.
func connPair(t testing.TB, pipe func() (io.ReadCloser, io.WriteCloser, error), ha Handler, oa *Options, hb Handler, ob *Options) (a, b *Conn) {
	t.Helper()
	ar, bw, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	br, aw, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	a = NewConn(ar, aw, ha, oa)
	b = NewConn(br, bw, hb, ob)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

func TestBackpressureStopsReading(t *testing.T) {
	for _, tt := range []struct {
		name  string
		line  string
		slots int
	}{
		{"notifications", `{"jsonrpc":"2.0","method":"block"}`, 1},
		{"inline requests", `{"jsonrpc":"2.0","id":1,"method":"block"}`, 1},
		{"concurrent requests", `{"jsonrpc":"2.0","id":1,"method":"block"}`, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const limit, total = 4, 20_000
			release := make(chan struct{})
			var handled atomic.Int64
			p := newRawPeerOver(t, osPipe, methods{
				"block": func(context.Context, *Request) (any, error) {
					<-release
					handled.Add(1)
					return nil, nil
				},
				"count": func(context.Context, *Request) (any, error) { return handled.Load(), nil },
			}, &Options{QueueSize: limit, MaxConcurrentRequests: tt.slots})

			var sent atomic.Int64
			writerDone := make(chan error, 1)
			go func() {
				for range total {
					if _, err := io.WriteString(p.w, tt.line+"\n"); err != nil {
						writerDone <- err
						return
					}
					sent.Add(1)
				}
				writerDone <- nil
			}()

			// With the handlers stuck the reader must stop once the queue
			// is full, so the pipe fills up and the peer's writes block.
			var stalledAt int64
			for stalledAt = -1; stalledAt != sent.Load(); time.Sleep(50 * time.Millisecond) {
				stalledAt = sent.Load()
			}
			if stalledAt >= total {
				t.Fatalf("peer wrote all %d messages while the handlers were blocked", total)
			}
			p.c.q.mu.Lock()
			queued := p.c.q.n
			p.c.q.mu.Unlock()
			if queued > limit {
				t.Fatalf("queue holds %d items, limit %d", queued, limit)
			}
			t.Logf("peer stalled after %d messages; queue holds %d", stalledAt, queued)

			close(release)
			if err := wait(t, writerDone); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tt.line, `"id"`) {
				for range total {
					p.expect(`{"jsonrpc":"2.0","id":1,"result":null}`)
				}
			}
			p.send(`{"jsonrpc":"2.0","id":"count","method":"count"}`)
			p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":"count","result":%d}`, total))
		})
	}
}

func TestNotificationBurstDeliveredOverOSPipe(t *testing.T) {
	const total = 50_000
	var handled atomic.Int64
	server := methods{
		"note": func(context.Context, *Request) (any, error) {
			if handled.Add(1)%500 == 0 {
				time.Sleep(time.Millisecond) // slow-ish consumer
			}
			return nil, nil
		},
		"count": func(context.Context, *Request) (any, error) { return handled.Load(), nil },
	}
	client, _ := connPair(t, osPipe, nil, nil, server, nil)
	ctx := context.Background()
	params := map[string]any{"sessionId": "s1", "update": map[string]string{"kind": "text", "text": "chunk"}}
	start := time.Now()
	for range total {
		if err := client.Notify(ctx, "note", params); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := client.Call(ctx, "count", nil, &n); err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Fatalf("server handled %d notifications, want %d", n, total)
	}
	t.Logf("%d notifications in %v", total, time.Since(start))
}

// floodUntilBlocked sends notifications from c until a write has been
// blocked for a while because the peer stopped reading. The returned channel
// is closed once that last write has gone through.
func floodUntilBlocked(t *testing.T, c *Conn) <-chan struct{} {
	var sent atomic.Int64
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() && c.Notify(context.Background(), "note", nil) == nil {
			sent.Add(1)
		}
	}()
	for last := int64(-1); last != sent.Load(); time.Sleep(50 * time.Millisecond) {
		last = sent.Load()
	}
	stop.Store(true)
	return done
}

// TestInlineHandlerCallsBackWhileQueueIsFull: a handler running on the
// dispatcher calls the peer while the peer floods notifications and the
// queue is full; the reply sits behind the flood in the pipe.
func TestInlineHandlerCallsBackWhileQueueIsFull(t *testing.T) {
	ready := make(chan struct{})
	var server *Conn
	serverHandler := methods{
		"note": func(context.Context, *Request) (any, error) { return nil, nil },
		"work": func(ctx context.Context, _ *Request) (any, error) {
			<-ready // the flood now fills the queue and the pipe
			var s string
			err := server.Call(ctx, "callback", nil, &s)
			return s, err
		},
	}
	clientHandler := methods{"callback": func(context.Context, *Request) (any, error) { return "pong", nil }}
	client, srv := connPair(t, osPipe, clientHandler, nil, serverHandler, &Options{QueueSize: 2})
	server = srv

	var got string
	done := callAsync(context.Background(), client, "work", nil, &got)
	flooding := floodUntilBlocked(t, client)
	close(ready)
	if err := wait(t, done); err != nil || got != "pong" {
		t.Fatalf("work = %q, %v", got, err)
	}
	wait(t, flooding)
}

// TestSlotWaitKeepsReading: all concurrency slots are taken by handlers
// calling back into the peer, the dispatcher waits for a slot, and the
// replies sit behind a notification flood.
func TestSlotWaitKeepsReading(t *testing.T) {
	const slots = 2
	ready := make(chan struct{})
	var server *Conn
	serverHandler := methods{
		"note": func(context.Context, *Request) (any, error) { return nil, nil },
		"work": func(ctx context.Context, _ *Request) (any, error) {
			<-ready
			var s string
			err := server.Call(ctx, "callback", nil, &s)
			return s, err
		},
	}
	clientHandler := methods{"callback": func(context.Context, *Request) (any, error) { return "pong", nil }}
	client, srv := connPair(t, osPipe, clientHandler, nil, serverHandler, &Options{QueueSize: 2, MaxConcurrentRequests: slots})
	server = srv

	var calls []<-chan error
	for range slots + 1 {
		calls = append(calls, callAsync(context.Background(), client, "work", nil, nil))
	}
	flooding := floodUntilBlocked(t, client)
	close(ready)
	for _, done := range calls {
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, flooding)
}
