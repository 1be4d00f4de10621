package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

// read is the read goroutine. It routes replies to their callers, applies cancel messages, queues the
// rest for the dispatchers or handles a notification itself (inline.go), and ends the connection
// gracefully when the peer's input ends.
func (c *Conn) read() {
	for {
		if open, _ := c.q.room(true); !open {
			break // Close or a write error ended the connection.
		}
		frame, err := c.fr.ReadFrame()
		var fe *FrameError
		switch {
		case errors.Is(err, ndjson.ErrFrameTooLarge):
			fe = c.tooLarge(err)
		case err != nil:
			c.q.flush()
			if c.ctx.Err() == nil {
				c.end(fmt.Errorf("%w: %w", ErrClosed, err), true)
			}
			return
		default:
			if c.opts.Observe != nil {
				c.observeIn(frame, len(frame))
			}
			if n := c.opts.MaxObjects; n > 0 && len(frame) > 2*n && jsonscan.Containers(frame, n) {
				fe = c.oversize(fmt.Errorf("%w (more than %d)", ErrTooManyObjects, n), frame)
				break
			}
			if c.handleFrame(frame) {
				return // reading moved on while a handler ran here
			}
			if !c.fr.More() {
				c.q.flush()
			}
			continue
		}
		if c.badFrame(fe, frame) {
			return
		}
	}
	c.q.flush()
}

// tooLarge describes a line over the size limit from what the codec can read of its start (oversize).
func (c *Conn) tooLarge(err error) *FrameError {
	var head []byte
	if tl, ok := errors.AsType[*ndjson.FrameTooLargeError](err); ok {
		if c.opts.Observe != nil {
			c.observeIn(tl.Head, tl.Size)
		}
		head = tl.Head
	}
	return c.oversize(err, head)
}

// oversize describes a line too large to take from head, the line or its start (nil if unknown): a
// reply fails the call it answers, a request is refused under its own id, a notification (an AgentPM
// event) is not answered, anything else is refused with no id, as JSON-RPC answers an unreadable line.
func (c *Conn) oversize(err error, head []byte) *FrameError {
	fe := &FrameError{Kind: FrameTooLarge, Err: err}
	if head != nil {
		fe.Snippet = snippet(head)
		if hd, ok := c.codec.(HeadDecoder); ok {
			kind, id := hd.DecodeHead(head)
			if fe.Claimed = kind; id != nil {
				fe.ID = RawID(id)
			}
		}
	}
	if fe.Claimed == 0 || fe.Claimed == KindRequest {
		fe.Reply = ErrInvalidRequest.with("invalid request: " + err.Error())
	}
	return fe
}

// handleFrame classifies one inbound line, valid only during the call (what outlives it is copied). It
// reports whether reading moved to another goroutine meanwhile.
func (c *Conn) handleFrame(frame []byte) (handedOff bool) {
	m := &c.msg
	*m = Message{}
	if err := c.codec.Decode(frame, m); err != nil {
		return c.badFrame(err, frame)
	}
	if c.opts.Screen != nil {
		if fe := c.opts.Screen(m); fe != nil {
			return c.badFrame(fe, frame)
		}
	}
	switch m.Kind {
	case KindResponse, KindError:
		c.deliver(m, frame)
	case KindRequest, KindNotification:
		return c.accept(m, frame)
	}
	return false
}

// badFrame reports a line that the codec or Screen refused (frame) or that was too large (frame nil),
// and answers it as the codec and OnBadFrame say; a reply that failed a gate fails its call. It reports
// whether OnBadFrame ended the connection.
func (c *Conn) badFrame(err error, frame []byte) (ended bool) {
	fe, ok := err.(*FrameError)
	if !ok {
		fe = &FrameError{Kind: FrameMalformed, Err: err, Reply: ErrParse}
	}
	if frame != nil {
		fe.Snippet = snippet(frame)
	}
	if c.opts.OnBadFrame != nil {
		line := frame
		if tl, ok := errors.AsType[*ndjson.FrameTooLargeError](fe.Err); ok && line == nil {
			line = tl.Head
		}
		ended = c.opts.OnBadFrame(fe, line)
	}
	c.diag.report(fe, frame) // before the call below may read fe
	var ch chan callResult
	if fe.Claimed == KindResponse || fe.Claimed == KindError {
		ch = c.take(fe.ID.raw)
	}
	if ch != nil {
		ch <- callResult{err: fe}
	} else if fe.Reply != nil {
		c.rejectWith(fe.ID, fe.Reply)
	}
	if ended {
		c.end(fmt.Errorf("%w: %w", ErrClosed, fe), false)
	}
	return ended
}

