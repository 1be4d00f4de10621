package wire

import (
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A Reader decodes one JSON value into an E. Generated code composes these for
// arrays, maps and nullable members; errors are attributed by the caller.
type Reader[E any] func(dec *jsontext.Decoder) (E, error)

// A Writer encodes one E.
type Writer[E any] func(enc *jsontext.Encoder, v E) error

// String reads a JSON string.
func String(dec *jsontext.Decoder) (string, error) {
	if err := expect(dec, '"'); err != nil {
		return "", err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}

// Bool reads true or false.
func Bool(dec *jsontext.Decoder) (bool, error) {
	if err := expect(dec, 't'); err != nil {
		return false, err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return false, err
	}
	return tok.Bool(), nil
}

// Int reads a JSON number that is an integer (2020-12 semantics: 3.0 counts)
// and fits an int64.
func Int(dec *jsontext.Decoder) (int64, error) {
	if err := expect(dec, '0'); err != nil {
		return 0, err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return 0, err
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, errorf(ErrWrongKind, "%s is not an int64 integer", v)
	}
	return int64(f), nil
}

// Float reads any JSON number.
func Float(dec *jsontext.Decoder) (float64, error) {
	if err := expect(dec, '0'); err != nil {
		return 0, err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return 0, err
	}
	// strconv rather than Token.Float, whose signature differs between
	// go-json-experiment and encoding/json/jsontext (GOEXPERIMENT=jsonv2).
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, errorf(ErrWrongKind, "%s is out of float64 range", v)
	}
	return f, nil
}

// Raw reads any JSON value verbatim.
func Raw(dec *jsontext.Decoder) (jsontext.Value, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	return slices.Clone(v), nil
}

// RawObject reads a JSON object verbatim.
func RawObject(dec *jsontext.Decoder) (jsontext.Value, error) {
	if err := expect(dec, '{'); err != nil {
		return nil, err
	}
	return Raw(dec)
}

// Decode reads an E through its JSON methods (generated types) or reflection.
func Decode[E any](dec *jsontext.Decoder) (E, error) {
	var v E
	err := json.UnmarshalDecode(dec, &v)
	return v, err
}

// Array reads a JSON array whose elements read with elem. An empty array gives
// an empty, non-nil slice so that [] and absent stay apart.
func Array[E any](dec *jsontext.Decoder, elem Reader[E]) ([]E, error) {
	if err := expect(dec, '['); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	out := make([]E, 0, 4)
	for dec.PeekKind() != ']' {
		v, err := elem(dec)
		if err != nil {
			return nil, errorf(err, "element %d", len(out))
		}
		out = append(out, v)
	}
	_, err := dec.ReadToken()
	return out, err
}

// Map reads a JSON object whose member values read with elem.
func Map[E any](dec *jsontext.Decoder, elem Reader[E]) (map[string]E, error) {
	if err := expect(dec, '{'); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	out := make(map[string]E)
	for dec.PeekKind() != '}' {
		name, err := ReadName(dec, "")
		if err != nil {
			return nil, err
		}
		key := string(name)
		v, err := elem(dec)
		if err != nil {
			return nil, errorf(err, "member %q", key)
		}
		out[key] = v
	}
	_, err := dec.ReadToken()
	return out, err
}

// WriteString writes a JSON string.
func WriteString(enc *jsontext.Encoder, v string) error { return enc.WriteToken(jsontext.String(v)) }

// WriteBool writes true or false.
func WriteBool(enc *jsontext.Encoder, v bool) error { return enc.WriteToken(jsontext.Bool(v)) }

// WriteInt writes an integer.
func WriteInt(enc *jsontext.Encoder, v int64) error { return enc.WriteToken(jsontext.Int(v)) }

// WriteFloat writes a number.
func WriteFloat(enc *jsontext.Encoder, v float64) error { return enc.WriteToken(jsontext.Float(v)) }

// Encode writes v through its JSON methods (generated types) or reflection.
func Encode[E any](enc *jsontext.Encoder, v E) error { return json.MarshalEncode(enc, &v) }

// WriteArray writes a JSON array; a nil slice is written as [] (callers omit
// absent members before calling).
func WriteArray[E any](enc *jsontext.Encoder, vs []E, elem Writer[E]) error {
	if err := enc.WriteToken(jsontext.BeginArray); err != nil {
		return err
	}
	for _, v := range vs {
		if err := elem(enc, v); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndArray)
}

// WriteMap writes a JSON object with its members in sorted key order, so that
// output is deterministic.
func WriteMap[E any](enc *jsontext.Encoder, m map[string]E, elem Writer[E]) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := enc.WriteToken(jsontext.String(k)); err != nil {
			return err
		}
		if err := elem(enc, m[k]); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

func expect(dec *jsontext.Decoder, want jsontext.Kind) error {
	k := dec.PeekKind()
	if k == want || (want == 't' && k == 'f') {
		return nil
	}
	if k == 'n' {
		return ErrNullValue
	}
	if k == 0 {
		_, err := dec.ReadToken()
		return err
	}
	return errorf(ErrWrongKind, "want %s, got %s", kindName(want), kindName(k))
}
