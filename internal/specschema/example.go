package specschema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	pathpkg "path"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxExampleDepth bounds how deep Example follows required members: a
// schema that requires itself has no finite example.
const maxExampleDepth = 48

// Example returns a document the schema at loc ("<file>#<json pointer>",
// file under spec/schemas) accepts, built from the schema alone and the
// same on every call, for a caller that must send a valid value of a type
// it knows only by its schema (bridgekit conform calling an operation):
//   - a schema's own examples come first (its first), then const, then
//     enum's first value, then a scalar's default;
//   - an object gets its required members, and the members a union's
//     variant fixes to a const (its tag);
//   - an array gets minItems items;
//   - a union, its first variant; a nullable member, its non-null type;
//   - a string meets its format, pattern (the shortest match),
//     contentEncoding and length bounds; a number, its bounds.
//
// The document is checked against the compiled schema before it is
// returned: a schema Example cannot satisfy is an error naming where.
func (s *Spec) Example(loc string) ([]byte, error) {
	file, frag, _ := strings.Cut(loc, "#")
	s.mu.Lock()
	root, ok := s.docs[file]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: no schema file %s", loc, file)
	}
	node, err := resolvePointer(root, frag)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	e := &exampler{s: s}
	v, err := e.build(file, node, "", 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	sch, err := s.Compile(loc)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	if err := sch.Validate(doc); err != nil {
		return nil, fmt.Errorf("%s: the example %s does not fit: %w", loc, out, err)
	}
	return out, nil
}

// resolvePointer walks a JSON pointer fragment ("/$defs/x") from node.
func resolvePointer(node any, frag string) (any, error) {
	if frag == "/" {
		return node, nil
	}
	return Lookup(node, frag)
}

// Lookup returns the value at the JSON pointer (RFC 6901: "/a/0/b~1c") in node, a document decoded into
// maps, slices and scalars; "" is node itself. An array index must be written as a JSON pointer writes
// it (no sign, no leading zero).
func Lookup(node any, pointer string) (any, error) {
	if pointer == "" {
		return node, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("no %q at #%s", tok, pointer)
			}
			node = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) || strconv.Itoa(i) != tok {
				return nil, fmt.Errorf("no item %q at #%s", tok, pointer)
			}
			node = n[i]
		default:
			return nil, fmt.Errorf("nothing under %q at #%s", tok, pointer)
		}
	}
	return node, nil
}

type exampler struct{ s *Spec }

// ref resolves a $ref written in file to its file and node.
func (e *exampler) ref(file, ref string) (string, any, error) {
	target, frag, _ := strings.Cut(ref, "#")
	if target != "" {
		target = pathpkg.Join(pathpkg.Dir(file), target)
	} else {
		target = file
	}
	e.s.mu.Lock()
	root, ok := e.s.docs[target]
	e.s.mu.Unlock()
	if !ok {
		return "", nil, fmt.Errorf("$ref %s: no schema file %s", ref, target)
	}
	n, err := resolvePointer(root, frag)
	if err != nil {
		return "", nil, fmt.Errorf("$ref %s: %w", ref, err)
	}
	return target, n, nil
}

// build returns an example of node, a schema in file; at is the pointer
// of the value in the document being built, for errors.
func (e *exampler) build(file string, node any, at string, depth int) (any, error) {
	if depth > maxExampleDepth {
		return nil, fmt.Errorf("at %q: the schema requires itself deeper than %d levels", at, maxExampleDepth)
	}
	switch n := node.(type) {
	case bool:
		if !n {
			return nil, fmt.Errorf("at %q: the schema is false: no value fits", at)
		}
		return map[string]any{}, nil
	case map[string]any:
		return e.object(file, n, at, depth)
	}
	return nil, fmt.Errorf("at %q: %T is not a schema", at, node)
}

