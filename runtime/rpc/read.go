package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
)

// reader is the read goroutine's own state.
type reader struct {
	msg     Message           // scratch space for Decode
	methods map[string]string // interned method names
	seeded  int
	ctl     bool // the preempt lane runs
}

func (r *reader) init(o *Options, rl rules) {
	r.methods = make(map[string]string, len(o.Methods)+len(rl.preempt))
	for _, m := range o.Methods {
		r.methods[m] = m
	}
	for m := range rl.preempt {
		r.methods[m] = m
	}
	r.seeded = len(r.methods)
}

// read is the read goroutine, the only one reading the transport, for the connection's whole life; it never
// runs a handler. It routes replies to their callers, applies cancel messages, queues requests and
// notifications for the lanes, answers the frames it refuses, and ends the connection gracefully when the
// peer's input ends. Before each frame it waits for room in the queue, which throttles the peer.
func (c *Conn) read() {
	for c.q.room() {
		f, err := c.t.Read(c.ctx)
		if tl, ok := errors.AsType[*frame.TooLargeError](err); ok {
			if c.opts.Observe != nil {
				c.observeIn(tl.Head, tl.Size)
			}
			if c.badFrame(c.oversize(err, tl.Head), nil) {
				return
			}
			continue
		}
		if err != nil {
			if c.ctx.Err() == nil {
				c.end(fmt.Errorf("%w: %w", ErrClosed, err), true)
			}
			return
		}
		if c.opts.Observe != nil {
			c.observeIn(f, len(f))
		}
		if c.take(f) {
			return
		}
	}
}

// take acts on one inbound frame, valid only during the call (what outlives it is copied), and reports
// whether OnBadFrame ended the connection with it.
func (c *Conn) take(f []byte) (ended bool) {
	if len(f) > c.opts.MaxFrame {
		tl := &frame.TooLargeError{Limit: c.opts.MaxFrame, Size: len(f), Head: f[:min(len(f), frame.HeadSize)]}
		return c.badFrame(c.oversize(tl, tl.Head), nil)
	}
	if n := c.opts.MaxObjects; n > 0 && len(f) > 2*n && jsonscan.Containers(f, n) {
		return c.badFrame(c.oversize(fmt.Errorf("%w (more than %d)", ErrTooManyObjects, n), f), f)
	}
	m := &c.reading.msg
	*m = Message{}
	if err := c.codec.Decode(f, m); err != nil {
		return c.badFrame(err, f)
	}
	if c.opts.Screen != nil {
		if fe := c.opts.Screen(m); fe != nil {
			return c.badFrame(fe, f)
		}
	}
	switch m.Kind {
	case KindResponse, KindError:
		c.deliver(m, f)
	case KindRequest, KindNotification:
		c.accept(m, f)
	}
	return false
}

// oversize describes a frame too large to take from head, the frame or its start: a reply fails the call it
// answers, a request is refused under its own id, a notification (an AgentPM event) is not answered,
// anything else is refused with no id, as JSON-RPC answers an unreadable frame.
func (c *Conn) oversize(err error, head []byte) *FrameError {
	fe := &FrameError{Kind: FrameTooLarge, Err: err, Snippet: snippet(head)}
	if hd, ok := c.codec.(HeadDecoder); ok {
		kind, id := hd.DecodeHead(head)
		if fe.Claimed = kind; id != nil {
			fe.ID = RawID(id)
		}
	}
	if fe.Claimed == 0 || fe.Claimed == KindRequest {
		fe.Reply = ErrInvalidRequest.with("invalid request: " + err.Error())
	}
	return fe
}

// badFrame reports a frame that the codec or Screen refused (f) or that was too large (f nil), and answers
// it as the codec and OnBadFrame say; a reply that failed a gate fails its call. It reports whether
// OnBadFrame ended the connection.
func (c *Conn) badFrame(err error, f []byte) (ended bool) {
	fe, ok := err.(*FrameError)
	if !ok {
		fe = &FrameError{Kind: FrameMalformed, Err: err, Reply: ErrParse}
	}
	if f != nil {
		fe.Snippet = snippet(f)
	}
	if c.opts.OnBadFrame != nil {
		line := f
		if tl, ok := errors.AsType[*frame.TooLargeError](fe.Err); ok && line == nil {
			line = tl.Head
		}
		ended = c.opts.OnBadFrame(fe, line)
	}
	c.diag.report(fe, f) // before the call below may read fe
	var ch chan callResult
	if fe.Claimed == KindResponse || fe.Claimed == KindError {
		ch = c.takeCall(fe.ID.raw)
	}
	if ch != nil {
		ch <- callResult{err: fe, seq: c.q.queued.Load()}
	} else if fe.Reply != nil {
		c.reject(fe.ID, fe.Reply)
	}
	if ended {
		c.end(fmt.Errorf("%w: %w", ErrClosed, fe), false)
	}
	return ended
}

