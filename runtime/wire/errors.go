package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
// missing member, the object that lacks it joined with the member's name
// (/params/toolCall/toolCallId). It is "" for the document itself, or when
// err says nothing of where.
//
// The generated decoders place every error they return as it arises, from
// the decoder's position, so the pointer is exact at any depth, in arrays,
// maps and unions (members a union buffered before its tag included). An
// error they did not place (a whole document that is not an object) falls
// back to the JSON decoder's own pointer.
func Pointer(err error) string {
	if p := placeOf(err); p != nil {
		return p.at
	}
	var se *json.SemanticError
	if errors.As(err, &se) {
		return string(se.JSONPointer)
	}
	return ""
}

// placedError gives an error its place: at is the JSON pointer of the
// member that is wrong, or of the object that lacks a member joined with
// the member's name. The readers place an error where it arises, relative
// to the decoder they read; a union replaying the members it buffered
// before its tag prefixes the place with its own (see ObjectReader.Done).
// It adds nothing to the error's text.
type placedError struct {
	at  string
	err error
}

func (e *placedError) Error() string { return e.err.Error() }
func (e *placedError) Unwrap() error { return e.err }

// placeOf returns the place in err's chain, or nil.
func placeOf(err error) *placedError {
	var p *placedError
	if errors.As(err, &p) {
		return p
	}
	return nil
}

// place gives err the place at unless it has one already.
func place(err error, at string) error {
	if err == nil || placeOf(err) != nil {
		return err
	}
	return &placedError{at: at, err: err}
}

// truncatePointer returns the first n reference tokens of p (names in a
// pointer escape '/', so each '/' starts one).
func truncatePointer(p string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			if n--; n == 0 {
				return p[:i]
			}
		}
	}
	return p
}

// containerPointer returns the pointer of the object or array that dec is
// in or has just closed, opened at stack depth depth: the first depth-1
// tokens of dec's pointer, which stay those of the container while it is
// read (its enclosing levels still name it) and after it closes.
func containerPointer(dec *jsontext.Decoder, depth int) string {
	return truncatePointer(string(dec.StackPointer()), depth-1)
}

// elementPointer returns the pointer of element i of the array that dec
// is in, opened at stack depth depth. The index is given, not read from
// dec: an element refused at its first token was peeked, not read, and
// dec's pointer still names the one before.
func elementPointer(dec *jsontext.Decoder, depth, i int) string {
	return containerPointer(dec, depth) + "/" + strconv.Itoa(i)
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

// memberError attributes an error to a member of a map.
type memberError struct {
	name string
	err  error
}

func (e *memberError) Error() string { return "member " + strconv.Quote(e.name) + ": " + e.err.Error() }
func (e *memberError) Unwrap() error { return e.err }

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