func (e *exampler) object(file string, n map[string]any, at string, depth int) (any, error) {
	if ex, ok := n["examples"].([]any); ok && len(ex) > 0 {
		return ex[0], nil
	}
	if c, ok := n["const"]; ok {
		return c, nil
	}
	if en, ok := n["enum"].([]any); ok && len(en) > 0 {
		return en[0], nil
	}
	// A guarded union variant (guard): its schema is the then.
	if then, ok := n["then"]; ok && n["if"] != nil {
		return e.build(file, then, at, depth+1)
	}
	var parts []any // the values of the schemas n is also (ref, allOf, a union's variant)
	if ref, ok := n["$ref"].(string); ok {
		f, target, err := e.ref(file, ref)
		if err != nil {
			return nil, fmt.Errorf("at %q: %w", at, err)
		}
		v, err := e.build(f, target, at, depth+1)
		if err != nil {
			return nil, err
		}
		parts = append(parts, v)
	}
	if all, ok := n["allOf"].([]any); ok {
		for _, sub := range all {
			v, err := e.build(file, sub, at, depth+1)
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := n[k].([]any); ok && len(alts) > 0 {
			v, err := e.build(file, alts[0], at, depth+1)
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
		}
	}
	own, has, err := e.typed(file, n, at, depth)
	if err != nil {
		return nil, err
	}
	if has {
		parts = append([]any{own}, parts...)
	}
	if len(parts) == 0 {
		return map[string]any{}, nil // any value fits
	}
	return merge(parts), nil
}

// merge combines the values of the schemas a value must fit at once: the
// members of objects are joined (the first value of a member wins);
// otherwise the most specific value, the last, is kept.
func merge(parts []any) any {
	var obj map[string]any
	for _, p := range parts {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if obj == nil {
			obj = map[string]any{}
		}
		for k, v := range m {
			if _, dup := obj[k]; !dup {
				obj[k] = v
			}
		}
	}
	if obj != nil {
		return obj
	}
	return parts[len(parts)-1]
}

// typeOf returns the type a value of n gets: its type (the first that is
// not null, of a list), else what its keywords imply; "" when n says
// nothing of its own.
func typeOf(n map[string]any) string {
	switch t := n["type"].(type) {
	case string:
		return t
	case []any:
		first := ""
		for _, x := range t {
			if s, _ := x.(string); s != "" && s != "null" {
				return s
			} else if first == "" {
				first = s
			}
		}
		return first
	}
	switch {
	case n["properties"] != nil || n["required"] != nil || n["additionalProperties"] != nil:
		return "object"
	case n["items"] != nil || n["minItems"] != nil:
		return "array"
	case n["minLength"] != nil || n["maxLength"] != nil || n["pattern"] != nil || n["format"] != nil && n["minimum"] == nil:
		return "string"
	case n["minimum"] != nil || n["maximum"] != nil:
		return "number"
	}
	return ""
}

// typed returns the value n's own keywords give, and whether they give
// one.
func (e *exampler) typed(file string, n map[string]any, at string, depth int) (any, bool, error) {
	t := typeOf(n)
	def, hasDef := n["default"]
	switch t {
	case "":
		return nil, false, nil
	case "null":
		return nil, true, nil
	case "boolean":
		if b, ok := def.(bool); ok {
			return b, true, nil
		}
		return false, true, nil
	case "integer", "number":
		if f, ok := def.(json.Number); ok && hasDef {
			return f, true, nil
		}
		v, err := number(n, t == "integer")
		if err != nil {
			return nil, false, fmt.Errorf("at %q: %w", at, err)
		}
		return v, true, nil
	case "string":
		if s, ok := def.(string); ok {
			return s, true, nil
		}
		v, err := text(n)
		if err != nil {
			return nil, false, fmt.Errorf("at %q: %w", at, err)
		}
		return v, true, nil
	case "array":
		count := 0
		if m, ok := num(n["minItems"]); ok {
			count = int(m)
		}
		items := make([]any, 0, count)
		for i := range count {
			sub, ok := n["items"]
			if !ok {
				sub = map[string]any{}
			}
			v, err := e.build(file, sub, at+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, false, err
			}
			items = append(items, v)
		}
		return items, true, nil
	case "object":
		props, _ := n["properties"].(map[string]any)
		var names []string
		for _, r := range asList(n["required"]) {
			if name, ok := r.(string); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		// A member fixed to a const is a variant's tag: it is sent
		// whether or not the variant requires it.
		var tags []string
		for name, p := range props {
			if pm, ok := p.(map[string]any); ok && pm["const"] != nil && !slices.Contains(names, name) {
				tags = append(tags, name)
			}
		}
		slices.Sort(tags)
		obj := map[string]any{}
		for _, name := range append(names, tags...) {
			sub, ok := props[name]
			if !ok {
				sub, ok = n["additionalProperties"]
				if !ok {
					sub = map[string]any{}
				}
			}
			v, err := e.build(file, sub, at+"/"+escape(name), depth+1)
			if err != nil {
				return nil, false, err
			}
			obj[name] = v
		}
		return obj, true, nil
	}
	return nil, false, fmt.Errorf("at %q: unknown type %q", at, t)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// num reads a schema's numeric keyword (the loader decodes numbers as
// json.Number).
func num(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// number is the number nearest zero within n's bounds.
func number(n map[string]any, integer bool) (any, error) {
	lo, hi := math.Inf(-1), math.Inf(1)
	step := 0.5 // the step past an exclusive bound
	if integer {
		step = 1
	}
	if m, ok := num(n["minimum"]); ok {
		lo = m
	}
	if m, ok := num(n["exclusiveMinimum"]); ok {
		lo = math.Max(lo, m+step)
	}
	if m, ok := num(n["maximum"]); ok {
		hi = m
	}
	if m, ok := num(n["exclusiveMaximum"]); ok {
		hi = math.Min(hi, m-step)
	}
	v := math.Max(lo, math.Min(0, hi))
	if integer {
		v = math.Ceil(v)
	}
	if v > hi || v < lo {
		return nil, fmt.Errorf("no number between %v and %v", lo, hi)
	}
	if integer {
		return json.Number(strconv.FormatFloat(v, 'f', 0, 64)), nil
	}
	return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), nil
}

// formats are a valid value of each string format the spec uses (and
// JSON Schema's common others).
var formats = map[string]string{
	"date-time":     "2026-01-01T00:00:00Z",
	"date":          "2026-01-01",
	"time":          "00:00:00Z",
	"uri":           "https://example.invalid/",
	"uri-reference": "https://example.invalid/",
	"iri":           "https://example.invalid/",
	"email":         "user@example.invalid",
	"hostname":      "example.invalid",
	"uuid":          "00000000-0000-4000-8000-000000000000",
	"ipv4":          "127.0.0.1",
	"ipv6":          "::1",
	"regex":         "example",
	"duration":      "PT1S",
}

// text is a string that fits n: its pattern's shortest match, else its
// format's example, else "example", encoded as its contentEncoding says,
// and padded or cut to its length bounds.
func text(n map[string]any) (string, error) {
	s := "example"
	if f, ok := n["format"].(string); ok && formats[f] != "" {
		s = formats[f]
	}
	if p, ok := n["pattern"].(string); ok {
		m, err := shortestMatch(p)
		if err != nil {
			return "", err
		}
		s = m
	} else if enc, _ := n["contentEncoding"].(string); enc == "base64" {
		s = base64.StdEncoding.EncodeToString([]byte(s))
	}
	if m, ok := num(n["minLength"]); ok {
		for utf8.RuneCountInString(s) < int(m) {
			s += "x"
		}
	}
	if m, ok := num(n["maxLength"]); ok && utf8.RuneCountInString(s) > int(m) {
		s = string([]rune(s)[:int(m)])
	}
	return s, nil
}

// shortestMatch returns a shortest string pattern matches (every
// repetition at its least, every alternation's first branch, every class
// its first character), checked against the pattern.
func shortestMatch(pattern string) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	var b strings.Builder
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			if len(r.Rune) > 0 {
				b.WriteRune(r.Rune[0])
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('x')
		case syntax.OpCapture:
			walk(r.Sub[0])
		case syntax.OpConcat:
			for _, sub := range r.Sub {
				walk(sub)
			}
		case syntax.OpAlternate:
			walk(r.Sub[0])
		case syntax.OpPlus:
			walk(r.Sub[0])
		case syntax.OpRepeat:
			for range r.Min {
				walk(r.Sub[0])
			}
		}
		// OpStar, OpQuest, anchors, boundaries and OpEmptyMatch add nothing.
	}
	walk(re)
	out := b.String()
	if ok, _ := regexp.MatchString(pattern, out); !ok {
		return "", fmt.Errorf("pattern %q: no example found (tried %q)", pattern, out)
	}
	return out, nil
}
