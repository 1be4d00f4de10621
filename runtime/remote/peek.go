package remote

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
)

// kind is what a frame is to the transport, which reads no more of it than routing needs.
type kind uint8

const (
	kindInvalid      kind = iota // an object, but no JSON-RPC message
	kindRequest                  // method and id
	kindNotification             // method, no id
	kindResponse                 // id and one of result or error, no method
	kindBatch                    // an array
	kindNotObject                // another JSON value
	kindUnparsable               // not JSON
)

// msg is what the transport reads of a frame: the members that route it. Slices alias the frame.
type msg struct {
	kind      kind
	id        []byte // the raw id (request, response)
	method    string
	sessionID string // params.sessionId, or result.sessionId of a response
	hasSess   bool
	hasHarn   bool   // a top-level _harn member
	harn      []byte // its value
	hasJSONRP bool   // "jsonrpc":"2.0"

	params, result, errv []byte
	hasID, hasResult     bool
	hasError             bool
}

// peeker reads frames; it is not safe for concurrent use.
type peeker struct {
	scan jsonscan.Scanner
	part partScanner
	m    msg
	sub  subMembers
	ids  idMembers
}

func (m *msg) SetMember(name, value []byte) {
	switch string(name) {
	case "jsonrpc":
		m.hasJSONRP = string(value) == `"2.0"`
	case "id":
		m.id, m.hasID = value, true
	case "method":
		if s, ok := jsonString(value); ok {
			m.method = s
		} else {
			m.method = "\x00" // present, not a string
		}
	case "params":
		m.params = value
	case "result":
		m.result, m.hasResult = value, true
	case "error":
		m.errv, m.hasError = value, true
	case "_harn":
		m.hasHarn, m.harn = true, value
	}
}

// subMembers picks sessionId out of params or result, and eventId out of _harn.
type subMembers struct {
	sid, eventID []byte
}

func (s *subMembers) SetMember(name, value []byte) {
	switch string(name) {
	case "sessionId":
		s.sid = value
	case "eventId":
		s.eventID = value
	}
}

