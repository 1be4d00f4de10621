package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

// Options configures a Conn. The zero value is ready to use.
type Options struct {
	// MaxFrame limits the size of an inbound line (default ndjson.DefaultMaxFrame). Longer lines are
	// answered with an error and skipped.
	MaxFrame int
	// MaxObjects bounds the JSON objects and arrays of an inbound line (default DefaultMaxObjects;
	// negative: no bound). A line with more is refused as one over MaxFrame is: decoded, each would cost
	// a hundred times its two bytes. Only lines over 2*MaxObjects bytes are counted.
	MaxObjects int
	// MaxConcurrentRequests bounds inbound request concurrency. At 0 or 1 requests are handled one at a
	// time in arrival order; above 1 they are started in arrival order and run concurrently, at most that
	// many at a time, on worker goroutines that are reused and retire once idle. Notifications are always
	// handled one at a time in arrival order.
	MaxConcurrentRequests int
	// Ordered, with MaxConcurrentRequests above 1, starts each request only once the one before it has
	// returned (its reply queued for writing, so replies go out in arrival order) or has called Release
	// with its context: a handler that must answer in turn, but may let the next request in while it goes
	// on, releases its turn (compare jsonrpc2's Async). Methods of the preempt lane never wait.
	Ordered bool
	// QueueSize and QueueBytes bound the inbound messages waiting for a handler (defaults 256 and 4 MiB).
	// When either is reached the connection stops reading, which throttles the peer. While a handler waits
	// inside Send for the peer's reply, reading goes on up to twice the bounds so that the reply can
	// arrive: requests arriving meanwhile are refused with ErrOverloaded, notifications are queued.
	QueueSize, QueueBytes int
	// WriteQueueBytes bounds the replies queued for a slow peer (default ndjson.DefaultQueueBytes); past
	// it handlers wait for their reply to be written.
	WriteQueueBytes int
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
	// OnFrameError, if set, is called from the diagnostics goroutine with every inbound line rejected or
	// dropped, undecodable notifications included; when it falls behind, reports are dropped and counted
	// (Conn.Stats) rather than slow the reader.
	OnFrameError func(*FrameError)
	// Screen, if set, is called on the reading goroutine with every decoded message before the connection
	// acts on it, to add a program's gates to the protocol's: a non-nil *FrameError refuses the message as
	// the codec refuses a bad line. m and its slices are valid only during the call.
	Screen func(m *Message) *FrameError
	// OnBadFrame, if set, is called on the reading goroutine, before the connection acts, with every line
	// that the codec or Screen refused or that is over MaxFrame (line is then its first ndjson.HeadSize
	// bytes). It may change fe: clear Reply to leave the line unanswered, set ID and Claimed
	// (KindResponse) to fail the call with that id. Returning true ends the connection with that line, as
	// Close does but without waiting: pending calls fail with an error matching ErrClosed and wrapping fe,
	// and nothing read after it is taken. line is valid only during the call.
	OnBadFrame func(fe *FrameError, line []byte) (end bool)
	// NextID, if set, numbers outbound requests (the codec writes the id from the number) instead of
	// counting up from 1 (to go on from the ids a previous connection used, say). It is called once per
	// request, from the goroutine sending it, and must return distinct numbers above 0.
	NextID func() uint64
	// Observe, if set, sees every frame read or written, once each, in each direction's order: a line
	// read before the connection acts on it (bad and oversized lines too), a frame written just before
	// its Write (error replies to bad lines and replies written at shutdown too). It runs on the reading
	// or writing goroutine, so it must be quick and must not call the connection. Unset, it costs
	// nothing. See SlogObserver.
	Observe func(Traffic)
	// DecodeOptions, if set, decode inbound params (Request.DecodeParams) and the results of calls: a
	// flavour's rules beyond the schema, such as a Harn runtime's contract (harn.BridgeConnOptions).
	DecodeOptions json.Options
	// Middleware wraps the connection's handler, the first element outermost (see Chain). It sees every
	// inbound request and notification, the handshake included.
	Middleware []Middleware
}

const (
	defaultQueueSize  = 256
	defaultQueueBytes = 4 << 20
	// DefaultMaxObjects is the default of Options.MaxObjects.
	DefaultMaxObjects = 1 << 17
)

// Conn is a connection on which both peers may send requests and notifications, framed by a Codec on a
// newline-delimited stream (see the package documentation). Send, Call, Notify and Close are safe for
// concurrent use.
type Conn struct {
	codec   Codec
	handler Handler
	log     *slog.Logger
	opts    Options
	rules   rules

	in     io.Reader
	out    io.Writer
	fr     *ndjson.Reader
	w      *ndjson.Writer
	msg    Message // the reader's scratch space
	inline inbound // the notification the reader handles itself

	ctx    context.Context // ends, with the reason, at shutdown
	cancel context.CancelCauseFunc
	// handlerCtx is the context of handlers that no cancel message or deadline can reach alone. detached
	// parents the others' contexts, which shutdown ends one by one (deriving them from handlerCtx would
	// register each with it, under its lock).
	handlerCtx, detached context.Context
	readerCtx            context.Context // of a notification handled inline (inline.go)
	watch                *time.Timer     // moves reading elsewhere when an inline handler runs long
	watching             atomic.Bool     // watch is armed

	q    inbox         // the main lane
	ctl  inbox         // the preempt lane
	sem  chan struct{} // concurrency slots; nil when requests run one at a time
	work chan *inbound // hands requests to idle workers
	seq  atomic.Uint64 // outbound request numbers

	methods map[string]string // interned method names (reader only)
	seeded  int

	mu      sync.Mutex
	pending map[uint64]chan callResult // nil once no reply can arrive
	running map[string]*inbound        // requests in flight (queued or running), by id
	cause   error                      // why the connection shut down
	phase   phase
	lanes   sync.WaitGroup // dispatchers and workers
	gate    gate           // handler calls, for Close to wait on
	ctlLane bool           // the preempt lane's dispatcher runs (reader only)

	diag     diagnostics
	done     chan struct{}
	closeErr error // of closing the streams, set before done closes
}

