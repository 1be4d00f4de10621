package rpc_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestPeersCallEachOther(t *testing.T) {
	for _, pk := range pipeKinds {
		t.Run(pk.name, func(t *testing.T) {
			var notesA, notesB atomic.Int32
			ha := methods{
				"mul": func(_ context.Context, r *rpc.Request) (any, error) {
					return binop(r, func(a, b int) int { return a * b })
				},
				"note": func(context.Context, *rpc.Request) (any, error) { notesA.Add(1); return nil, nil },
			}
			hb := methods{
				"add": func(_ context.Context, r *rpc.Request) (any, error) {
					return binop(r, func(a, b int) int { return a + b })
				},
				"note": func(context.Context, *rpc.Request) (any, error) { notesB.Add(1); return nil, nil },
			}
			a, b := pk.pair(t, ha, nil, hb, &rpc.Options{MaxConcurrentRequests: 4})
			ctx := context.Background()
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					var sum, prod int
					if err := a.Call(ctx, "add", [2]int{i, 3}, &sum); err != nil || sum != i+3 {
						t.Errorf("add(%d, 3) = %d, %v", i, sum, err)
					}
					if err := b.Call(ctx, "mul", [2]int{i, 3}, &prod); err != nil || prod != i*3 {
						t.Errorf("mul(%d, 3) = %d, %v", i, prod, err)
					}
					if err := a.Notify(ctx, "note", nil); err != nil {
						t.Error(err)
					}
					if err := b.Notify(ctx, "note", nil); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			// A round trip in each direction flushes the notifications.
			if err := a.Call(ctx, "add", [2]int{0, 0}, nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Call(ctx, "mul", [2]int{0, 0}, nil); err != nil {
				t.Fatal(err)
			}
			if notesA.Load() != 50 || notesB.Load() != 50 {
				t.Fatalf("notifications: A got %d, B got %d, want 50 each", notesA.Load(), notesB.Load())
			}
		})
	}
}

func binop(r *rpc.Request, f func(a, b int) int) (any, error) {
	var args [2]int
	if err := rpc.DecodeParams(r.Params, &args); err != nil {
		return nil, err
	}
	return f(args[0], args[1]), nil
}

// TestNestedCallbacks: handlers call back into the other peer while they
// handle a request. With requests handled one at a time a single level of
// callbacks works (the peer's dispatcher is free); deeper chains need one
// concurrency slot per level and side.
func TestNestedCallbacks(t *testing.T) {
	for _, pk := range pipeKinds {
		for _, tt := range []struct{ slots, depth int }{{1, 1}, {4, 7}} {
			t.Run(fmt.Sprintf("%s/slots=%d", pk.name, tt.slots), func(t *testing.T) {
				var a, b *rpc.Conn
				pingVia := func(self **rpc.Conn) rpc.Handler {
					return methods{"ping": func(ctx context.Context, r *rpc.Request) (any, error) {
						var depth int
						if err := json.Unmarshal(r.Params, &depth); err != nil {
							return nil, err
						}
						if depth == 0 {
							return []string{"bottom"}, nil
						}
						var trail []string
						if err := (*self).Call(ctx, "ping", depth-1, &trail); err != nil {
							return nil, err
						}
						return append(trail, fmt.Sprint(depth)), nil
					}}
				}
				opts := &rpc.Options{MaxConcurrentRequests: tt.slots, QueueSize: 1}
				a, b = pk.pair(t, pingVia(&a), opts, pingVia(&b), opts)
				for range 20 {
					var trail []string
					if err := a.Call(context.Background(), "ping", tt.depth, &trail); err != nil {
						t.Fatal(err)
					}
					if got, want := len(trail), tt.depth+1; got != want || trail[0] != "bottom" {
						t.Fatalf("trail = %q", trail)
					}
				}
			})
		}
	}
}

// TestConcurrentWritesNeverInterleave: many goroutines call and notify over
// an OS pipe with frames larger than the pipe's atomic write size; every
// line the peer reads must be one valid message.
func TestConcurrentWritesNeverInterleave(t *testing.T) {
	p := ndjsonOS.rawPeer(t, nil, nil)
	type message struct {
		ID     jsontext.Value `json:"id"`
		Method string         `json:"method"`
		Params jsontext.Value `json:"params"`
	}
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for line := range p.lines {
			var m message
			if !jsontext.Value(line).IsValid() {
				t.Errorf("corrupt line %.100q", line)
				return
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Errorf("line %.100q: %v", line, err)
				return
			}
			if m.Method == "stop" {
				return
			}
			if m.ID != nil {
				fmt.Fprintf(p.w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, m.Params)
			}
		}
	}()

	const callers, calls = 32, 50
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				text := strings.Repeat(string(rune('a'+g%26)), (g*calls+i)*131%20000)
				var echo string
				if err := p.c.Call(context.Background(), "echo", text, &echo); err != nil || echo != text {
					t.Errorf("echo of %d bytes: got %d bytes, %v", len(text), len(echo), err)
					return
				}
				if err := p.c.Notify(context.Background(), "note", text); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := p.c.Notify(context.Background(), "stop", nil); err != nil {
		t.Fatal(err)
	}
	wait(t, answered)
}
