package rpc

import "time"

// The notification fast path. A notification that arrives when the dispatcher has caught up is handled by
// the reading goroutine itself, sparing a hand-off per message: that keeps a burst of notifications to a
// child at the rate of a one-goroutine runtime. Reading must go on while such a handler runs, for the
// replies and cancel messages it may wait for, so a handler that sends a request (handoff) or runs longer
// than inlineWatch (watchdog) moves reading to a new goroutine, which reads into a buffer of its own
// (ndjson's Detach: the handler's params alias the old one). The dispatcher waits for the inline handler
// (inbox.inline), so handling keeps the order of arrival; the old read goroutine exits once its handler
// returns.

// inlineWatch is how long a notification's handler may run on the read goroutine before reading moves.
const inlineWatch = time.Millisecond

// serveInline handles a notification on the read goroutine and reports whether reading moved meanwhile.
func (c *Conn) serveInline(it *inbound) bool {
	c.armWatch()
	it.ctx = c.readerCtx
	c.serve(it, false)
	return c.q.endInline()
}

// armWatch starts the watch timer unless it runs already. It stays armed through a burst (one timer event
// per inlineWatch, not a Reset and Stop per notification) and disarms once no handler runs inline.
func (c *Conn) armWatch() {
	if !c.watching.Swap(true) {
		c.watch.Reset(inlineWatch)
	}
}

// watchdog moves reading on when the inline handler has run for inlineWatch, re-arms for a younger one,
// and otherwise disarms.
func (c *Conn) watchdog() {
	ok, wait := c.q.takeOver(inlineWatch)
	if ok {
		c.moveReading()
	}
	if wait > 0 {
		c.watch.Reset(wait)
		return
	}
	c.watching.Store(false)
	// A handler that went inline after takeOver looked found the watch armed and left it to this call.
	if c.q.watched() {
		c.armWatch()
	}
}

// handoff moves reading on for an inline handler that sends a request, whose reply only a reader reads.
func (c *Conn) handoff() {
	if ok, _ := c.q.takeOver(0); ok {
		c.moveReading()
	}
}

func (c *Conn) moveReading() {
	c.fr.Detach()
	go c.read()
}

// claimInline lets the reader handle a notification itself when the dispatcher has caught up (as
// whenCaughtUp); the dispatcher then waits for endInline. It counts the notification for the barrier.
func (q *inbox) claimInline() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.idle || q.n > 0 || q.closed || q.inline {
		return false
	}
	q.inline, q.handoff, q.inlineAt = true, false, time.Now()
	q.queued.Add(1)
	return true
}

// endInline lets the dispatcher go on with what was queued meanwhile and reports whether reading moved.
func (q *inbox) endInline() (handedOff bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inline = false
	q.handled.Add(1)
	q.wakeLocked()
	if q.n > 0 || q.closed {
		q.ready.Signal() // queued by the new reader, or closed: the dispatcher has work
	}
	return q.handoff
}

// takeOver reports whether the caller may move reading: the reader has been inside an inline handler for
// at least age and reading has not moved yet. Otherwise wait, if positive, is how long until it has.
func (q *inbox) takeOver(age time.Duration) (ok bool, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.inline || q.handoff || q.closed {
		return false, 0
	}
	if d := age - time.Since(q.inlineAt); d > 0 {
		return false, d
	}
	q.handoff = true
	return true, 0
}

// watched reports whether a handler runs inline and reading has not moved on from it.
func (q *inbox) watched() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inline && !q.handoff && !q.closed
}
