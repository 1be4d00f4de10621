package wire

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrNoVariant: a union value with no variant set was encoded.
var ErrNoVariant = errors.New("union has no variant set")

// Limits are the value constraints a schema puts on a member or a named
// scalar: minimum and maximum for numbers, minLength, maxLength and pattern
// for strings, minItems for arrays. Nil fields do not constrain.
type Limits struct {
	Minimum, Maximum     *float64
	MinLength, MaxLength *int
	MinItems             *int
	Pattern              *regexp.Regexp
}

// Bound returns a pointer to n, for Limits.Minimum and Maximum.
func Bound(n float64) *float64 { return &n }

// Count returns a pointer to n, for Limits.MinLength, MaxLength and MinItems.
func Count(n int) *int { return &n }

// Within returns a Reader that reads with read and then checks l.
func Within[E any](read Reader[E], l *Limits) Reader[E] {
	return func(p *E, dec *jsontext.Decoder) error {
		if err := read(p, dec); err != nil {
			return err
		}
		return l.check(p)
	}
}

// WithinList returns a Reader of arrays that reads with read and then checks
// l's minItems.
func WithinList[E any](read Reader[[]E], l *Limits) Reader[[]E] {
	return func(p *[]E, dec *jsontext.Decoder) error {
		if err := read(p, dec); err != nil {
			return err
		}
		return l.Items(len(*p))
	}
}

// MinItems checks that an array of n items that decoded as a whole union
// of arrays of type typ has at least min.
func MinItems(typ string, n, min int) error {
	if n < min {
		return Wrap(typ, "", errorf(ErrConstraint, "%d items, want at least %d", n, min))
	}
	return nil
}

func (l *Limits) check(p any) error {
	switch v := p.(type) {
	case *string:
		return l.String(*v)
	case *int64:
		return l.Number(float64(*v))
	case *float64:
		return l.Number(*v)
	}
	return nil
}

// Number checks minimum and maximum.
func (l *Limits) Number(v float64) error {
	if l.Minimum != nil && v < *l.Minimum {
		return errorf(ErrConstraint, "%v is less than the minimum %v", v, *l.Minimum)
	}
	if l.Maximum != nil && v > *l.Maximum {
		return errorf(ErrConstraint, "%v is more than the maximum %v", v, *l.Maximum)
	}
	return nil
}

// String checks minLength, maxLength (in characters) and pattern.
func (l *Limits) String(s string) error {
	if l.MinLength != nil || l.MaxLength != nil {
		n := utf8.RuneCountInString(s)
		if l.MinLength != nil && n < *l.MinLength {
			return errorf(ErrConstraint, "shorter than %d characters", *l.MinLength)
		}
		if l.MaxLength != nil && n > *l.MaxLength {
			return errorf(ErrConstraint, "longer than %d characters", *l.MaxLength)
		}
	}
	if l.Pattern != nil && !l.Pattern.MatchString(s) {
		return errorf(ErrConstraint, "%q does not match %s", s, l.Pattern)
	}
	return nil
}

// Items checks minItems.
func (l *Limits) Items(n int) error {
	if l.MinItems != nil && n < *l.MinItems {
		return errorf(ErrConstraint, "%d items, want at least %d", n, *l.MinItems)
	}
	return nil
}

// Scalar decodes a whole value with read, attributing errors to typ: the
// UnmarshalJSONFrom of named scalars, maps and enums.
func Scalar[E any](dec *jsontext.Decoder, typ string, p *E, read Reader[E]) error {
	return Wrap(typ, "", read(p, dec))
}

// Choose decodes the variant of a union told apart by JSON kind into a new
// E stored in *p.
func Choose[E any](dec *jsontext.Decoder, typ string, p **E, read Reader[E]) error {
	v := new(E)
	*p = v
	return Wrap(typ, "", read(v, dec))
}

// NoVariant is the error of encoding a union with no variant set.
func NoVariant(typ string) error { return &EncodeError{Type: typ, Err: ErrNoVariant} }

// EncodeError reports why a generated value cannot be encoded: Type is its
// Go type, Err the cause (ErrNoVariant: a union with no variant set).
type EncodeError struct {
	Type string
	Err  error
}

func (e *EncodeError) Error() string { return "encode " + e.Type + ": " + e.Err.Error() }

func (e *EncodeError) Unwrap() error { return e.Err }

// KindError explains why the next value fits none of a union's JSON kinds.
func KindError(dec *jsontext.Decoder, typ string, want string) error {
	k := dec.PeekKind()
	if k == 'n' {
		return &DecodeError{Type: typ, Err: ErrNullValue}
	}
	if k == 0 {
		_, err := dec.ReadToken()
		return Wrap(typ, "", err)
	}
	return Errorf(typ, "", ErrWrongKind, "want %s, got %s", want, kindName(k))
}

// StringEnum decodes a string enum. values are the values the schema lists,
// in schema order; a listed value is stored without allocating. An open enum
// keeps any other string; a closed one rejects it with ErrConstraint.
func StringEnum[T ~string](dec *jsontext.Decoder, p *T, typ string, values []T, open bool) error {
	if err := expect(dec, '"'); err != nil {
		return Wrap(typ, "", err)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return Wrap(typ, "", err)
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		if body, err = jsontext.AppendUnquote(nil, v); err != nil {
			return Wrap(typ, "", err)
		}
	}
	for _, k := range values {
		if string(k) == string(body) {
			*p = k
			return nil
		}
	}
	if !open {
		return Errorf(typ, "", ErrConstraint, "%q is not one of the allowed values", body)
	}
	*p = T(body)
	return nil
}

// IntEnum decodes an integer enum, like StringEnum.
func IntEnum[T ~int64](dec *jsontext.Decoder, p *T, typ string, values []T, open bool) error {
	var n int64
	if err := IntFrom(&n, dec); err != nil {
		return Wrap(typ, "", err)
	}
	if !open && !slices.Contains(values, T(n)) {
		return Errorf(typ, "", ErrConstraint, "%d is not one of the allowed values", n)
	}
	*p = T(n)
	return nil
}

// WriteStringEnum encodes a string enum; a closed enum refuses values the
// schema does not list, so no invalid document is written.
func WriteStringEnum[T ~string](enc *jsontext.Encoder, v T, typ string, values []T, open bool) error {
	if !open && !slices.Contains(values, v) {
		return Errorf(typ, "", ErrConstraint, "%q is not one of the allowed values", string(v))
	}
	return StringTo(string(v), enc)
}

// WriteIntEnum encodes an integer enum, like WriteStringEnum.
func WriteIntEnum[T ~int64](enc *jsontext.Encoder, v T, typ string, values []T, open bool) error {
	if !open && !slices.Contains(values, v) {
		return Errorf(typ, "", ErrConstraint, "%d is not one of the allowed values", int64(v))
	}
	return IntTo(int64(v), enc)
}

// OrOther decodes a value of union typ that also takes any other value (an
// alternative with no schema): known decodes it as one of the union's
// variants, from a copy of the value; when it cannot, reset clears what it
// set and the value is kept verbatim in *other. Any well-formed JSON value is
// accepted, as the schema accepts it.
func OrOther(dec *jsontext.Decoder, typ string, known func(*jsontext.Decoder) error, reset func(), other *jsontext.Value) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return Wrap(typ, "", err)
	}
	if known(jsontext.NewDecoder(bytes.NewReader(raw), dec.Options())) != nil {
		reset()
		*other = raw.Clone()
	}
	return nil
}