// reject answers the message with id (possibly none) with e.
func (c *Conn) reject(id ID, e *Error) {
	b := getBuffer()
	defer putBuffer(b)
	b.h = Header{Kind: KindError, ID: id}
	b.B = c.codec.AppendError(b.B, &b.h, e)
	c.write(c.ctx, nil, b.B)
}

// accept queues an inbound request or notification, after applying it if it is a cancel message.
func (c *Conn) accept(m *Message, f []byte) {
	method := c.reading.intern(m.Method)
	var qualifier string
	if len(m.Qualifier) > 0 {
		qualifier = c.reading.intern(m.Qualifier)
	}
	preempt := c.rules.preempt[method]
	if rule := c.rules.cancel[method]; rule != nil {
		c.applyCancel(rule, m.Body)
	}
	var id ID
	if m.ID != nil {
		id = ID{raw: string(m.ID)} // an event may carry one too
	}
	// Names count too: a peer can send a distinct long name every time.
	size := len(m.Body) + len(m.ID) + len(m.Method) + len(m.Qualifier) + itemOverhead
	it := &inbound{Request: Request{Kind: m.Kind, ID: id, Method: method, Qualifier: qualifier, Options: c.opts.DecodeOptions}, size: size}
	if m.Kind == KindNotification {
		// A notification keeps its frame, for the report of params that do not decode.
		var n int
		it.frame, it.Params, n = keep(f, m.Body)
		it.size += n - len(m.Body)
	} else if len(m.Body) > 0 {
		it.Params = bytes.Clone(m.Body)
	}
	if m.Kind == KindRequest {
		// Past the queue's bound only while a handler waits for the peer: refuse the request.
		if !preempt && c.q.overloaded() {
			e := ErrOverloaded.with(ErrOverloaded.Message + "; retry later")
			c.reject(it.ID, e)
			c.diag.report(&FrameError{Kind: FrameOverloaded, Err: e, ID: it.ID}, nil)
			return
		}
		if !c.register(it) {
			c.reject(it.ID, ErrDuplicateID)
			c.diag.report(&FrameError{Kind: FrameDuplicateID, Err: ErrDuplicateID, ID: it.ID, Method: it.Method, Snippet: snippet(f)}, nil)
			return
		}
		if c.opts.Ordered && c.sem != nil && !preempt {
			it.turn = make(chan struct{})
		}
	}
	if !preempt {
		if m.Kind == KindRequest && it.turn == nil && c.sem != nil && c.q.idle(&c.q.main) && c.tryAcquire() {
			// Nothing is before it and a slot is free: the reader starts it as the main lane would, sparing
			// the lane's wake-up (only the reader adds to the lane, so it stays idle meanwhile).
			c.start(it)
			return
		}
		c.q.push(&c.q.main, it)
		return
	}
	if !c.reading.ctl { // the preempt lane starts on first use
		c.reading.ctl = true
		c.lanes.Add(1)
		go c.lane(&c.q.ctl)
	}
	c.q.push(&c.q.ctl, it)
}

// maxInterned and maxInternedLen bound the names interned beyond the seeds, so that a peer can neither
// grow the table nor make it hold much memory.
const (
	maxInterned    = 64
	maxInternedLen = 256
)

// intern returns b as a string, interning it so that a known name costs no allocation.
func (r *reader) intern(b []byte) string {
	if s, ok := r.methods[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.methods) < r.seeded+maxInterned && len(s) <= maxInternedLen {
		r.methods[s] = s
	}
	return s
}

// deliver hands a reply to the call waiting for it, with the count of notifications read before it, which
// the caller waits to see handled (the response barrier).
func (c *Conn) deliver(m *Message, f []byte) {
	ch := c.takeCall(string(m.ID))
	if ch == nil {
		if c.ctx.Err() == nil {
			c.diag.report(&FrameError{Kind: FrameUnknownResponse, Err: errNoCall, ID: RawID(m.ID), Snippet: snippet(f)}, f)
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

// takeCall removes and returns the pending call whose id is raw, if any.
func (c *Conn) takeCall(raw string) chan callResult {
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
	}
	if c.phase == closing {
		if own {
			it.cancel(c.cause)
		}
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
