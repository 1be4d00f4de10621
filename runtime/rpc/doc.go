// Package rpc is bridgekit's connection engine: two peers that call and
// notify each other over one newline-delimited stream, whatever the
// protocol family. A [Codec] turns a line into a [Message] (kind, raw id,
// method, qualifier, body) and back; package jsonrpc provides JSON-RPC 2.0
// and package envelope AgentPM's envelopes. Correlation, dispatch,
// cancellation, backpressure and shutdown are written once, here.
//
// A [Conn] is both client and server: [Conn.Send] (and its shorthands
// Call and Notify) sends requests and notifications, and a [Handler]
// serves the peer's. Generated packages (gen/...) wrap both in typed
// handler structs and peers.
//
// # Ordering and concurrency
//
// One goroutine reads the stream. Replies are routed by it straight to the
// waiting caller, so they are never delayed by slow handlers. Requests and
// notifications are queued and handled in arrival order by a dispatcher:
// notifications one at a time, requests one at a time too (the default) or,
// with [Options.MaxConcurrentRequests], started in order and run
// concurrently by reused workers. The reader hands over every line it has
// already buffered at once, so a burst costs one wake-up, not one per line.
// A notification that arrives with nothing queued is handled by the reading
// goroutine itself, sparing the hand-off; should its handler send a request
// or run longer than a millisecond, reading moves on to a new goroutine, so
// replies and cancel messages are still read and the order stays the same.
// Handlers therefore must not assume which goroutine runs them.
// Methods listed in [Options.Preempt], and every cancel message, are handled
// on a lane of their own that never waits behind other handlers. With
// [Options.Ordered], concurrent requests also wait for their turn: each
// starts once the one before it has returned or called [Release].
//
// # Hooks
//
// A program adds its own rules without wrapping the Codec, which is framing
// and nothing else: [Options.Screen] adds gates to the protocol's,
// [Options.OnBadFrame] decides, before the connection acts, what becomes of
// a bad line (answered or not, failing a call, ending the connection),
// [Options.NextID] numbers outbound requests, and [Options.Observe] sees
// every frame in and out ([SlogObserver] logs them, redacted).
//
// When a reply arrives after some notifications, Send returns only once
// those notifications have been handled, so a caller sees every progress
// update sent before the final result.
//
// # Cancellation
//
// A handler's context ends when the connection is closed, when the
// request's deadline ([Options.RequestTimeout]) passes, or when the
// protocol's cancel message for it arrives ([CancelRule]: ACP's
// session/cancel for the session's running session/prompt, $/cancel_request
// by id, AgentPM's cancel_run). Cancel messages are applied by the reader
// the moment they are read, even when every handler slot is busy. A request
// that a cancel message or a deadline can reach gets a context of its own;
// the others share the connection's, which costs nothing. When the
// context of an outbound request ends, Send stops waiting and sends the
// protocol's cancel message for it.
//
// # Flow control and bounds
//
// The inbound queue is bounded in messages and in bytes; when it is full the
// reader stops reading and the peer's writes block. Replies waiting for a
// slow peer are bounded in bytes too. Error replies never repeat more than
// [MaxEcho] bytes of the peer's method names. Bad lines are answered as the
// protocol says and reported through [Options.OnFrameError] and the logger
// from a goroutine of their own, rate-limited, so a flood of garbage or an
// undrained stderr never stalls the connection; [Conn.Stats] counts them.
// A notification whose handler cannot decode its params (an error matching
// ErrInvalidParams) is not answered but reported ([FrameBadParams]), through
// slog's default logger when Options.Logger is nil. A request whose id is
// that of a request still in flight is refused with [ErrDuplicateID], so
// that one id never carries two answers. A line over [Options.MaxFrame] is
// dropped unbuffered but for its first bytes, from which a codec that
// implements [HeadDecoder] (both of ours do) tells what it was: a request
// is refused under its own id, a reply fails its call at once. A line of
// more JSON objects and arrays than [Options.MaxObjects] is refused in the
// same way ([ErrTooManyObjects]) before anything decodes it: decoded into
// Go values, a frame of "{}"s would take a hundred times its size.
// [Options.DecodeOptions] gives a protocol flavour's decode options to
// [Request.DecodeParams] and to every call's result.
//
// # Shutdown
//
// Every end (the peer's input ending, Close, a write error, a bad frame
// that [Options.OnBadFrame] makes fatal) goes through one decision point.
// When the peer's input ends (EOF, also after an unterminated last line),
// every request already read is handled and answered and every reply is
// written before [Conn.Done] is closed. [Conn.Close] ends everything at
// once and returns promptly even while a Read or Write is blocked. A failed
// write (a closed pipe, a full disk) ends the connection with the write's
// error, which [Conn.Err] reports.
package rpc
