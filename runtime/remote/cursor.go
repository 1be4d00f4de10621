package remote

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// cursorMeta is the member name of the draft durable-transport RFD's cursor in a message's _meta.
const cursorMeta = "acp/cursor"

// appendWithCursor appends to dst the message b with the draft's cursor, _meta["acp/cursor"], set to
// cursor (a decimal event id, as the SSE id field): in the _meta of the message's params (requests and
// notifications, as the draft's example has it) or of its result (responses), created if absent. A
// message with no such object (an error answer, params that are an array), whose _meta is not an object
// or already names a cursor, or that does not parse, is appended unchanged: its SSE id still carries the
// cursor. Nothing else of b changes, byte for byte.
func appendWithCursor(dst, b []byte, cursor string) []byte {
	at, lead, trail, ok := cursorPlace(b)
	if !ok {
		return append(dst, b...)
	}
	dst = append(dst, b[:at]...)
	dst = append(dst, lead...)
	dst = quote(dst, cursorMeta)
	dst = append(dst, ':')
	dst = quote(dst, cursor)
	dst = append(dst, trail...)
	return append(dst, b[at:]...)
}

// cursorPlace finds where the cursor member goes in b: at offset at, preceded by lead and followed by
// trail (the punctuation, and the _meta object when it must be made).
func cursorPlace(b []byte) (at int, lead, trail string, ok bool) {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0, "", "", false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return 0, "", "", false
		}
		if n := name.String(); (n != "params" && n != "result") || d.PeekKind() != '{' {
			if d.SkipValue() != nil {
				return 0, "", "", false
			}
			continue
		}
		d.ReadToken() // the object's {
		members := 0
		for d.PeekKind() == '"' {
			name, err := d.ReadToken()
			if err != nil {
				return 0, "", "", false
			}
			members++
			if name.String() != "_meta" {
				if d.SkipValue() != nil {
					return 0, "", "", false
				}
				continue
			}
			if d.PeekKind() != '{' {
				return 0, "", "", false
			}
			d.ReadToken()
			at := int(d.InputOffset())
			trail := ""
			for d.PeekKind() == '"' {
				name, err := d.ReadToken()
				if err != nil || name.String() == cursorMeta || d.SkipValue() != nil {
					return 0, "", "", false
				}
				trail = "," // the cursor goes first, before the members there are
			}
			if d.PeekKind() != '}' || !validRest(d) {
				return 0, "", "", false
			}
			return at, "", trail, true
		}
		if d.PeekKind() != '}' {
			return 0, "", "", false
		}
		at := int(d.InputOffset())
		lead := `"_meta":{`
		if members > 0 {
			lead = `,"_meta":{`
		}
		if !validRest(d) {
			return 0, "", "", false
		}
		return at, lead, "}", true
	}
	return 0, "", "", false
}

// validRest reports whether the rest of the message parses to its end.
func validRest(d *jsontext.Decoder) bool {
	for d.StackDepth() > 0 {
		if _, err := d.ReadToken(); err != nil {
			return false
		}
	}
	_, err := d.ReadToken()
	return errors.Is(err, io.EOF)
}
