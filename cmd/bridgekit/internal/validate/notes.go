package validate

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// Codes of notes: values a schema's closed list does not have, which the
// generated types keep (the protocols' forward-compatibility rule: a peer
// of a newer version may send them), so that they are right to accept on
// the wire and worth a word from a checker. --strict makes them findings.
const (
	// NoteUnknownValue: an enum value this version does not list.
	NoteUnknownValue = "unknown_value"
	// NoteUnknownVariant: a union variant (its tag's value) this version
	// does not list.
	NoteUnknownVariant = "unknown_variant"
)

// HasUnknown reports whether v, a decoded generated value (a pointer to
// one), holds anywhere a union variant this version does not know (a
// non-empty Unknown member) or an open enum's value its schema does not
// list (Known() false). It walks only the fields whose types can hold one,
// found once per type, so that it is cheap enough to run on every frame.
func HasUnknown(v any) bool {
	if v == nil {
		return false
	}
	return hasUnknown(reflect.ValueOf(v), 0)
}

var rawType = reflect.TypeFor[jsontext.Value]()

type knower interface{ Known() bool }

var knowerType = reflect.TypeFor[knower]()

// A plan says where in a value of a type an unknown may be.
type plan struct {
	known   bool  // the type has Known()
	unknown int   // the index of a struct's Unknown field, or -1
	fields  []int // a struct's fields that may hold one
	nested  bool  // pointer, slice, array, map or nullable whose element may hold one
	getter  bool  // wire.Nullable: its value is reached through Get
	none    bool  // nothing of this type can hold one
}

var plans sync.Map // reflect.Type -> *plan

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	// Mark the type first: a recursive type finds itself here (and
	// reports "may hold one" until its plan is done).
	p := &plan{unknown: -1}
	plans.Store(t, p)
	p.known = t.Implements(knowerType) && t.Kind() == reflect.String
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		if t != rawType && t.Elem().Kind() != reflect.Uint8 {
			p.nested = !planOf(t.Elem()).none
		}
	case reflect.Struct:
		if m, ok := t.MethodByName("Get"); ok && m.Type.NumIn() == 1 && m.Type.NumOut() == 2 {
			p.getter = true
			p.nested = !planOf(m.Type.Out(0)).none
			break
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "Unknown" && f.Type == rawType {
				p.unknown = i
				continue
			}
			if f.IsExported() && !planOf(f.Type).none {
				p.fields = append(p.fields, i)
			}
		}
	}
	p.none = !p.known && p.unknown < 0 && len(p.fields) == 0 && !p.nested
	return p
}

