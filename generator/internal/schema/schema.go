// Package schema loads the draft 2020-12 JSON Schema subset that bridgekit's
// generator understands. Every keyword outside that subset fails loading with
// the keyword and its location, so that a schema never degrades silently into
// an untyped Go value.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Schema is one schema node. Properties keep their order in the file.
type Schema struct {
	Ref                  string
	Types                []string // "type", as a list
	Properties           []Property
	Required             []string
	AdditionalProperties *Schema // nil: absent (open); False: closed
	Items                *Schema
	Enum                 []json.RawMessage
	Const                json.RawMessage
	AnyOf, OneOf, AllOf  []*Schema
	Default              json.RawMessage
	Minimum, Maximum     *float64
	MinLength, MaxLength *int
	MinItems             *int
	Pattern              string
	Title, Description   string
	Deprecated           bool
	Defs                 map[string]*Schema
	DefOrder             []string
	// Format is the format annotation (int64, uint32, double, uri, ...). It
	// does not change the Go shape; docs show it.
	Format string
	// ContentEncoding and ContentMediaType are the content vocabulary's
	// annotations (a string's "base64", "image/png"), which validators do
	// not assert; they do not change the Go shape (the value stays a
	// string, as sent).
	ContentEncoding, ContentMediaType string
	// Discriminator is the OpenAPI-style discriminator's propertyName: an
	// annotation the IR uses to confirm a union's tag member.
	Discriminator string
	// Annotations holds the x-* keywords (x-method, x-side, x-docs-ignore,
	// ...) by name, values verbatim.
	Annotations map[string]json.RawMessage

	// Not and UnevaluatedProperties are parsed for one shape only, which
	// the IR recognises and every other use of them fails: the catch-all
	// alternative of a tagged union (ACP v1's "other" variants), an object
	// whose tag is any string but none of the other alternatives' consts,
	// which a generated union keeps in Unknown.
	Not                   *Schema
	UnevaluatedProperties *Schema

	// Bool is set for the boolean schemas true and false.
	Bool *bool
	// Pointer is this node's location: file#/json/pointer.
	Pointer string
}

// Property is one named member of an object schema.
type Property struct {
	Name   string
	Schema *Schema
}

// IsFalse reports whether s is the schema false.
func (s *Schema) IsFalse() bool { return s != nil && s.Bool != nil && !*s.Bool }

