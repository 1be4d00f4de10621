package jsonrpc

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// envelope holds the members of an inbound message as raw JSON aliasing the
// frame; absent members are nil. Unknown members are ignored.
type envelope struct {
	version, id, method, params, result, err jsontext.Value
}

// UnmarshalJSONFrom scans one message. A valid JSON value that is not an
// object leaves every member nil.
func (e *envelope) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	*e = envelope{}
	if d.PeekKind() != '{' {
		_, err := d.ReadValue()
		return err
	}
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

// SetMember records the value of a top-level member; unknown members are
// ignored.
func (e *envelope) SetMember(name, value []byte) {
	switch string(name) {
	case "jsonrpc":
		e.version = value
	case "id":
		e.id = value
	case "method":
		e.method = value
	case "params":
		e.params = value
	case "result":
		e.result = value
	case "error":
		e.err = value
	}
}
