package jsonrpc

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
)

// dispatch is the dispatcher goroutine: it takes inbound messages in arrival
// order, handles notifications inline and starts requests, inline or in
// their own goroutine. After shutdown it still handles the notifications
// already queued but starts no more requests.
func (c *Conn) dispatch() {
	defer c.wg.Done()
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
			c.respond(it.id, nil, it.reject)
		case c.sem == nil:
			c.serve(c.inlineCtx, it.req)
		case c.acquire():
			c.wg.Add(1)
			go c.serveAsync(it.req)
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

func (c *Conn) serveAsync(req *Request) {
	defer c.wg.Done()
	defer func() { <-c.sem }()
	c.serve(c.asyncCtx, req)
}

func (c *Conn) serve(ctx context.Context, req *Request) {
	result, err := c.invoke(ctx, req)
	c.respond(req.ID, result, err)
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

// respond sends the response to a request.
func (c *Conn) respond(id ID, result any, err error) {
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
	// With more inbound work queued, hand the reply to the writer and move
	// on: the replies queued meanwhile go out together in one Write while
	// the dispatcher handles the next message. With none, write it now.
	write := c.w.WriteFrame
	if c.q.backlog() {
		write = c.w.WriteFrameAsync
	}
	if err := write(c.ctx, b.Bytes()); err != nil {
		c.log.Debug("jsonrpc: reply not sent", "id", id.String(), "err", err)
	}
}
