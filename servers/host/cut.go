package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// CutFrameError reports that the runtime's output ended in the middle of
// a frame: the bytes after its last end of line are the start of a JSON
// document, not a whole one. The runtime stopped, or was stopped, while
// writing it (an agent killed while it wrote a long frame). The partial
// frame is not read as a message: ServeCommand returns this error (joined
// with the child's exit error, if any) so that it is reported as cut
// short, not as a malformed line.
type CutFrameError struct {
	// Bytes is how many bytes of the frame arrived.
	Bytes int64
}

func (e *CutFrameError) Error() string {
	return fmt.Sprintf("the runtime's output ended in the middle of a frame (%d bytes without their end of line): it stopped, or was stopped, while writing it", e.Bytes)
}

// tailReader reads a runtime's output and follows the structure of the
// bytes after its last end of line (the frame being written): strings,
// escapes and nesting, in constant memory. At the end of the output it
// returns a *CutFrameError instead of io.EOF when those bytes are an
// unfinished JSON document, so that the line reader drops them (a read
// error ends a stream without its incomplete last line) and the host says
// what happened. Only the bytes after the last newline of each read are
// scanned: a frame is scanned once, when it spans reads.
type tailReader struct {
	r   io.Reader
	cut atomic.Pointer[CutFrameError]

	// The state of the frame being written (used by Read's goroutine only).
	n        int64 // bytes since the last newline
	depth    int   // open objects and arrays
	inString bool
	escaped  bool
	text     bool // a byte other than JSON whitespace was seen
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.scan(p[:n])
	}
	if err == io.EOF && t.text && (t.depth > 0 || t.inString) {
		cut := &CutFrameError{Bytes: t.n}
		t.cut.Store(cut)
		return n, cut
	}
	return n, err
}

// Close closes what it reads when that is an io.Closer.
func (t *tailReader) Close() error {
	if c, ok := t.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// closer is a writer whose Close closes f, whatever wraps it.
type closer struct {
	io.Writer
	f io.Closer
}

func (c *closer) Close() error {
	if wc, ok := c.Writer.(io.Closer); ok && any(wc) != any(c.f) {
		_ = wc.Close()
	}
	if err := c.f.Close(); !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// scan follows b, the next bytes of the output.
func (t *tailReader) scan(b []byte) {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		t.n, t.depth, t.inString, t.escaped, t.text = 0, 0, false, false, false
		b = b[i+1:]
	}
	t.n += int64(len(b))
	for _, c := range b {
		switch {
		case t.escaped:
			t.escaped = false
		case t.inString:
			switch c {
			case '\\':
				t.escaped = true
			case '"':
				t.inString = false
			}
		case c == '"':
			t.inString, t.text = true, true
		case c == '{' || c == '[':
			t.depth++
			t.text = true
		case c == '}' || c == ']':
			t.depth--
			t.text = true
		case c == ' ' || c == '\t' || c == '\r':
		default:
			t.text = true
		}
	}
}
