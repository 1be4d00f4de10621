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
	// ErrClosed is returned by the Writer's methods after Close.
	ErrClosed          = errors.New("ndjson: writer closed")
	errNoNewline       = errors.New("ndjson: frame does not end with a newline")
	errEmbeddedNewline = errors.New("ndjson: frame contains an embedded newline")
)

const (
	// DefaultQueueBytes is the default bound on the bytes of frames queued by WriteFrameAsync and
	// WriteFrameOrQueue.
	DefaultQueueBytes = 4 << 20
	maxBatch          = 1 << 20  // bound on the bytes of one batched Write; a larger frame is written alone
	maxRetainedBatch  = 64 << 10 // the largest batch buffer kept between batches
)

// WriterOptions configures a Writer. The zero value is ready to use.
type WriterOptions struct {
	// QueueBytes bounds the bytes of frames that WriteFrameAsync and WriteFrameOrQueue may leave queued
	// (default DefaultQueueBytes); past it they wait like WriteFrame, which throttles their callers.
	QueueBytes int
	// OnError, if set, is called once, with the first error of the underlying Write (not ErrClosed),
	// from the goroutine that wrote. No call returns that error before OnError has returned, so OnError
	// must not write to the Writer itself (Close is fine).
	OnError func(error)
	// OnWrite, if set, is called with every frame just before the Write call that writes it, once per
	// frame, in the order of the stream, from the goroutine writing. line is valid only during the call.
	OnWrite func(line []byte)
}

// Writer writes frames to a newline-delimited stream. It is safe for concurrent use: frames never
// interleave. While one goroutine is inside the underlying Write, frames from others are queued; when it
// returns, that goroutine writes the queued frames (up to a bound) with one Write call, until none is left.
type Writer struct {
	w io.Writer
	o WriterOptions

	mu       sync.Mutex
	writing  bool          // a goroutine holds the writer role; while none does, pending is empty
	closed   bool          // Close was called
	err      error         // the first write error (sticky)
	reported chan struct{} // closed once OnError has returned for err
	pending  []*waiter     // frames waiting for the next batch, in order
	copied   int           // bytes of the queued copies (WriteFrameAsync, WriteFrameOrQueue)
	idle     chan struct{} // closed for Flush when the writer role is given up

	inflight []*waiter // the frames being written, and the batch buffer: owned by the writer role
	batch    []byte
}

// waiter is a queued frame: a caller's, who waits on ch (buffered) for the outcome, or a copy (ch nil).
type waiter struct {
	line []byte
	ch   chan error
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

// NewWriter returns a Writer that writes to w. opts may be nil.
func NewWriter(w io.Writer, opts *WriterOptions) *Writer {
	wr := &Writer{w: w}
	if opts != nil {
		wr.o = *opts
	}
	if wr.o.QueueBytes <= 0 {
		wr.o.QueueBytes = DefaultQueueBytes
	}
	return wr
}

// WriteFrame writes line, which must end with exactly one '\n' and contain no other newline, with a
// Write call of its own when no other frame is being written, or else later, with the frames queued
// meanwhile, in the order the calls queued them. It returns once its frame has been written or has
// failed; line is not retained. If ctx ends while the frame is still queued, it is dropped and ctx.Err()
// is returned; a Write in progress only Close can interrupt (if the writer unblocks on Close). After a
// write error every later call returns that error.
func (w *Writer) WriteFrame(ctx context.Context, line []byte) error {
	return w.send(ctx, line, false, false)
}

// WriteFrameAsync queues a copy of line, to be written in order with every other frame, and returns,
// starting a goroutine to write the queue if no write is in progress, unless the queued copies would exceed
// the queue bound: then it waits like WriteFrame. Errors writing the frame are not returned (see
// WriterOptions.OnError); they make later calls fail.
func (w *Writer) WriteFrameAsync(ctx context.Context, line []byte) error {
	return w.send(ctx, line, true, true)
}

// WriteFrameOrQueue writes line like WriteFrame when no write is in progress. Otherwise it queues a copy
// for the goroutine writing and returns, unless the queued copies would exceed the queue bound: then it
// waits like WriteFrame. So producers side by side (request handlers) never wait for one another's
// frames, and no goroutine is started.
func (w *Writer) WriteFrameOrQueue(ctx context.Context, line []byte) error {
	return w.send(ctx, line, true, false)
}

// send writes line, or queues it and waits; or, within the queue bound, it queues a copy and returns: if
// copyBusy while a write is in progress, if copyIdle otherwise (starting a goroutine to write it).
func (w *Writer) send(ctx context.Context, line []byte, copyBusy, copyIdle bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
		<-reported
		return err
	}
	if w.writing && (!copyBusy || w.copied+len(line) > w.o.QueueBytes) {
		return w.wait(ctx, line)
	}
	if !w.writing && (!copyIdle || len(line) > w.o.QueueBytes) {
		w.writing = true
		w.mu.Unlock()
		if w.o.OnWrite != nil {
			w.o.OnWrite(line)
		}
		err := w.write(line)
		w.drain(err)
		return err
	}
	w.pending = append(w.pending, &waiter{line: bytes.Clone(line)})
	w.copied += len(line)
	if !w.writing {
		w.writing = true
		go w.drain(nil)
	}
	w.mu.Unlock()
	return nil
}

