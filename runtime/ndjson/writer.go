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

// Writer writes frames to a newline-delimited stream. It is safe for
// concurrent use: frames from concurrent writers never interleave.
type Writer struct {
	w    io.Writer
	lock chan struct{} // holds a token while a frame is being written
	done chan struct{} // closed by Close
	once sync.Once
	err  error // set, under lock, when a frame was written only in part
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, lock: make(chan struct{}, 1), done: make(chan struct{})}
}

// WriteFrame writes line, which must end with exactly one '\n' and contain no
// other newline, with a single Write call. If another frame is being written
// it waits for it, returning ctx.Err() if ctx ends first; a Write already in
// progress cannot be interrupted by ctx, only by Close (when the underlying
// writer unblocks on Close).
//
// A short write is reported as io.ErrShortWrite. After a frame has been
// written in part the stream is left mid-line, so every later call returns
// the same error.
func (w *Writer) WriteFrame(ctx context.Context, line []byte) error {
	if err := checkFrame(line); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case w.lock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return ErrClosed
	}
	defer func() { <-w.lock }()
	select {
	case <-w.done:
		return ErrClosed
	default:
	}
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if n > 0 && n < len(line) {
		w.err = err
	}
	return err
}

// Close makes later and waiting WriteFrame calls fail with ErrClosed and
// closes the underlying writer if it is an io.Closer, which also unblocks a
// Write in progress for most writers (pipes, files, network connections).
// Only the first call has an effect; later calls return nil.
func (w *Writer) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		if c, ok := w.w.(io.Closer); ok {
			err = c.Close()
		}
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
