package specschema

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bridgekit/bridgekit/spec"
)

// exampleSpec is a spec directory of one schema file, a.json, and b.json
// that it references.
func exampleSpec(t *testing.T, defs string) *Spec {
	t.Helper()
	s, err := Load(fstest.MapFS{
		"schemas/a.json": {Data: []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {` + defs + `}}`)},
		"schemas/sub/b.json": {Data: []byte(`{"$defs": {
			"shared": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "minimum": 3}}}}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExampleKeywords(t *testing.T) {
	cases := []struct{ name, def, want string }{
		{"required members only", `{"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "additionalProperties": false}`,
			`{"a":"example"}`},
		{"enum's first value", `{"type": "string", "enum": ["staging", "production"]}`, `"staging"`},
		{"const", `{"const": {"k": 1}}`, `{"k":1}`},
		{"the schema's own example", `{"type": "object", "examples": [{"command": "printf ok"}], "properties": {"command": {"type": "string"}}}`,
			`{"command":"printf ok"}`},
		{"min length", `{"type": "string", "minLength": 10}`, `"examplexxx"`},
		{"max length", `{"type": "string", "maxLength": 3}`, `"exa"`},
		{"pattern", `{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}`, `"sha256:` + strings.Repeat("0", 64) + `"`},
		{"pattern with alternation and plus", `{"type": "string", "pattern": "^(v[0-9]+|latest)\\.x?$"}`, `"v0."`},
		{"date-time", `{"type": "string", "format": "date-time"}`, `"2026-01-01T00:00:00Z"`},
		{"uri", `{"type": "string", "format": "uri"}`, `"https://example.invalid/"`},
		{"base64", `{"type": "string", "contentEncoding": "base64"}`, `"ZXhhbXBsZQ=="`},
		{"integer bounds", `{"type": "integer", "minimum": 1, "maximum": 9}`, `1`},
		{"negative maximum", `{"type": "integer", "maximum": -2}`, `-2`},
		{"exclusive minimum", `{"type": "number", "exclusiveMinimum": 0}`, `0.5`},
		{"uint64", `{"type": "integer", "format": "uint64", "minimum": 0}`, `0`},
		{"scalar default", `{"type": "boolean", "default": true}`, `true`},
		{"nullable takes its type", `{"type": ["null", "string"], "minLength": 1}`, `"example"`},
		{"union's first variant", `{"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}`, `"example"`},
		{"tagged union: the first variant with its tag", `{"oneOf": [
			{"type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}}, "required": ["text"]},
			{"type": "object", "properties": {"type": {"const": "image"}, "data": {"type": "string"}}, "required": ["data", "type"]}]}`,
			`{"text":"example","type":"text"}`},
		{"nested objects and arrays", `{"type": "object", "required": ["build", "tags"], "properties": {
			"build": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string", "minLength": 8}}},
			"tags": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["a", "b"]}}}}`,
			`{"build":{"id":"examplex"},"tags":["a","a"]}`},
		{"allOf joins members", `{"allOf": [{"$ref": "#/$defs/base"}, {"type": "object", "required": ["extra"], "properties": {"extra": {"type": "boolean"}}}]}`,
			`{"extra":false,"id":"example"}`},
		{"a reference to another file", `{"$ref": "sub/b.json#/$defs/shared"}`, `{"n":3}`},
		{"required member of additionalProperties", `{"type": "object", "required": ["x"], "additionalProperties": {"type": "integer", "minimum": 5}}`, `{"x":5}`},
		{"an open value", `{"description": "anything"}`, `{}`},
	}
	var defs []string
	for i, c := range cases {
		defs = append(defs, fmt.Sprintf("%q: %s", fmt.Sprint("c", i), c.def))
	}
	defs = append(defs, `"base": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`)
	s := exampleSpec(t, strings.Join(defs, ",\n"))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Example(fmt.Sprintf("a.json#/$defs/c%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestExampleRefusesWhatItCannotSatisfy(t *testing.T) {
	s := exampleSpec(t, `
		"loop": {"type": "object", "required": ["next"], "properties": {"next": {"$ref": "#/$defs/loop"}}},
		"never": {"type": "object", "required": ["x"], "properties": {"x": false}},
		"closed": {"type": "object", "required": ["x"], "additionalProperties": false},
		"bounds": {"type": "integer", "minimum": 5, "maximum": 2},
		"oneof": {"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}]}`)
	for _, name := range []string{"loop", "never", "closed", "bounds", "oneof", "missing"} {
		if got, err := s.Example("a.json#/$defs/" + name); err == nil {
			t.Errorf("%s: example %s, want an error", name, got)
		} else if !strings.Contains(err.Error(), "a.json#/$defs/"+name) {
			t.Errorf("%s: error %q does not name the location", name, err)
		}
	}
}

// Every definition of the spec's schema files has an example that its
// schema accepts (Example checks it), the same on every call.
func TestExampleOfEveryDefinition(t *testing.T) {
	s, err := Load(spec.FS)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for f := range s.docs {
		files = append(files, f)
	}
	slices.Sort(files)
	n := 0
	for _, f := range files {
		root, _ := s.docs[f].(map[string]any)
		defs, _ := root["$defs"].(map[string]any)
		var names []string
		for name := range defs {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			loc := f + "#/$defs/" + escape(name)
			a, err := s.Example(loc)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			if b, _ := s.Example(loc); string(a) != string(b) {
				t.Errorf("%s: %s, then %s", loc, a, b)
			}
			n++
		}
	}
	t.Logf("%d definitions", n)
}

// Lookup walks RFC 6901 pointers: escapes, array indexes as a pointer
// writes them, and a clear error for what is not there.
func TestLookup(t *testing.T) {
	doc := map[string]any{"a/b": map[string]any{"~x": []any{"zero", "one"}}, "": 5}
	for _, tc := range []struct {
		pointer string
		want    any
		ok      bool
	}{
		{"", doc, true},
		{"/a~1b/~0x/1", "one", true},
		{"/", 5, true},
		{"/a~1b/~0x/01", nil, false},
		{"/a~1b/~0x/-1", nil, false},
		{"/a~1b/~0x/2", nil, false},
		{"/nope", nil, false},
		{"/a~1b/~0x/0/deeper", nil, false},
	} {
		got, err := Lookup(doc, tc.pointer)
		if (err == nil) != tc.ok || tc.ok && fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v (ok %v)", tc.pointer, got, err, tc.want, tc.ok)
		}
	}
}
