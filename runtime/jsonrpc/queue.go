package jsonrpc

import (
	"context"
	"sync"
	"sync/atomic"
)

// inbound is an entry of the inbound queue: a request or notification to
// dispatch, or a rejection (req == nil) to answer with an error.
type inbound struct {
	req    *Request
	id     ID     // rejection: the id to echo (zero: null)
	reject *Error // rejection: the error to send
}

// inbox is the ordered queue between the reader and the dispatcher. It
// applies backpressure to the reader and tracks notification progress for
// the response barrier.
type inbox struct {
	mu    sync.Mutex
	ready sync.Cond // the dispatcher waits here for items
	space sync.Cond // the reader waits here for room below the limit

	ring    []inbound
	head, n int
	waiting atomic.Bool // n > 0, readable without mu
	limit   int
	closed  bool // no more items will be pushed
	dropped bool // the queued items were discarded

	// The dispatcher waits in pop for a message: everything queued so far
	// has been handled or started.
	idle bool

	// Handlers of this connection currently inside Call, and whether the
	// dispatcher waits for a concurrency slot; see full.
	inlineCalls, asyncCalls int
	slotWait                bool

	// Written under mu, readable without it.
	queued   atomic.Uint64 // notifications pushed so far
	handled  atomic.Uint64 // notifications handled so far
	progress chan struct{} // closed when handled advances; made on demand by waiters
}

func (q *inbox) init(limit int) {
	q.ready.L = &q.mu
	q.space.L = &q.mu
	q.limit = limit
}

// waitSpace blocks the reader while the queue is full. It reports false
// once the inbox is closed.
func (q *inbox) waitSpace() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.full() && !q.closed {
		q.space.Wait()
	}
	return !q.closed
}

// full reports whether the reader should stop. It does not while a handler
// that holds up the dispatcher waits for a response, since that response
// may be behind further input: an inline handler inside Call, or a
// concurrent handler inside Call while the dispatcher waits for a slot.
func (q *inbox) full() bool {
	return q.n >= q.limit && q.inlineCalls == 0 && !(q.slotWait && q.asyncCalls > 0)
}

// handlerCall records a handler of this connection entering (delta 1) or
// leaving (delta -1) Call.
func (q *inbox) handlerCall(inline bool, delta int) {
	q.mu.Lock()
	if inline {
		q.inlineCalls += delta
	} else {
		q.asyncCalls += delta
	}
	q.space.Signal()
	q.mu.Unlock()
}

// waitingForSlot records whether the dispatcher waits for a concurrency slot.
func (q *inbox) waitingForSlot(waiting bool) {
	q.mu.Lock()
	q.slotWait = waiting
	q.space.Signal()
	q.mu.Unlock()
}

func (q *inbox) push(it inbound) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.n == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.n)%len(q.ring)] = it
	q.n++
	q.waiting.Store(true)
	if it.req != nil && it.req.IsNotification() {
		q.queued.Add(1)
	}
	if q.n == 1 {
		q.ready.Signal()
	}
}

func (q *inbox) grow() {
	ring := make([]inbound, max(16, 2*len(q.ring)))
	for i := range q.n {
		ring[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	q.ring, q.head = ring, 0
}

// pop returns the next item, waiting for one. After close it keeps returning
// the remaining items, unless they were dropped, then reports false.
func (q *inbox) pop() (inbound, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n == 0 && !q.closed {
		q.idle = true
		q.ready.Wait()
		q.idle = false
	}
	if q.n == 0 {
		return inbound{}, false
	}
	it := q.ring[q.head]
	q.ring[q.head] = inbound{}
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	q.waiting.Store(q.n > 0)
	if q.n == q.limit-1 {
		q.space.Signal()
	}
	return it, true
}

// close stops the queue. Items already queued are still delivered by pop,
// unless drop is set.
func (q *inbox) close(drop bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if drop && !q.dropped {
		q.dropped = true
		q.ring, q.head, q.n = nil, 0, 0
		q.waiting.Store(false)
		q.wakeWaiters()
	}
	q.ready.Broadcast()
	q.space.Broadcast()
}

// whenCaughtUp calls start, with the inbox locked, if the dispatcher waits
// for a message with every message queued so far handled or started, and
// reports what start returns (false if it was not called). Holding the
// lock keeps the inbox from closing meanwhile.
func (q *inbox) whenCaughtUp(start func() bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.idle && q.n == 0 && !q.closed && start()
}

// backlog reports whether messages are waiting for the dispatcher.
func (q *inbox) backlog() bool { return q.waiting.Load() }

// notifications returns the number of notifications queued so far.
func (q *inbox) notifications() uint64 { return q.queued.Load() }

// notificationHandled records that the dispatcher finished a notification.
func (q *inbox) notificationHandled() {
	q.mu.Lock()
	q.handled.Add(1)
	q.wakeWaiters()
	q.mu.Unlock()
}

func (q *inbox) wakeWaiters() {
	if q.progress != nil {
		close(q.progress)
		q.progress = nil
	}
}

// waitHandled blocks until the first n notifications have been handled (or
// dropped), or ctx is done.
func (q *inbox) waitHandled(ctx context.Context, n uint64) error {
	if q.handled.Load() >= n {
		return nil
	}
	q.mu.Lock()
	for q.handled.Load() < n && !q.dropped {
		if q.progress == nil {
			q.progress = make(chan struct{})
		}
		progress := q.progress
		q.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
	return nil
}
