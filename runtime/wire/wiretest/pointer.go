package wiretest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// CheckPointer compares the place wire.Pointer gives for err, a generated
// decoder's refusal of doc, with doc, and says what is wrong with it ("" when
// nothing is): the pointer of a missing member must name an object of doc
// that lacks that member, joined with the member's name; the pointer of any
// other refusal (a wrong kind, a null, a broken constraint, an unknown
// member) must resolve to a value of doc. within, when not "", is the place
// a test changed in a valid document: the refusal must lie there or below.
//
// Only refusals of well-formed JSON on the schema's grounds are judged: a
// syntax error, an unexpected end or a duplicate name has no such place;
// judged says whether err was one that is.
func CheckPointer(doc []byte, err error, within string) (judged bool, problem string) {
	if err == nil || !jsontext.Value(doc).IsValid() {
		return false, ""
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return false, ""
	}
	missing := errors.Is(err, wire.ErrMissingMember)
	if !missing && !errors.Is(err, wire.ErrUnknownMember) && !errors.Is(err, wire.ErrWrongKind) &&
		!errors.Is(err, wire.ErrNullValue) && !errors.Is(err, wire.ErrConstraint) {
		return false, ""
	}
	var root any
	if err := jsonv2.Unmarshal(doc, &root); err != nil {
		return false, ""
	}
	return true, pointerProblem(root, err, within)
}

func pointerProblem(root any, err error, within string) string {
	missing := errors.Is(err, wire.ErrMissingMember)
	ptr := wire.Pointer(err)
	if within != "" && ptr != within && !strings.HasPrefix(ptr, within+"/") {
		return fmt.Sprintf("pointer %q lies outside %q, the only place changed (%v)", ptr, within, err)
	}
	tokens, perr := splitPointer(ptr)
	if perr != "" {
		return fmt.Sprintf("pointer %q: %s (%v)", ptr, perr, err)
	}
	var de *wire.DecodeError
	errors.As(err, &de)
	for de != nil {
		var next *wire.DecodeError
		if !errors.As(de.Err, &next) {
			break
		}
		de = next
	}
	if missing {
		if len(tokens) == 0 {
			return fmt.Sprintf("missing member with pointer %q: no member named (%v)", ptr, err)
		}
		parent, ok := resolve(root, tokens[:len(tokens)-1])
		obj, isObj := parent.(map[string]any)
		name := tokens[len(tokens)-1]
		switch {
		case !ok || !isObj:
			return fmt.Sprintf("missing member at %q: its parent is not an object of the document (%v)", ptr, err)
		case hasKey(obj, name):
			return fmt.Sprintf("missing member at %q: the object has member %q (%v)", ptr, name, err)
		case de != nil && de.Member != name && !strings.HasPrefix(de.Member, name+" or "):
			return fmt.Sprintf("missing member at %q names %q, the error %q (%v)", ptr, name, de.Member, err)
		}
		return ""
	}
	if _, ok := resolve(root, tokens); !ok {
		return fmt.Sprintf("pointer %q does not resolve in the document (%v)", ptr, err)
	}
	if errors.Is(err, wire.ErrUnknownMember) && de != nil && de.Member != "" &&
		(len(tokens) == 0 || tokens[len(tokens)-1] != de.Member) {
		return fmt.Sprintf("unknown member %q reported at %q (%v)", de.Member, ptr, err)
	}
	return ""
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// splitPointer returns the unescaped reference tokens of an RFC 6901 pointer.
func splitPointer(p string) ([]string, string) {
	if p == "" {
		return nil, ""
	}
	if p[0] != '/' {
		return nil, "does not start with /"
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, ""
}

// resolve follows tokens from v.
func resolve(v any, tokens []string) (any, bool) {
	for _, tok := range tokens {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != tok {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