// rejectWith answers the message with id (possibly none) with e, without waiting for the peer to read.
func (c *Conn) rejectWith(id ID, e *Error) {
	b := getBuffer()
	defer putBuffer(b)
	b.h = Header{Kind: KindError, ID: id}
	b.B = c.codec.AppendError(b.B, &b.h, e)
	_ = c.w.WriteFrameAsync(c.ctx, b.B)
}

// accept queues an inbound request or notification, after applying it if it is a cancel message, or
// handles a notification inline. It reports whether reading moved to another goroutine meanwhile.
func (c *Conn) accept(m *Message, frame []byte) (handedOff bool) {
	method := c.intern(m.Method)
	var qualifier string
	if len(m.Qualifier) > 0 {
		qualifier = c.intern(m.Qualifier)
	}
	preempt := c.rules.preempt[method]
	if rule := c.rules.cancel[method]; rule != nil {
		c.applyCancel(rule, m.Body)
	}
	var id ID
	if m.ID != nil {
		id = ID{raw: string(m.ID)} // an event may carry one too
	}
	// m is not read past claimInline: once it succeeds, reading may move to a goroutine that reuses m.
	if body := m.Body; m.Kind == KindNotification && !preempt && c.q.claimInline() {
		// Handled right here, while the frame is valid: nothing to copy.
		it := &c.inline
		*it = inbound{Request: Request{Kind: KindNotification, ID: id, Method: method, Qualifier: qualifier, Params: body, Options: c.opts.DecodeOptions}, frame: frame}
		return c.serveInline(it)
	}
	// Names count too: a peer can send a distinct long name every time.
	size := len(m.Body) + len(m.ID) + len(m.Method) + len(m.Qualifier) + itemOverhead
	it := &inbound{Request: Request{Kind: m.Kind, ID: id, Method: method, Qualifier: qualifier, Options: c.opts.DecodeOptions}, size: size}
	if m.Kind == KindNotification {
		// A notification keeps its line, for the report of params that do not decode.
		var n int
		it.frame, it.Params, n = keep(frame, m.Body)
		it.size += n - len(m.Body)
	} else if len(m.Body) > 0 {
		it.Params = bytes.Clone(m.Body)
	}
	if m.Kind == KindRequest {
		// The queue full, the reader waits for room (room) unless a handler waits for the peer: then the
		// request is refused.
		if !preempt && c.overloaded() {
			e := ErrOverloaded.with(ErrOverloaded.Message + "; retry later")
			c.rejectWith(it.ID, e)
			c.diag.report(&FrameError{Kind: FrameOverloaded, Err: e, ID: it.ID}, nil)
			return false
		}
		if !c.register(it) {
			e := ErrDuplicateID
			c.rejectWith(it.ID, e)
			c.diag.report(&FrameError{Kind: FrameDuplicateID, Err: e, ID: it.ID, Method: it.Method, Snippet: snippet(frame)}, nil)
			return false
		}
		if c.opts.Ordered && c.sem != nil && !preempt {
			it.turn = make(chan struct{})
		}
	}
	if preempt && !c.ctl.full() {
		if !c.ctlLane {
			c.ctlLane = true
			c.lanes.Add(1)
			go c.dispatch(&c.ctl)
		}
		c.ctl.push(it)
		c.ctl.flush()
		return false
	}
	if !c.startNow(it) {
		c.q.push(it)
	}
	return false
}

// overloaded is room's verdict on a request: refuse it.
func (c *Conn) overloaded() bool {
	_, full := c.q.room(false)
	return full
}

// startNow starts a concurrent request from the read goroutine, sparing the hand-off through the
// dispatcher, when that changes nothing: the dispatcher has caught up and a slot is free.
func (c *Conn) startNow(it *inbound) bool {
	if c.sem == nil || it.Kind != KindRequest || it.turn != nil {
		return false
	}
	return c.q.whenCaughtUp(func() bool {
		select {
		case c.sem <- struct{}{}:
			c.start(it)
			return true
		default:
			return false
		}
	})
}

// maxInterned and maxInternedLen bound the names interned beyond the seeds, so that a peer can neither
// grow the table nor make it hold much memory.
const (
	maxInterned    = 64
	maxInternedLen = 256
)

// intern returns b as a string, interning it so that a known name costs no allocation.
func (c *Conn) intern(b []byte) string {
	if s, ok := c.methods[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.methods) < c.seeded+maxInterned && len(s) <= maxInternedLen {
		c.methods[s] = s
	}
	return s
}

