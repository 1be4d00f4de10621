// Package envelope reads and writes the NDJSON frames of AgentPM's process
// protocols: the Harness machine protocol (agentpm-harness-machine) and the
// process-service protocol (agentpm-service). Both wrap every message in an
// envelope that names the protocol and its version, the frame kind, an opaque
// id and a method; they differ in which kinds exist and where results travel.
//
// A Protocol value decodes one line into a Frame and checks it against the
// protocol's compatibility gates (protocol name, version, kind), returning a
// typed *Error that still carries the frame's id, so that a peer can answer a
// bad frame with an error frame that echoes it. Ids are opaque strings and are
// written back exactly as read. Unknown top-level members are kept in
// Frame.Extra and written back.
package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Protocol describes one envelope protocol.
type Protocol struct {
	Name    string
	Version int64
	Kinds   []string
}

// The AgentPM protocols.
var (
	// Machine is agentpm-harness-machine v1 (`agentpm harness --machine`):
	// responses carry their data in payload; there is no result member.
	Machine = Protocol{Name: "agentpm-harness-machine", Version: 1, Kinds: []string{"request", "response", "event", "error"}}
	// Service is agentpm-service v1 (configured process providers): responses
	// carry result, frames written by a service name it in service.
	Service = Protocol{Name: "agentpm-service", Version: 1, Kinds: []string{"initialize", "initialized", "request", "response", "event", "error"}}
)

// Frame is one envelope. Absent members are zero: a nil ID, an empty Method or
// Service, a nil Payload, Result or Error.
type Frame struct {
	Protocol string
	Version  int64
	Kind     string
	ID       *string
	Method   string
	Service  string
	Payload  jsontext.Value
	Result   jsontext.Value
	Error    *FrameErrorBody
	// Extra keeps unknown top-level members in arrival order.
	Extra wire.Extras
}

// FrameErrorBody is the error member of a kind "error" frame.
type FrameErrorBody struct {
	Code    string
	Message string
	// Retryable is agentpm-service only; nil when absent.
	Retryable *bool
}

// Sentinel causes of an *Error; compare with errors.Is.
var (
	// ErrMalformed: the line is not a JSON object of the envelope's shape
	// (the machine protocol's malformed_json).
	ErrMalformed = errors.New("malformed frame")
	// ErrProtocol: protocol names another protocol, or is missing.
	ErrProtocol = errors.New("wrong protocol")
	// ErrVersion: version is not the one this side speaks.
	ErrVersion = errors.New("incompatible protocol version")
	// ErrKind: kind is missing or not one of the protocol's kinds.
	ErrKind = errors.New("invalid frame kind")
)

// Error reports a frame that failed to decode or failed a compatibility gate.
// ID is the frame's id when it could be read, so a reply can echo it.
type Error struct {
	Err    error
	ID     *string
	Detail string
}

func (e *Error) Error() string {
	s := "envelope: " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Decode reads one line into a Frame and checks protocol, version and kind.
// On a gate failure it returns the decoded frame as well as the error.
func (p Protocol) Decode(line []byte) (*Frame, error) {
	f := &Frame{}
	if err := f.decode(line); err != nil {
		return nil, &Error{Err: ErrMalformed, ID: f.ID, Detail: err.Error()}
	}
	switch {
	case f.Protocol != p.Name:
		return f, &Error{Err: ErrProtocol, ID: f.ID, Detail: fmt.Sprintf("got %q, want %q", f.Protocol, p.Name)}
	case f.Version != p.Version:
		return f, &Error{Err: ErrVersion, ID: f.ID, Detail: fmt.Sprintf("got %d, want %d", f.Version, p.Version)}
	case !slices.Contains(p.Kinds, f.Kind):
		return f, &Error{Err: ErrKind, ID: f.ID, Detail: fmt.Sprintf("%q is not one of %q", f.Kind, p.Kinds)}
	}
	return f, nil
}

const (
	seenProtocol = 1 << iota
	seenVersion
	seenKind
)

func (f *Frame) decode(line []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(line))
	if err := wire.BeginObject(dec, "Frame"); err != nil {
		return err
	}
	seen := 0
	var keyBuf [16]byte // member names are short: no allocation
	for wire.More(dec) {
		name, err := wire.ReadName(dec, "Frame")
		if err != nil {
			return err
		}
		// name points into dec's buffer, which reading the value may move.
		key := append(keyBuf[:0], name...)
		switch string(key) {
		case "protocol":
			seen |= seenProtocol
			f.Protocol, err = wire.String(dec)
		case "version":
			seen |= seenVersion
			f.Version, err = wire.Int(dec)
		case "kind":
			seen |= seenKind
			f.Kind, err = wire.String(dec)
		case "id":
			// Opaque and always a string: a number makes the line malformed.
			var id string
			if id, err = wire.String(dec); err == nil {
				f.ID = &id
			}
		case "method":
			f.Method, err = wire.String(dec)
		case "service":
			f.Service, err = wire.String(dec)
		case "payload":
			f.Payload, err = wire.Raw(dec)
		case "result":
			f.Result, err = wire.Raw(dec)
		case "error":
			f.Error, err = decodeErrorBody(dec)
		default:
			err = f.Extra.Read(dec, "Frame", key)
		}
		if err != nil {
			return wire.Wrap("Frame", string(key), err)
		}
	}
	if err := wire.EndObject(dec, "Frame"); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err == nil {
		return errors.New("data after the frame")
	}
	for _, m := range []struct {
		bit  int
		name string
	}{{seenProtocol, "protocol"}, {seenVersion, "version"}, {seenKind, "kind"}} {
		if seen&m.bit == 0 {
			return &wire.DecodeError{Type: "Frame", Member: m.name, Err: wire.ErrMissingMember}
		}
	}
	return nil
}

