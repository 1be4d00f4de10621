package rpc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

// Options configures a Conn. The zero value is ready to use.
type Options struct {
	// MaxFrame limits the size of an inbound frame (default frame.DefaultMaxFrame). A longer frame is
	// answered with an error and skipped. NewConn gives it to the NDJSON transport, which refuses a longer
	// line as it reads it; over another transport the connection refuses a longer frame it is given.
	MaxFrame int
	// MaxObjects bounds the JSON objects and arrays of an inbound frame (default DefaultMaxObjects;
	// negative: no bound). A frame with more is refused as one over MaxFrame is: decoded, each would cost
	// a hundred times its two bytes. Only frames over 2*MaxObjects bytes are counted.
	MaxObjects int
	// MaxConcurrentRequests bounds inbound request concurrency. At 0 or 1 requests are handled one at a
	// time in arrival order; above 1 they are started in arrival order, each on a worker goroutine
	// (a worker waits for the next request once it has answered), and run concurrently, at most that many at a time. Notifications are always handled one at a time
	// in arrival order.
	MaxConcurrentRequests int
	// Ordered, with MaxConcurrentRequests above 1, starts each request only once the one before it has
	// returned (its reply written, so replies go out in arrival order) or has called Release with its
	// context: a handler that must answer in turn, but may let the next request in while it goes on,
	// releases its turn (compare jsonrpc2's Async). Methods of the preempt lane never wait.
	Ordered bool
	// QueueSize and QueueBytes bound the inbound messages waiting for a handler (defaults 512 and 8 MiB;
	// QueueSize is at least 2): the queue never holds more, but for the one frame read while there was
	// room. Their upper half is a reserve. When the queue reaches the bound less the reserve, the
	// connection stops reading, which throttles the peer. While a handler waits inside Send for the
	// peer's reply, reading goes on into the reserve so that the reply can arrive: requests arriving
	// meanwhile are refused with ErrOverloaded, notifications are queued. A full reserve stops reading
	// again, and the handler's Send waits for its context.
	QueueSize, QueueBytes int
	// RequestTimeout, if positive, is the deadline of each inbound request's context.
	RequestTimeout time.Duration
	// Cancels are the protocol's cancel messages (generated packages pass their catalogue's).
	Cancels []CancelRule
	// Preempt lists methods handled as soon as they arrive, in order among themselves, on a lane of their
	// own that never waits behind other handlers. The methods of Cancels are always preempted.
	Preempt []string
	// Methods seeds the method names the connection interns, so that a request's Method costs no
	// allocation; up to 64 other names are interned as they arrive.
	Methods []string
	// Logger receives diagnostics, rate-limited and truncated, from a goroutine of their own. Nil
	// discards them, except reports of notifications dropped because their params do not decode
	// (FrameBadParams), which go to slog's default logger.
	Logger *slog.Logger
	// OnFrameError, if set, is called from the diagnostics goroutine with every inbound frame rejected or
	// dropped, undecodable notifications included; when it falls behind, reports are dropped and counted
	// (Conn.Stats) rather than slow the reader.
	OnFrameError func(*FrameError)
	// Screen, if set, is called on the reading goroutine with every decoded message before the connection
	// acts on it, to add a program's gates to the protocol's: a non-nil *FrameError refuses the message as
	// the codec refuses a bad frame. m and its slices are valid only during the call.
	Screen func(m *Message) *FrameError
	// OnBadFrame, if set, is called on the reading goroutine, before the connection acts, with every frame
	// that the codec or Screen refused or that is over MaxFrame (line is then its first frame.HeadSize
	// bytes). It may change fe: clear Reply to leave the frame unanswered, set ID and Claimed
	// (KindResponse) to fail the call with that id. Returning true ends the connection with that frame, as
	// Close does but without waiting: pending calls fail with an error matching ErrClosed and wrapping fe,
	// and nothing read after it is taken. line is valid only during the call.
	OnBadFrame func(fe *FrameError, line []byte) (end bool)
	// NextID, if set, numbers outbound requests (the codec writes the id from the number) instead of
	// counting up from 1 (to go on from the ids a previous connection used, say). It is called once per
	// request, from the goroutine sending it, and must return distinct numbers above 0.
	NextID func() uint64
	// Observe, if set, sees every frame read or written, once each, in each direction's order: a frame
	// read before the connection acts on it (bad and oversized ones too), a frame written just before it
	// is handed to the transport (error replies to bad frames and replies written at shutdown too). It runs
	// on the reading or writing goroutine, so it must be quick and must not call the connection; while it
	// is set, frames are handed to the transport one at a time. Unset, it costs nothing. See SlogObserver.
	Observe func(Traffic)
	// DecodeOptions, if set, decode inbound params (Request.DecodeParams) and the results of calls: a
	// flavour's rules beyond the schema, such as a Harn runtime's contract (harn.BridgeConnOptions).
	DecodeOptions json.Options
	// Middleware wraps the connection's handler, the first element outermost (see Chain). It sees every
	// inbound request and notification, the handshake included.
	Middleware []Middleware
}

