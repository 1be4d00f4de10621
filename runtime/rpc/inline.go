package rpc

import "time"

// The notification fast path. A notification that arrives when the
// dispatcher has caught up (nothing queued, nothing running) is handled by
// the reading goroutine itself, sparing a hand-off per message: that keeps
// a burst of notifications to a child at the rate of a one-goroutine
// runtime. Reading must still go on while such a handler runs, for the
// replies and cancel messages it may be waiting for, so:
//
//   - a handler that sends a request (whose reply only a reader can read)
//     moves reading to a new goroutine at once (handoff);
//   - a handler that runs longer than inlineWatch has reading moved by the
//     watch timer (watchdog), armed once per burst;
//
// and the new goroutine reads with a buffer of its own (ndjson's Detach),
// since the handler's params alias the old one. The dispatcher waits for
// the inline handler to end (inbox.inline) so that the order of handling
// stays the order of arrival. The reader's goroutine, once its handler
// returns, exits when reading has moved.
//
// Everything the fast path needs outside this file: Conn.inline,
// readerCtx, watch and watching; inbox.inline, inlineAt and handoff; the
// claimInline call in accept, the handoff call in Send, and the end of the
// inbox's pop and whenCaughtUp waiting while a handler runs inline.

// inlineWatch is how long a notification's handler may run on the read
// goroutine before reading moves to a new goroutine.
const inlineWatch = time.Millisecond

// serveInline handles a notification on the read goroutine and reports
// whether reading moved to another goroutine meanwhile.
func (c *Conn) serveInline(it *inbound) bool {
	c.armWatch()
	it.ctx = c.readerCtx
	c.serve(it, false)
	return c.q.endInline()
}

// armWatch starts the inline watch timer unless it runs already. It stays
// armed through a burst of notifications (one timer event per inlineWatch,
// not a Reset and Stop per notification) and disarms itself once no handler
// runs inline.
func (c *Conn) armWatch() {
	if !c.watching.Swap(true) {
		c.watch.Reset(inlineWatch)
	}
}

// watchdog is the inline watch timer's function: it moves reading on when
// the notification handled inline has run for inlineWatch, re-arms for a
// younger one, and otherwise disarms.
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
	// A handler that went inline after takeOver looked found the watch
	// still armed and left it to this call.
	if c.q.watched() {
		c.armWatch()
	}
}

// handoff moves reading to a new goroutine while the read goroutine runs a
// notification's handler that sends a request (whose reply only a reader
// can read).
func (c *Conn) handoff() {
	if ok, _ := c.q.takeOver(0); ok {
		c.moveReading()
	}
}

// moveReading starts a new read goroutine with buffers of its own, since
// the inline handler's params alias the old ones.
func (c *Conn) moveReading() {
	c.fr.Detach()
	go c.read()
}

// claimInline lets the reader handle a notification itself when the
// dispatcher has caught up (as whenCaughtUp), sparing the hand-off; the
// dispatcher then waits for endInline. It counts the notification for the
// response barrier.
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

// endInline records that the reader finished its notification and lets
// the dispatcher go on with what was queued meanwhile. It reports whether
// reading moved to another goroutine during the notification.
func (q *inbox) endInline() (handedOff bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inline = false
	q.handled.Add(1)
	q.wakeLocked()
	if q.n > 0 || q.closed {
		// Queued meanwhile, by the reader it handed off to, or closed
		// meanwhile: either way the dispatcher has something to do.
		q.ready.Signal()
	}
	return q.handoff
}

// takeOver reports whether the caller may move reading to a new goroutine:
// the reader has been inside a notification's handler for at least age and
// reading has not moved yet. Otherwise wait, if positive, is how much
// longer until that handler is old enough.
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

// watched reports whether a notification is handled inline and reading has
// not moved on from it: the inline watch has to time it.
func (q *inbox) watched() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inline && !q.handoff && !q.closed
}
