package jsonrpc

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"time"
)

// dispatch is the dispatcher goroutine: it takes inbound messages in arrival
// order, handles notifications itself and runs requests itself or, when
// they may run concurrently, hands them to workers. After shutdown it still
// handles the notifications already queued but starts no more requests.
func (c *Conn) dispatch() {
	defer c.wg.Done()
	if c.work != nil {
		defer close(c.work) // idle workers exit
	}
	for {
		it, ok := c.q.pop()
		if !ok {
			return
		}
		switch {
		case it.req != nil && it.req.IsNotification():
			c.notification(it.req)
			c.q.notificationHandled()
		case c.ctx.Err() != nil:
			// Shut down: nobody is listening for replies any more.
		case it.req == nil:
			c.respond(it.id, nil, it.reject, true)
		case c.sem == nil:
			c.serve(c.inlineCtx, it.req)
		case c.acquire():
			c.start(it.req)
		}
	}
}

// acquire takes a concurrency slot, failing when the connection shuts down.
// While it waits, handlers waiting for responses let the reader read past
// the queue limit.
func (c *Conn) acquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
	}
	c.q.waitingForSlot(true)
	defer c.q.waitingForSlot(false)
	select {
	case c.sem <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// start hands req, which holds a concurrency slot, to an idle worker, or
// starts a worker for it.
func (c *Conn) start(req *Request) {
	select {
	case c.work <- req:
	default:
		c.wg.Add(1)
		go c.worker(req)
	}
}

// workerIdle is how often a worker checks whether it has been idle; one
// that served no request in a whole period exits.
var workerIdle = time.Second // a variable so that tests can shorten it

// worker serves req, then whatever requests the dispatcher hands it, each
// holding a concurrency slot that the worker releases once it has replied.
// Reusing workers spares a goroutine start per request under load. The
// slots bound how many requests run at once; a request that gets a slot
// just before the worker that freed it is back waiting gets a new worker,
// and the spare one retires with the others once idle. A worker exits when
// the dispatcher has finished, or when a check finds it has served nothing
// for a whole workerIdle period (one timer per worker, not per request).
func (c *Conn) worker(req *Request) {
	defer c.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	served, checked := 0, 0
	for {
		c.serve(c.asyncCtx, req)
		<-c.sem
		served++
	wait:
		var ok bool
		select {
		case req, ok = <-c.work:
			if !ok {
				return // the dispatcher has finished
			}
		case <-idle.C:
			if served == checked {
				return
			}
			checked = served
			idle.Reset(workerIdle)
			goto wait
		}
	}
}

func (c *Conn) serve(ctx context.Context, req *Request) {
	result, err := c.invoke(ctx, req)
	c.respond(req.ID, result, err, ctx == c.inlineCtx)
}

func (c *Conn) notification(req *Request) {
	if _, err := c.invoke(c.inlineCtx, req); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, ErrMethodNotFound) {
			level = slog.LevelDebug
		}
		c.log.Log(c.ctx, level, "jsonrpc: notification handler failed", "method", req.Method, "err", err)
	}
}

// invoke runs the handler, turning a panic into CodeInternalError.
func (c *Conn) invoke(ctx context.Context, req *Request) (result any, err error) {
	if c.handler == nil {
		return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("jsonrpc: handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, &Error{Code: CodeInternalError, Message: "internal error: handler panicked"}
		}
	}()
	return c.handler.Handle(ctx, req)
}

// respond sends the response to a request, from the dispatcher goroutine
// or from a worker.
func (c *Conn) respond(id ID, result any, err error, onDispatcher bool) {
	b := getBuffer()
	defer putBuffer(b)
	if err == nil {
		if err = encodeResult(b, id, result); err != nil {
			c.log.Error("jsonrpc: cannot marshal result", "id", id.String(), "err", err)
			b.Reset()
			err = &Error{Code: CodeInternalError, Message: "internal error: cannot marshal result: " + err.Error()}
		}
	}
	if err != nil {
		encodeError(b, id, wireError(err))
	}
	// On the dispatcher with more inbound work queued, hand the reply to
	// the writer and move on: the replies queued meanwhile go out together
	// in one Write while the dispatcher handles the next message. With none,
	// write it now. A worker writes it now unless another reply is being
	// written, which then takes this one along.
	write := c.w.WriteFrame
	switch {
	case !onDispatcher:
		write = c.w.WriteFrameOrQueue
	case c.q.backlog():
		write = c.w.WriteFrameAsync
	}
	if err := write(c.ctx, b.Bytes()); err != nil {
		c.log.Debug("jsonrpc: reply not sent", "id", id.String(), "err", err)
	}
}
