package rpc_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The allocation tests are skipped under the race detector, which inflates
// the counts, so run them without it too:
//
//	go test -run 'Alloc' -count=1 ./runtime/...

// TestRoundTripAllocs bounds the allocations of a complete in-memory round
// trip, client and server side together, for a small struct param.
func TestRoundTripAllocs(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		if raceEnabled {
			t.Skip("allocation counts are inflated under the race detector")
		}
		// Measured: see the log line; the ceiling leaves half an allocation.
		const ceiling = roundTripAllocs + 0.5
		for _, slots := range []int{1, 16} {
			t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", slots), func(t *testing.T) {
				client, _ := tr.clientServer(t, echoHandler, &rpc.Options{MaxConcurrentRequests: slots, Methods: []string{"bench/echo"}})
				p := &benchParams{SessionID: "sess-1", Text: "hello", Count: 7}
				roundTrip(t, client, p) // warm the pools
				allocs := testing.AllocsPerRun(2000, func() { roundTrip(t, client, p) })
				t.Logf("%.2f allocations per round trip", allocs)
				if allocs > ceiling {
					t.Errorf("%.2f allocations per round trip, want <= %.1f", allocs, ceiling)
				}
			})
		}
	})
}

// TestNotifyAllocs bounds the allocations of one in-memory notification,
// sender and receiver together: Notify, then the peer decodes it and its
// handler decodes the params.
func TestNotifyAllocs(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		if raceEnabled {
			t.Skip("allocation counts are inflated under the race detector")
		}
		const ceiling = notifyAllocs + 0.5
		handled := make(chan benchParams, 1)
		client, _ := tr.clientServer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			var p benchParams
			if err := json.Unmarshal(req.Params, &p); err != nil {
				t.Error(err)
			}
			handled <- p
			return nil, nil
		}), &rpc.Options{Methods: []string{"bench/update"}})
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
		t.Logf("%.2f allocations per notification", allocs)
		if allocs > ceiling {
			t.Errorf("%.2f allocations per notification, want <= %.1f", allocs, ceiling)
		}
	})
}

// TestInternedMethodNames: a request for a name in Options.Methods, or
// for one of the first 64 other names the peer sends, costs no string; a
// peer sending thousands of distinct names does not grow the table, so a
// name first sent after them costs a string every time.
func TestInternedMethodNames(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		if raceEnabled {
			t.Skip("allocation counts are inflated under the race detector")
		}
		handled := make(chan string, 1)
		client, _ := tr.clientServer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			handled <- req.Method
			return nil, nil
		}), &rpc.Options{Methods: []string{"seeded/name"}})
		ctx := context.Background()
		notify := func(method string) {
			if err := client.Notify(ctx, method, nil); err != nil {
				t.Fatal(err)
			}
			if got := <-handled; got != method {
				t.Fatalf("handler got method %q, want %q", got, method)
			}
		}
		names := make([]string, 3000)
		for i := range names {
			names[i] = fmt.Sprintf("learned/%04d/\u00e9", i)
		}
		for _, name := range names {
			notify(name)
		}
		cost := func(method string) float64 {
			notify(method)
			return testing.AllocsPerRun(500, func() { notify(method) })
		}
		seeded, early, late := cost("seeded/name"), cost(names[10]), cost(names[2999])
		t.Logf("allocations per notification: seeded name %.2f, name learned early %.2f, name sent after the table filled %.2f", seeded, early, late)
		if early > seeded+0.1 {
			t.Errorf("a learned name costs %.2f allocations, a seeded one %.2f", early, seeded)
		}
		if d := late - seeded; d < 0.9 || d > 1.1 {
			t.Errorf("a name sent after 3000 others costs %.2f allocations more than a seeded one, want 1 (the table stopped growing)", d)
		}
		// The names are those sent, whatever the table holds.
		for _, name := range []string{names[0], names[63], names[64], names[2999], "seeded/name"} {
			notify(name)
		}
	})
}

// TestLargeValueBytes bounds the bytes allocated by sending a 256 KiB
// value to a handler: the sender encodes it straight into its pooled
// buffer, and the receiver copies it once, as it queues the notification
// for its handler. An encoder that copies out of a buffer of its own,
// which it drops past 64 KiB, allocated the value and more again for
// every message.
func TestLargeValueBytes(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		if raceEnabled {
			t.Skip("allocation counts are inflated under the race detector")
		}
		const size = 256 << 10
		handled := make(chan int, 1)
		client, _ := tr.clientServer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			handled <- len(req.Params)
			return nil, nil
		}), nil)
		p := struct {
			Text string `json:"text"`
		}{strings.Repeat("x", size)}
		ctx := context.Background()
		send := func() {
			if err := client.Notify(ctx, "bench/large", &p); err != nil {
				t.Fatal(err)
			}
			if n := <-handled; n < size {
				t.Fatalf("handler got %d bytes of params", n)
			}
		}
		for range 5 {
			send() // warm the pools
		}
		const n = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			send()
		}
		runtime.ReadMemStats(&after)
		perSend := float64(after.TotalAlloc-before.TotalAlloc) / n
		t.Logf("%.0f bytes allocated per %d-byte value sent and received", perSend, size)
		if perSend > size+size/2 {
			t.Errorf("%.0f bytes allocated per %d-byte value, want at most %d", perSend, size, size+size/2)
		}
	})
}
