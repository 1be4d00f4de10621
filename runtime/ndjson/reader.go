package ndjson

import (
	"bytes"
	"context"
	"io"
	"math/bits"
	"sync"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// DefaultMaxFrame is the frame size limit used when NewReader is given a non-positive limit.
const DefaultMaxFrame = frame.DefaultMaxFrame

// HeadSize is how much of an over-long line a FrameTooLargeError keeps.
const HeadSize = frame.HeadSize

const (
	minBuffer   = 4 << 10  // the buffer an idle Reader holds
	burstBuffer = 64 << 10 // the buffer while reads keep filling it (a busy peer): fewer, larger reads
	shrinkAfter = 16       // small reads into a burst buffer that make it shrink back
)

// ErrFrameTooLarge is matched (with errors.Is) by the error ReadFrame returns for a line longer than the
// reader's limit: it is frame.ErrTooLarge.
var ErrFrameTooLarge = frame.ErrTooLarge

// FrameTooLargeError reports a line over the reader's limit, consumed and discarded but for its head, from
// which a protocol can often still tell what the line was and its id, to answer it or fail its call. Limit
// excludes the line terminator; Size is the line's length without its newline (and, mostly, a '\r' before
// it).
type FrameTooLargeError = frame.TooLargeError

// Reader reads frames from a newline-delimited stream. It buffers 4 KiB while idle, 64 KiB while the
// peer keeps it busy, and as much as the longest acceptable line needs while it reads one, then shrinks
// back. A Reader is not safe for concurrent use.
type Reader struct {
	r          io.Reader
	max        int
	buf        []byte // buf[start:end] is read and not yet returned
	start, end int
	scanned    int    // buf[start:start+scanned] holds no newline
	skipping   int    // bytes of an over-long line dropped so far (0: none)
	head       []byte // the first bytes of the over-long line being dropped
	small      int    // small reads into the burst buffer since it grew
	err        error  // the read error to return once buf is drained
}

// NewReader returns a Reader of r that rejects frames over maxFrame bytes (DefaultMaxFrame if <= 0).
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Reader{r: r, max: maxFrame, buf: make([]byte, minBuffer)}
}

// ReadFrame returns the next line that is not all JSON whitespace, without its "\n" or "\r\n", valid
// until the next call. A line longer than the limit is consumed without being buffered and reported as a
// *FrameTooLargeError; the next call goes on with the next line. Bytes after the last newline are a final
// frame before io.EOF. Other read errors are returned as they are, dropping any incomplete line.
func (r *Reader) ReadFrame() ([]byte, error) {
	if len(r.buf) > burstBuffer && r.end-r.start < minBuffer {
		r.resize(minBuffer) // the long line last returned is done with: give its memory back
	}
	for {
		var line []byte
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			line = r.buf[r.start : r.start+r.scanned+i]
			r.start += r.scanned + i + 1
		} else if r.err == nil {
			r.scanned = r.end - r.start
			r.fill()
			continue
		} else { // the input ended: the rest is a last line at io.EOF, else dropped
			line, r.start, r.scanned = r.buf[r.start:r.end], r.end, 0
			if r.err != io.EOF || len(line) == 0 && r.skipping == 0 {
				return nil, r.err
			}
		}
		r.scanned = 0
		switch l := trimEOL(line); {
		case r.skipping > 0 || len(l) > r.max:
			return nil, r.dropped(line)
		case !isBlank(l):
			return l, nil
		}
	}
}

// fill reads more into the buffer, after moving the unreturned bytes to its start, growing it for a long
// line or a busy peer or shrinking it when idle. A line past the limit is dropped as it comes.
func (r *Reader) fill() {
	if r.end-r.start > r.max+1 { // one extra byte for a '\r' before the '\n'
		r.keepHead(r.buf[r.start:r.end])
		r.skipping += r.end - r.start
		r.start, r.end, r.scanned = 0, 0, 0
	}
	pending, size := r.end-r.start, len(r.buf)
	switch {
	case pending >= size/2 && size < r.max+2:
		r.resize(min(2*size, r.max+2)) // a long line
	case pending == 0 && size > burstBuffer && r.skipping == 0:
		r.resize(minBuffer) // after a long line
	case r.start > 0:
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	n, err := r.r.Read(r.buf[r.end:])
	if n < 0 || n > len(r.buf)-r.end {
		n, err = 0, io.ErrNoProgress
	}
	r.end += n
	switch {
	case err != nil:
		r.err = err
	case r.end == len(r.buf) && len(r.buf) < burstBuffer:
		r.resize(burstBuffer) // the read filled the buffer: more is waiting
		r.small = 0
	case len(r.buf) == burstBuffer && pending == 0 && n < minBuffer:
		if r.small++; r.small == shrinkAfter { // the peer has slowed down
			r.resize(minBuffer)
		}
	}
}

// Read implements frame.Reader: ReadFrame, unless ctx has ended. ctx cannot interrupt a read in progress;
// closing the underlying reader can (Transport.Close).
func (r *Reader) Read(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.ReadFrame()
}

// resize moves the unreturned bytes to a new buffer of n bytes and pools the old one, where the frame
// ReadFrame last returned was.
func (r *Reader) resize(n int) {
	buf := getBuffer(n)
	r.end = copy(buf, r.buf[r.start:r.end])
	putBuffer(r.buf)
	r.buf, r.start = buf, 0
}

// keepHead adds b, the next bytes of the line being dropped, to its head, up to one byte beyond HeadSize:
// a '\r' there may end the line.
func (r *Reader) keepHead(b []byte) {
	r.head = append(r.head, b[:min(len(b), HeadSize+1-len(r.head))]...)
}

// dropped ends the over-long line, whose last bytes are rest (without the '\n'), and reports it.
func (r *Reader) dropped(rest []byte) error {
	r.keepHead(rest)
	head, size := r.head, r.skipping+len(trimEOL(rest))
	if r.skipping+len(rest) == len(head) { // the head holds the whole line
		head = trimEOL(head)
	}
	r.head, r.skipping = nil, 0
	return &FrameTooLargeError{Limit: r.max, Size: size, Head: head[:min(len(head), HeadSize)]}
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

// Buffers of 64 KiB to 32 MiB, by power of two, are shared by every Reader: long lines one after another
// would otherwise make it allocate (and zero) a buffer for each, twice as it grows.
var largeBuffers [10]sync.Pool

// pool is the pool of buffers of n bytes, or nil if they are not pooled (small ones, a limit's line).
func pool(n int) *sync.Pool {
	c := bits.Len(uint(n)) - bits.Len(burstBuffer)
	if n&(n-1) != 0 || c < 0 || c >= len(largeBuffers) {
		return nil
	}
	return &largeBuffers[c]
}

func getBuffer(n int) []byte {
	if p := pool(n); p != nil {
		if b, _ := p.Get().(*[]byte); b != nil {
			return *b
		}
	}
	return make([]byte, n)
}

func putBuffer(b []byte) {
	if p := pool(len(b)); p != nil && cap(b) == len(b) {
		p.Put(&b)
	}
}
