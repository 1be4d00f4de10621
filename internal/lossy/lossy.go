// Package lossy writes to an output its reader may stop draining (a
// terminal's stderr, a pipe nobody reads) without ever blocking the
// program: what is emitted is queued, bounded, for a goroutine of its own,
// and dropped, and counted, while the queue is full. A note of how many
// were dropped follows once the queue has room again, and at Close.
//
// The example programs' renderers use it, so that a diagnostic output
// nobody reads never stalls a protocol connection.
package lossy

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer is a lossy writer to one output. It is safe for concurrent use.
type Writer struct {
	name string // the output's name in the note ("stderr")

	mu      sync.Mutex
	queue   chan []byte
	dropped int  // counted writes dropped since the last note
	closed  bool // nothing more is queued

	done chan struct{} // closed once the writer goroutine has written all
	err  error         // its first write error; read after done is closed
}

// New returns a Writer to w that queues at most size writes. name is the
// output's name in the note of dropped writes.
func New(w io.Writer, name string, size int) *Writer {
	lw := &Writer{name: name, queue: make(chan []byte, size), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		for b := range lw.queue {
			if _, err := w.Write(b); err != nil && lw.err == nil {
				lw.err = err
			}
		}
	}()
	return lw
}

// Emit queues b, which it takes over, or drops it when the queue is full.
// A drop is counted in the note when counted is set (a status redraw that
// the next one replaces need not be). After Close, b is dropped.
func (w *Writer) Emit(b []byte, counted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(b) == 0 {
		return
	}
	if w.dropped > 0 && len(w.queue) < cap(w.queue)/2 {
		select {
		case w.queue <- w.note(w.dropped):
			w.dropped = 0
		default:
		}
	}
	select {
	case w.queue <- b:
	default:
		if counted {
			w.dropped++
		}
	}
}

func (w *Writer) note(n int) []byte {
	return fmt.Appendf(nil, "\n(%d lines not shown: %s is not being read)\n", n, w.name)
}

// Close queues the note of what was dropped and waits up to timeout for
// the queue to be written: an output nobody reads does not hold it longer.
// It returns the first error writing to the output, once everything was
// written (an output not being read is no error). Close is idempotent.
func (w *Writer) Close(timeout time.Duration) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.writeErr()
	}
	dropped := w.dropped
	w.closed = true
	w.mu.Unlock()
	// One timer for both waits: a receive from it fires once.
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if dropped > 0 {
		select {
		case w.queue <- w.note(dropped):
		case <-deadline.C:
			close(w.queue)
			return nil
		}
	}
	close(w.queue)
	select {
	case <-w.done:
	case <-deadline.C:
	}
	return w.writeErr()
}

// writeErr is the first write error, once the writer goroutine is done.
func (w *Writer) writeErr() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}