func hasUnknown(v reflect.Value, depth int) bool {
	if depth > 64 || !v.IsValid() {
		return false
	}
	p := planOf(v.Type())
	switch {
	case p.none:
		return false
	case p.known:
		return !v.Interface().(knower).Known()
	case p.getter:
		out := v.Addr().MethodByName("Get").Call(nil)
		return out[1].Bool() && hasUnknown(out[0], depth+1)
	}
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && hasUnknown(v.Elem(), depth+1)
	case reflect.Struct:
		if p.unknown >= 0 && v.Field(p.unknown).Len() > 0 {
			return true
		}
		for _, i := range p.fields {
			if hasUnknown(v.Field(i), depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if hasUnknown(v.Index(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if hasUnknown(it.Value(), depth+1) {
				return true
			}
		}
	}
	return false
}

// notes finds, in doc (a body parsed for the schema library) under sch,
// the values and variants sch does not list, and returns a note for each
// at its JSON pointer (prefixed with ptr), with the nearest value it does.
func notes(sch *jsonschema.Schema, doc any, ptr string) []frames.Problem {
	w := &notesWalk{}
	w.walk(sch, doc, ptr, 0)
	return w.out
}

type notesWalk struct {
	out  []frames.Problem
	seen map[string]bool // pointers noted
}

func (w *notesWalk) note(code, ptr, got, of string, known []string) {
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if w.seen[ptr] {
		return
	}
	w.seen[ptr] = true
	w.out = append(w.out, frames.Problem{Code: code, Pointer: ptr, Message: unknownMessage(got, of, known)})
}

// unknownMessage says what a value is not, and the nearest it could be:
// "agent_mesage_chunk": did you mean "agent_message_chunk"?, for a near
// miss; the nearest and the whole list otherwise.
func unknownMessage(got, of string, known []string) string {
	best, dist := nearest(got, known)
	if best == "" {
		return fmt.Sprintf("%q is not a %s this version knows", got, of)
	}
	if dist <= max(2, len(got)/3) {
		return fmt.Sprintf("%q: did you mean %q? (not a %s this version knows)", got, best, of)
	}
	list := known
	if len(list) > 12 {
		list = append(slices.Clone(list[:12]), "…")
	}
	return fmt.Sprintf("%q is not a %s this version knows; the nearest is %q (known: %s)", got, of, best, strings.Join(list, ", "))
}

// nearest returns the value of known closest to s by edit distance (the
// first of equals), and the distance.
func nearest(s string, known []string) (string, int) {
	best, dist := "", -1
	for _, k := range known {
		if d := editDistance(s, k); dist < 0 || d < dist {
			best, dist = k, d
		}
	}
	return best, dist
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions) between a and b, by bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func (w *notesWalk) walk(s *jsonschema.Schema, v any, ptr string, depth int) {
	if s == nil || depth > 64 {
		return
	}
	if s.Ref != nil {
		w.walk(s.Ref, v, ptr, depth+1)
	}
	if s.DynamicRef != nil && s.DynamicRef.Ref != nil {
		w.walk(s.DynamicRef.Ref, v, ptr, depth+1)
	}
	for _, a := range s.AllOf {
		w.walk(a, v, ptr, depth+1)
	}
	if s.If != nil {
		// specschema writes a tagged union's branches as "if the tag is
		// this, then the variant".
		if s.If.Validate(v) == nil {
			w.walk(s.Then, v, ptr, depth+1)
		} else {
			w.walk(s.Else, v, ptr, depth+1)
		}
	}
	if s.Enum != nil {
		if str, ok := v.(string); ok && !slices.Contains(s.Enum.Values, any(str)) {
			w.note(NoteUnknownValue, ptr, str, "value of "+memberName(ptr), stringsOf(s.Enum.Values))
		}
	}
	if branches := append(slices.Clone(s.OneOf), s.AnyOf...); len(branches) > 0 {
		w.union(branches, v, ptr, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			at := ptr + "/" + escapeToken(k)
			if p, ok := s.Properties[k]; ok {
				w.walk(p, x[k], at, depth+1)
			} else if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
				w.walk(ap, x[k], at, depth+1)
			}
		}
	case []any:
		for i, e := range x {
			at := ptr + "/" + strconv.Itoa(i)
			switch {
			case i < len(s.PrefixItems):
				w.walk(s.PrefixItems[i], e, at, depth+1)
			case s.Items2020 != nil:
				w.walk(s.Items2020, e, at, depth+1)
			default:
				if it, ok := s.Items.(*jsonschema.Schema); ok {
					w.walk(it, e, at, depth+1)
				}
			}
		}
	}
}

// union walks v into the branch of a oneOf or anyOf it belongs to. An
// object is told by its tag: a member that two or more branches fix to a
// constant string; a tag no branch has is an unknown variant. A string
// that no branch accepts is an unknown value of the constants and enums
// the branches list.
func (w *notesWalk) union(branches []*jsonschema.Schema, v any, ptr string, depth int) {
	// A branch that is itself a union (an overlay's anyOf of the
	// protocol's oneOf and its own variants) is its branches.
	branches = flatten(branches, 0)
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			tag, ok := x[k].(string)
			if !ok {
				continue
			}
			var consts []string
			var match *jsonschema.Schema
			for _, b := range branches {
				if c, ok := constOf(b, k, 0); ok {
					consts = append(consts, c)
					if c == tag && match == nil {
						match = b
					}
				}
			}
			if len(consts) < 2 {
				continue
			}
			if match == nil {
				w.note(NoteUnknownVariant, ptr+"/"+escapeToken(k), tag, "variant of "+k, consts)
				return
			}
			w.walk(match, v, ptr, depth+1)
			return
		}
		// No tag: the first branch that accepts it.
		for _, b := range branches {
			if b.Validate(v) == nil {
				w.walk(b, v, ptr, depth+1)
				return
			}
		}
	case string:
		var known []string
		for _, b := range branches {
			if b.Validate(v) == nil {
				return
			}
			known = append(known, valuesOf(b, 0)...)
		}
		if len(known) > 0 {
			w.note(NoteUnknownValue, ptr, x, "value of "+memberName(ptr), known)
		}
	default:
		for _, b := range branches {
			if b.Validate(v) == nil {
				w.walk(b, v, ptr, depth+1)
				return
			}
		}
	}
}

