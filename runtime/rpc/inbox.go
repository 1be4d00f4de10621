package rpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// inbound is a request or notification read from the peer.
type inbound struct {
	Request
	ctx        context.Context         // requests: ends on Close, a cancel message or the deadline
	cancel     context.CancelCauseFunc // requests: releases ctx
	stop       context.CancelFunc      // requests with a deadline: releases its timer
	key        string                  // requests a cancel rule targets: the raw value of its Key member
	registered bool                    // in Conn.running, where cancel messages find it
	size       int                     // bytes held while queued
	frame      []byte                  // a notification's line
	turn       chan struct{}           // an Ordered request's: closed when the next may start
	released   atomic.Bool
}

// itemOverhead is what an inbound costs besides its params, for the queue's byte bound.
const itemOverhead = 256

// inbox is an ordered queue between the reader and a dispatcher. It bounds the messages and bytes held,
// making the reader wait (which throttles the peer), and counts notifications for the response barrier.
type inbox struct {
	mu    sync.Mutex
	ready sync.Cond // the dispatcher waits here for items
	space sync.Cond // the reader waits here for room

	ring            []*inbound
	head, n, bytes  int
	maxN, maxBytes  int
	closed, dropped bool      // no more items will be pushed; the queued ones were discarded
	idle            bool      // the dispatcher waits in pop with everything before it handled or started
	inline          bool      // the reader handles a notification itself (inline.go)
	inlineAt        time.Time // when that began
	handoff         bool      // during inline: reading has moved to a new goroutine
	unsent          bool      // items were pushed since the dispatcher was last signalled
	callers         int       // handlers of this connection waiting inside Send
	waiting         atomic.Bool

	// Notifications pushed and handled so far, for the response barrier; written under mu.
	queued, handled atomic.Uint64
	progress        chan struct{} // closed when handled advances; made on demand
}

func (q *inbox) init(maxN, maxBytes int) {
	q.ready.L = &q.mu
	q.space.L = &q.mu
	q.maxN, q.maxBytes = maxN, maxBytes
}

// over reports whether the queue holds limit times its bound (limit 2: the bound while handlers wait for
// the peer).
func (q *inbox) over(limit int) bool {
	return q.n >= limit*q.maxN || q.bytes >= limit*q.maxBytes
}

// room blocks the reader while the queue is full and no handler waits inside Send for a reply (handing the
// items to the dispatcher first) and, with hard set, while it holds twice its bound. It reports whether
// the inbox is still open and whether the queue is full.
func (q *inbox) room(hard bool) (open, full bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && (q.callers == 0 && q.over(1) || hard && q.over(2)) {
		q.signalLocked()
		q.space.Wait()
	}
	return !q.closed, q.over(1)
}

func (q *inbox) full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.over(1)
}

// caller records a handler of this connection entering (1) or leaving (-1) Send.
func (q *inbox) caller(delta int) {
	q.mu.Lock()
	q.callers += delta
	q.space.Signal()
	q.mu.Unlock()
}

// push appends it. flush wakes the dispatcher, so that the reader hands over everything buffered at once.
func (q *inbox) push(it *inbound) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		it.release()
		return
	}
	if q.n == len(q.ring) {
		ring := make([]*inbound, max(16, 2*len(q.ring)))
		for i := range q.n {
			ring[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = ring, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = it
	q.n++
	q.bytes += it.size
	q.waiting.Store(true)
	q.unsent = true
	if it.Kind == KindNotification {
		q.queued.Add(1)
	}
}

func (q *inbox) flush() {
	q.mu.Lock()
	q.signalLocked()
	q.mu.Unlock()
}

func (q *inbox) signalLocked() {
	if q.unsent {
		q.unsent = false
		q.ready.Signal()
	}
}

// pop returns the next item, waiting for one. After close it returns the remaining items, unless they
// were dropped, then reports false.
func (q *inbox) pop() (*inbound, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.inline || q.n == 0 && !q.closed {
		q.idle = true
		q.ready.Wait()
		q.idle = false
	}
	if q.n == 0 {
		return nil, false
	}
	it := q.ring[q.head]
	q.ring[q.head] = nil
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	q.bytes -= it.size
	q.waiting.Store(q.n > 0)
	q.space.Signal()
	return it, true
}

// close stops the queue; pop still returns the items queued unless drop is set.
func (q *inbox) close(drop bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if drop && !q.dropped {
		q.dropped = true
		for i := range q.n {
			q.ring[(q.head+i)%len(q.ring)].release()
		}
		q.ring, q.head, q.n, q.bytes = nil, 0, 0, 0
		q.waiting.Store(false)
		q.wakeLocked()
	}
	q.ready.Broadcast()
	q.space.Broadcast()
}

// whenCaughtUp calls start, locked (so the inbox cannot close meanwhile), if the dispatcher waits with
// everything queued so far handled or started, and reports what start returns (false if not called).
func (q *inbox) whenCaughtUp(start func() bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.idle && q.n == 0 && !q.closed && !q.inline && start()
}

// backlog reports whether items are waiting for the dispatcher.
func (q *inbox) backlog() bool { return q.waiting.Load() }

func (q *inbox) notificationHandled() {
	q.mu.Lock()
	q.handled.Add(1)
	q.wakeLocked()
	q.mu.Unlock()
}

func (q *inbox) wakeLocked() {
	if q.progress != nil {
		close(q.progress)
		q.progress = nil
	}
}

// waitHandled blocks until the first n notifications have been handled (or dropped), or ctx ends.
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
