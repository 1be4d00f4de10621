package rpc

import (
	"context"
	"sync"
	"sync/atomic"
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
	frame      []byte                  // a notification's frame
	turn       chan struct{}           // an Ordered request's: closed when the next may start
	released   atomic.Bool
}

// itemOverhead is what an inbound costs besides its params, for the queue's byte bound.
const itemOverhead = 256

// queue is the inbound queue between the reader and the lanes: one bound, in messages and bytes, over two
// lanes, the main one and the preempt lane. The reader waits for room before it reads a frame, which
// throttles the peer; the main lane counts notifications for the response barrier.
//
// The bound is never passed (but for the one frame read when there was room). Its upper half is a reserve:
// the reader fills it only while a handler of this connection waits inside Send, so that the peer's reply
// can still be read past the messages queued behind that handler.
type queue struct {
	mu        sync.Mutex
	space     sync.Cond // the reader waits here for room
	main, ctl lane

	n, bytes       int
	maxN, maxBytes int  // the bound
	resN, resBytes int  // its reserve: the reader stops at the bound less the reserve unless callers > 0
	callers        int  // handlers of this connection waiting inside Send
	closed         bool // no more items will be pushed
	dropped        bool // the queued items were discarded

	// Notifications of the main lane pushed and handled so far, for the response barrier; written under mu.
	queued, handled atomic.Uint64
	progress        chan struct{} // closed when handled advances; made on demand
}

// lane is a FIFO of items that one goroutine takes in order (Conn.lane).
type lane struct {
	ready   sync.Cond
	ring    []*inbound
	head, n int
	idle    bool // its goroutine waits in pop for an item: it handles nothing
}

func (q *queue) init(maxN, maxBytes int) {
	if maxN <= 0 {
		maxN = defaultQueueSize
	}
	if maxBytes <= 0 {
		maxBytes = defaultQueueBytes
	}
	// A bound of one message leaves no reserve: it is raised to two, one message and the reserve.
	q.maxN, q.maxBytes = max(maxN, 2), max(maxBytes, 2)
	q.resN, q.resBytes = q.maxN/2, q.maxBytes/2
	q.space.L, q.main.ready.L, q.ctl.ready.L = &q.mu, &q.mu, &q.mu
}

// full reports whether the queue reached its bound, less the reserve unless reserve is set.
func (q *queue) full(reserve bool) bool {
	if reserve {
		return q.n >= q.maxN || q.bytes >= q.maxBytes
	}
	return q.n >= q.maxN-q.resN || q.bytes >= q.maxBytes-q.resBytes
}

// room waits while the queue is full, its reserve included while a handler waits inside Send for the
// peer's reply, and reports whether the queue is still open.
func (q *queue) room() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && q.full(q.callers > 0) {
		q.space.Wait()
	}
	return !q.closed
}

// overloaded waits while the queue is full and no handler waits for the peer, and reports whether the
// reader is reading into the reserve, for a handler waiting for the peer: then it refuses a request.
func (q *queue) overloaded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && q.callers == 0 && q.full(false) {
		q.space.Wait()
	}
	return q.full(false)
}

// caller records a handler of this connection entering (1) or leaving (-1) Send.
func (q *queue) caller(delta int) {
	q.mu.Lock()
	q.callers += delta
	q.space.Signal()
	q.mu.Unlock()
}

// push appends it to l.
func (q *queue) push(l *lane, it *inbound) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		it.release()
		return
	}
	if l.n == len(l.ring) {
		ring := make([]*inbound, max(16, 2*len(l.ring)))
		for i := range l.n {
			ring[i] = l.ring[(l.head+i)%len(l.ring)]
		}
		l.ring, l.head = ring, 0
	}
	l.ring[(l.head+l.n)%len(l.ring)] = it
	l.n++
	q.n++
	q.bytes += it.size
	if l == &q.main && it.Kind == KindNotification {
		q.queued.Add(1)
	}
	l.ready.Signal()
}

// pop returns l's next item, waiting for one. After close it returns the remaining items, unless they were
// dropped, then reports false.
func (q *queue) pop(l *lane) (*inbound, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for l.n == 0 && !q.closed {
		l.idle = true
		l.ready.Wait()
		l.idle = false
	}
	if l.n == 0 {
		return nil, false
	}
	it := l.ring[l.head]
	l.ring[l.head] = nil
	l.head = (l.head + 1) % len(l.ring)
	l.n--
	q.n--
	q.bytes -= it.size
	q.space.Signal()
	return it, true
}

// idle reports whether l's goroutine waits for an item, so that nothing l holds or handles comes before
// the next one.
func (q *queue) idle(l *lane) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return l.idle && l.n == 0 && !q.closed
}

// close stops the queue; the lanes still take the items queued unless drop is set.
func (q *queue) close(drop bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if drop && !q.dropped {
		q.dropped = true
		for _, l := range []*lane{&q.main, &q.ctl} {
			for i := range l.n {
				l.ring[(l.head+i)%len(l.ring)].release()
			}
			l.ring, l.head, l.n = nil, 0, 0
		}
		q.n, q.bytes = 0, 0
		q.wakeLocked()
	}
	q.main.ready.Broadcast()
	q.ctl.ready.Broadcast()
	q.space.Broadcast()
}

// handledOne counts a notification of the main lane handled.
func (q *queue) handledOne() {
	q.mu.Lock()
	q.handled.Add(1)
	q.wakeLocked()
	q.mu.Unlock()
}

func (q *queue) wakeLocked() {
	if q.progress != nil {
		close(q.progress)
		q.progress = nil
	}
}

// waitHandled blocks until the first n notifications of the main lane have been handled (or dropped), or
// ctx ends.
func (q *queue) waitHandled(ctx context.Context, n uint64) error {
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
