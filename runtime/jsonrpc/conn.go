package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/go-json-experiment/json/jsontext"
)

// Options configures a Conn. The zero value is ready to use.
type Options struct {
	// MaxFrame limits the size of an inbound line (default
	// ndjson.DefaultMaxFrame). Longer lines are answered with an error and
	// skipped.
	MaxFrame int
	// MaxConcurrentRequests bounds inbound request concurrency. At 0 or 1
	// requests are handled one at a time in arrival order. Above 1 they are
	// started in arrival order, at most MaxConcurrentRequests at a time,
	// each on a worker goroutine of its own; workers are reused and exit
	// once idle for a second or two. Notifications are always handled one
	// at a time in arrival order.
	//
	// A handler may call back into the peer, which may in turn call us; with
	// requests handled one at a time that inner request waits until the
	// outer one is done, so chains of callbacks deeper than one level need
	// MaxConcurrentRequests above 1.
	MaxConcurrentRequests int
	// QueueSize is the soft cap of the inbound queue (default 256). When
	// that many requests and notifications wait for the dispatcher the
	// connection stops reading, which throttles the peer. It keeps reading,
	// so that responses can arrive, while a handler that holds up the
	// dispatcher waits inside Call: a handler running on the dispatcher, or
	// any handler while the dispatcher waits for a concurrency slot.
	// Handlers are recognised by their context, so a handler calling back
	// into the peer must pass its ctx (or a context derived from it).
	QueueSize int
	// Logger receives diagnostics. Nil discards them.
	Logger *slog.Logger
	// OnFrameError, if set, is called from the read goroutine with a
	// *FrameError for every inbound line that is rejected or dropped.
	OnFrameError func(error)
}

const defaultQueueSize = 256

// Conn is a JSON-RPC 2.0 connection over a newline-delimited JSON stream on
// which both peers may send requests and notifications.
//
// A Conn runs a read goroutine, which routes responses straight to their
// callers, and a dispatcher goroutine, which handles inbound notifications
// and requests in arrival order. Call, Notify and Close are safe for
// concurrent use.
type Conn struct {
	handler      Handler
	log          *slog.Logger
	onFrameError func(error)

	in   io.Reader
	out  io.Writer
	fr   *ndjson.Reader
	w    *ndjson.Writer
	env  envelope // scratch space of the read goroutine
	scan scanner  // the read goroutine's fast envelope scanner
	// Method names the read goroutine has interned, by their raw JSON.
	methods map[string]string
	// The read goroutine's envelope decoder, reset on each frame; decBuf
	// aliases the frame, which the decoder then reads without copying.
	dec    jsontext.Decoder
	decBuf bytes.Buffer

	ctx       context.Context // cancelled, with the shutdown reason, at shutdown
	cancel    context.CancelCauseFunc
	inlineCtx context.Context // for handlers run on the dispatcher goroutine
	asyncCtx  context.Context // for handlers run on workers
	sem       chan struct{}   // concurrency slots; nil when requests run inline
	work      chan *Request   // hands requests to idle workers (unbuffered)

	q      inbox
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan callResult // nil after shutdown

	wg        sync.WaitGroup // the dispatcher and handler goroutines
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// callResult is the outcome of a call, sent once on the call's channel.
type callResult struct {
	result jsontext.Value
	err    error
	seq    uint64 // notifications received before the response
}

// handlerKey is the context key of a *handlerMark.
type handlerKey struct{}

// handlerMark identifies the contexts of one Conn's handlers.
type handlerMark struct {
	conn   *Conn
	inline bool // the handler runs on the dispatcher goroutine
}

// NewConn starts a connection reading frames from r and writing them to w.
// h handles inbound requests and notifications; if it is nil requests are
// answered with CodeMethodNotFound and notifications are ignored. opts may
// be nil.
//
// The caller must call Close to release the connection, even after Done.
func NewConn(r io.Reader, w io.Writer, h Handler, opts *Options) *Conn {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.QueueSize <= 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		handler:      h,
		log:          o.Logger,
		onFrameError: o.OnFrameError,
		in:           r,
		out:          w,
		fr:           ndjson.NewReader(r, o.MaxFrame),
		w:            ndjson.NewWriter(w),
		pending:      make(map[int64]chan callResult),
		done:         make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.inlineCtx = context.WithValue(c.ctx, handlerKey{}, &handlerMark{conn: c, inline: true})
	c.asyncCtx = context.WithValue(c.ctx, handlerKey{}, &handlerMark{conn: c})
	if o.MaxConcurrentRequests > 1 {
		c.sem = make(chan struct{}, o.MaxConcurrentRequests)
		c.work = make(chan *Request)
	}
	c.q.init(o.QueueSize)
	c.wg.Add(1)
	go c.dispatch()
	go c.read()
	return c
}

// Done returns a channel that is closed once the connection has shut down
// (peer EOF, read error or Close) and all its goroutines have finished.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection shut down, or nil while it is running. The
// error matches ErrClosed and, when the peer closed the stream, io.EOF.
func (c *Conn) Err() error { return context.Cause(c.ctx) }

// Close shuts the connection down: pending calls fail with ErrClosed,
// handler contexts are cancelled, queued inbound messages are dropped, and r
// and w are closed if they implement io.Closer. It then waits for the
// connection's goroutines, including running handlers, to finish; so it
// must not be called from a handler. Close is idempotent; every call returns
// the result of closing r and w.
//
// Close cannot interrupt a blocked Read on r or Write on w that does not
// implement io.Closer; it waits for them to return.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.shutdown(ErrClosed)
		c.q.close(true)
		err := c.w.Close()
		if rc, ok := c.in.(io.Closer); ok && !sameObject(c.in, c.out) {
			err = errors.Join(err, rc.Close())
		}
		c.closeErr = err
	})
	<-c.done
	return c.closeErr
}

// shutdown records the first shutdown reason, cancels handler contexts and
// fails every pending call.
func (c *Conn) shutdown(cause error) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	if pending != nil {
		c.cancel(cause)
	}
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- callResult{err: cause}
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
