package wire

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// BeginObject reads the '{' that opens an object, reporting any other kind as
// ErrWrongKind (null included: nullable fields are handled by the caller).
func BeginObject(dec *jsontext.Decoder, typ string) error {
	if k := dec.PeekKind(); k != '{' {
		if k == 'n' {
			return &DecodeError{Type: typ, Err: ErrNullValue}
		}
		if k == 0 {
			_, err := dec.ReadToken()
			return Wrap(typ, "", err)
		}
		return Errorf(typ, "", ErrWrongKind, "want object, got %s", kindName(k))
	}
	_, err := dec.ReadToken()
	return Wrap(typ, "", err)
}

// ReadName reads the next member name and returns it unquoted. The returned
// slice may point into dec's buffer and is valid only until the next read
// from dec; switch on string(name) does not allocate.
func ReadName(dec *jsontext.Decoder, typ string) ([]byte, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, Wrap(typ, "", err)
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], nil
	}
	name, err := jsontext.AppendUnquote(nil, v)
	return name, Wrap(typ, "", err)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "invalid JSON"
}

// UnknownTag returns the string value of the member called name in the
// JSON object raw (a union's Unknown), or "".
func UnknownTag(raw jsontext.Value, name string) string {
	if raw == nil {
		return ""
	}
	tag, _ := Tag(raw, "", name)
	return tag
}

// Tag returns the string value of the member called name in the JSON object
// raw. A missing member is ErrMissingMember; a non-string one ErrWrongKind.
func Tag(raw jsontext.Value, typ, name string) (string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if err := BeginObject(dec, typ); err != nil {
		return "", err
	}
	for dec.PeekKind() != '}' {
		n, err := ReadName(dec, typ)
		if err != nil {
			return "", err
		}
		if string(n) != name {
			if err := dec.SkipValue(); err != nil {
				return "", Wrap(typ, "", err)
			}
			continue
		}
		var v string
		if err := StringFrom(&v, dec); err != nil {
			return "", Wrap(typ, name, err)
		}
		return v, nil
	}
	return "", &DecodeError{Type: typ, Member: name, Err: ErrMissingMember}
}