const (
	defaultQueueSize  = 512
	defaultQueueBytes = 8 << 20
	// DefaultMaxObjects is the default of Options.MaxObjects.
	DefaultMaxObjects = 1 << 17
)

// Conn is a connection on which both peers may send requests and notifications, framed by a Codec, over a
// frame transport (see the package documentation). Send, Call, Notify and Close are safe for concurrent use.
type Conn struct {
	codec   Codec
	handler Handler
	t       frame.Transport
	opts    Options
	rules   rules
	log     *slog.Logger
	diag    diagnostics

	ctx    context.Context // ends, with the reason, at shutdown
	cancel context.CancelCauseFunc
	// handlerCtx is the context of handlers that no cancel message or deadline can reach alone. detached
	// parents the others' contexts, which shutdown ends one by one (deriving them from handlerCtx would
	// register each with it, under its lock).
	handlerCtx, detached context.Context

	q       queue
	sem     chan struct{} // concurrency slots; nil when requests run one at a time
	workers workers       // the idle workers of concurrent requests
	wlock   chan struct{} // with Observe: held while a frame is observed and handed to the transport
	seq     atomic.Uint64 // outbound request numbers
	reading reader        // the reader's own state
	// replies recycles the buffered channels on which calls receive replies: a connection's own, so that a
	// testing/synctest bubble keeps its channels to itself.
	replies sync.Pool

	mu      sync.Mutex
	pending map[uint64]chan callResult // nil once no reply can arrive
	running map[string]*inbound        // requests in flight (queued or running), by id
	cause   error                      // why the connection shut down
	phase   phase
	lanes   sync.WaitGroup // the lanes and the handlers they started
	gate    gate           // handler calls, for Close to wait on

	done     chan struct{}
	closeErr error // of closing the transport, set before done closes
}

// callResult is the outcome of a call, sent once on the call's channel.
type callResult struct {
	body []byte
	err  error
	seq  uint64 // notifications received before the reply
}

// handlerKey is the context key of a *handlerMark, which marks the contexts of one Conn's handlers.
type handlerKey struct{}

type handlerMark struct{ conn *Conn }

// NewConn starts a connection reading newline-delimited frames from r and writing them to w (the NDJSON
// transport, ndjson.NewTransport, bounded by opts.MaxFrame), framed by codec. h handles inbound requests and
// notifications; if it is nil, requests are answered with ErrMethodNotFound and notifications are ignored.
// opts may be nil.
//
// The caller must call Close to release the connection, even after Done. Close closes r and w if they are
// io.Closers.
func NewConn(r io.Reader, w io.Writer, codec Codec, h Handler, opts *Options) *Conn {
	var max int
	if opts != nil {
		max = opts.MaxFrame
	}
	return NewTransportConn(ndjson.NewTransport(r, w, &ndjson.Options{MaxFrame: max}), codec, h, opts)
}

// NewTransportConn starts a connection over the frame transport t, framed by codec; see NewConn. The
// connection reads t from one goroutine and writes to it from several at once; Close closes t.
func NewTransportConn(t frame.Transport, codec Codec, h Handler, opts *Options) *Conn {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = frame.DefaultMaxFrame
	}
	if o.MaxObjects == 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	c := &Conn{
		codec:   codec,
		handler: Chain(h, o.Middleware...),
		t:       t,
		opts:    o,
		rules:   newRules(o.Cancels, o.Preempt),
		pending: make(map[uint64]chan callResult),
		done:    make(chan struct{}),
	}
	c.replies.New = func() any { return make(chan callResult, 1) }
	c.diag.init(o.Logger, o.OnFrameError)
	c.log = c.diag.logger() // records are handled off the goroutine that logs
	c.gate.cond.L = &c.gate.mu
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	mark := &handlerMark{conn: c}
	c.handlerCtx = context.WithValue(c.ctx, handlerKey{}, mark)
	c.detached = context.WithValue(context.Background(), handlerKey{}, mark)
	if o.MaxConcurrentRequests > 1 {
		c.sem = make(chan struct{}, o.MaxConcurrentRequests)
	}
	if o.Observe != nil {
		c.wlock = make(chan struct{}, 1)
	}
	c.reading.init(&o, c.rules)
	c.q.init(o.QueueSize, o.QueueBytes)
	c.lanes.Add(1)
	go c.lane(&c.q.main)
	go c.read()
	return c
}

