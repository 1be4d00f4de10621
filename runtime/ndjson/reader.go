package ndjson

import (
	"bytes"
	"errors"
	"io"
	"math/bits"
	"strconv"
	"sync"
)

// DefaultMaxFrame is the frame size limit used when NewReader is given a
// non-positive limit.
const DefaultMaxFrame = 16 << 20

const (
	// minBuffer is the buffer an idle Reader holds.
	minBuffer = 4 << 10
	// burstBuffer is what the buffer grows to while reads keep filling it
	// (the peer writes faster than we read): fewer, larger reads.
	burstBuffer = 64 << 10
)

// ErrFrameTooLarge is matched (with errors.Is) by the error ReadFrame returns
// for a line longer than the reader's limit.
var ErrFrameTooLarge = errors.New("ndjson: frame too large")

// FrameTooLargeError reports a line that exceeded the reader's limit. The
// line has been consumed and discarded, all but its first bytes: from
// those a protocol can often still tell what the line was and its id, to
// answer it or fail the call it answers.
type FrameTooLargeError struct {
	Limit int    // the limit in bytes, excluding the line terminator
	Size  int    // the line's length, excluding its newline (and, mostly, a '\r' before it)
	Head  []byte // the line's first HeadSize bytes (all of it, if shorter)
}

// HeadSize is how much of an over-long line FrameTooLargeError keeps.
const HeadSize = 1 << 10

func (e *FrameTooLargeError) Error() string {
	return "ndjson: frame exceeds the " + strconv.Itoa(e.Limit) + "-byte limit"
}

// Is reports whether target is ErrFrameTooLarge.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// Reader reads frames from a newline-delimited stream. It buffers 4 KiB
// while idle, 64 KiB while the peer keeps it busy, and as much as the
// longest acceptable line needs while it reads one, then shrinks back.
// A Reader is not safe for concurrent use.
type Reader struct {
	r          io.Reader
	max        int
	buf        []byte // buf[start:end] is read and not yet returned
	start, end int
	scanned    int    // buf[start:start+scanned] holds no newline
	skipping   int    // bytes of an over-long line dropped so far (0: none)
	head       []byte // the start of the over-long line being dropped
	small      int    // reads in a row that used little of a burst buffer
	err        error  // the read error to return once buf is drained
}

// shrinkAfter is how many small reads in a row make a burst buffer shrink.
const shrinkAfter = 16

// NewReader returns a Reader that reads from r and rejects frames longer
// than maxFrame bytes (DefaultMaxFrame if maxFrame <= 0).
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Reader{r: r, max: maxFrame, buf: make([]byte, minBuffer)}
}

// ReadFrame returns the next non-blank line without its "\n" or "\r\n"
// terminator. Lines holding only JSON whitespace are skipped. The returned
// slice is only valid until the next call.
//
// A line longer than the limit is consumed without being buffered and
// reported as a *FrameTooLargeError; the following call continues with the
// next line. Bytes after the last newline are returned as a final frame
// before io.EOF. Other read errors are returned as they are, dropping any
// incomplete line.
func (r *Reader) ReadFrame() ([]byte, error) {
	if len(r.buf) > burstBuffer && r.end-r.start < minBuffer && r.skipping == 0 {
		// The long line last returned is done with: give its memory back.
		r.buf = r.replace(append(make([]byte, 0, minBuffer), r.buf[r.start:r.end]...)[:minBuffer])
		r.end -= r.start
		r.start = 0
	}
	for {
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			line := r.buf[r.start : r.start+r.scanned+i]
			r.start += r.scanned + i + 1
			r.scanned = 0
			if r.skipping > 0 {
				return nil, r.dropped(line)
			}
			if line = trimEOL(line); len(line) > r.max {
				return nil, &FrameTooLargeError{Limit: r.max, Size: len(line), Head: bytes.Clone(line[:min(len(line), HeadSize)])}
			} else if !isBlank(line) {
				return line, nil
			}
			continue
		}
		r.scanned = r.end - r.start
		if r.err != nil {
			rest := r.buf[r.start:r.end]
			r.start, r.scanned = r.end, 0
			line := trimEOL(rest)
			switch {
			case r.skipping > 0:
				if err := r.dropped(rest); r.err == io.EOF {
					return nil, err
				}
				return nil, r.err
			case r.err == io.EOF && len(line) > r.max:
				return nil, &FrameTooLargeError{Limit: r.max, Size: len(line), Head: bytes.Clone(line[:min(len(line), HeadSize)])}
			case r.err != io.EOF || isBlank(line):
				return nil, r.err
			}
			return line, nil
		}
		r.fill()
	}
}

