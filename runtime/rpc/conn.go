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

	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

// Options configures a Conn. The zero value is ready to use.
type Options struct {
	// MaxFrame limits the size of an inbound line (default
	// ndjson.DefaultMaxFrame). Longer lines are answered with an error and
	// skipped.
	MaxFrame int
	// MaxConcurrentRequests bounds inbound request concurrency. At 0 or 1
	// requests are handled one at a time in arrival order. Above 1 they are
	// started in arrival order and run concurrently, at most that many at a
	// time, on worker goroutines that are reused and retire once idle.
	// Notifications are always handled one at a time in arrival order.
	MaxConcurrentRequests int
	// QueueSize and QueueBytes bound the inbound messages waiting for a
	// handler (defaults 256 and 4 MiB). When either is reached the
	// connection stops reading, which throttles the peer. While a handler
	// waits inside Send for the peer's reply, reading goes on up to twice
	// the bounds, so that the reply can arrive: requests that arrive
	// meanwhile are refused with ErrOverloaded, notifications are queued.
	QueueSize, QueueBytes int
	// WriteQueueBytes bounds the bytes of replies queued for writing while
	// the peer is slow to read (default ndjson.DefaultQueueBytes); past it
	// handlers wait for their reply to be written.
	WriteQueueBytes int
	// RequestTimeout, if positive, is the deadline of each inbound request's
	// context.
	RequestTimeout time.Duration
	// Cancels are the protocol's cancel messages. Generated packages
	// provide their catalogue's (for example ACP's session/cancel).
	Cancels []CancelRule
	// Preempt lists methods handled as soon as they arrive, in order among
	// themselves, on a lane of their own that never waits behind other
	// handlers (control messages such as AgentPM's cancel_run). The methods
	// of Cancels are always preempted.
	Preempt []string
	// Methods seeds the table of method names the connection interns, so
	// that a request's Method costs no allocation; generated packages pass
	// their catalogue's. Up to 64 other names are interned as they arrive.
	Methods []string
	// Logger receives diagnostics, rate-limited and truncated, from a
	// goroutine of their own. Nil discards them.
	Logger *slog.Logger
	// OnFrameError, if set, is called with every inbound line that is
	// rejected or dropped, from the diagnostics goroutine; when it falls
	// behind, reports are dropped rather than slow the reader.
	OnFrameError func(*FrameError)
	// Middleware wraps the connection's handler, the first element
	// outermost: Middleware{a, b} serves a(b(h)). It sees every inbound
	// request and notification, the handshake included (see Chain).
	Middleware []Middleware
}

const (
	defaultQueueSize  = 256
	defaultQueueBytes = 4 << 20
)

// Conn is a connection on which both peers may send requests and
// notifications, framed by a Codec on a newline-delimited stream.
//
// One goroutine reads: it routes replies straight to their callers, applies
// cancel messages at once, and queues requests and notifications for a
// dispatcher goroutine, which handles them in arrival order (see
// Options.MaxConcurrentRequests). Send, Call, Notify and Close are safe for
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
	// handlerCtx is the context of handlers that no cancel message or
	// deadline can reach alone; it ends at shutdown. detached parents the
	// contexts of the others, which shutdown ends one by one (a context
	// derived from handlerCtx would register with it, under its lock, for
	// every request).
	handlerCtx, detached context.Context
	// readerCtx is the context of a notification handled by the read
	// goroutine itself; a request sent with it moves reading elsewhere.
	readerCtx context.Context
	watch     *time.Timer // moves reading elsewhere when such a handler runs long
	watching  atomic.Bool // watch is armed

	q    inbox         // the main lane
	ctl  inbox         // the preempt lane
	sem  chan struct{} // concurrency slots; nil when requests run one at a time
	work chan *inbound // hands requests to idle workers
	seq  atomic.Uint64 // outbound request numbers

	methods map[string]string // interned method names (reader only)
	seeded  int

	mu      sync.Mutex
	pending map[uint64]chan callResult // nil once no reply can arrive
	running map[string]*inbound        // requests with a context of their own, by id
	cause   error                      // why the connection shut down
	closing bool                       // shutting down (cancellable requests are cancelled at once)
	lanes   sync.WaitGroup             // dispatchers and workers
	gate    gate                       // handler calls, for Close to wait on
	ctlOnce sync.Once

	diag      diagnostics
	done      chan struct{}
	doneOnce  sync.Once
	abortOnce sync.Once
	closeErr  error
}

// callResult is the outcome of a call, sent once on the call's channel.
type callResult struct {
	body []byte
	err  error
	seq  uint64 // notifications received before the reply
}

// handlerKey is the context key of a *handlerMark.
type handlerKey struct{}

// handlerMark identifies the contexts of one Conn's handlers; reader marks
// a notification's handler running on the read goroutine.
type handlerMark struct {
	conn   *Conn
	reader bool
}

