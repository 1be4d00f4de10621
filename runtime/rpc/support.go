package rpc

import (
	"bytes"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file holds what generated handlers and peers (package gen/...) need
// from the engine besides Handler and Sender.

// DecodeParams decodes raw params into v. Absent params decode as {}. A
// failure is an InvalidParams error (errors.Is(err, ErrInvalidParams)) whose
// message says which member is at fault.
func DecodeParams(raw jsontext.Value, v any) error {
	if len(raw) == 0 {
		raw = jsontext.Value("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return InvalidParams(err)
	}
	return nil
}

// WithOptions returns a copy of opts (which may be nil) with a protocol's
// cancel rules, preempted methods and method names added, for generated
// packages' connection constructors.
func WithOptions(opts *Options, cancels []CancelRule, preempt, methods []string) *Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Cancels = append(append([]CancelRule(nil), cancels...), o.Cancels...)
	o.Preempt = append(append([]string(nil), preempt...), o.Preempt...)
	o.Methods = append(append([]string(nil), methods...), o.Methods...)
	return &o
}

// Member returns a copy of the raw value of the top-level member name of the
// JSON object obj, or nil. It reads obj only up to that member, so it also
// finds a member ahead of the point where a malformed line goes wrong (a
// codec echoing the id of a line it cannot decode). The member name is
// compared after unescaping.
func Member(obj []byte, name string) jsontext.Value {
	if len(obj) == 0 {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		if tok.String() == name {
			v, err := dec.ReadValue()
			if err != nil {
				return nil
			}
			return bytes.Clone(v)
		}
		if dec.SkipValue() != nil {
			return nil
		}
	}
	return nil
}
