// Package rpc is bridgekit's connection engine: two peers that call and notify each other over one frame
// transport (package frame: NDJSON on stdio with [NewConn], a WebSocket or an HTTP stream with
// [NewTransportConn]), whatever the protocol family. A [Codec] turns a frame into a [Message] and back
// (package jsonrpc provides JSON-RPC 2.0, package envelope AgentPM's envelopes); correlation, dispatch,
// cancellation, backpressure and shutdown are written once, here. A [Conn] is both client and server:
// [Conn.Send] sends requests and notifications, a [Handler] serves the peer's.
//
// # Ordering and concurrency
//
// One goroutine reads the transport for the connection's whole life and routes replies straight to their
// callers, so slow handlers never delay them; it never runs a handler. Requests and notifications are handled
// in arrival order: notifications one at a time, requests one at a time too or, with
// [Options.MaxConcurrentRequests], started in order on a goroutine each and run concurrently
// ([Options.Ordered] makes each wait for the one before it, or its [Release]). [Options.Preempt] methods and
// cancel messages have a lane of their own that never waits behind other handlers. [Conn.Send] returns a
// reply, or an error reply, only once the notifications read ahead of it have been handled.
//
// # Hooks
//
// [Options.Screen] adds a program's gates to the protocol's, [Options.OnBadFrame] decides what becomes of a
// bad frame, [Options.NextID] numbers outbound requests, [Options.Observe] sees every frame ([SlogObserver])
// and [Options.Middleware] wraps the handler.
//
// # Cancellation
//
// A handler's context ends with the connection, at the request's deadline ([Options.RequestTimeout]) or when
// the protocol's cancel message for it ([CancelRule]) is read, even while every handler slot is busy. When
// the context of an outbound request ends, Send stops waiting and sends the protocol's cancel message for it.
//
// # Flow control and bounds
//
// The inbound queue is bounded in messages and bytes ([Options.QueueSize]); when it is full the reader stops
// reading and the peer's writes block. The upper half of the bound is a reserve that only a handler waiting
// inside Send for the peer's reply opens, so that the reply is still read. Every write, a reply's included, waits for the transport to take it,
// with its writer's context: a slow peer holds up the handlers that write to it, and nothing piles up. A
// frame over [Options.MaxFrame] bytes or [Options.MaxObjects] objects is refused undecoded, answered from its
// first bytes ([HeadDecoder]); a request reusing the id of one in flight is refused ([ErrDuplicateID]); error
// replies repeat at most [MaxEcho] bytes of the peer's input. Bad frames are answered as the protocol says
// and reported ([Options.OnFrameError], [Options.Logger], [Conn.Stats]) off the reading goroutine, bounded
// and rate-limited, so that neither a flood of garbage nor an undrained stderr stalls the connection. A
// notification whose handler cannot decode its params (an error matching ErrInvalidParams) is not answered
// but reported ([FrameBadParams]), through slog's default logger when Options.Logger is nil.
//
// # Shutdown
//
// Every end (the peer's input ending, Close, a write error, a fatal bad frame) goes through one decision
// point. When the peer's input ends (EOF, also after an unterminated last line), every request already read
// is answered and every reply written before [Conn.Done] is closed. [Conn.Close] ends everything at once and
// returns promptly even while a Read or Write is blocked. A failed write ends the connection with its error,
// which [Conn.Err] reports.
package rpc
