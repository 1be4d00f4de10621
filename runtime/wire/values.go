package wire

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// A Reader decodes one JSON value into *p. Generated types' UnmarshalJSONFrom
// method expressions ((*T).UnmarshalJSONFrom) are Readers, and so are
// StringFrom, IntFrom, ... and the composites ListFrom and MapFrom. Errors are
// attributed to a type and member by the caller.
type Reader[E any] func(p *E, dec *jsontext.Decoder) error

// A Writer encodes one E. Generated types' MarshalJSONTo method expressions
// (T.MarshalJSONTo) are Writers, and so are StringTo, IntTo, ... and the
// composites ListTo and MapTo.
type Writer[E any] func(v E, enc *jsontext.Encoder) error

// StringFrom reads a JSON string.
func StringFrom(p *string, dec *jsontext.Decoder) error {
	if err := expect(dec, '"'); err != nil {
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	*p = tok.String()
	return nil
}

// BoolFrom reads true or false.
func BoolFrom(p *bool, dec *jsontext.Decoder) error {
	if err := expect(dec, 't'); err != nil {
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	*p = tok.Bool()
	return nil
}

// IntFrom reads a JSON number that is an integer (2020-12 semantics: 3.0
// counts) and fits an int64.
func IntFrom(p *int64, dec *jsontext.Decoder) error {
	if err := expect(dec, '0'); err != nil {
		return err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	n, err := parseInt(v)
	*p = n
	return err
}

func parseInt(v []byte) (int64, error) {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, errorf(ErrWrongKind, "%s is not an int64 integer", v)
	}
	return int64(f), nil
}

// FloatFrom reads any JSON number.
func FloatFrom(p *float64, dec *jsontext.Decoder) error {
	if err := expect(dec, '0'); err != nil {
		return err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	// strconv rather than Token.Float, whose signature differs between
	// go-json-experiment and encoding/json/jsontext (GOEXPERIMENT=jsonv2).
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return errorf(ErrWrongKind, "%s is out of float64 range", v)
	}
	*p = f
	return nil
}

// RawFrom reads any JSON value verbatim (null included).
func RawFrom(p *jsontext.Value, dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*p = bytes.Clone(v)
	return nil
}

// RawObjectFrom reads a JSON object verbatim.
func RawObjectFrom(p *jsontext.Value, dec *jsontext.Decoder) error {
	if err := expect(dec, '{'); err != nil {
		return err
	}
	return RawFrom(p, dec)
}

// ListFrom returns a Reader of JSON arrays whose elements read with elem. An
// empty array gives an empty, non-nil slice so that [] and absent stay apart.
func ListFrom[E any](elem Reader[E]) Reader[[]E] {
	return func(p *[]E, dec *jsontext.Decoder) error {
		if err := expect(dec, '['); err != nil {
			return err
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		depth := dec.StackDepth()
		out := make([]E, 0, 4)
		for dec.PeekKind() != ']' {
			var zero E
			out = append(out, zero)
			if err := elem(&out[len(out)-1], dec); err != nil {
				i := len(out) - 1
				return &elementError{i, place(err, elementPointer(dec, depth, i))}
			}
		}
		*p = out
		_, err := dec.ReadToken()
		return err
	}
}

// MapFrom returns a Reader of JSON objects whose member values read with elem.
func MapFrom[E any](elem Reader[E]) Reader[map[string]E] {
	return func(p *map[string]E, dec *jsontext.Decoder) error {
		if err := expect(dec, '{'); err != nil {
			return err
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		depth := dec.StackDepth()
		out := make(map[string]E)
		for dec.PeekKind() != '}' {
			name, err := ReadName(dec, "")
			if err != nil {
				return err
			}
			key := string(name)
			var v E
			if err := elem(&v, dec); err != nil {
				return &memberError{key, place(err, containerPointer(dec, depth)+"/"+escapeToken(key))}
			}
			out[key] = v
		}
		*p = out
		_, err := dec.ReadToken()
		return err
	}
}

// StringTo writes a JSON string.
func StringTo(v string, enc *jsontext.Encoder) error { return enc.WriteToken(jsontext.String(v)) }

// BoolTo writes true or false.
func BoolTo(v bool, enc *jsontext.Encoder) error { return enc.WriteToken(jsontext.Bool(v)) }

// IntTo writes an integer.
func IntTo(v int64, enc *jsontext.Encoder) error { return enc.WriteToken(jsontext.Int(v)) }

// FloatTo writes a number.
func FloatTo(v float64, enc *jsontext.Encoder) error { return enc.WriteToken(jsontext.Float(v)) }

// RawTo writes v verbatim, or null when v is empty.
func RawTo(v jsontext.Value, enc *jsontext.Encoder) error { return WriteRaw(enc, v) }

// ListTo returns a Writer of JSON arrays; a nil slice is written as []
// (callers omit absent members before calling).
func ListTo[E any](elem Writer[E]) Writer[[]E] {
	return func(vs []E, enc *jsontext.Encoder) error { return WriteList(vs, enc, elem) }
}

// WriteList writes vs as a JSON array with elem.
func WriteList[E any](vs []E, enc *jsontext.Encoder, elem Writer[E]) error {
	if err := enc.WriteToken(jsontext.BeginArray); err != nil {
		return err
	}
	for _, v := range vs {
		if err := elem(v, enc); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndArray)
}

// MapTo returns a Writer of JSON objects whose members are written in sorted
// key order, so that output is deterministic.
func MapTo[E any](elem Writer[E]) Writer[map[string]E] {
	return func(m map[string]E, enc *jsontext.Encoder) error { return WriteMapOf(m, enc, elem) }
}

// WriteMapOf writes m as a JSON object, members in sorted key order.
func WriteMapOf[E any](m map[string]E, enc *jsontext.Encoder, elem Writer[E]) error {
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
		if err := elem(m[k], enc); err != nil {
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

func kindErr(want string, k jsontext.Kind) error {
	if k == 'n' {
		return ErrNullValue
	}
	return errorf(ErrWrongKind, "want %s, got %s", want, kindName(k))
}

// RawOfKinds returns a Reader of a value kept verbatim, like RawFrom, whose
// JSON kind must be one of kinds, named as JSON Schema names them
// ("null", "boolean", "object", "array", "number", "string", "integer":
// a number of integral value, whatever its spelling: 1.0 and 1e3 are
// integers, and are kept as written). Generated code uses it for a
// definition kept raw whose schema allows only such kinds (a JSON-RPC id).
func RawOfKinds(kinds ...string) Reader[jsontext.Value] {
	want := strings.Join(kinds, " or ")
	return func(p *jsontext.Value, dec *jsontext.Decoder) error {
		k := dec.PeekKind()
		if k == 0 {
			_, err := dec.ReadToken()
			return err
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		for _, name := range kinds {
			if kindIs(name, k, v) {
				*p = bytes.Clone(v)
				return nil
			}
		}
		if k == '0' && slices.Contains(kinds, "integer") {
			return errorf(ErrWrongKind, "%s is not an integer", v)
		}
		return errorf(ErrWrongKind, "want %s, got %s", want, kindName(k))
	}
}

// kindIs reports whether the value v, of kind k, is of the JSON Schema kind
// name.
func kindIs(name string, k jsontext.Kind, v []byte) bool {
	switch name {
	case "null":
		return k == 'n'
	case "boolean":
		return k == 't' || k == 'f'
	case "object":
		return k == '{'
	case "array":
		return k == '['
	case "string":
		return k == '"'
	case "number":
		return k == '0'
	case "integer":
		return k == '0' && integral(v)
	}
	return false
}

// integral reports whether the JSON number literal lit has an integral
// value, exactly, without converting it (1e999999999 is one, 1.5 is not).
func integral(lit []byte) bool {
	s := strings.TrimPrefix(string(lit), "-")
	mant, exp, huge := s, 0, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(s[i+1:])
		switch {
		case err == nil:
			exp = e
		case strings.HasPrefix(s[i+1:], "-"):
			huge = -1 // an exponent beyond int: only its sign matters
		default:
			huge = 1
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	all := intPart + frac
	digits := strings.TrimRight(all, "0")
	switch {
	case strings.Trim(digits, "0") == "":
		return true // zero, however written
	case huge != 0:
		return huge > 0
	case exp > len(all):
		return true
	}
	return exp-len(frac)+(len(all)-len(digits)) >= 0
}
