package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast schema check: a compiled schema (jsonschema.Schema, as the
// library compiled it from the spec) translated once into a graph of
// sNodes, which answer only whether a document is valid, evaluating the
// keywords exactly as the library does but over a parsed tree
// (tree.go) without building errors, locations or unevaluated-member
// sets. It is the library's boolean mode, without the library's cost of
// collecting what a union's failed alternatives got wrong. A document
// it refuses is validated again by the library, whose error gives the
// problem its pointer and message; a schema using a keyword it does not
// evaluate is left to the library whole.

// errUnsupported: a schema uses a keyword the fast check does not
// evaluate.
var errUnsupported = errors.New("keyword not evaluated by the fast check")

// Type bits, as the keyword type names them.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "number": tNumber, "integer": tInteger,
	"string": tString, "array": tArray, "object": tObject,
}

// sNode is one compiled schema.
type sNode struct {
	// always is set for a boolean schema: true accepts everything, false
	// nothing.
	always *bool

	types    uint8 // 0: any type
	hasConst bool
	constV   any
	enum     []any
	ref      *sNode
	not      *sNode
	allOf    []*sNode
	anyOf    []*sNode
	oneOf    []*sNode
	// anyTags and oneTags, for a union whose alternatives are guarded by
	// a tag (specschema's guard: {if: {properties: {tag: {const: c}}},
	// then: A, else: false}), let an object with that tag be checked
	// against the alternatives its tag names only.
	anyTags, oneTags *tagged
	ifS              *sNode
	thenS            *sNode
	elseS            *sNode

	// objects
	minProps, maxProps int // -1: none
	required           []string
	props              []prop // sorted by name, as a tree's members are
	patterns           []patternProp
	addlFalse          bool   // additionalProperties: false
	addl               *sNode // additionalProperties: a schema

	// arrays
	minItems, maxItems int // -1: none
	prefix             []*sNode
	items              *sNode

	// strings
	minLen, maxLen int // -1: none
	pattern        jsonschema.Regexp

	// numbers
	minimum, maximum, exMin, exMax *bound
}

// tagged is the guard of a union's alternatives: tag, and for each
// alternative the const its guard wants (guarded false: not guarded).
type tagged struct {
	tag     string
	guarded []bool
	consts  []any
}

// bare reports whether n has no keyword but those allowed: props (at
// most one) and const.
func bare(n *sNode, props, constant bool) bool {
	return n.always == nil && n.types == 0 && n.hasConst == constant && n.enum == nil && n.ref == nil && n.not == nil &&
		n.allOf == nil && n.anyOf == nil && n.oneOf == nil && n.ifS == nil && n.thenS == nil && n.elseS == nil &&
		n.minProps < 0 && n.maxProps < 0 && len(n.required) == 0 && (props && len(n.props) == 1 || !props && len(n.props) == 0) &&
		n.patterns == nil && !n.addlFalse && n.addl == nil && n.minItems < 0 && n.maxItems < 0 && n.prefix == nil && n.items == nil &&
		n.minLen < 0 && n.maxLen < 0 && n.pattern == nil && n.minimum == nil && n.maximum == nil && n.exMin == nil && n.exMax == nil
}

// guardOf returns the tag and const of an alternative guard made, if it
// is one: its if accepts exactly the values that are not objects, lack
// the tag, or have it equal to the const; its else refuses everything.
func guardOf(a *sNode) (string, any, bool) {
	if a.ifS == nil || a.thenS == nil || a.elseS == nil || a.elseS.always == nil || *a.elseS.always {
		return "", nil, false
	}
	rest := *a
	rest.ifS, rest.thenS, rest.elseS = nil, nil, nil
	if !bare(&rest, false, false) || !bare(a.ifS, true, false) {
		return "", nil, false
	}
	p := a.ifS.props[0]
	if p.s == nil || !bare(p.s, false, true) {
		return "", nil, false
	}
	return p.name, p.s.constV, true
}

