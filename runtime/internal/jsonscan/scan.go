// Package jsonscan reads the top level of an inbound frame for both codecs, with jsontext: the members of a
// whole frame, the members a frame cut short still shows, and a count of a frame's objects and arrays.
package jsonscan

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Scanner reads frames with a jsontext.Decoder it reuses. A Scanner is not safe for concurrent use.
type Scanner struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

// Members receives the top-level members of a scanned object: their names (unquoted and unescaped) and raw
// values, aliasing the frame but for escaped names.
type Members interface {
	SetMember(name, value []byte)
}

var errTrailingData = errors.New("unexpected data after the JSON value")

// decoder returns the Scanner's decoder, reading frame in place.
func (s *Scanner) decoder(frame []byte) *jsontext.Decoder {
	s.buf = *bytes.NewBuffer(frame)
	s.dec.Reset(&s.buf)
	return &s.dec
}

// Decode reads frame, one JSON value, handing the top-level members of an object to e in order, and reports
// whether it is an object. A duplicate member name, invalid UTF-8 or anything but whitespace after the value
// is an error, which says what is wrong.
func (s *Scanner) Decode(frame []byte, e Members) (object bool, err error) {
	d := s.decoder(frame)
	if object = d.PeekKind() == '{'; object {
		_, err = d.ReadToken()
		for err == nil && d.PeekKind() != '}' {
			var name, val jsontext.Value
			if name, err = d.ReadValue(); err == nil {
				if val, err = d.ReadValue(); err == nil {
					e.SetMember(unquote(name), val)
				}
			}
		}
		if err == nil {
			_, err = d.ReadToken()
		}
	} else {
		_, err = d.ReadValue()
	}
	if err == nil {
		if _, err = d.ReadToken(); err == nil {
			err = errTrailingData
		} else if err == io.EOF {
			err = nil
		}
	}
	return object, err
}

// Head reads frame, the start of an object cut short (a frame over the size limit), handing e the top-level
// members it holds whole, and returns the name of the top-level member whose value the cut interrupted (nil
// when the cut fell elsewhere: in a name, before a value starts, between members). A value that reaches
// the cut counts as interrupted: "12" may be the start of "1234". Head stops at anything jsontext refuses,
// reporting the member it was in.
func (s *Scanner) Head(frame []byte, e Members) (cut []byte) {
	d := s.decoder(frame)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return nil // cut in the name
		}
		if d.PeekKind() == 0 {
			// Cut before the value starts, or a value jsontext refuses from its first byte: the
			// member is the one the head stops in only in the second case.
			if !valueStarts(frame[d.InputOffset():]) {
				return nil
			}
			return unquote(name)
		}
		val, err := d.ReadValue()
		if err != nil || d.InputOffset() == int64(len(frame)) {
			return unquote(name)
		}
		e.SetMember(unquote(name), val)
	}
	return nil
}

// valueStarts reports whether rest, what follows a member's name, holds its colon and then the start of
// a value (whitespace aside).
func valueStarts(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	return len(bytes.TrimLeft(rest[1:], " \t\r\n")) > 0
}

// unquote returns the text of the JSON string name, without copying it unless it has escapes.
func unquote(name jsontext.Value) []byte {
	if bytes.IndexByte(name, '\\') < 0 {
		return name[1 : len(name)-1]
	}
	b, _ := jsontext.AppendUnquote(nil, name)
	return b
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
