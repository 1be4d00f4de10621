package rpc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// A request whose id is that of a request still in flight is refused with
// -32600 and reported, its handler never runs, and the first request still
// gets its own reply; once that reply is out, the id may be used again.
func TestDuplicateInFlightIDRefused(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, tc := range []struct {
			name string
			opts rpc.Options
		}{
			{"serial", rpc.Options{}},
			{"concurrent", rpc.Options{MaxConcurrentRequests: 4}},
			{"timeout", rpc.Options{MaxConcurrentRequests: 4, RequestTimeout: timeout}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				release := make(chan struct{})
				started := make(chan string, 4)
				h := methods{
					"block": func(ctx context.Context, req *rpc.Request) (any, error) {
						started <- string(req.Params)
						select {
						case <-release:
							return "first", nil
						case <-ctx.Done():
							return nil, ctx.Err()
						}
					},
					"quick": func(context.Context, *rpc.Request) (any, error) { return "quick", nil },
				}
				p := tr.rawPeer(t, h, &tc.opts)
				p.send(`{"jsonrpc":"2.0","id":7,"method":"block","params":{"n":1}}`)
				if got := wait(t, started); got != `{"n":1}` {
					t.Fatalf("first handler saw %s", got)
				}
				p.send(`{"jsonrpc":"2.0","id":7,"method":"quick","params":{"n":2}}`)
				r := parseReply(t, p.recv())
				if string(r.ID) != "7" || r.Error == nil || r.Error.Code != rpc.CodeInvalidRequest {
					t.Fatalf("duplicate answered %+v, want a -32600 error for id 7", r)
				}
				fe := p.frameError()
				if fe.Kind != rpc.FrameDuplicateID || fe.ID.String() != "7" || fe.Method != "quick" || !errors.Is(fe.Err, rpc.ErrInvalidRequest) {
					t.Fatalf("reported %+v, want a duplicate-id report for quick #7", fe)
				}
				close(release)
				p.expect(`{"jsonrpc":"2.0","id":7,"result":"first"}`)
				// The id is free again once answered; a distinct spelling of
				// the same number is another id (ids are kept byte for byte).
				p.send(`{"jsonrpc":"2.0","id":7,"method":"quick"}`)
				p.expect(`{"jsonrpc":"2.0","id":7,"result":"quick"}`)
				select {
				case s := <-started:
					t.Fatalf("a refused request reached a handler: %s", s)
				default:
				}
				if n := p.c.Stats().FrameErrors[rpc.FrameDuplicateID]; n != 1 {
					t.Fatalf("Stats counts %d duplicate ids, want 1", n)
				}
			})
		}
	})
}
