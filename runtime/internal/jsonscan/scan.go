// Package jsonscan reads the top level of an inbound frame for both codecs: a fast path of its own for the
// common frames, jsontext for the rest.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Scanner is the read goroutine's fast path for inbound frames: in one pass it checks that a frame is valid
// JSON and finds the envelope members. Envelope decoding is about a sixth of a round trip's CPU time, and
// this takes 40% less time than jsontext (BenchmarkDecodeEnvelope), mostly by checking ASCII string bytes
// eight at a time.
//
// It only ever accepts. It gives up on anything outside the common case (an invalid frame, a frame that is
// not an object, escaped member names, \u escapes of surrogates, objects of more than MaxMembers members,
// nesting deeper than MaxDepth) and the caller then decodes the frame with jsontext, which has the final say
// and reports the error. So when it accepts, jsontext accepts the frame too, with the same members: one JSON
// value, nothing after it but whitespace, valid UTF-8 and escapes, and no duplicate member name in any
// object. FuzzScanEnvelope (runtime/jsonrpc) checks exactly that against Slow.
type Scanner struct {
	names []span // member names of the open objects, outermost first
	dec   jsontext.Decoder
	buf   bytes.Buffer
}

// span is a member name: frame[start:end], without its quotes. Offsets, not slices, so that the Scanner holds
// no pointer into the last frame.
type span struct{ start, end int }

// The limits of what Scanner takes: deeper nesting or larger objects are left to jsontext.
const (
	MaxDepth   = 64
	MaxMembers = 32
)

// Members receives the top-level members of a scanned object: their names (unquoted, never escaped) and raw
// values, both aliasing the frame.
type Members interface {
	SetMember(name, value []byte)
}

// Object scans frame, an object, handing its top-level members to e in order, and reports whether it could;
// when it could not, e may have received some members.
func (s *Scanner) Object(frame []byte, e Members) bool {
	ok, _ := s.scan(frame, e)
	return ok
}

// Decode reads frame, one JSON value, handing the top-level members of an object to e in order, and reports
// whether it is an object. Frames the fast path leaves alone are read with jsontext, whose error says what is
// wrong; either way, a duplicate member name, invalid UTF-8 or anything but whitespace after the value is an
// error.
func (s *Scanner) Decode(frame []byte, e Members) (object bool, err error) {
	if s.Object(frame, e) {
		return true, nil
	}
	return s.Slow(frame, e)
}

var errTrailingData = errors.New("unexpected data after the JSON value")

// Slow is Decode with jsontext alone. Member names are handed to e unescaped, values as they are in frame
// (but in the decoder's buffer, valid until the next call).
func (s *Scanner) Slow(frame []byte, e Members) (object bool, err error) {
	s.buf = *bytes.NewBuffer(frame)
	s.dec.Reset(&s.buf)
	if object = s.dec.PeekKind() == '{'; object {
		err = s.members(e)
	} else {
		_, err = s.dec.ReadValue()
	}
	if err == nil {
		if _, err = s.dec.ReadToken(); err == nil {
			err = errTrailingData
		} else if err == io.EOF {
			err = nil
		}
	}
	return object, err
}

// members reads an object with jsontext, handing its members to e.
func (s *Scanner) members(e Members) error {
	d := &s.dec
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return err
		}
		val, err := d.ReadValue()
		if err != nil {
			return err
		}
		key := name[1 : len(name)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key, _ = jsontext.AppendUnquote(nil, name)
		}
		e.SetMember(key, val)
	}
	_, err := d.ReadToken()
	return err
}

// Head scans frame, the start of an object cut short (a line over the size limit), handing e the top-level
// members it holds whole, and returns the name of the top-level member whose value the cut interrupted (nil
// when the cut fell elsewhere). It stops early, as Object does, on anything outside the scanner's common
// case, reporting the member it was in.
func (s *Scanner) Head(frame []byte, e Members) (cut []byte) {
	h := headMembers{e: e, tail: cap(frame) - len(frame)}
	if _, cut = s.scan(frame, &h); h.cut != nil {
		return h.cut
	}
	return cut
}

// headMembers passes on the members of a cut line, except one whose value runs to the cut: a number there
// ("12" of "1234") may be only its start.
type headMembers struct {
	e    Members
	tail int // cap(frame) - len(frame): what a value ending at the cut has beyond its end
	cut  []byte
}

func (h *headMembers) SetMember(name, value []byte) {
	if cap(value)-len(value) == h.tail {
		h.cut = name
		return
	}
	h.e.SetMember(name, value)
}

// scan is Object, also returning, when it gives up, the name of the top-level member whose value it was in.
func (s *Scanner) scan(frame []byte, e Members) (bool, []byte) {
	s.names = s.names[:0]
	i := skipSpace(frame, 0)
	if i == len(frame) || frame[i] != '{' {
		return false, nil
	}
	i, cut, ok := s.container(frame, i, 1, e)
	return ok && skipSpace(frame, i) == len(frame), cut
}

