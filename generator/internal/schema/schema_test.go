package schema

import (
	"os"
	"strings"
	"testing"
)

func TestUnsupportedKeywordFails(t *testing.T) {
	for _, kw := range []string{"prefixItems", "$dynamicRef", "if", "patternProperties", "dependentSchemas", "X-upper"} {
		_, err := Parse([]byte(`{"$defs":{"x":{"type":"object","properties":{"a":{"`+kw+`":{}}}}}}`), "t.schema.json")
		if err == nil || !strings.Contains(err.Error(), `unsupported schema keyword "`+kw+`"`) || !strings.Contains(err.Error(), "t.schema.json#/$defs/x/properties/a") {
			t.Errorf("%s: got %v", kw, err)
		}
	}
}

func TestAnnotationsAndNewKeywords(t *testing.T) {
	s, err := Parse([]byte(`{"$defs":{
	  "m":{"type":"object","x-method":"session/new","x-side":"agent","x-docs-ignore":true,"title":"M","properties":{"a":{"type":"integer","format":"uint32"}}},
	  "u":{"discriminator":{"propertyName":"type"},"oneOf":[{"allOf":[{"$ref":"#/$defs/m"}],"properties":{"type":{"const":"m"}},"required":["type"],"type":"object"}]},
	  "n":{"$defs":{"inner":{"type":"string"}},"type":"object","properties":{"i":{"$ref":"#/$defs/n/$defs/inner"}}}
	}}`), "t.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Defs["m"]
	if w, _ := m.Annotation("x-method"); w != "session/new" || string(m.Annotations["x-docs-ignore"]) != "true" || m.Title != "M" || m.Properties[0].Schema.Format != "uint32" {
		t.Fatalf("annotations: %+v", m)
	}
	u := s.Defs["u"]
	if u.Discriminator != "type" || u.OneOf[0].AllOf[0].Ref != "#/$defs/m" {
		t.Fatalf("discriminator/allOf: %+v", u)
	}
	if s.Def("/$defs/n/$defs/inner") == nil || s.Def("/$defs/n/$defs/nope") != nil || s.Def("/properties/x") != nil {
		t.Fatal("nested $defs lookup")
	}
	if _, err := Parse([]byte(`{"discriminator":{"propertyName":"t","mapping":{}}}`), "t"); err == nil {
		t.Fatal("a discriminator with members the loader does not model must fail")
	}
}

func TestPropertyOrderKept(t *testing.T) {
	s, err := Parse([]byte(`{"type":"object","properties":{"z":{},"a":{},"m":{}}}`), "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Properties {
		got = append(got, p.Name)
	}
	if strings.Join(got, ",") != "z,a,m" {
		t.Fatalf("order %v", got)
	}
}

func TestRequiredWithoutProperty(t *testing.T) {
	_, err := Parse([]byte(`{"type":"object","properties":{"a":{}},"required":["b"]}`), "t")
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("got %v", err)
	}
}

func TestOverridesFile(t *testing.T) {
	dir := t.TempDir()
	if o, err := LoadOverrides(dir + "/none.json"); err != nil || len(o.Unused()) != 0 {
		t.Fatalf("a missing file is an empty table: %v", err)
	}
	write := func(s string) error {
		p := dir + "/o.json"
		if err := writeFile(p, s); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOverrides(p)
		return err
	}
	for in, want := range map[string]string{
		`{"types":{"a#/$defs/x":{"go":"X"}}}`:      "needs go and reason",
		`{"exclude":{"a#/$defs/x":{}}}`:            "needs a reason",
		`{"unions":{"a#/$defs/x":{"reason":"r"}}}`: "needs tag and reason",
		`{"emitters":{}}`:                          "unknown field",
		`{"types":{"a#/$defs/x":{"go":"X","reason":"r","emitter":"go-jsonschema"}}}`: "unknown field",
	} {
		if err := write(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}
func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
