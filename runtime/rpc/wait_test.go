package rpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// A connection whose peer ends its input after its requests were answered
// ends cleanly: Wait reports no error (Err still says why: io.EOF).
func TestWaitCleanEnd(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, okHandler, nil)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
		p.w.Close()
		if err := p.c.Wait(context.Background()); err != nil {
			t.Fatalf("Wait after a clean end = %v, want nil", err)
		}
		if err := p.c.Err(); !errors.Is(err, io.EOF) {
			t.Fatalf("Err after a clean end = %v, want io.EOF", err)
		}
		p.expect(`{"jsonrpc":"2.0","id":1,"result":"m"}`)
	})
}

func TestWaitClosedAndContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c := jsonrpc.NewConn(r, io.Discard, okHandler, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := c.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with an ended context = %v", err)
	}
	c.Close()
	if err := c.Wait(context.Background()); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("Wait after Close = %v, want ErrClosed", err)
	}
}
