package ndjson

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
)

// ErrClosed is returned by WriteFrame after Close.
var ErrClosed = errors.New("ndjson: writer closed")

var (
	errNoNewline       = errors.New("ndjson: frame does not end with a newline")
	errEmbeddedNewline = errors.New("ndjson: frame contains an embedded newline")
)

const (
	// maxBatch bounds the bytes gathered into one batched Write; a single
	// frame larger than that is written on its own.
	maxBatch = 1 << 20
	// maxRetainedBatch is the largest batch buffer kept between batches.
	maxRetainedBatch = 64 << 10
)

// Writer writes frames to a newline-delimited stream. It is safe for
// concurrent use: frames from concurrent writers never interleave.
//
// Writes are group-committed: while one goroutine is inside the underlying
// Write, frames from other goroutines are queued; when that Write returns,
// the writing goroutine writes every queued frame (up to a bound) with one
// Write call, and repeats until the queue is empty.
type Writer struct {
	w io.Writer

	mu      sync.Mutex
	writing bool      // a goroutine holds the writer role
	closed  bool      // Close was called
	err     error     // set when a write was only partly done (sticky)
	pending []*waiter // frames waiting for the next batch, in order

	// Owned by the goroutine holding the writer role.
	batch    []byte
	inflight []*waiter
	once     sync.Once

	flushers sync.WaitGroup // goroutines started by WriteFrameAsync to drain the queue
}

// waiter is a frame queued behind a Write in progress.
type waiter struct {
	line  []byte
	ch    chan error // receives the outcome once; buffered; nil for frames nobody waits for
	taken bool       // removed from pending by a batch or by Close (under mu)
}

