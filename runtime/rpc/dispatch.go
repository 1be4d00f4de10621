package rpc

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
)

// lane is a lane's goroutine: it takes the lane's items in arrival order and handles notifications itself.
// Requests it handles itself too, unless they may run concurrently (main lane, MaxConcurrentRequests above
// 1): then it starts each on a worker once a concurrency slot is free and, with Ordered, once the one
// before has returned or released its turn.
func (c *Conn) lane(l *lane) {
	defer c.lanes.Done()
	concurrent := l == &c.q.main && c.sem != nil
	if concurrent {
		defer c.workers.stop()
	}
	for {
		it, ok := c.q.pop(l)
		switch {
		case !ok:
			return
		case it.Kind == KindNotification:
			c.serve(it)
			if l == &c.q.main {
				c.q.handledOne()
			}
		case !concurrent:
			c.serve(it)
		case c.acquire():
			c.start(it)
			if it.turn != nil { // Ordered: the next waits for its turn
				select {
				case <-it.turn:
				case <-c.ctx.Done():
				}
			}
		default:
			c.finish(it)
		}
	}
}

// workers are the idle workers: goroutines that handled a request and wait, each on a channel of its own,
// for the next one. A worker keeps the stack its handlers grew, which a goroutine per request would grow
// (and copy) anew for every handler that decodes JSON. A worker is idle before it frees its concurrency
// slot, so a request that takes the slot finds it: there are never more workers than slots.
type workers struct {
	mu      sync.Mutex
	idle    []chan *inbound // last in, first out: the warmest stack first
	stopped bool
}

// start hands it, for which the main lane holds a concurrency slot, to an idle worker or a new one.
func (c *Conn) start(it *inbound) {
	w := &c.workers
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		next := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		next <- it
		return
	}
	w.mu.Unlock()
	c.lanes.Add(1)
	go c.worker(it)
}

// worker handles it, then the requests start hands it, until the main lane ends.
func (c *Conn) worker(it *inbound) {
	defer c.lanes.Done()
	next := make(chan *inbound, 1)
	for ok := true; ok; it, ok = <-next {
		c.serve(it)
		w := &c.workers
		w.mu.Lock()
		stopped := w.stopped
		if !stopped {
			w.idle = append(w.idle, next)
		}
		w.mu.Unlock()
		<-c.sem
		if stopped {
			return
		}
	}
}

// stop lets the idle workers exit, and those still busy once they finish.
func (w *workers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, next := range w.idle {
		close(next)
	}
	w.idle = nil
}

// tryAcquire takes a concurrency slot if one is free.
func (c *Conn) tryAcquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// acquire takes a concurrency slot, failing when the connection shuts down.
func (c *Conn) acquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// serve runs the handler for it and, for a request, writes the reply.
func (c *Conn) serve(it *inbound) {
	defer c.finish(it)
	if !c.gate.enter() {
		return
	}
	ctx := it.ctx
	if ctx == nil {
		ctx = c.handlerCtx
	}
	if it.turn != nil {
		ctx = context.WithValue(ctx, turnKey{}, it)
	}
	result, err := c.invoke(ctx, &it.Request)
	c.gate.add(-1, 0)
	if it.Kind == KindNotification {
		switch {
		case err == nil:
		case errors.Is(err, ErrInvalidParams):
			// Dropped: the program hears of it, whether it has a logger or not.
			c.diag.report(&FrameError{Kind: FrameBadParams, Err: err, ID: it.ID, Method: it.Method, Snippet: snippet(it.frame)}, it.frame)
		default:
			level := slog.LevelWarn
			if errors.Is(err, ErrMethodNotFound) {
				level = slog.LevelDebug
			}
			c.log.Log(c.ctx, level, "rpc: notification handler failed", "method", Truncate(it.Method, MaxEcho), "err", err)
		}
		return
	}
	var e *Error
	if err != nil {
		e = replyError(err, ctx.Err())
	}
	// The id is free once its reply can reach the peer, which may then reuse it at once.
	c.unregister(it)
	c.reply(it, result, e)
}

// invoke runs the handler, turning a panic into ErrInternal.
func (c *Conn) invoke(ctx context.Context, req *Request) (result any, err error) {
	if c.handler == nil {
		return nil, MethodNotFound(req.Method)
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("rpc: handler panicked", "method", Truncate(req.Method, MaxEcho), "panic", p, "stack", string(debug.Stack()))
			result, err = nil, ErrInternal.with("internal error: handler panicked")
		}
	}()
	return c.handler.Handle(ctx, req)
}

// reply writes the reply to a request, waiting for the transport to take it.
func (c *Conn) reply(it *inbound, result any, e *Error) {
	b := getBuffer()
	defer putBuffer(b)
	h := &b.h
	*h = Header{Kind: KindResponse, ID: it.ID, Method: it.Method, Qualifier: it.Qualifier}
	if e == nil {
		if _, err := c.encode(b, h, result); err != nil {
			c.log.Error("rpc: cannot marshal result", "method", Truncate(it.Method, MaxEcho), "err", err)
			e = ErrInternal.with("internal error: cannot marshal result: " + err.Error())
		}
	}
	if e != nil {
		h.Kind = KindError
		b.B = c.codec.AppendError(b.B[:0], h, e)
	}
	if err := c.write(c.ctx, nil, b.B); err != nil {
		c.log.Debug("rpc: reply not sent", "id", Truncate(it.ID.String(), MaxEcho), "err", err)
	}
}

// turnKey is the context key of an Ordered request's *inbound.
type turnKey struct{}

// Release lets the request whose handler has ctx give up its turn, on a connection with
// Options.Ordered: the next request starts while this one goes on. It does nothing for other contexts,
// or called again.
func Release(ctx context.Context) {
	if it, ok := ctx.Value(turnKey{}).(*inbound); ok {
		it.releaseTurn()
	}
}

func (it *inbound) releaseTurn() {
	if it.turn != nil && it.released.CompareAndSwap(false, true) {
		close(it.turn)
	}
}

// finish releases what a handled message held.
func (c *Conn) finish(it *inbound) {
	it.releaseTurn()
	c.unregister(it)
	it.release()
}

// unregister removes a request from those in flight.
func (c *Conn) unregister(it *inbound) {
	if !it.registered {
		return
	}
	it.registered = false
	c.mu.Lock()
	if c.running[it.ID.raw] == it {
		delete(c.running, it.ID.raw)
	}
	c.mu.Unlock()
}

// release ends a request's context.
func (it *inbound) release() {
	if it.cancel != nil {
		it.cancel(nil)
	}
	if it.stop != nil {
		it.stop()
	}
}
