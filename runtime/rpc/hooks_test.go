package rpc_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// With Ordered, a request starts only once the one before it has returned
// or released its turn, and the replies of requests that keep their turn
// go out in arrival order.
func TestOrderedRequests(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		release, finish := make(chan struct{}), make(chan struct{})
		var running atomic.Int32
		started := make(chan string, 8)
		p := tr.rawPeer(t, methods{
			"long": func(ctx context.Context, _ *rpc.Request) (any, error) {
				started <- "long"
				<-release
				rpc.Release(ctx) // the next may start; this one goes on
				rpc.Release(ctx) // again: nothing
				<-finish
				return "long", nil
			},
			"quick": func(_ context.Context, req *rpc.Request) (any, error) {
				if running.Add(1) > 1 {
					t.Error("two quick requests ran at once")
				}
				time.Sleep(time.Millisecond)
				running.Add(-1)
				started <- "quick " + string(req.Params)
				return string(req.Params), nil
			},
		}, &rpc.Options{MaxConcurrentRequests: 4, Ordered: true})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"long"}`,
			`{"jsonrpc":"2.0","id":2,"method":"quick","params":2}`,
			`{"jsonrpc":"2.0","id":3,"method":"quick","params":3}`)
		if s := wait(t, started); s != "long" {
			t.Fatalf("started %s first", s)
		}
		select {
		case s := <-started:
			t.Fatalf("%s started before the long request released its turn", s)
		case <-time.After(20 * time.Millisecond):
		}
		close(release)
		if a, b := wait(t, started), wait(t, started); a != "quick 2" || b != "quick 3" {
			t.Fatalf("started %s, %s", a, b)
		}
		p.expect(`{"jsonrpc":"2.0","id":2,"result":"2"}`)
		p.expect(`{"jsonrpc":"2.0","id":3,"result":"3"}`)
		close(finish)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":"long"}`)
		rpc.Release(context.Background()) // not a handler's context: nothing
	})
}

// NextID numbers outbound requests; their replies find them.
func TestNextID(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		var n atomic.Uint64
		n.Store(40)
		p := tr.rawPeer(t, nil, &rpc.Options{NextID: func() uint64 { return n.Add(1) }})
		done := callAsync(context.Background(), p.c, "a", nil, nil)
		p.expect(`{"jsonrpc":"2.0","id":41,"method":"a","params":{}}`)
		p.send(`{"jsonrpc":"2.0","id":41,"result":null}`)
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
		done = callAsync(context.Background(), p.c, "b", nil, nil)
		p.expect(`{"jsonrpc":"2.0","id":42,"method":"b","params":{}}`)
		p.send(`{"jsonrpc":"2.0","id":1,"result":null}`) // not one of ours
		if fe := p.frameError(); fe.Kind != rpc.FrameUnknownResponse {
			t.Fatalf("reported %v", fe.Kind)
		}
		p.send(`{"jsonrpc":"2.0","id":42,"result":null}`)
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
	})
}

// Screen adds a program's gates: what it refuses is answered and reported
// as a bad frame, and never reaches the handler.
func TestScreen(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		handled := make(chan string, 4)
		p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			handled <- req.Method
			return "ok", nil
		}), &rpc.Options{Screen: func(m *rpc.Message) *rpc.FrameError {
			if string(m.Method) != "forbidden" {
				return nil
			}
			e := rpc.NewError(rpc.CodeInvalidRequest, "not here", nil)
			return &rpc.FrameError{Kind: rpc.FrameInvalid, Err: e, ID: rpc.RawID(m.ID), Reply: e}
		}})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"forbidden"}`, `{"jsonrpc":"2.0","id":2,"method":"allowed"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"not here"}}`)
		p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
		if m := wait(t, handled); m != "allowed" {
			t.Fatalf("handled %s", m)
		}
		if fe := p.frameError(); fe.Kind != rpc.FrameInvalid || fe.ID.String() != "1" || !strings.Contains(string(fe.Frame), "forbidden") {
			t.Fatalf("reported %+v", fe)
		}
	})
}

// OnBadFrame runs before the connection acts on a bad line: it can leave
// the line unanswered, make it fail a call, and end the connection with
// it, so that nothing read after it is taken.
func TestOnBadFrame(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, tt := range []struct{ name, line string }{
			{"malformed", `not json`},
			{"too large", `{"jsonrpc":"2.0","id":"big","method":"m","params":"` + strings.Repeat("x", 8<<10) + `"}`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				var seen []string
				handled := make(chan string, 4)
				p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
					handled <- req.Method
					return nil, nil
				}), &rpc.Options{MaxFrame: 4 << 10, OnBadFrame: func(fe *rpc.FrameError, line []byte) bool {
					seen = append(seen, string(line[:min(len(line), 20)]))
					fe.Reply = nil
					fe.ID, fe.Claimed = rpc.Int64ID(1), rpc.KindResponse // it answers our call
					return true
				}})
				call := callAsync(context.Background(), p.c, "ask", nil, nil)
				p.expect(`{"jsonrpc":"2.0","id":1,"method":"ask","params":{}}`)
				// One write: the connection closes its input at the bad line.
				go func() {
					io.WriteString(p.w, tt.line+"\n"+`{"jsonrpc":"2.0","method":"after"}`+"\n"+`{"jsonrpc":"2.0","id":1,"result":null}`+"\n")
				}()
				err := wait(t, call)
				if fe, ok := errors.AsType[*rpc.FrameError](err); !ok || fe.ID.String() != "1" {
					t.Fatalf("the call returned %v, want the bad frame", err)
				}
				wait(t, p.c.Done())
				if err := p.c.Err(); !errors.Is(err, rpc.ErrClosed) || !strings.Contains(err.Error(), "frame") {
					t.Fatalf("Err() = %v", err)
				}
				if len(seen) != 1 || seen[0] != tt.line[:min(len(tt.line), 20)] {
					t.Fatalf("OnBadFrame saw %q", seen)
				}
				p.expectSilence() // the bad line is not answered
				select {
				case m := <-handled:
					t.Fatalf("handled %s, read after the bad line", m)
				default:
				}
				if err := p.c.Call(context.Background(), "later", nil, nil); !errors.Is(err, rpc.ErrClosed) {
					t.Fatalf("a call after the end: %v", err)
				}
			})
		}
	})
}