// Annotation returns the string value of the x-* keyword name.
func (s *Schema) Annotation(name string) (string, bool) {
	raw, ok := s.Annotations[name]
	if !ok {
		return "", false
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// Def returns the $defs entry a fragment such as "/$defs/a" or
// "/$defs/a/$defs/b" names, or nil.
func (s *Schema) Def(fragment string) *Schema {
	rest, ok := strings.CutPrefix(fragment, "/$defs/")
	if !ok {
		return nil
	}
	name, more, nested := strings.Cut(rest, "/")
	d := s.Defs[name]
	if d == nil || !nested {
		return d
	}
	return d.Def("/" + more)
}

// File is one loaded schema file.
type File struct {
	// Name is the file's path under spec/schemas, slash-separated, as
	// catalogues reference it (acp/v0.12.2/schema.json).
	Name string
	Root *Schema
	// Data is the file as read.
	Data []byte
}

// supported lists every keyword the generator understands besides the x-*
// annotations. Annotations that do not change the Go shape ($comment,
// examples, format, contentEncoding, contentMediaType, title,
// discriminator) are accepted.
var supported = []string{
	"$schema", "$id", "$defs", "$ref", "$comment", "title", "description", "examples", "deprecated",
	"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "oneOf",
	"allOf", "default", "minimum", "maximum", "minLength", "maxLength", "minItems", "pattern", "format",
	"contentEncoding", "contentMediaType", "discriminator", "not", "unevaluatedProperties",
}

// LoadFile reads and parses one schema file; name is its path under
// spec/schemas.
func LoadFile(root, name string) (*File, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	s, err := Parse(data, name)
	if err != nil {
		return nil, err
	}
	return &File{Name: name, Root: s, Data: data}, nil
}

// Parse parses schema JSON; name prefixes node pointers in errors.
func Parse(data []byte, name string) (*Schema, error) {
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return parseNode(raw, name+"#")
}

func parseNode(raw json.RawMessage, ptr string) (*Schema, error) {
	s := &Schema{Pointer: ptr}
	trimmed := bytes.TrimSpace(raw)
	if bytes.Equal(trimmed, []byte("true")) || bytes.Equal(trimmed, []byte("false")) {
		b := trimmed[0] == 't'
		s.Bool = &b
		return s, nil
	}
	members, order, err := objectMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean: %w", ptr, err)
	}
	for _, key := range order {
		if strings.HasPrefix(key, "x-") {
			if s.Annotations == nil {
				s.Annotations = map[string]json.RawMessage{}
			}
			s.Annotations[key] = members[key]
			continue
		}
		if !slices.Contains(supported, key) {
			return nil, fmt.Errorf("%s: unsupported schema keyword %q (bridgekit's generator understands: %s, and x-* annotations)", ptr, key, strings.Join(supported, ", "))
		}
	}
	var errs []error
	un := func(key string, v any) {
		if m, ok := members[key]; ok {
			if err := json.Unmarshal(m, v); err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", ptr, key, err))
			}
		}
	}
	child := func(key string) *Schema {
		m, ok := members[key]
		if !ok {
			return nil
		}
		c, err := parseNode(m, ptr+"/"+key)
		if err != nil {
			errs = append(errs, err)
		}
		return c
	}
	list := func(key string) []*Schema {
		var items []json.RawMessage
		un(key, &items)
		out := make([]*Schema, 0, len(items))
		for i, it := range items {
			c, err := parseNode(it, fmt.Sprintf("%s/%s/%d", ptr, key, i))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, c)
		}
		return out
	}
	un("$ref", &s.Ref)
	if m, ok := members["type"]; ok {
		var one string
		if json.Unmarshal(m, &one) == nil {
			s.Types = []string{one}
		} else {
			un("type", &s.Types)
		}
	}
	un("required", &s.Required)
	un("enum", &s.Enum)
	if m, ok := members["const"]; ok {
		s.Const = m
	}
	if m, ok := members["default"]; ok {
		s.Default = m
	}
	un("minimum", &s.Minimum)
	un("maximum", &s.Maximum)
	un("minLength", &s.MinLength)
	un("maxLength", &s.MaxLength)
	un("minItems", &s.MinItems)
	un("pattern", &s.Pattern)
	un("title", &s.Title)
	un("description", &s.Description)
	un("deprecated", &s.Deprecated)
	un("format", &s.Format)
	un("contentEncoding", &s.ContentEncoding)
	un("contentMediaType", &s.ContentMediaType)
	if m, ok := members["discriminator"]; ok {
		var d struct {
			PropertyName string `json:"propertyName"`
		}
		dec := json.NewDecoder(bytes.NewReader(m))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil || d.PropertyName == "" {
			errs = append(errs, fmt.Errorf("%s/discriminator: want {\"propertyName\": \"<member>\"}", ptr))
		}
		s.Discriminator = d.PropertyName
	}
	s.AdditionalProperties = child("additionalProperties")
	s.Items = child("items")
	s.Not = child("not")
	s.UnevaluatedProperties = child("unevaluatedProperties")
	if _, ok := members["anyOf"]; ok {
		s.AnyOf = list("anyOf")
	}
	if _, ok := members["oneOf"]; ok {
		s.OneOf = list("oneOf")
	}
	if _, ok := members["allOf"]; ok {
		s.AllOf = list("allOf")
	}
	if m, ok := members["properties"]; ok {
		props, order, err := objectMembers(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/properties: %w", ptr, err))
		}
		for _, name := range order {
			c, err := parseNode(props[name], ptr+"/properties/"+name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.Properties = append(s.Properties, Property{Name: name, Schema: c})
		}
	}
	if m, ok := members["$defs"]; ok {
		defs, order, err := objectMembers(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/$defs: %w", ptr, err))
		}
		s.Defs = map[string]*Schema{}
		for _, name := range order {
			c, err := parseNode(defs[name], ptr+"/$defs/"+name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.Defs[name] = c
			s.DefOrder = append(s.DefOrder, name)
		}
	}
	for _, r := range s.Required {
		if len(s.Properties) > 0 && !slices.ContainsFunc(s.Properties, func(p Property) bool { return p.Name == r }) {
			errs = append(errs, fmt.Errorf("%s: required member %q has no property schema", ptr, r))
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return s, nil
}

// objectMembers decodes a JSON object, returning its members and their order.
func objectMembers(raw json.RawMessage) (map[string]json.RawMessage, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	members := map[string]json.RawMessage{}
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := members[key]; dup {
			return nil, nil, fmt.Errorf("duplicate member %q", key)
		}
		members[key] = v
		order = append(order, key)
	}
	return members, order, nil
}

func joinErrors(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "\n"))
}

// HasConstraints reports whether s constrains values (minimum, maximum,
// minLength, maxLength, minItems, pattern).
func (s *Schema) HasConstraints() bool {
	return s.Minimum != nil || s.Maximum != nil || s.MinLength != nil || s.MaxLength != nil || s.MinItems != nil || s.Pattern != ""
}

// HasConstraintsOrNot reports whether s constrains values beyond their
// kind (minimum, lengths, pattern, not, unevaluatedProperties).
func (s *Schema) HasConstraintsOrNot() bool {
	return s.Minimum != nil || s.Maximum != nil || s.MinLength != nil || s.MaxLength != nil || s.MinItems != nil || s.Pattern != "" || s.Not != nil || s.UnevaluatedProperties != nil
}
