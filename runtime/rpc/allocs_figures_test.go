package rpc_test

// Allocations measured (go1.26, go-json-experiment/json) for a round trip
// with the client and server sides together, and for a notification, by
// TestRoundTripAllocs and TestNotifyAllocs. Lower them when they drop.
const (
	roundTripAllocs = 7
	notifyAllocs    = 3
)
