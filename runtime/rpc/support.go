package rpc

import (
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
