// Package jsonrpc implements JSON-RPC 2.0 over newline-delimited JSON (see
// package ndjson) for peers that call each other on one stream, such as a
// Harn runtime and its host.
//
// A [Conn] is both client and server: [Conn.Call] and [Conn.Notify] send
// requests and notifications, and a [Handler] serves those of the peer.
//
// # Ordering and concurrency
//
// One goroutine reads the stream. Responses are routed by it directly to
// the waiting caller, so they are never delayed by slow handlers. Requests
// and notifications enter a single queue served in arrival order by a
// dispatcher goroutine: notifications are handled one at a time, and
// requests either one at a time as well (the default) or, with
// [Options.MaxConcurrentRequests] above 1, started in order and run
// concurrently up to that bound by worker goroutines, which are started on
// demand, reused from one request to the next and retired after a second
// or two without work. (A concurrent request that arrives when the
// dispatcher has caught up is started by the reading goroutine directly;
// the order is the same.)
//
// When a response arrives after some notifications, Call returns only once
// those notifications have been handled, so a caller sees every progress
// update sent before the final result.
//
// # Flow control
//
// When the queue holds [Options.QueueSize] messages the reader stops
// reading and the peer's writes block; nothing is dropped. To avoid
// deadlocks the reader keeps going while a handler that holds up the
// dispatcher (one running on it, or any handler while the dispatcher waits
// for a concurrency slot) waits for a response inside Call, so handlers may
// call back into the peer with their context.
//
// # Robustness
//
// Malformed, oversized or invalid lines are answered with the appropriate
// JSON-RPC error, reported through [Options.OnFrameError] and skipped; the
// connection stays up. Handler panics are recovered and answered with
// [CodeInternalError].
//
// # Encoding
//
// Messages are encoded in a single pass into pooled buffers with
// github.com/go-json-experiment/json. Inbound messages are checked and
// split into their members by a one-pass scanner, or by jsontext for the
// rare message it leaves alone. A message is written with one Write
// call when the stream is idle; messages that arrive while a Write is in
// progress are written together with the next one. While more inbound
// messages wait, the dispatcher queues each reply and goes on to the next
// message instead of waiting for the peer to read it; a worker whose reply
// finds another being written leaves it to that writer the same way.
// Inbound request ids are echoed byte for byte; outbound ids are integers
// counting up from 1.
package jsonrpc