// fill reads more into the buffer, after making room: the unreturned bytes
// move to its start, and it grows for a long line or a busy peer, or
// shrinks back when idle. A line past the limit is dropped as it comes.
func (r *Reader) fill() {
	pending := r.end - r.start
	if pending > r.max+1 { // one extra byte for a '\r' before the '\n'
		r.keepHead(r.buf[r.start:r.end])
		r.skipping += pending
		r.start, r.end, r.scanned = 0, 0, 0
		pending = 0
	}
	size := len(r.buf)
	switch {
	case pending >= size/2 && size < r.max+2:
		size = min(2*size, r.max+2) // a long line
	case pending == 0 && size > burstBuffer && r.skipping == 0:
		size = minBuffer // after a long line
	}
	if size != len(r.buf) {
		buf := getBuffer(size)
		copy(buf, r.buf[r.start:r.end])
		r.buf = r.replace(buf)
	} else if r.start > 0 {
		copy(r.buf, r.buf[r.start:r.end])
	}
	r.start, r.end = 0, pending
	n, err := r.r.Read(r.buf[r.end:])
	if n < 0 || n > len(r.buf)-r.end {
		n, err = 0, io.ErrNoProgress
	}
	r.end += n
	switch {
	case err != nil:
		r.err = err
	case n == len(r.buf)-pending && len(r.buf) < burstBuffer:
		// The read filled the buffer: more is waiting. Read more at once.
		buf := getBuffer(burstBuffer)
		copy(buf, r.buf[:r.end])
		r.buf, r.small = r.replace(buf), 0
	case len(r.buf) == burstBuffer && pending == 0 && n < minBuffer:
		// The peer has slowed down: after a while, give the memory back.
		if r.small++; r.small == shrinkAfter {
			r.buf = r.replace(append(make([]byte, 0, minBuffer), r.buf[:r.end]...)[:minBuffer])
		}
	}
}

// keepHead adds b, the next bytes of the over-long line being dropped, to
// its head. It keeps one byte beyond HeadSize: a '\r' there may end the
// line.
func (r *Reader) keepHead(b []byte) {
	if n := HeadSize + 1 - len(r.head); n > 0 {
		r.head = append(r.head, b[:min(len(b), n)]...)
	}
}

// dropped ends the over-long line being dropped, whose last bytes are rest
// (without the '\n'), and reports it.
func (r *Reader) dropped(rest []byte) error {
	r.keepHead(rest)
	head := r.head
	size := r.skipping + len(trimEOL(rest))
	if r.skipping+len(rest) == len(head) { // the head holds the whole line
		head = trimEOL(head)
	}
	r.head, r.skipping = nil, 0
	return &FrameTooLargeError{Limit: r.max, Size: size, Head: head[:min(len(head), HeadSize)]}
}

// More reports whether a whole frame is already buffered, so that the next
// ReadFrame returns without reading from the underlying reader.
func (r *Reader) More() bool {
	buf := r.buf[r.start+r.scanned : r.end]
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return false
		}
		if !isBlank(buf[:i]) || r.skipping > 0 {
			return true
		}
		buf = buf[i+1:]
	}
}

// Detach gives the Reader a buffer of its own, so that the frame ReadFrame
// last returned stays valid, unchanged, while reading goes on: for a caller
// that hands the reading to another goroutine while it still uses that
// frame. What was buffered but not yet returned is kept.
func (r *Reader) Detach() {
	buf := make([]byte, max(minBuffer, r.end-r.start))
	r.end = copy(buf, r.buf[r.start:r.end])
	r.buf, r.start = buf, 0
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// replace returns buf, to become the Reader's buffer, and gives the one it
// replaces to the pool of large buffers: the frame ReadFrame last returned
// is no longer valid, and Detach never recycles (the frame it keeps valid
// still points into the buffer it lets go).
func (r *Reader) replace(buf []byte) []byte {
	putBuffer(r.buf)
	return buf
}

// Buffers of 64 KiB and more, by power of two up to 32 MiB, are shared by
// every Reader: a peer that sends long lines one after another would
// otherwise make the Reader allocate (and zero) a buffer for each, twice
// as it grows. An unused buffer goes at the garbage collector's pace.
var largeBuffers [10]sync.Pool

// largeClass is the pool of a buffer of n bytes; ok is false for sizes
// that are not pooled (small ones, and the odd size of a limit's line).
func largeClass(n int) (class int, ok bool) {
	if n < burstBuffer || n&(n-1) != 0 {
		return 0, false
	}
	class = bits.Len(uint(n)) - bits.Len(uint(burstBuffer))
	return class, class < len(largeBuffers)
}

func getBuffer(n int) []byte {
	if c, ok := largeClass(n); ok {
		if b, _ := largeBuffers[c].Get().(*[]byte); b != nil {
			return *b
		}
	}
	return make([]byte, n)
}

func putBuffer(b []byte) {
	if c, ok := largeClass(len(b)); ok && cap(b) == len(b) {
		largeBuffers[c].Put(&b)
	}
}
