package rpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// tag is a middleware that records its name around the handler it wraps.
func tag(name string, mu *sync.Mutex, trace *[]string) rpc.Middleware {
	return func(next rpc.Handler) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			mu.Lock()
			*trace = append(*trace, name+">"+req.Method)
			mu.Unlock()
			res, err := next.Handle(ctx, req)
			mu.Lock()
			*trace = append(*trace, "<"+name)
			mu.Unlock()
			return res, err
		})
	}
}

func TestOptionsMiddlewareOrder(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		var mu sync.Mutex
		var trace []string
		p := tr.rawPeer(t, okHandler, &rpc.Options{Middleware: []rpc.Middleware{tag("a", &mu, &trace), nil, tag("b", &mu, &trace)}})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":"m"}`)
		mu.Lock()
		defer mu.Unlock()
		if got, want := strings.Join(trace, " "), "a>m b>m <b <a"; got != want {
			t.Fatalf("middleware ran %q, want %q (the first outermost)", got, want)
		}
	})
}

func TestChainNilHandler(t *testing.T) {
	var mu sync.Mutex
	var trace []string
	h := rpc.Chain(nil, tag("a", &mu, &trace))
	_, err := h.Handle(context.Background(), &rpc.Request{Kind: rpc.KindRequest, Method: "x"})
	if !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("nil handler under middleware: %v, want ErrMethodNotFound", err)
	}
	if len(trace) != 2 {
		t.Fatalf("middleware did not see the request: %q", trace)
	}
	if rpc.Chain(okHandler) == nil {
		t.Fatal("Chain with no middleware lost the handler")
	}
}

// A handler reaches its own connection through its context, also for a
// request that was already waiting before NewConn returned.
func TestSenderFrom(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		if rpc.SenderFrom(context.Background()) != nil {
			t.Fatal("SenderFrom of a context that is no handler's is not nil")
		}
		got := make(chan rpc.Sender, 1)
		h := rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			got <- rpc.SenderFrom(context.WithValue(ctx, struct{}{}, 1))
			return nil, nil
		})
		p := tr.rawPeer(t, h, nil)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":null}`)
		if s := <-got; s == nil || s != rpc.Sender(p.c) {
			t.Fatalf("SenderFrom in a handler = %v, want the handler's connection", s)
		}
	})
}
