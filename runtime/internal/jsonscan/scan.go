// Package jsonscan reads the top level of an inbound frame for both codecs:
// a fast path of its own for the common frames, jsontext for the rest.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Scanner is the read goroutine's fast path for inbound frames. In one pass
// it checks that a frame is valid JSON and finds the envelope members,
// without jsontext's general machinery. Profiles put envelope decoding at
// about a sixth of a round trip's CPU time; this scanner takes 40% less
// time than jsontext (BenchmarkDecodeEnvelope), mostly by checking ASCII
// string bytes eight at a time.
//
// It only ever accepts. It gives up on anything outside the common case
// (an invalid frame, a frame that is not an object, escaped member names,
// \u escapes of surrogates, objects of more than MaxMembers members,
// nesting deeper than MaxDepth) and the caller then decodes the frame
// with jsontext, which has the final say and reports the error. So when it
// accepts, jsontext accepts the frame too, with the same members: one JSON
// value, nothing after it but whitespace, valid UTF-8 and escapes, and no
// duplicate member name in any object. FuzzScanEnvelope (runtime/jsonrpc)
// checks exactly that against Slow, which reads with jsontext.
type Scanner struct {
	open  []scanLevel // open containers, outermost first
	names []scanSpan  // member names of the open objects, outermost first
	dec   jsontext.Decoder
	buf   bytes.Buffer
}

// scanLevel is an open container.
type scanLevel struct {
	object bool
	names  int // objects: index in Scanner.names of the first member name
}

// scanSpan is a member name: frame[start:end], without its quotes.
type scanSpan struct{ start, end int }

// The limits of what Scanner takes: deeper nesting or larger objects are
// left to jsontext.
const (
	MaxDepth   = 64
	MaxMembers = 32
)

// Members receives the top-level members of a scanned object: their names
// (unquoted, never escaped) and raw values, both aliasing the frame.
type Members interface {
	SetMember(name, value []byte)
}

// Object scans frame, an object, handing its top-level members to e in
// order, and reports whether it could; when it could not, e may have
// received some members.
func (s *Scanner) Object(frame []byte, e Members) bool {
	ok, _ := s.scan(frame, e)
	return ok
}

// Decode reads frame, one JSON value, handing the top-level members of an
// object to e in order, and reports whether it is an object. Frames the fast
// path leaves alone are read with jsontext, whose error says what is wrong;
// either way, a duplicate member name, invalid UTF-8 or anything but
// whitespace after the value is an error.
func (s *Scanner) Decode(frame []byte, e Members) (object bool, err error) {
	if s.Object(frame, e) {
		return true, nil
	}
	return s.Slow(frame, e)
}

var errTrailingData = errors.New("unexpected data after the JSON value")

// Slow is Decode with jsontext alone. Member names are handed to e
// unescaped, values as they are in frame (but in the decoder's buffer,
// valid until the next call).
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

// Head scans frame, the start of an object cut short (a line over the size
// limit), handing e the top-level members it holds whole, and returns the
// name of the top-level member whose value the cut interrupted (nil when
// the cut fell elsewhere). It stops early, as Object does, on anything
// outside the scanner's common case, reporting the member it was in.
func (s *Scanner) Head(frame []byte, e Members) (cut []byte) {
	h := headMembers{e: e, tail: cap(frame) - len(frame)}
	if _, cut = s.scan(frame, &h); h.cut != nil {
		return h.cut
	}
	return cut
}

// headMembers passes on the members of a cut line, except one whose value
// runs to the cut: a number there ("12" of "1234") may be only its start.
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

