package rpc_test

// Allocations measured (go1.26, go-json-experiment/json) for a round trip
// with the client and server sides together, and for a notification, by
// TestRoundTripAllocs and TestNotifyAllocs. Lower them when they drop.
// testing.AllocsPerRun truncates its mean to a whole number: a round trip
// costs 7.99 to 8.01 allocations (counted with runtime.MemStats over 2000
// round trips), which it reports as 7 or 8 from run to run, so its figure
// is 8. A request handled concurrently costs one more: the closure of the
// goroutine it runs on.
const (
	roundTripAllocs  = 8
	concurrentAllocs = 1
	notifyAllocs     = 3
)
