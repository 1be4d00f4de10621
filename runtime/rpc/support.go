package rpc

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// What generated handlers and peers (package gen/...) need from the engine besides Handler and Sender.

// DecodeParams decodes raw params into v, with opts (nil ones are skipped). Absent params decode as {}. A
// failure is an InvalidParams error (errors.Is(err, ErrInvalidParams)) whose message says which member is at
// fault, at its JSON pointer.
func DecodeParams(raw jsontext.Value, v any, opts ...json.Options) error {
	if len(raw) == 0 {
		raw = jsontext.Value("{}")
	}
	var o json.Options
	if len(opts) == 1 {
		o = opts[0]
	} else if len(opts) > 1 {
		o = json.JoinOptions(opts...) // which skips nil ones
	}
	if err := decodeInto(raw, v, o); err != nil {
		return InvalidParams(err)
	}
	return nil
}

// DecodeParams decodes the request's params into v with the options of its connection
// (Options.DecodeOptions): what generated handlers call.
func (r *Request) DecodeParams(v any) error {
	return DecodeParams(r.Params, v, r.Options)
}

// decodeInto unmarshals data into v, with opts unless they are nil.
func decodeInto(data []byte, v any, opts json.Options) error {
	if opts == nil {
		return json.Unmarshal(data, v)
	}
	return json.Unmarshal(data, v, opts)
}

// WithOptions returns a copy of opts (which may be nil) with a protocol's cancel rules, preempted methods and
// method names added, for generated packages' connection constructors.
func WithOptions(opts *Options, cancels []CancelRule, preempt, methods []string) *Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Cancels = slices.Concat(cancels, o.Cancels)
	o.Preempt = slices.Concat(preempt, o.Preempt)
	o.Methods = slices.Concat(methods, o.Methods)
	return &o
}

// Member returns a copy of the raw value of the top-level member name of the JSON object obj, or nil. It
// reads obj only up to that member, so it also finds a member ahead of the point where a malformed line goes
// wrong (a codec echoing the id of a line it cannot decode). The member name is compared after unescaping.
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
