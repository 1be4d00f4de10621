package ndjson

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// DefaultMaxFrame is the frame size limit used when NewReader is given a
// non-positive limit.
const DefaultMaxFrame = 16 << 20

const (
	readBufferSize = 4 << 10
	// maxRetainedSpill is the largest spill buffer kept between frames;
	// larger ones are released so that one huge frame does not pin memory.
	maxRetainedSpill = 1 << 20
	// minSpill is the size of a new spill buffer, so that the rest of a long
	// line is read in large chunks.
	minSpill = 32 << 10
)

// ErrFrameTooLarge is matched (with errors.Is) by the error ReadFrame returns
// for a line longer than the reader's limit.
var ErrFrameTooLarge = errors.New("ndjson: frame too large")

// FrameTooLargeError reports a line that exceeded the reader's limit. The
// line has been consumed and discarded.
type FrameTooLargeError struct {
	Limit int // the limit in bytes, excluding the line terminator
}

func (e *FrameTooLargeError) Error() string {
	return "ndjson: frame exceeds the " + strconv.Itoa(e.Limit) + "-byte limit"
}

// Is reports whether target is ErrFrameTooLarge.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// Reader reads frames from a newline-delimited stream.
// A Reader is not safe for concurrent use.
type Reader struct {
	src   pushback // what br reads from
	br    *bufio.Reader
	max   int
	spill []byte // assembles lines that do not fit in br's buffer
}

// pushback is an io.Reader that returns unread bytes before reading on.
// Long lines are read straight into the spill buffer, bypassing the bufio
// buffer; the bytes read past the line's end are pushed back here.
type pushback struct {
	r       io.Reader
	buf     []byte // unread bytes are buf[off:]
	off     int
	fromBuf bool  // the last Read was served from buf
	err     error // a read error to return once buf is drained
}

func (p *pushback) Read(b []byte) (int, error) {
	if p.off < len(p.buf) {
		n := copy(b, p.buf[p.off:])
		p.off += n
		p.fromBuf = true
		return n, nil
	}
	if cap(p.buf) > maxRetainedSpill {
		p.buf = nil
	}
	p.buf, p.off, p.fromBuf = p.buf[:0], 0, false
	if err := p.err; err != nil {
		p.err = nil
		return 0, err
	}
	return p.r.Read(b)
}

// unread pushes back the tail of what the last Read returned, and the
// error it returned with it.
func (p *pushback) unread(tail []byte, err error) {
	p.err = err
	if p.fromBuf {
		p.off -= len(tail)
		return
	}
	p.buf = append(p.buf[:0], tail...)
	p.off = 0
}

// NewReader returns a Reader that reads from r and rejects frames longer
// than maxFrame bytes (DefaultMaxFrame if maxFrame <= 0). It buffers 4 KiB
// and grows a separate buffer on demand for longer lines.
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	rd := &Reader{src: pushback{r: r}, max: maxFrame}
	rd.br = bufio.NewReaderSize(&rd.src, readBufferSize)
	return rd
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
	for {
		line, n, err := r.readLine()
		switch {
		case err != nil && err != io.EOF:
			return nil, err
		case n > r.max:
			return nil, &FrameTooLargeError{Limit: r.max}
		case !isBlank(line):
			return line, nil
		case err != nil:
			return nil, err
		}
	}
}

// readLine consumes the next line and returns it without its terminator,
// together with its length. A line longer than the limit is discarded: the
// returned slice is then nil but n exceeds the limit. At EOF or on a read
// error the bytes read before the error are returned with it.
func (r *Reader) readLine() (line []byte, n int, err error) {
	if cap(r.spill) > maxRetainedSpill {
		r.spill = nil
	}
	r.spill = r.spill[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			if len(r.spill) > 0 {
				r.spill = r.appendSpill(chunk)
				chunk = r.spill
			}
			line = trimEOL(chunk)
			return line, len(line), err
		}
		// One extra byte leaves room for a '\r' before the '\n'.
		if len(r.spill)+len(chunk) > r.max+1 {
			n, err := r.discardLine()
			return nil, len(r.spill) + len(chunk) + n, err
		}
		r.spill = r.appendSpill(chunk)
		if r.br.Buffered() == 0 {
			return r.readLong()
		}
	}
}

// readLong reads the rest of a long line straight into the spill buffer,
// which holds its beginning; br's buffer is empty.
func (r *Reader) readLong() (line []byte, n int, err error) {
	for {
		if len(r.spill) > r.max+1 {
			n, err := r.discardLine()
			return nil, len(r.spill) + n, err
		}
		if len(r.spill) == cap(r.spill) {
			r.spill = r.growSpill(cap(r.spill) + 1)
		}
		start := len(r.spill)
		k, err := r.src.Read(r.spill[start:cap(r.spill)])
		if i := bytes.IndexByte(r.spill[start:start+k], '\n'); i >= 0 {
			r.src.unread(r.spill[start+i+1:start+k], err)
			line = trimEOL(r.spill[:start+i+1])
			return line, len(line), nil
		}
		r.spill = r.spill[:start+k]
		if err != nil {
			line = trimEOL(r.spill)
			return line, len(line), err
		}
	}
}

// appendSpill appends chunk to the spill buffer. It doubles the buffer when
// it is full, up to what the longest acceptable line needs, instead of
// letting append grow it by about a quarter at a time, which allocates five
// times the limit in all to read or skip a line of the limit's size.
func (r *Reader) appendSpill(chunk []byte) []byte {
	if need := len(r.spill) + len(chunk); need > cap(r.spill) {
		r.spill = r.growSpill(need)
	}
	return append(r.spill, chunk...)
}

// growSpill returns the spill buffer with room for need bytes: twice its
// capacity (at least minSpill), but no more than the longest acceptable line
// needs.
func (r *Reader) growSpill(need int) []byte {
	size := min(max(2*cap(r.spill), need, minSpill), r.max+1+readBufferSize)
	return append(make([]byte, 0, max(size, need)), r.spill...)
}

// discardLine skips the rest of the current line and returns how many bytes
// it skipped.
func (r *Reader) discardLine() (int, error) {
	n := 0
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += len(chunk)
		if err != bufio.ErrBufferFull {
			return n, err
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
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

// More reports whether a whole frame is already buffered, so that the next
// ReadFrame returns without reading from the underlying reader. Buffered
// blank lines do not count: ReadFrame skips them and reads on. It is a
// hint: it may report false for a buffered frame that spans the buffer's
// end.
func (r *Reader) More() bool {
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	buf, _ := r.br.Peek(n)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return false
		}
		if !isBlank(buf[:i]) {
			return true
		}
		buf = buf[i+1:]
	}
}