// deliver hands a reply to the call waiting for it.
func (c *Conn) deliver(m *Message, frame []byte) {
	ch := c.take(string(m.ID))
	if ch == nil {
		if c.ctx.Err() == nil {
			c.diag.report(&FrameError{Kind: FrameUnknownResponse, Err: errNoCall, ID: RawID(m.ID), Snippet: snippet(frame)}, frame)
		}
		return
	}
	r := callResult{seq: c.q.queued.Load()}
	if m.Kind == KindError {
		r.err = m.Err
	} else {
		r.body = bytes.Clone(m.Body)
	}
	ch <- r
}

var errNoCall = errors.New("no pending call has this id")

// take removes and returns the pending call whose id is raw, if any.
func (c *Conn) take(raw string) chan callResult {
	if seq, ok := c.codec.Seq([]byte(raw)); ok {
		return c.retire(seq)
	}
	return nil
}

// retire removes and returns pending call seq, if any.
func (c *Conn) retire(seq uint64) chan callResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.pending[seq]
	delete(c.pending, seq)
	return ch
}

// register records a request among those in flight, where cancel messages find it, and gives one that a
// cancel message or a deadline can reach a context of its own (the others share handlerCtx). It reports
// false, recording nothing, when a request with the same id is in flight: an id names a request until its
// reply, so a second one is refused rather than answered twice under one id. The set is bounded as the
// queue is: each request in it is queued or running, and the queue's bytes count its id.
func (c *Conn) register(it *inbound) bool {
	target := c.rules.target[it.Method]
	d := c.opts.RequestTimeout
	own := target != nil || c.rules.byID || d > 0
	if target != nil && target.Key != "" {
		it.key = string(Member(it.Params, target.Key))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.running[it.ID.raw]; dup {
		return false
	}
	if own {
		it.ctx, it.cancel = context.WithCancelCause(c.detached)
		if d > 0 {
			it.ctx, it.stop = context.WithTimeout(it.ctx, d)
		}
		if c.phase == closing {
			it.cancel(c.cause)
			return true
		}
	}
	if c.phase == closing {
		return true
	}
	if c.running == nil {
		c.running = make(map[string]*inbound)
	}
	c.running[it.ID.raw] = it
	it.registered = true
	return true
}

// applyCancel ends the contexts of the running requests that the cancel message with params cancels.
func (c *Conn) applyCancel(r *CancelRule, params []byte) {
	var key []byte
	switch {
	case r.ByID != "":
		key = Member(params, r.ByID)
	case r.Key != "":
		key = Member(params, r.Key)
	}
	if key == nil && (r.ByID != "" || r.Key != "") {
		return
	}
	cause := ErrCancelled.with("request cancelled by " + r.Method)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.ByID != "" {
		if it := c.running[string(key)]; it != nil && it.cancel != nil {
			it.cancel(cause)
		}
		return
	}
	for _, it := range c.running {
		if it.cancel != nil && it.Method == r.Target && (r.Key == "" || it.key == string(key)) {
			it.cancel(cause)
		}
	}
}

// rules are a connection's cancel rules and preempted methods, by method.
type rules struct {
	cancel  map[string]*CancelRule // by the cancel message's method
	target  map[string]*CancelRule // by the method it cancels
	preempt map[string]bool
	byID    bool        // some rule cancels by id: every request is registered
	anyID   *CancelRule // the rule that cancels any outbound request by id
}

func newRules(cancels []CancelRule, preempt []string) rules {
	var r rules
	if len(cancels)+len(preempt) == 0 {
		return r
	}
	r.cancel = map[string]*CancelRule{}
	r.target = map[string]*CancelRule{}
	r.preempt = map[string]bool{}
	for _, cr := range cancels {
		cr := &cr
		r.cancel[cr.Method] = cr
		r.preempt[cr.Method] = true
		if cr.ByID != "" {
			r.byID, r.anyID = true, cr
		} else {
			r.target[cr.Target] = cr
		}
	}
	for _, m := range preempt {
		r.preempt[m] = true
	}
	return r
}

// keep returns a copy of frame and, in the same allocation, of body (the part of the copy that body is,
// when body is a part of frame), and the bytes it allocated.
func keep(frame, body []byte) (line, params []byte, n int) {
	i := cap(frame) - cap(body)
	if len(body) > 0 && i >= 0 && i+len(body) <= len(frame) && &frame[i] == &body[0] {
		line = bytes.Clone(frame)
		return line, line[i : i+len(body) : i+len(body)], len(line)
	}
	buf := append(append(make([]byte, 0, len(frame)+len(body)), frame...), body...)
	line = buf[:len(frame):len(frame)]
	if len(body) > 0 {
		params = buf[len(frame):]
	}
	return line, params, len(buf)
}