// Done returns a channel that is closed once the connection has finished: after the peer's end of input,
// every request read has been answered and every reply written; after Close or a write error, at once.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection finished, or nil while it runs. The error matches ErrClosed and, when
// the peer ended its input, io.EOF.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Close shuts the connection down: pending calls fail with ErrClosed, handler contexts end, queued
// inbound messages are dropped, and the transport is closed (NewConn's r and w, if they are io.Closers). It
// waits for running handlers to return, but not for a Read or Write blocked in the transport, a handler's
// own included (a goroutine stuck there goes on when that call returns). Close is idempotent; every call
// returns the result of closing the transport. It must not be called from a handler.
func (c *Conn) Close() error {
	c.end(ErrClosed, false)
	<-c.done
	return c.closeErr
}

// phase is where a connection is in its life; it only moves forward, in end.
type phase uint8

const (
	running  phase = iota
	draining       // the peer's input ended: what was read is handled and answered first
	closing        // shut down: done closes once the handlers have returned
)

// end is the one decision point for shutdown, whoever calls for it: the reader at the end of input
// (graceful), Close, a write error, a bad frame that OnBadFrame makes fatal, or the end of draining.
//
// Graceful, it fails the pending calls (no reply can arrive) and lets what was read be handled and
// answered first. Otherwise it shuts down before it returns, so that every later error says why (cause):
// pending calls fail, handler contexts end, queued input is dropped and the transport closed; done closes
// once the handlers not blocked in a write have returned.
func (c *Conn) end(cause error, graceful bool) {
	c.mu.Lock()
	if c.phase == closing || graceful && c.phase == draining {
		c.mu.Unlock()
		return
	}
	pending, running := c.pending, c.running
	c.pending = nil
	if graceful {
		c.phase, running = draining, nil
	} else {
		c.phase, c.cause, c.running = closing, cause, nil
	}
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- callResult{err: cause}
	}
	if graceful {
		c.q.close(false)
		go func() {
			c.lanes.Wait() // every message read handled, every reply written
			c.end(cause, false)
		}()
		return
	}
	c.gate.close()
	c.cancel(cause)
	for _, it := range running {
		if it.cancel != nil {
			it.cancel(cause)
		}
	}
	c.q.close(true)
	c.closeErr = c.t.Close()
	go func() {
		c.gate.wait()
		c.diag.stop()
		close(c.done)
	}()
}

// gate admits handler calls until shutdown and lets shutdown wait for those in progress, except the ones
// blocked writing to the peer (a handler's own Send), which only the transport can unblock.
type gate struct {
	mu      sync.Mutex
	cond    sync.Cond
	closed  bool
	running int // handler calls in progress
	writing int // of them, inside a write of their own
}

// enter admits a handler call unless the connection is shutting down.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.running++
	}
	return !g.closed
}

// add records a handler call leaving (running -1) or entering and leaving a write of its own (writing
// +1, -1).
func (g *gate) add(running, writing int) {
	g.mu.Lock()
	g.running += running
	g.writing += writing
	if g.closed {
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// wait closes the gate and waits for the handler calls in progress that are not blocked in a write.
func (g *gate) wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.running > g.writing {
		g.cond.Wait()
	}
}

// mark returns the handler mark carried by ctx if it belongs to c.
func (c *Conn) mark(ctx context.Context) *handlerMark {
	if m, ok := ctx.Value(handlerKey{}).(*handlerMark); ok && m.conn == c {
		return m
	}
	return nil
}

// write is the connection's one write path: it hands frame to the transport, waiting with ctx. A handler's
// write (mark set) is counted, so that Close does not wait for a handler stuck in it. A failure of the
// transport, not of ctx, ends the connection, whose cause the error then is.
func (c *Conn) write(ctx context.Context, mark *handlerMark, f []byte) error {
	if mark != nil {
		c.gate.add(0, 1)
		defer c.gate.add(0, -1)
	}
	var err error
	if c.wlock == nil {
		err = c.t.Write(ctx, f)
	} else {
		select {
		case c.wlock <- struct{}{}:
		case <-ctx.Done():
			return c.sendError(ctx.Err())
		}
		c.observeOut(f)
		err = c.t.Write(ctx, f)
		<-c.wlock
	}
	if err != nil && ctx.Err() == nil && c.Err() == nil {
		c.log.Error("rpc: write failed; closing the connection", "err", err)
		c.end(fmt.Errorf("%w: write: %w", ErrClosed, err), false)
	}
	if err != nil {
		return c.sendError(err)
	}
	return nil
}

var errNoInput = fmt.Errorf("%w: the peer's input has ended", ErrClosed)

// sendError explains a failed write or wait: why the connection shut down, if it did, else err.
func (c *Conn) sendError(err error) error {
	if cause := c.Err(); cause != nil {
		return cause
	}
	return err
}
