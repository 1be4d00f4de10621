package ndjson

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
)

// ErrClosed is returned by the Writer's methods after Close.
var ErrClosed = errors.New("ndjson: writer closed")

var (
	errNoNewline       = errors.New("ndjson: frame does not end with a newline")
	errEmbeddedNewline = errors.New("ndjson: frame contains an embedded newline")
)

const (
	// DefaultQueueBytes is the default bound on the bytes of frames queued
	// by WriteFrameAsync and WriteFrameOrQueue.
	DefaultQueueBytes = 4 << 20
	// maxBatch bounds the bytes gathered into one batched Write; a single
	// frame larger than that is written on its own.
	maxBatch = 1 << 20
	// maxRetainedBatch is the largest batch buffer kept between batches.
	maxRetainedBatch = 64 << 10
)

// WriterOptions configures a Writer. The zero value is ready to use.
type WriterOptions struct {
	// QueueBytes bounds the bytes of frames that WriteFrameAsync and
	// WriteFrameOrQueue may leave queued (default DefaultQueueBytes); past
	// it they wait like WriteFrame, which throttles their callers.
	QueueBytes int
	// OnError, if set, is called once, with the first error of the
	// underlying Write (not ErrClosed), from the goroutine that wrote. No
	// call returns that error before OnError has returned, so OnError
	// must not write to the Writer itself (Close is fine).
	OnError func(error)
	// OnWrite, if set, is called with every frame just before the Write
	// call that writes it, once per frame, in the order of the stream,
	// from the goroutine writing. line is valid only during the call.
	OnWrite func(line []byte)
}

// Writer writes frames to a newline-delimited stream. It is safe for
// concurrent use: frames from concurrent writers never interleave.
//
// Writes are group-committed: while one goroutine is inside the underlying
// Write, frames from other goroutines are queued; when that Write returns,
// the writing goroutine writes every queued frame (up to a bound) with one
// Write call, and repeats until the queue is empty.
type Writer struct {
	w       io.Writer
	limit   int
	onError func(error)
	onWrite func([]byte)

	mu      sync.Mutex
	writing bool // a goroutine holds the writer role
	closed  bool // Close was called
	// reported is closed once OnError has returned for w.err: no call
	// returns the error before that, so a caller that sees it also sees
	// what OnError did about it (the connection's cause).
	reported chan struct{}
	err      error     // the first write error (sticky)
	pending  []*waiter // frames waiting for the next batch, in order
	copied   int       // bytes of queued copies (WriteFrameAsync, WriteFrameOrQueue)
	idle     chan struct{}

	// Owned by the goroutine holding the writer role.
	batch    []byte
	inflight []*waiter
}

// waiter is a frame queued behind a Write in progress.
type waiter struct {
	line   []byte
	ch     chan error // receives the outcome once; buffered; nil for queued copies
	taken  bool       // removed from pending by a batch or by Close (under mu)
	copied bool       // line is a copy counted in Writer.copied
}

// notify hands the outcome to the frame's caller, if one waits for it.
func (wt *waiter) notify(err error) {
	if wt.ch != nil {
		wt.ch <- err
	}
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

// NewWriter returns a Writer that writes to w. opts may be nil.
func NewWriter(w io.Writer, opts *WriterOptions) *Writer {
	wr := &Writer{w: w, limit: DefaultQueueBytes}
	if opts != nil {
		if opts.QueueBytes > 0 {
			wr.limit = opts.QueueBytes
		}
		wr.onError, wr.onWrite = opts.OnError, opts.OnWrite
	}
	return wr
}

// WriteFrame writes line, which must end with exactly one '\n' and contain
// no other newline. Frames never interleave and are written in the order
// their calls queued them. When no other frame is being written, line is
// written with a single Write call of its own; otherwise it is queued and
// later written, together with the other frames queued meanwhile, in one
// Write call. WriteFrame returns once its frame has been written or has
// failed; line is not retained after it returns.
//
// If ctx ends while the frame is still queued, it is dropped and ctx.Err()
// is returned. A Write already in progress cannot be interrupted by ctx,
// only by Close (when the underlying writer unblocks on Close).
//
// After a write error every later call returns that error.
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

// WriteFrameAsync queues a copy of line to be written in order with every
// other frame and returns without waiting for the write, unless the queued
// copies would exceed the queue bound: then it waits like WriteFrame. A
// goroutine is started to write the queue when no write is in progress.
// Errors writing the frame are not returned to the caller (see
// WriterOptions.OnError); they make later calls fail.
func (w *Writer) WriteFrameAsync(ctx context.Context, line []byte) error {
	return w.queue(ctx, line, true)
}

// WriteFrameOrQueue writes line like WriteFrame when no write is in
// progress. Otherwise it queues a copy of line, which the goroutine writing
// then writes with the rest of the queue, and returns without waiting,
// unless the queued copies would exceed the queue bound: then it waits like
// WriteFrame. It suits producers that run side by side, such as concurrent
// request handlers: none of them waits for another's frame to be written,
// and no goroutine is started.
func (w *Writer) WriteFrameOrQueue(ctx context.Context, line []byte) error {
	return w.queue(ctx, line, false)
}

func (w *Writer) queue(ctx context.Context, line []byte, async bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.lockOpen(line); err != nil {
		return err
	}
	switch {
	case w.writing && w.copied+len(line) > w.limit:
		return w.wait(ctx, line)
	case !w.writing && (!async || len(line) > w.limit):
		return w.writeNow(line)
	}
	w.pending = append(w.pending, &waiter{line: bytes.Clone(line), copied: true})
	w.copied += len(line)
	if !w.writing {
		w.writing = true
		go w.drain(nil)
	}
	w.mu.Unlock()
	return nil
}

// lockOpen checks line and locks w.mu, returning with it held unless the
// frame is malformed or the stream is closed or broken.
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
		reported := w.reported
		w.mu.Unlock()
		if reported != nil {
			<-reported
		}
		return err
	}
	return nil
}

