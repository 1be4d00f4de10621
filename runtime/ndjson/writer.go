package ndjson

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
)

var (
	// ErrClosed is returned by Write after Close.
	ErrClosed       = errors.New("ndjson: closed")
	errFrameNewline = errors.New("ndjson: frame contains a newline")
)

const (
	maxBatch    = 1 << 20  // bound on the bytes of one batched Write; a larger frame is written alone
	maxRetained = 64 << 10 // the largest batch buffer kept between writes
	largeFrame  = 64 << 10 // a frame written alone from this size on is not copied: its newline follows it
)

// Writer writes frames to a newline-delimited stream, each followed by a newline. It is safe for concurrent
// use: frames never interleave. While one goroutine is inside the underlying Write, the frames of others
// wait; when it returns, that goroutine writes the waiting frames with one Write call (group commit), until
// none is left.
type Writer struct {
	w io.Writer

	mu      sync.Mutex
	busy    bool      // a goroutine is writing; while none is, pending is empty
	closed  bool      // Close was called
	err     error     // the first write error (sticky)
	pending []*waiter // frames waiting for the next batch, in order

	inflight []*waiter // the frames being written, and the batch buffer: owned by the busy goroutine
	batch    []byte

	// waiters recycles the waiters of this Writer (their channels stay in one testing/synctest bubble).
	waiters sync.Pool
}

// waiter is a frame waiting for the goroutine writing; its caller waits on ch for the outcome.
type waiter struct {
	frame []byte
	ch    chan error
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w}
	wr.waiters.New = func() any { return &waiter{ch: make(chan error, 1)} }
	return wr
}

// Write writes frame, which must not contain a newline, and a newline after it: with a Write call of its
// own when no other frame is being written, or else with the frames that wait meanwhile, in the order they
// came. It returns once its frame has been written or has failed; frame is not retained. If ctx ends while
// the frame still waits, it is dropped and ctx.Err() is returned; a Write in progress only Close can
// interrupt (if the underlying writer unblocks on Close). After a write error every later call returns it.
func (w *Writer) Write(ctx context.Context, frame []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if bytes.IndexByte(frame, '\n') >= 0 {
		return errFrameNewline
	}
	w.mu.Lock()
	if err := w.failed(); err != nil {
		w.mu.Unlock()
		return err
	}
	if w.busy {
		return w.wait(ctx, frame)
	}
	w.busy = true
	w.mu.Unlock()
	var err error
	if len(frame) >= largeFrame {
		if err = w.write(frame); err == nil {
			err = w.write([]byte{'\n'})
		}
	} else {
		w.batch = append(append(w.batch[:0], frame...), '\n')
		err = w.write(w.batch)
	}
	w.drain(err)
	return err
}

func (w *Writer) failed() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

func (w *Writer) write(p []byte) error {
	n, err := w.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// wait, called with w.mu held, queues frame behind the Write in progress, releases w.mu and waits.
func (w *Writer) wait(ctx context.Context, frame []byte) error {
	wt := w.waiters.Get().(*waiter)
	wt.frame = frame
	w.pending = append(w.pending, wt)
	w.mu.Unlock()
	var err error
	select {
	case err = <-wt.ch:
	case <-ctx.Done():
		w.mu.Lock()
		i := slices.Index(w.pending, wt)
		if i >= 0 {
			w.pending = slices.Delete(w.pending, i, i+1)
		}
		w.mu.Unlock()
		err = ctx.Err()
		if i < 0 { // a batch or Close took the frame: its outcome is coming
			err = <-wt.ch
		}
	}
	wt.frame = nil
	w.waiters.Put(wt)
	return err
}

// drain, run by the busy goroutine after its own Write (whose error is werr), writes the waiting frames in
// batches until none is left, then gives up the role.
func (w *Writer) drain(werr error) {
	w.mu.Lock()
	for {
		if werr != nil && w.err == nil {
			w.err = werr
		}
		w.inflight = notify(w.inflight, werr)
		if err := w.failed(); err != nil {
			w.pending = notify(w.pending, err)
		}
		if len(w.pending) == 0 {
			w.busy = false
			if cap(w.batch) > maxRetained {
				w.batch = nil
			}
			w.mu.Unlock()
			return
		}
		size := 0
		for _, wt := range w.pending {
			if size += len(wt.frame) + 1; size > maxBatch && len(w.inflight) > 0 {
				break
			}
			w.inflight = append(w.inflight, wt)
		}
		w.pending = slices.Delete(w.pending, 0, len(w.inflight))
		w.mu.Unlock()
		p := w.batch[:0]
		for _, wt := range w.inflight {
			p = append(append(p, wt.frame...), '\n')
		}
		w.batch = p
		werr = w.write(p)
		w.mu.Lock()
	}
}

// notify hands err to the callers waiting on q's frames and returns q emptied.
func notify(q []*waiter, err error) []*waiter {
	for _, wt := range q {
		wt.ch <- err
	}
	clear(q)
	return q[:0]
}

// Close makes later and waiting calls fail with ErrClosed and closes the underlying writer if it is an
// io.Closer, which unblocks a Write in progress for most (pipes, files, connections); it does not wait for
// that Write. Only the first call has an effect; later calls return nil.
func (w *Writer) Close() error {
	if !w.close() {
		return nil
	}
	if c, ok := w.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// close marks w closed and fails the waiting frames; it reports whether it did (the first call).
func (w *Writer) close() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.closed = true
	w.pending = notify(w.pending, ErrClosed)
	return true
}
