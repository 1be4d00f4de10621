// Package sse reads and writes Server-Sent Events (the text/event-stream format of the HTML standard) for
// ACP's Streamable HTTP transport: one JSON-RPC message per event, a comment as keep-alive, and the event
// id of resumable delivery.
//
// The Decoder is at least as liberal as the ACP TypeScript SDK's parser: lines end with CRLF, LF or a bare
// CR; a UTF-8 byte order mark at the start of a line is dropped; data lines join with "\n"; a blank line
// dispatches; id lines set the event's id; event, retry and comment lines are read and ignored; an event
// still open at the end of the stream is dispatched. An event over the size limit is consumed and reported
// as a *frame.TooLargeError, and the next event is read as usual.
package sse

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// Event is one dispatched event.
type Event struct {
	// ID is the event's id (the last id line seen, as the standard's last event ID buffer); HasID reports
	// whether any id line was seen.
	ID    string
	HasID bool
	// Data is the event's data lines joined with "\n", valid until the next call to Next.
	Data []byte
}

// Decoder reads events from a stream.
type Decoder struct {
	src     io.Reader
	max     int
	buf     []byte
	r, w    int
	err     error // of src, returned once the buffer is drained
	skipLF  bool  // the last line ended with a CR at the end of the buffer
	long    bool  // discarding the rest of an over-long line
	id      string
	hasID   bool
	data    []byte
	hasData bool
	over    *frame.TooLargeError // the event being discarded for its size
}

// lineSlack is what a line may hold beyond an event's data: a byte order mark and "data: ".
const lineSlack = 9

// NewDecoder returns a Decoder reading src, whose events may hold up to maxEvent bytes of data
// (frame.DefaultMaxFrame if maxEvent <= 0).
func NewDecoder(src io.Reader, maxEvent int) *Decoder {
	if maxEvent <= 0 {
		maxEvent = frame.DefaultMaxFrame
	}
	return &Decoder{src: src, max: maxEvent, buf: make([]byte, 4096)}
}

// Next returns the next event with data. Events without data lines are skipped, as the standard says. An
// event over the limit is consumed and returned as a *frame.TooLargeError (with its first
// frame.HeadSize bytes); Next may be called again. At the end of the stream Next returns io.EOF, or the
// stream's error.
func (d *Decoder) Next() (Event, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			if err == io.EOF {
				if ev, ok, terr := d.dispatch(); ok || terr != nil {
					return ev, terr
				}
			}
			return Event{}, err
		}
		if len(line) >= 3 && line[0] == 0xEF && line[1] == 0xBB && line[2] == 0xBF {
			line = line[3:]
		}
		if len(line) == 0 {
			if ev, ok, terr := d.dispatch(); ok || terr != nil {
				return ev, terr
			}
			continue
		}
		d.field(line)
	}
}

// LastEventID returns the stream's last event id so far (the standard's last event ID buffer): the last
// id field read, whether or not an event followed it. ok is false before any id field.
func (d *Decoder) LastEventID() (id string, ok bool) { return d.id, d.hasID }

// dispatch ends the current event: ok when it had data, or the TooLargeError of a discarded one.
func (d *Decoder) dispatch() (Event, bool, error) {
	if d.over != nil {
		over := d.over
		d.over, d.hasData, d.data = nil, false, d.data[:0]
		return Event{}, false, over
	}
	if !d.hasData {
		return Event{}, false, nil
	}
	d.hasData = false
	ev := Event{ID: d.id, HasID: d.hasID, Data: d.data}
	d.data = d.data[:0]
	return ev, true, nil
}

// field applies one non-blank line.
func (d *Decoder) field(line []byte) {
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if d.over != nil {
			d.over.Size += len(value) + 1
			return
		}
		n := len(d.data) + len(value)
		if d.hasData {
			n++
		}
		if n > d.max {
			head := append(d.data, '\n')
			if !d.hasData {
				head = head[:0]
			}
			head = append(head, value...)
			d.over = &frame.TooLargeError{Limit: d.max, Size: n, Head: bytes.Clone(head[:min(len(head), frame.HeadSize)])}
			d.data = d.data[:0]
			return
		}
		if d.hasData {
			d.data = append(d.data, '\n')
		}
		d.data = append(d.data, value...)
		d.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.id, d.hasID = string(value), true
		}
	}
}

// errLongLine ends a line over the limit early: the rest is discarded up to its end.
var errLongLine = errors.New("sse: line too long")

// readLine returns the next line without its end (valid until the next call), or io.EOF once the stream
// is drained. The last line of a stream need not end with a line break. A line longer than an event may
// be is returned cut, the rest of it skipped.
func (d *Decoder) readLine() ([]byte, error) {
	for {
		if d.skipLF && d.r < d.w {
			d.skipLF = false
			if d.buf[d.r] == '\n' {
				d.r++
			}
		}
		if i := indexEOL(d.buf[d.r:d.w]); i >= 0 {
			line := d.buf[d.r : d.r+i]
			end := d.r + i
			d.r = end + 1
			if d.buf[end] == '\r' {
				if d.r < d.w {
					if d.buf[d.r] == '\n' {
						d.r++
					}
				} else {
					d.skipLF = true
				}
			}
			if d.long {
				d.long = false
				continue
			}
			return line, nil
		}
		if d.err != nil {
			if d.r < d.w && !d.long {
				line := d.buf[d.r:d.w]
				d.r = d.w
				return line, nil
			}
			d.r, d.w = 0, 0
			return nil, d.err
		}
		if d.long {
			d.r, d.w = 0, 0
		} else if d.w-d.r > d.max+lineSlack {
			// Over-long: hand on what is buffered as the start of the line (data beyond the limit makes
			// the event too large) and skip the rest.
			line := d.buf[d.r:d.w]
			d.r, d.w = 0, 0
			d.long = true
			return line, nil
		}
		d.fill()
	}
}

// fill reads more of the stream, moving or growing the buffer as needed.
func (d *Decoder) fill() {
	if d.r > 0 {
		d.w = copy(d.buf, d.buf[d.r:d.w])
		d.r = 0
	}
	if d.w == len(d.buf) {
		d.buf = append(d.buf, make([]byte, len(d.buf))...)
	}
	n, err := d.src.Read(d.buf[d.w:])
	d.w += n
	if err != nil {
		d.err = err
	} else if n == 0 {
		d.err = io.ErrNoProgress
	}
}

func indexEOL(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

// AppendEvent appends the event of data (with an id line if id is not empty) to b. data that holds line
// breaks is written as several data lines, which a decoder joins back with "\n" (a CRLF or a lone CR
// becomes "\n"). id must hold no line break.
func AppendEvent(b []byte, id string, data []byte) []byte {
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	for {
		i := indexEOL(data)
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, data...)
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, '\n', '\n')
}

// KeepAlive is the comment event a server writes to keep an idle stream open.
const KeepAlive = ":\n\n"

// FormatID formats an event id of resumable delivery (a decimal number).
func FormatID(id uint64) string { return strconv.FormatUint(id, 10) }