// scan is Object, also returning, when it gives up, the name of the
// top-level member whose value it was in.
func (s *Scanner) scan(frame []byte, e Members) (bool, []byte) {
	s.open, s.names = s.open[:0], s.names[:0]
	i := skipSpace(frame, 0)
	if i == len(frame) || frame[i] != '{' {
		return false, nil
	}
	var (
		member      []byte // the top-level member whose value is being scanned
		memberStart int
	)
	for {
		// A value starts at i. When it is the value of a top-level member,
		// member holds that member's name and memberStart records where the
		// value starts.
		if len(s.open) == 1 {
			memberStart = i
		}
		var ok bool
		switch c := frame[i]; {
		case c == '{' || c == '[':
			if len(s.open) == MaxDepth {
				return false, member
			}
			s.open = append(s.open, scanLevel{object: c == '{', names: len(s.names)})
			if i = skipSpace(frame, i+1); i == len(frame) {
				return false, member
			}
			if frame[i] == '}' && c == '{' || frame[i] == ']' && c == '[' {
				s.pop()
				i++
				break
			}
			if c == '{' {
				if i, ok = s.member(frame, i, &member); !ok {
					return false, member
				}
			}
			continue // the first element or member value starts at i
		case c == '"':
			if i, _, ok = scanString(frame, i); !ok {
				return false, member
			}
		case c == 't':
			if i, ok = scanLiteral(frame, i, "true"); !ok {
				return false, member
			}
		case c == 'f':
			if i, ok = scanLiteral(frame, i, "false"); !ok {
				return false, member
			}
		case c == 'n':
			if i, ok = scanLiteral(frame, i, "null"); !ok {
				return false, member
			}
		default:
			if i, ok = scanNumber(frame, i); !ok {
				return false, member
			}
		}
		// A value ends at i. Close the containers it completes, then move
		// to the next value.
		for {
			if len(s.open) == 1 && member != nil {
				e.SetMember(member, frame[memberStart:i])
				member = nil
			}
			if len(s.open) == 0 {
				return skipSpace(frame, i) == len(frame), nil
			}
			if i = skipSpace(frame, i); i == len(frame) {
				return false, member
			}
			top := s.open[len(s.open)-1]
			if frame[i] == ',' {
				if i = skipSpace(frame, i+1); i == len(frame) {
					return false, member
				}
				if top.object {
					if i, ok = s.member(frame, i, &member); !ok {
						return false, member
					}
				}
				break
			}
			if frame[i] != ']' && frame[i] != '}' || (frame[i] == '}') != top.object {
				return false, member
			}
			s.pop()
			i++
		}
	}
}

// member scans a member name with s.name, recording it in *top when the
// member belongs to the top-level object.
func (s *Scanner) member(frame []byte, i int, top *[]byte) (int, bool) {
	i, name, ok := s.name(frame, i)
	if ok && len(s.open) == 1 {
		*top = name
	}
	return i, ok
}

func (s *Scanner) pop() {
	top := s.open[len(s.open)-1]
	s.open = s.open[:len(s.open)-1]
	if top.object {
		s.names = s.names[:top.names]
	}
}

// name scans a member name starting at i, and the colon and whitespace
// after it. It rejects escaped names and duplicates within the innermost
// open object.
func (s *Scanner) name(frame []byte, i int) (next int, name []byte, ok bool) {
	if frame[i] != '"' {
		return 0, nil, false
	}
	end, escaped, ok := scanString(frame, i)
	if !ok || escaped {
		return 0, nil, false
	}
	name = frame[i+1 : end-1]
	first := s.open[len(s.open)-1].names
	if len(s.names)-first == MaxMembers {
		return 0, nil, false
	}
	for _, n := range s.names[first:] {
		if string(frame[n.start:n.end]) == string(name) {
			return 0, nil, false
		}
	}
	s.names = append(s.names, scanSpan{i + 1, end - 1})
	if i = skipSpace(frame, end); i == len(frame) || frame[i] != ':' {
		return 0, nil, false
	}
	if i = skipSpace(frame, i+1); i == len(frame) {
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

// scanString checks the string starting with the quote at i and returns the
// index after its closing quote, and whether the string has escapes.
func scanString(b []byte, i int) (next int, escaped, ok bool) {
	i++
	for {
		if i+8 <= len(b) {
			// Skip plain ASCII eight bytes at a time: a word holds a byte
			// that needs a look when it has a control byte, a quote, a
			// backslash or a non-ASCII byte. The lowest flagged byte is
			// always a true one.
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

// scanEscape checks the escape sequence at i and returns the index after
// it. \u escapes of surrogate halves are left to jsontext, which checks
// that they pair up.
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
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case '0' <= c && c <= '9':
				c -= '0'
			case 'a' <= c && c <= 'f':
				c -= 'a' - 10
			case 'A' <= c && c <= 'F':
				c -= 'A' - 10
			default:
				return 0, false
			}
			r = r<<4 | rune(c)
		}
		if 0xd800 <= r && r < 0xe000 {
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

// Containers reports whether frame holds more than limit JSON objects and
// arrays, counting them outside strings (which it skips to their closing
// quote). Each of them is two bytes at least, so a frame of at most
// 2*limit bytes never does; the caller skips those.
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
