package jsonrpc

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// ID is a request id: the raw JSON text of a string, number or null. The zero
// ID means "no id", i.e. a notification. IDs are comparable and can be used
// as map keys; inbound ids are kept byte for byte and echoed unchanged.
type ID struct {
	raw string
}

// Int64ID returns the ID for the JSON number n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// StringID returns the ID for the JSON string s. Invalid UTF-8 in s is
// replaced with U+FFFD.
func StringID(s string) ID {
	b, _ := jsontext.AppendQuote(nil, s)
	return ID{raw: string(b)}
}

// IsZero reports whether id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// Raw returns the id's JSON text, or nil for the zero ID.
func (id ID) Raw() jsontext.Value {
	if id.raw == "" {
		return nil
	}
	return jsontext.Value(id.raw)
}

// String returns the id's JSON text, or "" for the zero ID.
func (id ID) String() string { return id.raw }

// requestID validates the raw id of an inbound request: it must be absent, a
// string, a number or null.
func requestID(raw []byte) (ID, bool) {
	if raw == nil {
		return ID{}, true
	}
	switch raw[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return ID{raw: string(raw)}, true
	}
	return ID{}, false
}

// callID parses the id of a response to one of our calls, which Call always
// writes as a positive integer.
func callID(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil && n > 0
}
