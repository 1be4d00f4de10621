// Package syncwriter has a writer that serialises the writes of several
// goroutines to one io.Writer (a stderr shared by a child's copier and
// the command's own messages), so that each Write reaches it whole.
package syncwriter

import (
	"io"
	"sync"
)

// Writer serialises writes to the writer it wraps. It is safe for
// concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a Writer writing to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p to the wrapped writer, waiting for any other Write.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