func (w *Writer) write(p []byte) error {
	n, err := w.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// wait, called with w.mu held, queues line behind the Write in progress, releases w.mu and waits.
func (w *Writer) wait(ctx context.Context, line []byte) error {
	wt := waiterPool.Get().(*waiter)
	wt.line = line
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
	wt.line = nil
	waiterPool.Put(wt)
	return err
}

// drain, run by the writer role after its own Write (whose error is werr), writes the queued frames in
// batches until none is left, then gives up the role.
func (w *Writer) drain(werr error) {
	w.mu.Lock()
	for {
		w.failLocked(werr) // before the frames written learn of werr
		w.inflight = notifyAll(w.inflight, werr)
		if w.err != nil {
			w.pending, w.copied = notifyAll(w.pending, w.err), 0
		}
		if len(w.pending) == 0 {
			w.writing = false
			if w.idle != nil {
				close(w.idle)
				w.idle = nil
			}
			w.mu.Unlock()
			return
		}
		size := 0
		for _, wt := range w.pending {
			if size += len(wt.line); size > maxBatch && len(w.inflight) > 0 {
				break
			}
			w.inflight = append(w.inflight, wt)
			if wt.ch == nil {
				w.copied -= len(wt.line)
			}
		}
		w.pending = slices.Delete(w.pending, 0, len(w.inflight))
		w.mu.Unlock()

		p := w.inflight[0].line
		if w.o.OnWrite != nil {
			for _, wt := range w.inflight {
				w.o.OnWrite(wt.line)
			}
		}
		if len(w.inflight) > 1 {
			p = w.batch[:0]
			for _, wt := range w.inflight {
				p = append(p, wt.line...)
			}
			if w.batch = p; cap(p) > maxRetainedBatch {
				w.batch = nil
			}
		}
		werr = w.write(p)
		w.mu.Lock()
	}
}

// failLocked records werr, the first write error, and calls OnError, releasing w.mu around it.
func (w *Writer) failLocked(werr error) {
	if werr == nil || w.err != nil || w.closed {
		return
	}
	w.err, w.reported = werr, make(chan struct{})
	if w.o.OnError != nil {
		w.mu.Unlock()
		w.o.OnError(werr)
		w.mu.Lock()
	}
	close(w.reported)
}

// notifyAll hands err to the callers waiting on q's frames (without blocking) and returns q emptied.
func notifyAll(q []*waiter, err error) []*waiter {
	for _, wt := range q {
		if wt.ch != nil {
			wt.ch <- err
		}
	}
	clear(q)
	return q[:0]
}

// Flush waits until every frame queued has been written (or has failed) and no write is in progress, or
// until ctx ends. It returns the stream's write error, if any.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	for w.writing && !w.closed {
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
	defer w.mu.Unlock()
	if w.closed && w.err == nil {
		return ErrClosed
	}
	return w.err
}

// Close makes later and queued calls fail with ErrClosed and closes the underlying writer if it is an
// io.Closer, which unblocks a Write in progress for most (pipes, files, connections); it does not wait
// for that Write. Only the first call has an effect; later calls return nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.pending, w.copied = notifyAll(w.pending, ErrClosed), 0
	if w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
	w.mu.Unlock()
	if c, ok := w.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func checkFrame(line []byte) error {
	if n := len(line); n == 0 || line[n-1] != '\n' {
		return errNoNewline
	}
	if bytes.IndexByte(line, '\n') < len(line)-1 {
		return errEmbeddedNewline
	}
	return nil
}
