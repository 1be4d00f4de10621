package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestInboundIDsEchoedVerbatim(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) { return "ok", nil }), nil)
		for _, id := range []string{`"abc"`, `12345678901234567890`, `1.50`, `-0`, `null`, `"\u00e9\n"`, `1e3`, `0`} {
			p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"m"}`)
			p.expect(`{"jsonrpc":"2.0","id":` + id + `,"result":"ok"}`)
		}
	})
}

func TestRequestIDAndParamsSeenByHandler(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		got := make(chan *rpc.Request, 2)
		p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			got <- req
			return nil, nil
		}), nil)
		p.send(`{"jsonrpc":"2.0","id":"r1","method":"with","params":{"a": [1, 2]}}`)
		p.recv()
		p.send(`{"jsonrpc":"2.0","method":"without"}`)
		r1, r2 := wait(t, got), wait(t, got)
		if r1.ID != rpc.StringID("r1") || r1.Method != "with" || string(r1.Params) != `{"a": [1, 2]}` || r1.Kind != rpc.KindRequest {
			t.Errorf("request = %+v", r1)
		}
		if !r2.ID.IsZero() || r2.Params != nil || r2.Kind != rpc.KindNotification || r2.Method != "without" {
			t.Errorf("notification = %+v", r2)
		}
	})
}

func TestOutboundIDsCountUpFromOne(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		for want := 1; want <= 3; want++ {
			done := callAsync(context.Background(), p.c, "m", nil, nil)
			var req struct {
				ID int `json:"id"`
			}
			if err := json.Unmarshal([]byte(p.recv()), &req); err != nil || req.ID != want {
				t.Fatalf("id = %d (%v), want %d", req.ID, err, want)
			}
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":null}`, want))
			if err := wait(t, done); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestManyCallsInFlightAnsweredOutOfOrder(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		const n = 100
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var got int
				if err := p.c.Call(context.Background(), "double", i, &got); err != nil || got != 2*i {
					t.Errorf("double(%d) = %d, %v", i, got, err)
				}
			})
		}
		type req struct {
			ID     int64 `json:"id"`
			Params int   `json:"params"`
		}
		reqs := make([]req, n)
		for i := range reqs {
			if err := json.Unmarshal([]byte(p.recv()), &reqs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i := n - 1; i >= 0; i-- { // answer in reverse order
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, reqs[i].ID, 2*reqs[i].Params))
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		wait(t, done)
	})
}

func TestUnknownResponsesDropped(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		for _, id := range []string{`99`, `"1"`, `1.0`, `-1`, `null`, `0`} {
			p.send(`{"jsonrpc":"2.0","id":` + id + `,"result":1}`)
			if fe := p.frameError(); fe.Kind != rpc.FrameUnknownResponse || fe.ID.String() != id {
				t.Errorf("id %s: frame error %+v, want FrameUnknownResponse", id, fe)
			}
		}
		// A response is delivered once; a duplicate is unknown.
		done := callAsync(context.Background(), p.c, "m", nil, nil)
		p.recv()
		p.send(`{"jsonrpc":"2.0","id":1,"result":1}`, `{"jsonrpc":"2.0","id":1,"result":2}`)
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
		if fe := p.frameError(); fe.Kind != rpc.FrameUnknownResponse {
			t.Errorf("duplicate: kind = %v", fe.Kind)
		}
		p.expectSilence() // responses are never answered
	})
}

func TestLateResponseAfterTimeoutIsUnknown(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		done := callAsync(ctx, p.c, "slow", nil, nil)
		p.recv()
		err := wait(t, done)
		if err == nil || ctx.Err() == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		p.send(`{"jsonrpc":"2.0","id":1,"result":1}`)
		if fe := p.frameError(); fe.Kind != rpc.FrameUnknownResponse {
			t.Errorf("kind = %v, want FrameUnknownResponse", fe.Kind)
		}
	})
}

func TestID(t *testing.T) {
	var zero rpc.ID
	if !zero.IsZero() || zero.Raw() != nil || zero.String() != "" {
		t.Error("zero ID is not empty")
	}
	if id := rpc.Int64ID(-42); id.IsZero() || string(id.Raw()) != "-42" || id.String() != "-42" {
		t.Errorf("Int64ID(-42) = %q", id.Raw())
	}
	if id := rpc.StringID(`a"b`); string(id.Raw()) != `"a\"b"` {
		t.Errorf("StringID = %s", id.Raw())
	}
	if id := rpc.StringID("a\xffb"); string(id.Raw()) != "\"a\ufffdb\"" {
		t.Errorf("StringID of invalid UTF-8 = %s", id.Raw())
	}
	if id := rpc.RawID([]byte(`"x"`)); id != rpc.StringID("x") {
		t.Errorf("RawID = %s", id.Raw())
	}
	if rpc.Int64ID(7) != rpc.Int64ID(7) || rpc.Int64ID(7) == rpc.StringID("7") {
		t.Error("IDs do not compare by JSON text")
	}
}