// writeNow takes the writer role, writes line, then writes whatever was
// queued meanwhile. It is called with w.mu held and releases it.
func (w *Writer) writeNow(line []byte) error {
	w.writing = true
	w.mu.Unlock()
	if w.onWrite != nil {
		w.onWrite(line)
	}
	err := w.write(line)
	w.drain(err)
	return err
}

// write writes p with one Write call.
func (w *Writer) write(p []byte) error {
	n, err := w.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// wait queues line behind the Write in progress and waits for its outcome.
// It is called with w.mu held and releases it.
func (w *Writer) wait(ctx context.Context, line []byte) error {
	wt := waiterPool.Get().(*waiter)
	wt.line, wt.taken, wt.copied = line, false, false
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

// drain is run by the goroutine holding the writer role after its own
// Write (whose error is werr): it writes the queued frames in batches until
// none is left, then gives up the role.
func (w *Writer) drain(werr error) {
	w.mu.Lock()
	for {
		w.failLocked(werr)
		if len(w.pending) == 0 {
			w.writing = false
			if w.idle != nil {
				close(w.idle)
				w.idle = nil
			}
			w.mu.Unlock()
			return
		}
		if w.closed || w.err != nil {
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
		if w.onWrite != nil {
			for _, wt := range batch {
				w.onWrite(wt.line)
			}
		}
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
		werr = w.write(p)
		if werr != nil {
			// OnError runs before any waiter learns of the error.
			w.mu.Lock()
			w.failLocked(werr)
			w.mu.Unlock()
		}
		for i, wt := range batch {
			wt.notify(werr)
			batch[i] = nil
		}
		w.mu.Lock()
	}
}

// failLocked records werr, the first write error, and reports it to
// OnError; it is called with w.mu held, which it releases around OnError.
func (w *Writer) failLocked(werr error) {
	if werr == nil || w.err != nil || w.closed {
		return
	}
	w.err = werr
	if w.onError != nil {
		w.reported = make(chan struct{})
		w.mu.Unlock()
		w.onError(werr)
		w.mu.Lock()
		close(w.reported)
	}
}

// takeLocked removes the first k pending frames, marks them taken and
// returns them in w.inflight.
func (w *Writer) takeLocked(k int) []*waiter {
	w.inflight = append(w.inflight[:0], w.pending[:k]...)
	for _, wt := range w.inflight {
		wt.taken = true
		if wt.copied {
			w.copied -= len(wt.line)
		}
	}
	n := copy(w.pending, w.pending[k:])
	clear(w.pending[n:])
	w.pending = w.pending[:n]
	return w.inflight
}

// Flush waits until every frame queued so far has been written (or has
// failed) and no write is in progress, or until ctx ends. It returns the
// stream's write error, if any.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	for w.writing || len(w.pending) > 0 {
		if w.closed {
			break
		}
		if w.idle == nil {
			w.idle = make(chan struct{})
		}
		idle := w.idle
		w.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	err := w.err
	if w.closed && err == nil {
		err = ErrClosed
	}
	w.mu.Unlock()
	return err
}

// Close makes later and queued calls fail with ErrClosed and closes the
// underlying writer if it is an io.Closer, which also unblocks a Write in
// progress for most writers (pipes, files, network connections). It does
// not wait for a Write in progress. Only the first call has an effect;
// later calls return nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	queued := w.pending
	w.pending, w.copied = nil, 0
	for _, wt := range queued {
		wt.taken = true
	}
	if w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
	w.mu.Unlock()
	for _, wt := range queued {
		wt.notify(ErrClosed)
	}
	if c, ok := w.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
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
