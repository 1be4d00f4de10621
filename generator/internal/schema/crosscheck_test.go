package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gjs "github.com/atombender/go-jsonschema/pkg/schemas"
)

// The loader is cross-checked against go-jsonschema's independent schema
// model (pkg/schemas): every schema file of the repository, parsed by both,
// must give the same tree of $refs, types, members, required sets, enums,
// consts, constraints and annotations. go-jsonschema drops keywords it does
// not know (x-*, discriminator) and property order, so only what both model
// is compared; the loader's own tests cover the rest.
func TestLoaderAgreesWithGoJSONSchema(t *testing.T) {
	var files []string
	for _, dir := range []string{"../../../spec/schemas", "../../testdata/features/spec/schemas"} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") && filepath.Base(p) != "meta.json" {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	nodes := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := Parse(data, filepath.Base(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		theirs, err := gjs.FromJSONReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: go-jsonschema: %v", p, err)
		}
		c := &compare{t: t, nodes: &nodes}
		root := (*gjs.Type)(theirs.ObjectAsType)
		root.Definitions = theirs.Definitions // the root's $defs live on Schema
		c.node(ours, root, ours.Pointer)
	}
	t.Logf("%d schema nodes of %d files agree", nodes, len(files))
}

type compare struct {
	t     *testing.T
	nodes *int
}

func (c *compare) defs(ours *Schema, theirs gjs.Definitions, ptr string) {
	names := make([]string, 0, len(theirs))
	for k := range theirs {
		names = append(names, k)
	}
	slices.Sort(names)
	got := slices.Clone(ours.DefOrder)
	slices.Sort(got)
	if !slices.Equal(got, names) {
		c.t.Errorf("%s: $defs %v, go-jsonschema %v", ptr, got, names)
		return
	}
	for _, n := range names {
		c.node(ours.Defs[n], theirs[n], ptr+"/$defs/"+n)
	}
}

func canon(v any) string {
	b, _ := json.Marshal(v)
	var x any
	_ = json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

func intOr0(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func (c *compare) node(s *Schema, g *gjs.Type, ptr string) {
	*c.nodes++
	bad := func(what string, a, b any) { c.t.Errorf("%s: %s: loader %v, go-jsonschema %v", ptr, what, a, b) }
	if s.Bool != nil {
		isFalse := g.Not != nil
		if *s.Bool == isFalse {
			bad("boolean schema", *s.Bool, !isFalse)
		}
		return
	}
	if s.Ref != g.Ref {
		bad("$ref", s.Ref, g.Ref)
	}
	types := slices.Clone(s.Types)
	if len(types) == 0 && (len(s.Properties) > 0 || s.AdditionalProperties != nil) {
		types = []string{"object"} // go-jsonschema infers it
	}
	if fmt.Sprint(types) != fmt.Sprint([]string(g.Type)) {
		bad("type", types, g.Type)
	}
	if fmt.Sprint(s.Required) != fmt.Sprint(g.Required) && len(s.Required)+len(g.Required) > 0 {
		bad("required", s.Required, g.Required)
	}
	var enum []any
	for _, e := range s.Enum {
		var v any
		_ = json.Unmarshal(e, &v)
		enum = append(enum, v)
	}
	if len(enum)+len(g.Enum) > 0 && canon(enum) != canon(g.Enum) {
		bad("enum", canon(enum), canon(g.Enum))
	}
	if (s.Const != nil || g.Const != nil) && canon(json.RawMessage(s.Const)) != canon(g.Const) {
		bad("const", string(s.Const), g.Const)
	}
	if fmt.Sprint(s.Minimum) != fmt.Sprint(g.Minimum) && !(s.Minimum != nil && g.Minimum != nil && *s.Minimum == *g.Minimum) {
		bad("minimum", s.Minimum, g.Minimum)
	}
	if !(s.Maximum == nil && g.Maximum == nil || s.Maximum != nil && g.Maximum != nil && *s.Maximum == *g.Maximum) {
		bad("maximum", s.Maximum, g.Maximum)
	}
	if intOr0(s.MinLength) != g.MinLength || intOr0(s.MaxLength) != g.MaxLength || intOr0(s.MinItems) != g.MinItems {
		bad("length constraints", [3]int{intOr0(s.MinLength), intOr0(s.MaxLength), intOr0(s.MinItems)}, [3]int{g.MinLength, g.MaxLength, g.MinItems})
	}
	if s.Pattern != g.Pattern || s.Format != g.Format || s.Title != g.Title || s.Description != g.Description {
		bad("pattern/format/title/description", []string{s.Pattern, s.Format, s.Title}, []string{g.Pattern, g.Format, g.Title})
	}
	var names []string
	for _, p := range s.Properties {
		names = append(names, p.Name)
	}
	var gnames []string
	for k := range g.Properties {
		gnames = append(gnames, k)
	}
	slices.Sort(names)
	slices.Sort(gnames)
	if !slices.Equal(names, gnames) {
		bad("properties", names, gnames)
	} else {
		for _, p := range s.Properties {
			c.node(p.Schema, g.Properties[p.Name], ptr+"/properties/"+p.Name)
		}
	}
	pair := func(what string, a *Schema, b *gjs.Type) {
		switch {
		case a == nil && b == nil:
		case a == nil || b == nil:
			bad(what, a != nil, b != nil)
		default:
			c.node(a, b, ptr+"/"+what)
		}
	}
	pair("items", s.Items, g.Items)
	pair("additionalProperties", s.AdditionalProperties, g.AdditionalProperties)
	list := func(what string, a []*Schema, b []*gjs.Type) {
		if len(a) != len(b) {
			bad(what, len(a), len(b))
			return
		}
		for i := range a {
			c.node(a[i], b[i], fmt.Sprintf("%s/%s/%d", ptr, what, i))
		}
	}
	list("anyOf", s.AnyOf, g.AnyOf)
	list("oneOf", s.OneOf, g.OneOf)
	list("allOf", s.AllOf, g.AllOf)
	if len(s.Defs)+len(g.Definitions) > 0 {
		c.defs(s, g.Definitions, ptr)
	}
}