// container scans the object or array at b[i], depth containers deep, and returns the index after it. The
// members of an object are handed to e unless it is nil; cut is the member whose value it gave up in.
func (s *Scanner) container(b []byte, i, depth int, e Members) (next int, cut []byte, ok bool) {
	end := b[i] + 2 // '{'+2 is '}', '['+2 is ']'
	if depth > MaxDepth {
		return 0, nil, false
	}
	first := len(s.names)
	if i = skipSpace(b, i+1); i < len(b) && b[i] == end {
		return i + 1, nil, true
	}
	for {
		var name []byte
		if end == '}' {
			if i, name, ok = s.name(b, i, first); !ok {
				return 0, nil, false
			}
		}
		start := i
		if i, ok = s.value(b, i, depth); !ok {
			return 0, name, false
		}
		if e != nil {
			e.SetMember(name, b[start:i])
		}
		if i = skipSpace(b, i); i == len(b) {
			return 0, nil, false
		}
		switch b[i] {
		case end:
			s.names = s.names[:first]
			return i + 1, nil, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, nil, false
		}
	}
}

// value scans the value at b[i], inside depth containers, and returns the index after it.
func (s *Scanner) value(b []byte, i, depth int) (int, bool) {
	if i == len(b) {
		return 0, false
	}
	switch b[i] {
	case '{', '[':
		i, _, ok := s.container(b, i, depth+1, nil)
		return i, ok
	case '"':
		i, _, ok := scanString(b, i)
		return i, ok
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	}
	return scanNumber(b, i)
}

// name scans the name of a member of the object whose names start at s.names[first], and the colon and
// whitespace after it. It rejects escaped names, duplicates and a name past MaxMembers.
func (s *Scanner) name(b []byte, i, first int) (next int, name []byte, ok bool) {
	if i == len(b) || b[i] != '"' || len(s.names)-first == MaxMembers {
		return 0, nil, false
	}
	end, escaped, ok := scanString(b, i)
	if !ok || escaped {
		return 0, nil, false
	}
	name = b[i+1 : end-1]
	for _, n := range s.names[first:] {
		if string(b[n.start:n.end]) == string(name) {
			return 0, nil, false
		}
	}
	s.names = append(s.names, span{i + 1, end - 1})
	if i = skipSpace(b, end); i == len(b) || b[i] != ':' {
		return 0, nil, false
	}
	if i = skipSpace(b, i+1); i == len(b) { // a cut before the value interrupts none: no name for Head
		return 0, nil, false
	}
	return i, name, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// plainByte marks the ASCII bytes a string may hold without an escape.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString checks the string starting with the quote at i and returns the index after its closing quote,
// and whether the string has escapes.
func scanString(b []byte, i int) (next int, escaped, ok bool) {
	i++
	for {
		if i+8 <= len(b) {
			// Skip plain ASCII eight bytes at a time: a word needs a look when it has a control byte, a
			// quote, a backslash or a non-ASCII byte. The lowest flagged byte is always a true one.
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ ('"' * swarOnes)
			bs := w ^ ('\\' * swarOnes)
			control := (w - 0x20*swarOnes) &^ w
			quote := (q - swarOnes) &^ q
			backslash := (bs - swarOnes) &^ bs
			special := (control | quote | backslash | w) & swarHighs
			if special == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(special) / 8
		} else {
			for i < len(b) && plainByte[b[i]] {
				i++
			}
			if i == len(b) {
				return 0, false, false
			}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			if i, ok = scanEscape(b, i); !ok {
				return 0, false, false
			}
			escaped = true
		case c < 0x20:
			return 0, false, false
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, false
			}
			i += size
		}
	}
}

// scanEscape checks the escape sequence at i and returns the index after it. \u escapes of surrogate halves
// are left to jsontext, which checks that they pair up.
func scanEscape(b []byte, i int) (int, bool) {
	if i+1 == len(b) {
		return 0, false
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, true
	case 'u':
		if i+6 > len(b) {
			return 0, false
		}
		r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		if err != nil || 0xd800 <= r && r < 0xe000 {
			return 0, false
		}
		return i + 6, true
	}
	return 0, false
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// scanNumber checks the number starting at i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i == len(b):
		return 0, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// Containers reports whether frame holds more than limit JSON objects and arrays, counting them outside
// strings. Each is two bytes at least, so a frame of at most 2*limit bytes never does; the caller skips
// those.
func Containers(frame []byte, limit int) bool {
	n := 0
	for i := 0; i < len(frame); i++ {
		switch frame[i] {
		case '{', '[':
			if n++; n > limit {
				return true
			}
		case '"':
			for {
				j := bytes.IndexByte(frame[i+1:], '"')
				if j < 0 {
					return false
				}
				i += 1 + j
				k := i - 1
				for frame[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break // not escaped
				}
			}
		}
	}
	return false
}
