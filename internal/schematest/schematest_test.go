package schematest

import (
	stdjson "encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestMutate(t *testing.T) {
	ms := Mutate(map[string]any{"a": []any{stdjson.Number("1")}})
	seen := map[string]bool{}
	for _, m := range ms {
		data, _ := stdjson.Marshal(m)
		seen[string(data)] = true
	}
	for _, want := range []string{`{}`, `{"a":null}`, `{"a":"x"}`, `{"a":[1],"extra":1}`, `{"a":[1,"s"]}`, `{"a":[1,null]}`, `{"a":["x"]}`} {
		if !seen[want] {
			t.Errorf("no mutation %s among %v", want, seen)
		}
	}
	if len(Mutate("leaf")) != 0 {
		t.Fatal("a scalar has no mutations of its own")
	}
}

// Load applies the catalogues' overlays: a retyped member keeps its
// nullability, forbidden members are rejected, added variants accepted.
func TestLoadAppliesOverlays(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, "spec", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("schemas/v.json", `{"$id":"https://example.invalid/v.json","$defs":{
		"obj":{"type":"object","properties":{"m":{"type":["object","null"]}}},
		"u":{"oneOf":[{"$ref":"#/$defs/a"}]},
		"a":{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]}}}`)
	write("schemas/ours.json", `{"$defs":{
		"meta":{"type":"object","properties":{"n":{"type":"integer"}}},
		"b":{"type":"object","properties":{"k":{"const":"b"}},"required":["k"]}}}`)
	write("catalogue/c.json", `{"overlays":[
		{"def":"v.json#/$defs/obj","member":"m","schema":"ours.json#/$defs/meta","reason":"r"},
		{"def":"v.json#/$defs/obj","forbid":["old"],"reason":"r"},
		{"def":"v.json#/$defs/u","variants":["ours.json#/$defs/b"],"reason":"r"}]}`)
	spec, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for loc, docs := range map[string]map[string]bool{
		"v.json#/$defs/obj": {`{"m":{"n":1}}`: true, `{"m":null}`: true, `{"m":{"n":"x"}}`: false, `{"old":1}`: false, `{"other":1}`: true},
		"v.json#/$defs/u":   {`{"k":"a"}`: true, `{"k":"b"}`: true, `{"k":"c"}`: false},
	} {
		sch, err := spec.Compile(loc)
		if err != nil {
			t.Fatal(err)
		}
		for doc, want := range docs {
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(doc))
			if got := sch.Validate(v) == nil; got != want {
				t.Errorf("%s: %s valid %v, want %v", loc, doc, got, want)
			}
		}
	}
}

func TestHasUnknown(t *testing.T) {
	type union struct {
		A       *int
		Unknown jsontext.Value
	}
	type outer struct {
		List []union
		Map  map[string]*union
		Opt  wire.Nullable[union]
		Raw  jsontext.Value
	}
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{&outer{}, false},
		{&outer{Raw: jsontext.Value(`{"Unknown":1}`)}, false},
		{&outer{List: []union{{}, {Unknown: jsontext.Value(`{}`)}}}, true},
		{&outer{Map: map[string]*union{"k": {Unknown: jsontext.Value(`{}`)}}}, true},
		{&outer{Opt: wire.Some(union{Unknown: jsontext.Value(`{}`)})}, true},
		{&outer{Opt: wire.Some(union{})}, false},
	} {
		if got := HasUnknown(tc.v); got != tc.want {
			t.Errorf("%+v: %v", tc.v, got)
		}
	}
}