func decodeErrorBody(dec *jsontext.Decoder) (*FrameErrorBody, error) {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return nil, err
	}
	if err := wire.BeginObject(dec, "error"); err != nil {
		return nil, err
	}
	e := &FrameErrorBody{}
	for wire.More(dec) {
		name, err := wire.ReadName(dec, "error")
		if err != nil {
			return nil, err
		}
		switch string(name) {
		case "code":
			e.Code, err = wire.String(dec)
		case "message":
			e.Message, err = wire.String(dec)
		case "retryable":
			var b bool
			if b, err = wire.Bool(dec); err == nil {
				e.Retryable = &b
			}
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return nil, wire.Wrap("error", "", err)
		}
	}
	return e, wire.EndObject(dec, "error")
}

// Append writes f as one line (with its trailing newline) to dst, members in
// the order the AgentPM writers use: protocol, version, kind, id, service,
// method, payload, result, error, then Extra. The machine protocol always
// carries payload (null when nil).
func (p Protocol) Append(dst []byte, f *Frame) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w := &writer{enc: jsontext.NewEncoder(buf, wire.Fidelity)}
	w.token(jsontext.BeginObject)
	w.str("protocol", f.Protocol)
	w.member("version", func() error { return wire.WriteInt(w.enc, f.Version) })
	w.str("kind", f.Kind)
	if f.ID != nil {
		w.str("id", *f.ID)
	}
	if f.Service != "" {
		w.str("service", f.Service)
	}
	if f.Method != "" {
		w.str("method", f.Method)
	}
	if f.Payload != nil || p.Name == Machine.Name {
		w.member("payload", func() error { return wire.WriteRaw(w.enc, f.Payload) })
	}
	if f.Result != nil {
		w.member("result", func() error { return wire.WriteRaw(w.enc, f.Result) })
	}
	if e := f.Error; e != nil {
		w.member("error", func() error {
			w.token(jsontext.BeginObject)
			w.str("code", e.Code)
			w.str("message", e.Message)
			if e.Retryable != nil {
				w.member("retryable", func() error { return wire.WriteBool(w.enc, *e.Retryable) })
			}
			w.token(jsontext.EndObject)
			return w.err
		})
	}
	if w.err == nil {
		w.err = f.Extra.Encode(w.enc)
	}
	w.token(jsontext.EndObject)
	if w.err != nil {
		return dst, w.err
	}
	return buf.Bytes(), nil // the encoder ends each top-level value with '\n'
}

// writer writes tokens until the first error, which it keeps.
type writer struct {
	enc *jsontext.Encoder
	err error
}

func (w *writer) token(t jsontext.Token) {
	if w.err == nil {
		w.err = w.enc.WriteToken(t)
	}
}

func (w *writer) member(name string, value func() error) {
	w.token(jsontext.String(name))
	if w.err == nil {
		w.err = value()
	}
}

func (w *writer) str(name, v string) {
	w.member(name, func() error { return wire.WriteString(w.enc, v) })
}
