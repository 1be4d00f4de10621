package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
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

// Pointer returns the JSON pointer, relative to the decoded document, of
// where a decode error was found: the member that was wrong or, for a
// missing member, where it should have been. It is "" for the document
// itself, or when err says nothing of where.
func Pointer(err error) string {
	ptr := ""
	var se *json.SemanticError
	if errors.As(err, &se) {
		ptr = string(se.JSONPointer)
	}
	if de := innermost(err); de != nil && de.Member != "" && errors.Is(de.Err, ErrMissingMember) {
		// A missing member is found at its object's end, where the
		// decoder's pointer no longer names an array element the object
		// was: the element's index comes from the error.
		var el *elementError
		if errors.As(err, &el) {
			if i := "/" + strconv.Itoa(el.index); !strings.HasSuffix(ptr, i) {
				ptr += i
			}
		}
		ptr += "/" + escapeToken(de.Member)
	} else if de != nil && de.Member != "" && errors.Is(de.Err, ErrUnknownMember) {
		// An unknown or forbidden member is reported at itself, whether the
		// decoder was at it or had buffered its object (a union choosing
		// its variant by a tag that came later).
		if m := "/" + escapeToken(de.Member); !strings.HasSuffix(ptr, m) {
			ptr += m
		}
	}
	return ptr
}

// elementError attributes an error to an array element.
type elementError struct {
	index int
	err   error
}

func (e *elementError) Error() string {
	return "element " + strconv.Itoa(e.index) + ": " + e.err.Error()
}
func (e *elementError) Unwrap() error { return e.err }

// Reason returns why a document did not decode, in the protocol's terms:
// the cause of the innermost DecodeError ("want string, got number: wrong
// JSON kind"), without the Go type names and member paths that wrap it
// (Pointer gives the place). Other errors are returned as they are.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	if de := innermost(err); de != nil {
		return de.Err.Error()
	}
	var se *json.SemanticError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err.Error()
	}
	if errors.As(err, &se) && se.JSONKind != 0 {
		return "unexpected JSON " + se.JSONKind.String()
	}
	return err.Error()
}

// Describe returns "POINTER: REASON", or REASON for the document itself:
// the text of a -32602 answer, which names the place once, by its wire
// names.
//
// Text that wraps the decode error (a handler's "terminal/create: shell:
// %w") is kept in front of it.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var prefix string
	if inner := decodeCause(err); inner != nil {
		full, text := err.Error(), inner.Error()
		if strings.HasSuffix(full, text) {
			prefix = full[:len(full)-len(text)]
		}
	}
	if p := Pointer(err); p != "" {
		return prefix + p + ": " + Reason(err)
	}
	return prefix + Reason(err)
}

// decodeCause returns the outermost error in err's chain that Describe
// rewrites: the JSON decoder's SemanticError or a DecodeError.
func decodeCause(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e.(type) {
		case *json.SemanticError, *DecodeError:
			return e
		}
	}
	return nil
}

// innermost returns the deepest DecodeError in err's chain, or nil.
func innermost(err error) *DecodeError {
	var de *DecodeError
	if !errors.As(err, &de) {
		return nil
	}
	for {
		var next *DecodeError
		if !errors.As(de.Err, &next) {
			return de
		}
		de = next
	}
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