// tagsOf returns the guard of a union's alternatives, nil when fewer than
// two are guarded by one tag.
func tagsOf(alts []*sNode) *tagged {
	t := &tagged{guarded: make([]bool, len(alts)), consts: make([]any, len(alts))}
	n := 0
	for i, a := range alts {
		tag, c, ok := guardOf(a)
		if !ok || t.tag != "" && tag != t.tag {
			continue
		}
		t.tag, t.guarded[i], t.consts[i] = tag, true, c
		n++
	}
	if n < 2 {
		return nil
	}
	return t
}

type prop struct {
	name string
	s    *sNode
}

type patternProp struct {
	re jsonschema.Regexp
	s  *sNode
}

// bound is a number keyword's limit, with its int64 value when it is one.
type bound struct {
	r     *big.Rat
	isInt bool
	i     int64
}

func newBound(r *big.Rat) *bound {
	if r == nil {
		return nil
	}
	b := &bound{r: r}
	if r.IsInt() && r.Num().IsInt64() {
		b.isInt, b.i = true, r.Num().Int64()
	}
	return b
}

// The translated schemas, shared by every validator of the process: the
// compiled specs they come from are.
var fast = struct {
	mu    sync.Mutex
	nodes map[*jsonschema.Schema]*sNode
	roots map[*jsonschema.Schema]*sNode // nil: unsupported
}{nodes: map[*jsonschema.Schema]*sNode{}, roots: map[*jsonschema.Schema]*sNode{}}

// fastSchema returns the fast check of sch, or nil when sch (or a schema
// it reaches) uses a keyword the fast check does not evaluate.
func fastSchema(sch *jsonschema.Schema) *sNode {
	fast.mu.Lock()
	defer fast.mu.Unlock()
	if n, ok := fast.roots[sch]; ok {
		return n
	}
	var added []*jsonschema.Schema
	n, err := translate(sch, &added)
	if err != nil {
		// Nodes translated on the way may point at ones that failed.
		for _, s := range added {
			delete(fast.nodes, s)
		}
		n = nil
	} else {
		// Unions are read once every node is complete (a node still
		// being translated, in a cycle, lacks members).
		for _, s := range added {
			t := fast.nodes[s]
			t.anyTags, t.oneTags = tagsOf(t.anyOf), tagsOf(t.oneOf)
		}
	}
	fast.roots[sch] = n
	return n
}