// NewConn starts a connection reading frames from r and writing them to w,
// framed by codec. h handles inbound requests and notifications; if it is
// nil, requests are answered with ErrMethodNotFound and notifications are
// ignored. opts may be nil.
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		codec:   codec,
		handler: Chain(h, o.Middleware...),
		log:     o.Logger,
		opts:    o,
		rules:   newRules(o.Cancels, o.Preempt),
		in:      r,
		out:     w,
		fr:      ndjson.NewReader(r, o.MaxFrame),
		pending: make(map[uint64]chan callResult),
		done:    make(chan struct{}),
	}
	c.w = ndjson.NewWriter(w, &ndjson.WriterOptions{QueueBytes: o.WriteQueueBytes, OnError: c.writeFailed})
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
	c.methods = make(map[string]string, len(o.Methods))
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

// Done returns a channel that is closed once the connection has finished:
// after the peer's end of input, every request read has been answered and
// every reply written; after Close or a write error, at once.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection finished, or nil while it runs. The
// error matches ErrClosed and, when the peer ended its input, io.EOF.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Close shuts the connection down: pending calls fail with ErrClosed,
// handler contexts end, queued inbound messages and unwritten replies are
// dropped, and r and w are closed if they implement io.Closer. It waits for
// running handlers to return, but not for a Read or Write that is blocked
// in the underlying stream, a handler's own included: a goroutine stuck
// there goes on when that call returns. Close is idempotent; every call
// returns the result of closing r and w. It must not be called from a
// handler.
func (c *Conn) Close() error {
	c.abort(ErrClosed)
	c.gate.wait()
	c.finished()
	return c.closeErr
}

// abort shuts the connection down at once, for Close and write errors.
func (c *Conn) abort(cause error) {
	c.abortOnce.Do(func() {
		c.shutdown(cause)
		c.q.close(true)
		c.ctl.close(true)
		err := c.w.Close()
		if rc, ok := c.in.(io.Closer); ok && !sameObject(c.in, c.out) {
			err = errors.Join(err, rc.Close())
		}
		c.closeErr = err
	})
}

// writeFailed is the writer's error callback: a reply or request could not
// be written, so the peer can no longer be served.
func (c *Conn) writeFailed(err error) {
	c.log.Error("rpc: write failed; closing the connection", "err", err)
	cause := fmt.Errorf("%w: write: %w", ErrClosed, err)
	// Shut down before the failed write returns, so that its caller's
	// error, like every later one, says why.
	c.shutdown(cause)
	go func() {
		c.abort(cause)
		c.gate.wait()
		c.finished()
	}()
}

// shutdown records the first cause, stops handlers from starting, ends
// handler contexts and fails every pending call.
func (c *Conn) shutdown(cause error) {
	c.mu.Lock()
	if c.cause == nil {
		c.cause = cause
	}
	c.closing = true
	c.gate.close()
	pending, running := c.pending, c.running
	c.pending, c.running = nil, nil
	c.mu.Unlock()
	c.cancel(cause)
	for _, it := range running {
		it.cancel(cause)
	}
	for _, ch := range pending {
		ch <- callResult{err: cause}
	}
}

// finished marks the connection done.
func (c *Conn) finished() {
	c.doneOnce.Do(func() {
		c.diag.stop()
		close(c.done)
	})
}

// endInput is called by the reader when the peer's input ends (cause):
// no reply can arrive any more, so pending calls fail, but everything
// already read is still handled and answered before the connection
// finishes.
func (c *Conn) endInput(cause error) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- callResult{err: cause}
	}
	c.q.close(false)
	c.ctl.close(false)
	// Wait for the dispatchers to handle what was read, unless Close (or a
	// write error) ends the connection first: a worker may be stuck writing
	// to a peer that reads nothing.
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
	c.abort(cause)
	c.gate.wait()
	c.finished()
}

// gate admits handler calls until the connection shuts down and lets
// shutdown wait for those in progress, except the ones blocked writing to
// the peer (a handler's own Send), which only the stream can unblock.
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
	if g.closed {
		return false
	}
	g.running++
	return true
}

// add records a handler call leaving (running -1) or entering and leaving
// a write of its own (writing +1, -1).
func (g *gate) add(running, writing int) {
	g.mu.Lock()
	g.running += running
	g.writing += writing
	if g.closed {
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

// close stops admitting handler calls.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// wait stops admitting handler calls and waits for those in progress that
// are not blocked in a write.
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

// sameObject reports whether r and w are the same value, such as one
// net.Conn used for both directions.
func sameObject(r io.Reader, w io.Writer) bool {
	t := reflect.TypeOf(r)
	return t == reflect.TypeOf(w) && t.Comparable() && any(r) == any(w)
}
