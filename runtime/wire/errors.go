package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel causes carried by DecodeError. Compare with errors.Is.
var (
	// ErrUnknownMember: a closed object (additionalProperties: false) held a member
	// the schema does not define.
	ErrUnknownMember = errors.New("unknown member")
	// ErrMissingMember: a required member was absent.
	ErrMissingMember = errors.New("missing required member")
	// ErrNullValue: null where the schema does not allow it.
	ErrNullValue = errors.New("null not allowed")
	// ErrWrongKind: the JSON kind (object, array, string, ...) is not one the schema allows.
	ErrWrongKind = errors.New("wrong JSON kind")
	// ErrConstraint: a value broke a schema constraint (minimum, minLength, pattern, enum, const).
	ErrConstraint = errors.New("constraint violated")
	// ErrForbiddenMember: a member the schema forbids where it stands (a
	// property whose schema is false), typically a field that a newer
	// revision of the protocol moved elsewhere. It wraps ErrUnknownMember, so
	// errors.Is(err, ErrUnknownMember) holds for it too.
	ErrForbiddenMember = fmt.Errorf("forbidden member (%w)", ErrUnknownMember)
)

// DecodeError reports why a JSON document does not fit a generated type.
// Type is the Go type being decoded and Member the JSON member name (empty for
// the value itself). Err is one of the sentinel causes above, possibly wrapped
// with detail, or an error from the JSON decoder.
type DecodeError struct {
	Type   string
	Member string
	Err    error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("decode ")
	b.WriteString(e.Type)
	if e.Member != "" {
		b.WriteString(".")
		b.WriteString(e.Member)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Errorf builds a DecodeError whose cause wraps sentinel with a formatted detail.
func Errorf(typ, member string, sentinel error, format string, args ...any) error {
	return &DecodeError{Type: typ, Member: member, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

// Wrap attributes err to typ.member unless err already names a member, in
// which case the innermost attribution is kept. An error about a whole value
// (a named scalar or enum: no member) is wrapped, so the member holding the
// value is named too: "decode Shell.source: decode ShellSource: ...".
func Wrap(typ, member string, err error) error {
	if err == nil {
		return nil
	}
	var de *DecodeError
	if errors.As(err, &de) && (de.Member != "" || member == "") {
		return err
	}
	return &DecodeError{Type: typ, Member: member, Err: err}
}

// errorf wraps cause with a formatted detail.
func errorf(cause error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, cause)...)
}