// notify hands the outcome to the frame's caller, if one waits for it.
func (wt *waiter) notify(err error) {
	if wt.ch != nil {
		wt.ch <- err
	}
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// WriteFrame writes line, which must end with exactly one '\n' and contain
// no other newline. Frames never interleave and are written in the order
// their WriteFrame calls queued them. When no other frame is being written,
// line is written with a single Write call of its own; otherwise it is
// queued and later written, together with the other frames queued meanwhile,
// in one Write call. WriteFrame returns once its frame has been written or
// has failed; line is not retained after it returns.
//
// If ctx ends while the frame is still queued, it is dropped and ctx.Err()
// is returned. A Write already in progress, including that of a batch the
// frame was taken into, cannot be interrupted by ctx, only by Close (when
// the underlying writer unblocks on Close).
//
// A short write is reported as io.ErrShortWrite. After a Write has written
// only in part the stream is left mid-line, so every later call returns the
// same error.
func (w *Writer) WriteFrame(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.lockOpen(line); err != nil {
		return err
	}
	if w.writing {
		return w.wait(ctx, line)
	}
	return w.writeNow(line)
}

// writeNow takes the writer role, writes line, then writes whatever was
// queued meanwhile. It is called with w.mu held and releases it.
func (w *Writer) writeNow(line []byte) error {
	w.writing = true
	w.mu.Unlock()
	err, poison := w.write(line)
	w.drain(poison)
	return err
}

// maxQueued bounds the frames WriteFrameAsync and WriteFrameOrQueue may
// leave queued; past it they wait like WriteFrame, which throttles their
// callers.
const maxQueued = 1024

// WriteFrameAsync queues a copy of line to be written in order with every
// other frame and returns without waiting for the write, unless the queue
// already holds maxQueued frames: then it waits like WriteFrame (with ctx).
// A goroutine is started to write the queue when no write is in progress.
// Write errors are not reported to the caller; they poison the
// stream, so later calls fail. It lets a producer of many frames (a
// dispatcher answering queued requests) go on working while the peer reads.
func (w *Writer) WriteFrameAsync(ctx context.Context, line []byte) error {
	if err := w.lockOpen(line); err != nil {
		return err
	}
	if len(w.pending) >= maxQueued {
		w.mu.Unlock()
		return w.WriteFrame(ctx, line)
	}
	w.pending = append(w.pending, &waiter{line: bytes.Clone(line)})
	if !w.writing {
		w.writing = true
		w.flushers.Add(1)
		go func() {
			defer w.flushers.Done()
			w.drain(nil)
		}()
	}
	w.mu.Unlock()
	return nil
}

// WriteFrameOrQueue writes line like WriteFrame when no write is in
// progress. Otherwise it queues a copy of line, which the goroutine writing
// then writes with the rest of the queue, and returns without waiting,
// unless the queue already holds maxQueued frames: then it waits like
// WriteFrame (with ctx). Errors writing a queued frame are not reported to
// the caller. It suits producers that run side by side, such as concurrent
// request handlers: none of them waits for another's frame to be written,
// and no goroutine is started.
func (w *Writer) WriteFrameOrQueue(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.lockOpen(line); err != nil {
		return err
	}
	switch {
	case !w.writing:
		return w.writeNow(line)
	case len(w.pending) >= maxQueued:
		return w.wait(ctx, line)
	}
	w.pending = append(w.pending, &waiter{line: bytes.Clone(line)})
	w.mu.Unlock()
	return nil
}

// lockOpen checks line and locks w.mu, returning with it held unless the
// frame is malformed or the stream is closed or poisoned.
func (w *Writer) lockOpen(line []byte) error {
	if err := checkFrame(line); err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if err := w.err; err != nil {
		w.mu.Unlock()
		return err
	}
	return nil
}

// write writes p with one Write call. poison is err if the write left the
// stream mid-line, nil otherwise.
func (w *Writer) write(p []byte) (err, poison error) {
	n, err := w.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if n > 0 && n < len(p) {
		poison = err
	}
	return err, poison
}

// wait queues line behind the Write in progress and waits for its outcome.
// It is called with w.mu held and releases it.
func (w *Writer) wait(ctx context.Context, line []byte) error {
	wt := waiterPool.Get().(*waiter)
	wt.line, wt.taken = line, false
	w.pending = append(w.pending, wt)
	w.mu.Unlock()
	if done := ctx.Done(); done != nil {
		select {
		case err := <-wt.ch:
			return wt.release(err)
		case <-done:
		}
		w.mu.Lock()
		if !wt.taken {
			for i, p := range w.pending {
				if p == wt {
					w.pending = append(w.pending[:i], w.pending[i+1:]...)
					w.pending[len(w.pending):cap(w.pending)][0] = nil
					break
				}
			}
			w.mu.Unlock()
			return wt.release(ctx.Err())
		}
		w.mu.Unlock()
	}
	return wt.release(<-wt.ch)
}

func (wt *waiter) release(err error) error {
	wt.line = nil
	waiterPool.Put(wt)
	return err
}

// drain is run by the goroutine holding the writer role after its Write:
// it writes the queued frames in batches until none is left, then gives up
// the role. poison is the error of the last Write if it was partial.
func (w *Writer) drain(poison error) {
	w.mu.Lock()
	for {
		if poison != nil && w.err == nil {
			w.err = poison
		}
		if len(w.pending) == 0 {
			w.writing = false
			w.mu.Unlock()
			return
		}
		if w.closed || w.err != nil {
			// Close fails the queued frames itself; a poisoned stream
			// fails them here.
			err := w.err
			if w.closed {
				err = ErrClosed
			}
			failed := w.takeLocked(len(w.pending))
			w.mu.Unlock()
			for i, wt := range failed {
				wt.notify(err)
				failed[i] = nil
			}
			w.mu.Lock()
			continue
		}
		k, size := 1, len(w.pending[0].line)
		for k < len(w.pending) && size+len(w.pending[k].line) <= maxBatch {
			size += len(w.pending[k].line)
			k++
		}
		batch := w.takeLocked(k)
		w.mu.Unlock()

		p := batch[0].line
		if len(batch) > 1 {
			buf := w.batch[:0]
			for _, wt := range batch {
				buf = append(buf, wt.line...)
			}
			p = buf
			if cap(buf) <= maxRetainedBatch {
				w.batch = buf
			} else {
				w.batch = nil
			}
		}
		var err error
		err, poison = w.write(p)
		for i, wt := range batch {
			wt.notify(err)
			batch[i] = nil
		}
		w.mu.Lock()
	}
}

// takeLocked removes the first k pending frames, marks them taken and
// returns them in w.inflight.
func (w *Writer) takeLocked(k int) []*waiter {
	w.inflight = append(w.inflight[:0], w.pending[:k]...)
	for _, wt := range w.inflight {
		wt.taken = true
	}
	n := copy(w.pending, w.pending[k:])
	clear(w.pending[n:])
	w.pending = w.pending[:n]
	return w.inflight
}

// Close makes later and queued WriteFrame calls fail with ErrClosed and
// closes the underlying writer if it is an io.Closer, which also unblocks a
// Write in progress for most writers (pipes, files, network connections).
// Only the first call has an effect; later calls return nil.
func (w *Writer) Close() error {
	var err error
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		queued := w.pending
		w.pending = nil
		for _, wt := range queued {
			wt.taken = true
		}
		w.mu.Unlock()
		for _, wt := range queued {
			wt.notify(ErrClosed)
		}
		if c, ok := w.w.(io.Closer); ok {
			err = c.Close()
		}
		w.flushers.Wait()
	})
	return err
}

func checkFrame(line []byte) error {
	n := len(line)
	if n == 0 || line[n-1] != '\n' {
		return errNoNewline
	}
	if bytes.IndexByte(line[:n-1], '\n') >= 0 {
		return errEmbeddedNewline
	}
	return nil
}
