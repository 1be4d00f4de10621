package jsonrpc

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestNotifyAllocs bounds the allocations of one in-memory notification,
// sender and receiver together: Notify, then the peer decodes it and its
// handler decodes the params. Like TestRoundTripAllocs it is skipped under
// the race detector, so CI runs both without it:
//
//	go test -run 'Alloc' -count=1 ./runtime/...
func TestNotifyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are inflated under the race detector")
	}
	// 3 measured (go1.26, go-json-experiment/json, with or without
	// GOEXPERIMENT=jsonv2), plus half.
	const ceiling = 4
	handled := make(chan benchParams, 1)
	client, _ := pipePair(t, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		var p benchParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			t.Error(err)
		}
		handled <- p
		return nil, nil
	}), nil)
	p := &benchParams{SessionID: "sess-1", Text: "hello", Count: 7}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(2000, func() {
		if err := client.Notify(ctx, "bench/update", p); err != nil {
			t.Fatal(err)
		}
		if got := <-handled; got != *p {
			t.Fatalf("handler got %+v", got)
		}
	})
	t.Logf("%.1f allocations per notification", allocs)
	if allocs > ceiling {
		t.Errorf("%.1f allocations per notification, want <= %d", allocs, ceiling)
	}
}
