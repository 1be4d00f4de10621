package rpc_test

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

type benchParams struct {
	SessionID string `json:"sessionId"`
	Text      string `json:"text"`
	Count     int    `json:"count"`
}

type benchResult struct {
	OK    bool `json:"ok"`
	Count int  `json:"count"`
}

var echoHandler = rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
	var p benchParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, err
	}
	return &benchResult{OK: true, Count: p.Count}, nil
})

func roundTrip(tb testing.TB, c *rpc.Conn, p *benchParams) {
	var r benchResult
	if err := c.Call(context.Background(), "bench/echo", p, &r); err != nil {
		tb.Fatal(err)
	}
	if !r.OK || r.Count != p.Count {
		tb.Fatalf("result = %+v", r)
	}
}

// forTransportsB runs f as a sub-benchmark for each transport of the suite.
func forTransportsB(b *testing.B, f func(b *testing.B, tr transport)) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) { f(b, tr) })
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	forTransportsB(b, func(b *testing.B, tr transport) {
		client, _ := tr.clientServer(b, echoHandler, nil)
		p := &benchParams{SessionID: "sess-1", Text: "hello", Count: 7}
		b.ReportAllocs()
		for b.Loop() {
			roundTrip(b, client, p)
		}
	})
}

func BenchmarkRoundTripParallel(b *testing.B) {
	forTransportsB(b, func(b *testing.B, tr transport) {
		client, _ := tr.clientServer(b, echoHandler, &rpc.Options{MaxConcurrentRequests: 16})
		p := &benchParams{SessionID: "sess-1", Text: "hello", Count: 7}
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				roundTrip(b, client, p)
			}
		})
	})
}

func BenchmarkNotify(b *testing.B) {
	forTransportsB(b, func(b *testing.B, tr transport) {
		client, _ := tr.clientServer(b, echoHandler, nil)
		p := &benchParams{SessionID: "sess-1", Text: "hello", Count: 7}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := client.Notify(ctx, "bench/update", p); err != nil {
				b.Fatal(err)
			}
		}
		roundTrip(b, client, p) // wait for the notifications to be handled
	})
}
