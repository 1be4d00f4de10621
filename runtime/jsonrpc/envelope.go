package jsonrpc

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Outbound messages are encoded in a single pass into a pooled buffer:
// the envelope is written by hand and params/result are marshalled straight
// after it, so no intermediate raw message is ever built.

var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 1 << 20

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		b.Reset()
		bufferPool.Put(b)
	}
}

// encodeRequest writes a request frame, or a notification frame if id is 0.
// Params that are nil or encode as null are written as {}.
func encodeRequest(b *bytes.Buffer, id int64, method string, params any) error {
	b.WriteString(`{"jsonrpc":"2.0",`)
	if id != 0 {
		b.WriteString(`"id":`)
		b.Write(strconv.AppendInt(b.AvailableBuffer(), id, 10))
		b.WriteByte(',')
	}
	b.WriteString(`"method":`)
	q, err := jsontext.AppendQuote(b.AvailableBuffer(), method)
	if err != nil {
		return err
	}
	b.Write(q)
	b.WriteString(`,"params":`)
	if err := writeValue(b, params, "{}"); err != nil {
		return err
	}
	b.WriteString("}\n")
	return nil
}

// encodeResult writes a success response frame.
func encodeResult(b *bytes.Buffer, id ID, result any) error {
	writeResponseStart(b, id)
	b.WriteString(`"result":`)
	if err := writeValue(b, result, "null"); err != nil {
		return err
	}
	b.WriteString("}\n")
	return nil
}

// encodeError writes an error response frame. It cannot fail: invalid UTF-8
// in the message is replaced and data that is not valid JSON is left out.
func encodeError(b *bytes.Buffer, id ID, e *Error) {
	writeResponseStart(b, id)
	b.WriteString(`"error":{"code":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), e.Code, 10))
	b.WriteString(`,"message":`)
	msg, _ := jsontext.AppendQuote(b.AvailableBuffer(), e.Message)
	b.Write(msg)
	if len(e.Data) > 0 {
		mark := b.Len()
		b.WriteString(`,"data":`)
		if writeValue(b, e.Data, "null") != nil {
			b.Truncate(mark)
		}
	}
	b.WriteString("}}\n")
}

func writeResponseStart(b *bytes.Buffer, id ID) {
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	if id.IsZero() {
		b.WriteString("null")
	} else {
		b.WriteString(id.raw)
	}
	b.WriteByte(',')
}

// writeValue appends v as JSON, or null if v is nil, empty raw JSON or
// encodes as null. Raw JSON (jsontext.Value, json.RawMessage) is checked and
// copied as is, unless it spans several lines: then it is compacted. On
// error b is left as it was.
func writeValue(b *bytes.Buffer, v any, null string) error {
	mark := b.Len()
	if raw, ok := rawJSON(v); ok {
		if err := writeRaw(b, raw); err != nil {
			return err
		}
	} else if v != nil {
		if err := json.MarshalWrite(b, v); err != nil {
			b.Truncate(mark)
			return err
		}
	}
	if out := b.Bytes()[mark:]; len(out) == 0 || string(out) == "null" {
		b.Truncate(mark)
		b.WriteString(null)
	}
	return nil
}

// rawOptions accept what a peer may legitimately have sent us, so that raw
// values can be forwarded.
var rawOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

var errInvalidRaw = errors.New("jsonrpc: invalid raw JSON value")

func writeRaw(b *bytes.Buffer, raw []byte) error {
	if bytes.IndexByte(raw, '\n') < 0 {
		if len(raw) > 0 && !jsontext.Value(raw).IsValid(rawOptions...) {
			return errInvalidRaw
		}
		b.Write(raw)
		return nil
	}
	out, err := jsontext.AppendFormat(b.AvailableBuffer(), raw, rawOptions...)
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

func rawJSON(v any) ([]byte, bool) {
	if raw, ok := v.(jsontext.Value); ok {
		return raw, true
	}
	// A distinct type unless built with GOEXPERIMENT=jsonv2.
	if raw, ok := v.(stdjson.RawMessage); ok {
		return raw, true
	}
	return nil, false
}

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
		e.set(key, val)
	}
	_, err := d.ReadToken()
	return err
}

// set records the value of a top-level member; unknown members are
// ignored.
func (e *envelope) set(name, value []byte) {
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

// methodName returns the method of an inbound message, which must be a string.
func methodName(raw jsontext.Value) (string, bool) {
	if raw.Kind() != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	return string(s), err == nil
}

// decodeError decodes the error member of a response.
func decodeError(raw jsontext.Value) error {
	e := new(Error)
	if err := json.Unmarshal(raw, e); err != nil {
		return fmt.Errorf("jsonrpc: malformed error object in response: %w", err)
	}
	return e
}