// flatten replaces each branch that is only a union (through $ref) by its
// branches.
func flatten(branches []*jsonschema.Schema, depth int) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, b := range branches {
		u := b
		for u != nil && u.Ref != nil && len(u.Properties) == 0 && len(u.OneOf)+len(u.AnyOf) == 0 && depth < 16 {
			u = u.Ref
		}
		if u != nil && len(u.Properties) == 0 && len(u.OneOf)+len(u.AnyOf) > 0 && depth < 16 {
			out = append(out, flatten(append(slices.Clone(u.OneOf), u.AnyOf...), depth+1)...)
			continue
		}
		out = append(out, b)
	}
	return out
}

// constOf returns the constant string s fixes member name to, following
// $ref and allOf.
func constOf(s *jsonschema.Schema, name string, depth int) (string, bool) {
	if s == nil || depth > 16 {
		return "", false
	}
	if p, ok := s.Properties[name]; ok {
		if c, ok := constString(p, 0); ok {
			return c, true
		}
	}
	if c, ok := constOf(s.Ref, name, depth+1); ok {
		return c, true
	}
	if c, ok := constOf(s.If, name, depth+1); ok {
		return c, true
	}
	for _, a := range s.AllOf {
		if c, ok := constOf(a, name, depth+1); ok {
			return c, true
		}
	}
	return "", false
}

func constString(s *jsonschema.Schema, depth int) (string, bool) {
	if s == nil || depth > 16 {
		return "", false
	}
	if s.Const != nil {
		c, ok := (*s.Const).(string)
		return c, ok
	}
	if s.Enum != nil && len(s.Enum.Values) == 1 {
		c, ok := s.Enum.Values[0].(string)
		return c, ok
	}
	return constString(s.Ref, depth+1)
}

// valuesOf lists the constant strings and enum values s allows.
func valuesOf(s *jsonschema.Schema, depth int) []string {
	if s == nil || depth > 16 {
		return nil
	}
	var out []string
	if s.Const != nil {
		if c, ok := (*s.Const).(string); ok {
			out = append(out, c)
		}
	}
	if s.Enum != nil {
		out = append(out, stringsOf(s.Enum.Values)...)
	}
	out = append(out, valuesOf(s.Ref, depth+1)...)
	for _, b := range append(slices.Clone(s.OneOf), s.AnyOf...) {
		out = append(out, valuesOf(b, depth+1)...)
	}
	return out
}

func stringsOf(vs []any) []string {
	var out []string
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// memberName is the last reference token of ptr, for messages.
func memberName(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 || i == len(ptr)-1 {
		return "the value"
	}
	return strings.ReplaceAll(strings.ReplaceAll(ptr[i+1:], "~1", "/"), "~0", "~")
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