func translate(s *jsonschema.Schema, added *[]*jsonschema.Schema) (*sNode, error) {
	if s == nil {
		return nil, nil
	}
	if n, ok := fast.nodes[s]; ok {
		return n, nil
	}
	n := &sNode{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	fast.nodes[s] = n
	*added = append(*added, s)
	if s.Bool != nil {
		b := *s.Bool
		n.always = &b
		return n, nil
	}
	switch {
	case s.DraftVersion < 2019, s.RecursiveRef != nil, s.DynamicRef != nil, s.Format != nil,
		s.PropertyNames != nil, len(s.Dependencies) > 0, len(s.DependentRequired) > 0, len(s.DependentSchemas) > 0,
		s.UniqueItems, s.Contains != nil, s.MinContains != nil, s.MaxContains != nil,
		s.Items != nil, s.AdditionalItems != nil,
		s.ContentEncoding != nil, s.ContentMediaType != nil, s.ContentSchema != nil,
		s.MultipleOf != nil, len(s.Extensions) > 0,
		!isTrue(s.UnevaluatedProperties), !isTrue(s.UnevaluatedItems):
		// unevaluated*: true never refuses anything.
		return nil, fmt.Errorf("%s: %w", s.Location, errUnsupported)
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			n.types |= typeBits[t]
		}
	}
	if s.Const != nil {
		n.hasConst, n.constV = true, *s.Const
	}
	if s.Enum != nil {
		n.enum = s.Enum.Values
		if n.enum == nil {
			n.enum = []any{}
		}
	}
	var err error
	one := func(dst **sNode, src *jsonschema.Schema) {
		if err == nil {
			*dst, err = translate(src, added)
		}
	}
	many := func(src []*jsonschema.Schema) []*sNode {
		var out []*sNode
		for _, c := range src {
			var t *sNode
			one(&t, c)
			out = append(out, t)
		}
		return out
	}
	one(&n.ref, s.Ref)
	one(&n.not, s.Not)
	n.allOf, n.anyOf, n.oneOf = many(s.AllOf), many(s.AnyOf), many(s.OneOf)
	one(&n.ifS, s.If)
	one(&n.thenS, s.Then)
	one(&n.elseS, s.Else)
	if s.MinProperties != nil {
		n.minProps = *s.MinProperties
	}
	if s.MaxProperties != nil {
		n.maxProps = *s.MaxProperties
	}
	n.required = slices.Clone(s.Required)
	for name, ps := range s.Properties {
		var t *sNode
		one(&t, ps)
		n.props = append(n.props, prop{name, t})
	}
	slices.SortFunc(n.props, func(a, b prop) int { return strings.Compare(a.name, b.name) })
	slices.Sort(n.required)
	for re, ps := range s.PatternProperties {
		var t *sNode
		one(&t, ps)
		n.patterns = append(n.patterns, patternProp{re, t})
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		n.addlFalse = !a
	case *jsonschema.Schema:
		one(&n.addl, a)
	default:
		return nil, fmt.Errorf("%s: additionalProperties %T: %w", s.Location, a, errUnsupported)
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	n.prefix = many(s.PrefixItems)
	one(&n.items, s.Items2020)
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	n.pattern = s.Pattern
	n.minimum, n.maximum = newBound(s.Minimum), newBound(s.Maximum)
	n.exMin, n.exMax = newBound(s.ExclusiveMinimum), newBound(s.ExclusiveMaximum)
	if err != nil {
		return nil, err
	}
	return n, nil
}

func isTrue(s *jsonschema.Schema) bool {
	return s == nil || s.Bool != nil && *s.Bool
}

// maxEvalDepth bounds the fast check's recursion (a schema that refers to
// itself at the same value would not end); beyond it the check gives up
// and the library decides.
const maxEvalDepth = 2048

// evaluator runs the fast check over one tree.
type evaluator struct {
	t       *tree
	depth   int
	aborted bool // gave up: the result means nothing
	rat     big.Rat
}

// valid reports whether the node v of the tree is valid against s; when
// e.aborted is set afterwards, it cannot tell.
func (e *evaluator) valid(s *sNode, v int32) bool {
	if s.always != nil {
		return *s.always
	}
	if e.aborted {
		return false
	}
	e.depth++
	ok := e.eval(s, v)
	e.depth--
	return ok
}

func (e *evaluator) eval(s *sNode, v int32) bool {
	if e.depth > maxEvalDepth {
		e.aborted = true
		return false
	}
	n := &e.t.nodes[v]
	if s.types != 0 && !e.typeOK(s.types, n) {
		return false
	}
	if s.hasConst && !e.equalAny(v, s.constV) {
		return false
	}
	if s.enum != nil {
		found := false
		for _, x := range s.enum {
			if e.equalAny(v, x) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if s.ref != nil && !e.valid(s.ref, v) {
		return false
	}
	switch n.kind {
	case '{':
		if !e.object(s, n) {
			return false
		}
	case '[':
		if !e.array(s, n) {
			return false
		}
	case '"':
		if !e.string(s, n) {
			return false
		}
	case '0':
		if !e.number(s, n) {
			return false
		}
	}
	if s.not != nil && e.valid(s.not, v) {
		return false
	}
	for _, c := range s.allOf {
		if !e.valid(c, v) {
			return false
		}
	}
	if len(s.anyOf) > 0 {
		tv := e.tagValue(s.anyTags, n)
		any := false
		for i, c := range s.anyOf {
			if e.alternative(s.anyTags, i, tv, c, v) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	if len(s.oneOf) > 0 {
		tv := e.tagValue(s.oneTags, n)
		matched := 0
		for i, c := range s.oneOf {
			if e.alternative(s.oneTags, i, tv, c, v) {
				if matched++; matched > 1 {
					return false
				}
			}
		}
		if matched != 1 {
			return false
		}
	}
	if s.ifS != nil {
		if e.valid(s.ifS, v) {
			if s.thenS != nil && !e.valid(s.thenS, v) {
				return false
			}
		} else if s.elseS != nil && !e.valid(s.elseS, v) {
			return false
		}
	}
	return !e.aborted
}

// tagValue returns the node of n's tag member when n is an object that
// has one, else -1.
func (e *evaluator) tagValue(t *tagged, n *node) int32 {
	if t == nil || n.kind != '{' {
		return -1
	}
	return e.t.member(n, t.tag)
}

// alternative reports whether v is valid against the i'th alternative c
// of a union. A guarded alternative of an object whose tag is tv (its
// guard's if then depends on the tag alone) is its then when the tag is
// its const, and refuses v otherwise (its else is false).
func (e *evaluator) alternative(t *tagged, i int, tv int32, c *sNode, v int32) bool {
	if tv >= 0 && t.guarded[i] {
		if !e.equalAny(tv, t.consts[i]) {
			return false
		}
		return e.valid(c.thenS, v)
	}
	return e.valid(c, v)
}

func (e *evaluator) typeOK(types uint8, n *node) bool {
	switch n.kind {
	case 'n':
		return types&tNull != 0
	case 't', 'f':
		return types&tBoolean != 0
	case '"':
		return types&tString != 0
	case '[':
		return types&tArray != 0
	case '{':
		return types&tObject != 0
	case '0':
		return types&tNumber != 0 || types&tInteger != 0 && e.isInteger(e.t.str(n))
	}
	return false
}

func (e *evaluator) object(s *sNode, n *node) bool {
	ms := e.t.members(n)
	if s.minProps >= 0 && len(ms) < s.minProps || s.maxProps >= 0 && len(ms) > s.maxProps {
		return false
	}
	// Members, required names and properties are all sorted by name:
	// each is matched by merging, not looked up.
	if len(s.required) > 0 {
		i := 0
		for _, r := range s.required {
			for i < len(ms) && string(e.t.name(ms[i])) < r {
				i++
			}
			if i == len(ms) || string(e.t.name(ms[i])) != r {
				return false
			}
		}
	}
	if s.props == nil && s.patterns == nil && !s.addlFalse && s.addl == nil {
		return true
	}
	p := 0
	for _, m := range ms {
		name := e.t.name(m)
		evaluated := false
		for p < len(s.props) && s.props[p].name < string(name) {
			p++
		}
		if p < len(s.props) && s.props[p].name == string(name) {
			evaluated = true
			if !e.valid(s.props[p].s, m.val) {
				return false
			}
		}
		for _, p := range s.patterns {
			if p.re.MatchString(string(name)) {
				evaluated = true
				if !e.valid(p.s, m.val) {
					return false
				}
			}
		}
		if !evaluated {
			if s.addlFalse {
				return false
			}
			if s.addl != nil && !e.valid(s.addl, m.val) {
				return false
			}
		}
	}
	return true
}

func (e *evaluator) array(s *sNode, n *node) bool {
	els := e.t.members(n)
	if s.minItems >= 0 && len(els) < s.minItems || s.maxItems >= 0 && len(els) > s.maxItems {
		return false
	}
	for i, el := range els {
		switch {
		case i < len(s.prefix):
			if !e.valid(s.prefix[i], el.val) {
				return false
			}
		case s.items != nil:
			if !e.valid(s.items, el.val) {
				return false
			}
		}
	}
	return true
}

func (e *evaluator) string(s *sNode, n *node) bool {
	str := e.t.str(n)
	if s.minLen >= 0 || s.maxLen >= 0 {
		l := utf8.RuneCount(str)
		if s.minLen >= 0 && l < s.minLen || s.maxLen >= 0 && l > s.maxLen {
			return false
		}
	}
	return s.pattern == nil || s.pattern.MatchString(string(str))
}

func (e *evaluator) number(s *sNode, n *node) bool {
	if s.minimum == nil && s.maximum == nil && s.exMin == nil && s.exMax == nil {
		return true
	}
	text := e.t.str(n)
	i, isInt := parseInt64(text)
	if !isInt {
		if _, ok := e.setRat(text); !ok {
			return false
		}
	}
	cmp := func(b *bound) int {
		switch {
		case isInt && b.isInt:
			switch {
			case i < b.i:
				return -1
			case i > b.i:
				return 1
			}
			return 0
		case isInt:
			e.rat.SetInt64(i)
		}
		return e.rat.Cmp(b.r)
	}
	return (s.minimum == nil || cmp(s.minimum) >= 0) &&
		(s.maximum == nil || cmp(s.maximum) <= 0) &&
		(s.exMin == nil || cmp(s.exMin) > 0) &&
		(s.exMax == nil || cmp(s.exMax) < 0)
}

// isInteger is the library's: a number whose value is an integer (1.0,
// 1e2).
func (e *evaluator) isInteger(text []byte) bool {
	if isDigits(text) {
		return true
	}
	r, ok := e.setRat(text)
	return ok && r.IsInt()
}

// setRat sets e.rat to the number text. A large exponent, costly for
// big.Rat, makes the check give up and the library decide.
func (e *evaluator) setRat(text []byte) (*big.Rat, bool) {
	if i := bytes.IndexAny(text, "eE"); i >= 0 && len(text)-i > 5 {
		e.aborted = true
		return nil, false
	}
	r, ok := e.rat.SetString(string(text))
	if !ok {
		e.aborted = true
	}
	return r, ok
}

// parseInt64 parses text when it is an integer literal in int64's range.
func parseInt64(text []byte) (int64, bool) {
	neg := len(text) > 0 && text[0] == '-'
	digits := text
	if neg {
		digits = text[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func isDigits(text []byte) bool {
	if len(text) > 0 && text[0] == '-' {
		text = text[1:]
	}
	for _, c := range text {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(text) > 0
}

// equalAny is the library's equality (for const and enum) between a tree
// node and a value of the schema: numbers equal in value.
func (e *evaluator) equalAny(v int32, x any) bool {
	n := &e.t.nodes[v]
	switch x := x.(type) {
	case nil:
		return n.kind == 'n'
	case bool:
		return x && n.kind == 't' || !x && n.kind == 'f'
	case string:
		return n.kind == '"' && string(e.t.str(n)) == x
	case json.Number:
		if n.kind != '0' {
			return false
		}
		text := e.t.str(n)
		if string(text) == string(x) {
			return true
		}
		a, oka := new(big.Rat).SetString(string(text))
		b, okb := new(big.Rat).SetString(string(x))
		return oka && okb && a.Cmp(b) == 0
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		if n.kind != '0' {
			return false
		}
		a, oka := new(big.Rat).SetString(string(e.t.str(n)))
		b, okb := new(big.Rat).SetString(fmt.Sprint(x))
		return oka && okb && a.Cmp(b) == 0
	case []any:
		if n.kind != '[' {
			return false
		}
		els := e.t.members(n)
		if len(els) != len(x) {
			return false
		}
		for i := range els {
			if !e.equalAny(els[i].val, x[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		if n.kind != '{' {
			return false
		}
		ms := e.t.members(n)
		if len(ms) != len(x) {
			return false
		}
		for _, m := range ms {
			xv, ok := x[string(e.t.name(m))]
			if !ok || !e.equalAny(m.val, xv) {
				return false
			}
		}
		return true
	}
	// A value the library calls invalid JSON: it decides.
	e.aborted = true
	return false
}

// fastValid runs the fast check of s over t; decided is false when it
// gave up.
func fastValid(s *sNode, t *tree, e *evaluator) (valid, decided bool) {
	e.t, e.depth, e.aborted = t, 0, false
	ok := e.valid(s, 0)
	return ok && !e.aborted, !e.aborted
}
