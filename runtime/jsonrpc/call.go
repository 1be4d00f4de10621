package jsonrpc

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-json-experiment/json"
)

// replyPool recycles the buffered channels on which calls receive their reply.
var replyPool = sync.Pool{New: func() any { return make(chan callResult, 1) }}

// Call sends a request and waits for its response, then unmarshals the
// result into result (unless result is nil). Params are marshalled as JSON;
// nil params are sent as {} and raw JSON (jsontext.Value, json.RawMessage)
// is sent as is.
//
// If the peer answers with an error, Call returns it as an *Error. If ctx
// ends first, the call is abandoned (a late response is dropped) and the
// returned error wraps ctx.Err(). Once the connection has shut down the
// error matches ErrClosed.
//
// Before returning, Call waits until every notification received ahead of
// the response has been handled, so that e.g. progress notifications are
// observed before the final result. Calls made with a handler context of
// this connection skip that wait, since they may be made from the very
// handler it would wait for.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	b := getBuffer()
	defer putBuffer(b)
	if err := encodeRequest(b, id, method, params); err != nil {
		return fmt.Errorf("jsonrpc: call %s: %w", method, err)
	}
	mark := c.mark(ctx)
	if mark != nil {
		c.q.handlerCall(mark.inline, 1)
		defer c.q.handlerCall(mark.inline, -1)
	}
	r, err := c.roundTrip(ctx, id, b.Bytes())
	if err != nil {
		return fmt.Errorf("jsonrpc: call %s: %w", method, err)
	}
	if r.err != nil {
		return r.err
	}
	if mark == nil {
		if err := c.q.waitHandled(ctx, r.seq); err != nil {
			return fmt.Errorf("jsonrpc: call %s: %w", method, err)
		}
	}
	if result != nil && r.result != nil {
		if err := json.Unmarshal(r.result, result); err != nil {
			return fmt.Errorf("jsonrpc: call %s: unmarshal result: %w", method, err)
		}
	}
	return nil
}

// roundTrip registers call id, writes its frame and waits for the reply. A
// non-nil error means the call was abandoned locally.
func (c *Conn) roundTrip(ctx context.Context, id int64, frame []byte) (callResult, error) {
	ch := replyPool.Get().(chan callResult)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		replyPool.Put(ch)
		return callResult{}, c.Err()
	}
	c.pending[id] = ch
	c.mu.Unlock()

	err := c.w.WriteFrame(ctx, frame)
	if err == nil && ctx.Done() == nil {
		// ctx never ends: a plain receive spares the select.
		r := <-ch
		replyPool.Put(ch)
		return r, nil
	}
	if err == nil {
		select {
		case r := <-ch:
			replyPool.Put(ch)
			return r, nil
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if !c.retire(id) {
		<-ch // the reply is already on its way
	}
	replyPool.Put(ch)
	if cause := c.Err(); cause != nil && ctx.Err() == nil {
		return callResult{}, cause // the write failed because of the shutdown
	}
	return callResult{}, err
}

// retire removes a pending call, reporting whether it was still pending.
func (c *Conn) retire(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// take removes and returns the pending call with the given raw id, if any.
func (c *Conn) take(raw []byte) chan callResult {
	id, ok := callID(raw)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.pending[id]
	delete(c.pending, id)
	return ch
}

// Notify sends a notification. Params are encoded as for Call. ctx bounds
// the wait for the connection's write lock.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := c.Err(); err != nil {
		return err
	}
	b := getBuffer()
	defer putBuffer(b)
	if err := encodeRequest(b, 0, method, params); err != nil {
		return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
	}
	if err := c.w.WriteFrame(ctx, b.Bytes()); err != nil {
		if cause := c.Err(); cause != nil && ctx.Err() == nil {
			return cause
		}
		return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
	}
	return nil
}
