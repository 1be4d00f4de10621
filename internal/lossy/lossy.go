// Package lossy writes to an output its reader may stop draining (a
// terminal's stderr, a pipe nobody reads) without ever blocking the
// program: what is emitted is queued, bounded in writes and in bytes, for
// a goroutine of its own, and dropped, and counted, while the queue is
// full. A note of how much was dropped follows once the queue has room
// again, and at Close.
//
// The example programs' renderers use it, so that a diagnostic output
// nobody reads never stalls a protocol connection, nor makes the program
// hold more than the bound however much a peer sends.
package lossy

import (
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultMaxBytes bounds the bytes New queues: 4 MiB.
const DefaultMaxBytes = 4 << 20

// Writer is a lossy writer to one output. It is safe for concurrent use.
type Writer struct {
	name  string // the output's name in the note ("stderr")
	max   int    // bytes queued at most
	piece int    // a write is queued in pieces of at most this many bytes

	mu           sync.Mutex
	queue        chan []byte
	queued       int  // bytes in queue (and being written)
	dropped      int  // counted writes dropped since the last note
	droppedBytes int  // their bytes
	closed       bool // nothing more is queued

	done chan struct{} // closed once the writer goroutine has written all
	err  error         // its first write error; read after done is closed
}

// New returns a Writer to w that queues at most size writes and
// DefaultMaxBytes bytes. name is the output's name in the note of dropped
// writes.
func New(w io.Writer, name string, size int) *Writer {
	return NewSize(w, name, size, DefaultMaxBytes)
}

// NewSize is New with a bound of its own on the bytes queued (at least
// 1 KiB).
func NewSize(w io.Writer, name string, size, maxBytes int) *Writer {
	maxBytes = max(maxBytes, 1<<10)
	lw := &Writer{name: name, max: maxBytes, piece: max(maxBytes/8, 512), queue: make(chan []byte, size), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		for b := range lw.queue {
			if _, err := w.Write(b); err != nil && lw.err == nil {
				lw.err = err
			}
			lw.mu.Lock()
			lw.queued -= len(b)
			lw.mu.Unlock()
		}
	}()
	return lw
}

// Emit queues b, which it takes over, or drops it when the queue is full
// (in writes or in bytes). A write larger than an eighth of the byte bound
// is queued in pieces, cut between UTF-8 characters, so that as much of it
// as fits is written; the rest is dropped. A drop is counted in the note when
// counted is set (a status redraw that the next one replaces need not be).
// After Close, b is dropped.
func (w *Writer) Emit(b []byte, counted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(b) == 0 {
		return
	}
	if w.dropped > 0 && len(w.queue) < cap(w.queue)/2 && w.queued < w.max/2 {
		note := w.note(w.dropped, w.droppedBytes)
		select {
		case w.queue <- note:
			w.queued += len(note)
			w.dropped, w.droppedBytes = 0, 0
		default:
		}
	}
	for len(b) > 0 {
		n := min(len(b), w.piece)
		for i := n; i < len(b) && i > n-utf8.UTFMax && i > 0; i-- {
			if utf8.RuneStart(b[i]) { // a piece ends where a character does
				n = i
				break
			}
		}
		piece := b[:n]
		if w.queued+len(piece) > w.max {
			break
		}
		select {
		case w.queue <- piece:
			w.queued += len(piece)
			b = b[len(piece):]
			continue
		default:
		}
		break
	}
	if len(b) > 0 && counted {
		w.dropped++
		w.droppedBytes += len(b)
	}
}

// Full reports whether the next write would be dropped: a writer can then
// skip making it (and Drop it, to have it counted).
func (w *Writer) Full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed || len(w.queue) == cap(w.queue) || w.queued >= w.max
}

// Drop counts a write of n bytes that was not made because the queue was
// full.
func (w *Writer) Drop(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.dropped++
		w.droppedBytes += n
	}
}

func (w *Writer) note(n, bytes int) []byte {
	return fmt.Appendf(nil, "\n(%d lines not shown: %s is not being read; %d bytes dropped)\n", n, w.name, bytes)
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
	dropped, droppedBytes := w.dropped, w.droppedBytes
	w.closed = true
	w.mu.Unlock()
	// One timer for both waits: a receive from it fires once.
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if dropped > 0 {
		select {
		case w.queue <- w.note(dropped, droppedBytes):
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
