package rpc

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
)

// lane is a lane's goroutine: it takes the lane's items in arrival order and handles notifications itself.
// Requests it handles itself too, unless they may run concurrently (main lane, MaxConcurrentRequests above
// 1): then it starts each on a goroutine of its own once a concurrency slot is free and, with Ordered, once
// the one before has returned or released its turn.
func (c *Conn) lane(l *lane) {
	defer c.lanes.Done()
	concurrent := l == &c.q.main && c.sem != nil
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
			c.lanes.Add(1)
			go func() {
				defer c.lanes.Done()
				c.serve(it)
				<-c.sem
			}()
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
