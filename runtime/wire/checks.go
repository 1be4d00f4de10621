package wire

import (
	"errors"
	"regexp"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrNoVariant: a union value with no variant set was encoded.
var ErrNoVariant = errors.New("union has no variant set")

// MinLength checks a string's length in characters.
func MinLength(s string, n int) error {
	if utf8.RuneCountInString(s) < n {
		return errorf(ErrConstraint, "shorter than %d characters", n)
	}
	return nil
}

// MaxLength checks a string's length in characters.
func MaxLength(s string, n int) error {
	if utf8.RuneCountInString(s) > n {
		return errorf(ErrConstraint, "longer than %d characters", n)
	}
	return nil
}

// Minimum checks a number's lower bound.
func Minimum[N int64 | float64](v N, min float64) error {
	if float64(v) < min {
		return errorf(ErrConstraint, "%v is less than the minimum %v", v, min)
	}
	return nil
}

// Maximum checks a number's upper bound.
func Maximum[N int64 | float64](v N, max float64) error {
	if float64(v) > max {
		return errorf(ErrConstraint, "%v is more than the maximum %v", v, max)
	}
	return nil
}

// MinItems checks an array's length.
func MinItems(n, min int) error {
	if n < min {
		return errorf(ErrConstraint, "%d items, want at least %d", n, min)
	}
	return nil
}

// Pattern checks a string against a schema pattern.
func Pattern(s string, re *regexp.Regexp) error {
	if !re.MatchString(s) {
		return errorf(ErrConstraint, "%q does not match %s", s, re)
	}
	return nil
}

// Const checks a member whose value the schema fixes.
func Const(s, want string) error {
	if s != want {
		return errorf(ErrConstraint, "%q, want %q", s, want)
	}
	return nil
}

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
