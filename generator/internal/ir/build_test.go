package ir

import (
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

func build(t *testing.T, defs string, ov *Overrides) (*Package, error) {
	t.Helper()
	s, err := schema.Parse([]byte(`{"$defs":`+defs+`}`), "t.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalogue.Catalogue{Package: "t", Schemas: []string{"t.schema.json"}, Sides: []catalogue.Side{{Name: "a", Go: "A"}, {Name: "b", Go: "B"}}}
	return Build(cat, []*schema.File{{Name: "t.schema.json", Root: s}}, ov)
}

func TestUnusedOverrideFails(t *testing.T) {
	_, err := build(t, `{"x":{"type":"object","properties":{"a":{"type":"string"}}}}`, &Overrides{
		Types:  map[string]TypeOverride{"t.schema.json#/$defs/nope": {Go: "Nope"}},
		Fields: map[string]FieldOverride{"t.schema.json#/$defs/x/properties/zz": {Go: "ZZ"}},
	})
	if err == nil || !strings.Contains(err.Error(), "$defs/nope matches no schema node") || !strings.Contains(err.Error(), "properties/zz matches no schema property") {
		t.Fatalf("got %v", err)
	}
}

func TestOverridesApply(t *testing.T) {
	p, err := build(t, `{"x":{"type":"object","properties":{"a":{"type":"string"}}},"e":{"enum":["p","q"]}}`, &Overrides{
		Types:  map[string]TypeOverride{"t.schema.json#/$defs/x": {Go: "Renamed"}, "t.schema.json#/$defs/e": {Emitter: EmitJennifer}},
		Fields: map[string]FieldOverride{"t.schema.json#/$defs/x/properties/a": {Go: "Alpha"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*Type{}
	for _, ty := range p.Types {
		names[ty.Name] = ty
	}
	if names["Renamed"] == nil || names["Renamed"].Fields[0].Go != "Alpha" || names["E"].Emitter != EmitJennifer {
		t.Fatalf("overrides not applied: %+v", names)
	}
}

func TestClassification(t *testing.T) {
	p, err := build(t, `{
	  "closed": {"type":"object","properties":{"n":{"type":["string","null"]},"o":{"type":["integer","null"]},"d":{"type":"boolean","default":true}},"required":["n"],"additionalProperties":false},
	  "open": {"type":"object","properties":{"k":{"const":"v"}},"required":["k"]},
	  "free": {"type":"object"},
	  "m": {"type":"object","additionalProperties":{"type":"integer"}},
	  "u": {"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},
	  "ie": {"type":"integer","enum":[1,2]}
	}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Type{}
	for _, ty := range p.Types {
		got[ty.Name] = ty
	}
	c := got["Closed"]
	if c.Kind != Struct || !c.Closed || !c.Fields[0].Nullable || !c.Fields[0].Required || c.Fields[1].Required || !c.Fields[1].Nullable || string(c.Fields[2].Default) != "true" {
		t.Errorf("closed: %+v", c)
	}
	if o := got["Open"]; o.Closed || string(o.Fields[0].Const) != `"v"` {
		t.Errorf("open: %+v", o)
	}
	if got["Free"].Kind != Struct || got["Free"].Closed || got["M"].Kind != MapType || got["U"].Kind != Union || len(got["U"].Variants) != 2 || got["Ie"].Kind != IntEnum {
		t.Errorf("kinds: free %v map %v union %v ienum %v", got["Free"].Kind, got["M"].Kind, got["U"], got["Ie"])
	}
}

func TestUnsoundUnionFails(t *testing.T) {
	_, err := build(t, `{"a":{"type":"object","properties":{"x":{"type":"string"}}},"b":{"type":"object","properties":{"y":{"type":"string"}}},
	  "u":{"oneOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}]}}`, nil)
	if err == nil || !strings.Contains(err.Error(), "must differ in JSON kind") {
		t.Fatalf("got %v", err)
	}
}