// callResult is the outcome of a call, sent once on the call's channel.
type callResult struct {
	body []byte
	err  error
	seq  uint64 // notifications received before the reply
}

// handlerKey is the context key of a *handlerMark, which marks the contexts of one Conn's handlers;
// reader marks a notification handled on the read goroutine.
type handlerKey struct{}

type handlerMark struct {
	conn   *Conn
	reader bool
}

// NewConn starts a connection reading frames from r and writing them to w, framed by codec. h handles
// inbound requests and notifications; if it is nil, requests are answered with ErrMethodNotFound and
// notifications are ignored. opts may be nil.
//
// The caller must call Close to release the connection, even after Done.
func NewConn(r io.Reader, w io.Writer, codec Codec, h Handler, opts *Options) *Conn {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.QueueSize <= 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = defaultQueueBytes
	}
	if o.MaxObjects == 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	c := &Conn{
		codec:   codec,
		handler: Chain(h, o.Middleware...),
		opts:    o,
		rules:   newRules(o.Cancels, o.Preempt),
		in:      r,
		out:     w,
		fr:      ndjson.NewReader(r, o.MaxFrame),
		pending: make(map[uint64]chan callResult),
		methods: make(map[string]string, len(o.Methods)),
		done:    make(chan struct{}),
	}
	wo := &ndjson.WriterOptions{QueueBytes: o.WriteQueueBytes, OnError: c.writeFailed}
	if o.Observe != nil {
		wo.OnWrite = c.observeOut
	}
	c.w = ndjson.NewWriter(w, wo)
	c.diag.init(o.Logger, o.OnFrameError)
	c.log = c.diag.logger() // records are handled off the goroutine that logs
	c.gate.cond.L = &c.gate.mu
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	mark := &handlerMark{conn: c}
	c.handlerCtx = context.WithValue(c.ctx, handlerKey{}, mark)
	c.detached = context.WithValue(context.Background(), handlerKey{}, mark)
	c.readerCtx = context.WithValue(c.ctx, handlerKey{}, &handlerMark{conn: c, reader: true})
	c.watch = time.AfterFunc(time.Hour, c.watchdog)
	c.watch.Stop()
	if o.MaxConcurrentRequests > 1 {
		c.sem = make(chan struct{}, o.MaxConcurrentRequests)
		c.work = make(chan *inbound)
	}
	for _, m := range o.Methods {
		c.methods[m] = m
	}
	for m := range c.rules.preempt {
		c.methods[m] = m
	}
	c.seeded = len(c.methods)
	c.q.init(o.QueueSize, o.QueueBytes)
	c.ctl.init(o.QueueSize, o.QueueBytes)
	c.lanes.Add(1)
	go c.dispatch(&c.q)
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
// inbound messages and unwritten replies are dropped, and r and w are closed if they are io.Closers. It
// waits for running handlers to return, but not for a Read or Write blocked in the underlying stream, a
// handler's own included (a goroutine stuck there goes on when that call returns). Close is idempotent;
// every call returns the result of closing r and w. It must not be called from a handler.
func (c *Conn) Close() error {
	c.end(ErrClosed, false)
	<-c.done
	return c.closeErr
}

// writeFailed is the writer's error callback: the peer can no longer be served.
func (c *Conn) writeFailed(err error) {
	c.log.Error("rpc: write failed; closing the connection", "err", err)
	c.end(fmt.Errorf("%w: write: %w", ErrClosed, err), false)
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
// pending calls fail, handler contexts end, queued input and unwritten replies are dropped and the
// streams closed; done closes once the handlers not blocked in a write have returned.
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
		c.ctl.close(false)
		go c.drain(cause)
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
	c.ctl.close(true)
	err := c.w.Close()
	if rc, ok := c.in.(io.Closer); ok && !sameObject(c.in, c.out) {
		err = errors.Join(err, rc.Close())
	}
	c.closeErr = err
	go func() {
		c.gate.wait()
		c.diag.stop()
		close(c.done)
	}()
}

// drain waits for the dispatchers to handle what was read and for the replies to be written, then ends
// the connection. Close or a write error may end it first: a worker may be stuck writing to a peer that
// reads nothing.
func (c *Conn) drain(cause error) {
	lanes := make(chan struct{})
	go func() { c.lanes.Wait(); close(lanes) }()
	select {
	case <-lanes:
	case <-c.ctx.Done():
		return
	}
	if err := c.w.Flush(c.ctx); err != nil && c.ctx.Err() == nil {
		cause = fmt.Errorf("%w (and a reply could not be written: %w)", cause, err)
	}
	c.end(cause, false)
}

// gate admits handler calls until shutdown and lets shutdown wait for those in progress, except the ones
// blocked writing to the peer (a handler's own Send), which only the stream can unblock.
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

// sameObject reports whether r and w are the same value, such as one net.Conn for both directions.
func sameObject(r io.Reader, w io.Writer) bool {
	t := reflect.TypeOf(r)
	return t == reflect.TypeOf(w) && t.Comparable() && any(r) == any(w)
}
