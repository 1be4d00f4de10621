package jsonrpc

import "github.com/go-json-experiment/json/jsontext"

// envelope holds the members of an inbound message as raw JSON aliasing the
// frame; absent members are nil. Unknown members are ignored.
type envelope struct {
	version, id, method, params, result, err jsontext.Value
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