// eventID returns the _harn.eventId of the last frame peeked (0 if none).
func (p *peeker) eventID() uint64 {
	if len(p.m.harn) == 0 || p.m.harn[0] != '{' {
		return 0
	}
	p.sub = subMembers{}
	if !p.part.until(p.m.harn, &p.sub, func() bool { return p.sub.eventID != nil }) || p.sub.eventID == nil {
		return 0
	}
	n, err := strconv.ParseUint(string(p.sub.eventID), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// peek classifies frame. The result is valid until the next call.
func (p *peeker) peek(frame []byte) *msg {
	p.m = msg{}
	m := &p.m
	i := 0
	for i < len(frame) && (frame[i] == ' ' || frame[i] == '\t' || frame[i] == '\n' || frame[i] == '\r') {
		i++
	}
	if i < len(frame) && frame[i] == '[' {
		if jsontext.Value(frame).IsValid() {
			m.kind = kindBatch
		} else {
			m.kind = kindUnparsable
		}
		return m
	}
	object, err := p.scan.Decode(frame, m)
	switch {
	case err != nil:
		p.m = msg{kind: kindUnparsable}
		return m
	case !object:
		p.m = msg{kind: kindNotObject}
		return m
	}
	validID := m.hasID && validID(m.id)
	switch {
	case !m.hasJSONRP:
		m.kind = kindInvalid
	case m.method != "" && m.method != "\x00":
		if !m.hasID {
			m.kind = kindNotification
		} else if validID {
			m.kind = kindRequest
		}
	case m.method == "" && validID && m.hasResult != m.hasError:
		m.kind = kindResponse
	}
	var from []byte
	switch m.kind {
	case kindRequest, kindNotification:
		from = m.params
	case kindResponse:
		from = m.result
	}
	if len(from) > 0 && from[0] == '{' && mayHoldSessionID(from) {
		// The whole frame's decode has checked from (duplicate names included): reading it up to its
		// sessionId is enough.
		p.sub = subMembers{}
		if p.part.until(from, &p.sub, func() bool { return p.sub.sid != nil }) && p.sub.sid != nil {
			m.sessionID, m.hasSess = jsonString(p.sub.sid)
		}
	}
	return m
}

// mayHoldSessionID reports whether obj, a valid JSON object, can have a member sessionId: the name is in
// its text as such, or there is an escape, which might spell it otherwise.
func mayHoldSessionID(obj []byte) bool {
	return bytes.Contains(obj, []byte(`"sessionId"`)) || bytes.IndexByte(obj, '\\') >= 0
}

// idMembers picks what makes a request out of a frame: jsonrpc, id and method.
type idMembers struct {
	id                      []byte
	hasID, hasMeth, jsonrpc bool
}

func (s *idMembers) SetMember(name, value []byte) {
	switch string(name) {
	case "jsonrpc":
		s.jsonrpc = string(value) == `"2.0"`
	case "id":
		s.id, s.hasID = value, true
	case "method":
		if bytes.IndexByte(value, '\\') < 0 {
			s.hasMeth = len(value) > 2 && value[0] == '"'
		} else {
			m, ok := jsonString(value)
			s.hasMeth = ok && m != "" && m != "\x00"
		}
	}
}

// requestID returns the id of frame when it is a request as peek has it (jsonrpc "2.0", a method, a valid
// id), reading it only as far as those three members. It is for the frames this side writes: what follows
// them is not checked, and the peer judges the frame.
func (p *peeker) requestID(frame []byte) ([]byte, bool) {
	s := &p.ids
	*s = idMembers{}
	p.part.until(frame, s, func() bool { return s.hasID && s.hasMeth && s.jsonrpc })
	if !s.hasID || !s.hasMeth || !s.jsonrpc || !validID(s.id) {
		return nil, false
	}
	return s.id, true
}

// partScanner reads the top-level members of an object up to the one the caller needs.
type partScanner struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

// until hands the top-level members of frame, an object, to e in order until done reports true, and
// stops there: what follows is not read, so neither checked. It is for frames whose validity is known (a
// value a whole frame's decode has checked) or does not matter (the frames this side writes). It
// reports false when frame is not an object or the members read are not valid JSON.
func (s *partScanner) until(frame []byte, e jsonscan.Members, done func() bool) bool {
	s.buf = *bytes.NewBuffer(frame)
	s.dec.Reset(&s.buf)
	d := &s.dec
	if d.PeekKind() != '{' {
		return false
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return false
		}
		val, err := d.ReadValue()
		if err != nil {
			return false
		}
		if bytes.IndexByte(name, '\\') < 0 {
			name = name[1 : len(name)-1]
		} else if name, err = jsontext.AppendUnquote(nil, name); err != nil {
			return false
		}
		e.SetMember(name, val)
		if done() {
			return true
		}
	}
	_, err := d.ReadToken()
	return err == nil
}

// peekHead reads what it can of the start of an over-long frame: its kind and id, so that a request is
// answered under its id.
func (p *peeker) peekHead(head []byte) *msg {
	p.m = msg{}
	m := &p.m
	p.scan.Head(head, m)
	if m.hasID && validID(m.id) && m.method != "" {
		m.kind = kindRequest
	}
	return m
}

// validID reports whether a raw id is a string, a number or null (the TS SDK's rule).
func validID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == 'n' && string(id) == "null":
		return true
	case c == '-' || c >= '0' && c <= '9':
		return true
	}
	return false
}

// jsonString decodes a raw JSON string.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	v, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", false
	}
	return string(v), true
}

// idKey is a map key for a raw id: ids are compared as the JSON text that carries them, numbers made
// canonical where they are plain integers (1 and 1.0 are the same request to a JavaScript peer).
func idKey(id []byte) string {
	if len(id) > 0 && id[0] != '"' {
		if f, err := strconv.ParseFloat(string(id), 64); err == nil && f == float64(int64(f)) {
			return strconv.FormatInt(int64(f), 10)
		}
	}
	return string(id)
}

// quote appends s as a JSON string.
func quote(b []byte, s string) []byte {
	out, err := jsontext.AppendQuote(b, s)
	if err != nil { // invalid UTF-8: quote what is valid
		out, _ = jsontext.AppendQuote(b, string([]rune(s)))
	}
	return out
}
