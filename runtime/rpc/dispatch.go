package rpc

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// dispatch is a dispatcher goroutine: it takes one lane's messages in arrival order, handles
// notifications itself, and runs requests itself or, when they may run concurrently (main lane only),
// hands them to workers.
func (c *Conn) dispatch(q *inbox) {
	defer c.lanes.Done()
	concurrent := q == &c.q && c.sem != nil
	if concurrent {
		defer close(c.work) // idle workers exit
	}
	for {
		it, ok := q.pop()
		if !ok {
			return
		}
		switch {
		case it.Kind == KindNotification:
			c.serve(it, q == &c.q)
			if q == &c.q {
				q.notificationHandled()
			}
		case !concurrent:
			c.serve(it, true)
		case c.acquire():
			c.start(it)
			if it.turn != nil { // Ordered: the next waits for its turn
				select {
				case <-it.turn:
				case <-c.ctx.Done():
				}
			}
		default:
			it.release()
		}
	}
}

// acquire takes a concurrency slot, failing when the connection shuts down.
func (c *Conn) acquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
	}
	select {
	case c.sem <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// start hands it, which holds a concurrency slot, to an idle worker, or starts a worker for it.
func (c *Conn) start(it *inbound) {
	select {
	case c.work <- it:
	default:
		c.lanes.Add(1)
		go c.worker(it)
	}
}

// workerIdle is how often a worker checks whether it has been idle; one that served no request in a
// whole period exits. Nanoseconds; atomic, so that tests can shorten it while workers run.
var workerIdle atomic.Int64

func init() { workerIdle.Store(int64(time.Second)) }

// worker serves it, then whatever requests the dispatcher hands it, each holding a concurrency slot that
// the worker releases once it has replied: reuse spares a goroutine start per request under load. A
// worker exits when the dispatcher has finished, or when it has served nothing for a whole workerIdle
// period (one timer per worker, not per request).
func (c *Conn) worker(it *inbound) {
	defer c.lanes.Done()
	idle := time.NewTimer(time.Duration(workerIdle.Load()))
	defer idle.Stop()
	served, checked := 0, 0
	for {
		c.serve(it, false)
		<-c.sem
		served++
	wait:
		var ok bool
		select {
		case it, ok = <-c.work:
			if !ok {
				return
			}
		case <-idle.C:
			if served == checked {
				return
			}
			checked = served
			idle.Reset(time.Duration(workerIdle.Load()))
			goto wait
		}
	}
}

// serve runs the handler for it and, for a request, writes the reply. onDispatcher says whether it runs
// on the main lane's dispatcher, which then queues its reply and moves on when more messages wait.
func (c *Conn) serve(it *inbound, onDispatcher bool) {
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
	c.reply(it, result, e, onDispatcher)
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

// reply writes the reply to a request. On the main dispatcher with more messages queued it hands the
// frame to the writer and moves on, so that replies go out together; a worker writes its reply unless
// another is being written, which then takes this one along.
func (c *Conn) reply(it *inbound, result any, e *Error, onDispatcher bool) {
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
	write := c.w.WriteFrame
	switch {
	case !onDispatcher:
		write = c.w.WriteFrameOrQueue
	case c.q.backlog():
		write = c.w.WriteFrameAsync
	}
	if err := write(c.ctx, b.B); err != nil {
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
