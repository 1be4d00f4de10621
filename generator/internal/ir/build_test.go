package ir

import (
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

func build(t *testing.T, defs string, ov *schema.Overrides) (*Package, error) {
	t.Helper()
	s, err := schema.Parse([]byte(`{"$defs":`+defs+`}`), "t.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalogue.Catalogue{Package: "t", Schemas: []string{"t.schema.json"}, Sides: []catalogue.Side{{Name: "a", Go: "A"}, {Name: "b", Go: "B"}}}
	return Build(cat, nil, map[string]*schema.File{"t.schema.json": {Name: "t.schema.json", Root: s}}, ov)
}

func types(t *testing.T, p *Package) map[string]*Type {
	t.Helper()
	got := map[string]*Type{}
	for _, ty := range p.Types {
		got[ty.Name] = ty
	}
	return got
}

func TestOverridesApplyAndUnusedOnesAreReported(t *testing.T) {
	ov := &schema.Overrides{
		Types:   map[string]schema.TypeOverride{"t.schema.json#/$defs/x": {Go: "Renamed"}, "t.schema.json#/$defs/nope": {Go: "Nope"}},
		Fields:  map[string]schema.FieldOverride{"t.schema.json#/$defs/x/properties/a": {Go: "Alpha"}},
		Exclude: map[string]schema.Exclusion{"t.schema.json#/$defs/skip": {Reason: "r"}},
	}
	p, err := build(t, `{"x":{"type":"object","properties":{"a":{"type":"string"}}},"skip":{"type":"object","properties":{"z":{}}}}`, ov)
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	if got["Renamed"] == nil || got["Renamed"].Fields[0].Go != "Alpha" || got["Skip"] != nil {
		t.Fatalf("overrides not applied: %+v", got)
	}
	if u := ov.Unused(); len(u) != 1 || !strings.Contains(u[0], "$defs/nope") {
		t.Fatalf("unused: %v", u)
	}
}

func TestExcludedDefinitionCannotBeUsed(t *testing.T) {
	ov := &schema.Overrides{Exclude: map[string]schema.Exclusion{"t.schema.json#/$defs/skip": {Reason: "r"}}}
	_, err := build(t, `{"x":{"type":"object","properties":{"a":{"$ref":"#/$defs/skip"}}},"skip":{"type":"string"}}`, ov)
	if err == nil || !strings.Contains(err.Error(), "excludes from generation") {
		t.Fatalf("got %v", err)
	}
}

// A definition kept raw carries the JSON kinds its schema allows when the
// schema is nothing but kinds, for the decoder to check; one that says
// more carries none.
func TestRawKinds(t *testing.T) {
	ov := &schema.Overrides{Raw: map[string]schema.RawOverride{
		"t.schema.json#/$defs/id":    {Reason: "r", Example: []byte(`1`)},
		"t.schema.json#/$defs/shape": {Reason: "r", Example: []byte(`{}`)},
		"t.schema.json#/$defs/list":  {Reason: "r", Example: []byte(`"a"`)},
	}}
	p, err := build(t, `{
	  "x": {"type":"object","properties":{"a":{"$ref":"#/$defs/id"},"b":{"$ref":"#/$defs/shape"},"c":{"$ref":"#/$defs/list"}}},
	  "id": {"anyOf":[{"type":"null","title":"Null"},{"type":"integer","format":"int64"},{"type":"string"}]},
	  "shape": {"anyOf":[{"type":"object","properties":{"k":{"type":"string"}}},{"type":"string"}]},
	  "list": {"type":["string","number"]}
	}`, ov)
	if err != nil {
		t.Fatal(err)
	}
	x := types(t, p)["X"]
	got := map[string]string{}
	for _, f := range x.Fields {
		got[f.JSON] = strings.Join(f.Ref.Kinds, ",")
	}
	if got["a"] != "integer,null,string" || got["b"] != "" || got["c"] != "number,string" {
		t.Errorf("kinds: %v", got)
	}
}

func TestClassification(t *testing.T) {
	p, err := build(t, `{
	  "closed": {"type":"object","properties":{"n":{"type":["string","null"]},"o":{"type":["integer","null"]},"d":{"type":"boolean","default":true}},"required":["n"],"additionalProperties":false},
	  "open": {"type":"object","properties":{"k":{"const":"v"}},"required":["k"]},
	  "free": {"type":"object"},
	  "m": {"type":"object","additionalProperties":{"type":"integer"}},
	  "u": {"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},
	  "ie": {"type":"integer","enum":[1,2]},
	  "id": {"type":"string","description":"a named scalar"},
	  "open_enum": {"anyOf":[{"const":"a","type":"string","description":"A."},{"type":"string"}]},
	  "closed_enum": {"oneOf":[{"const":"a","type":"string"},{"const":"b","type":"string"}]},
	  "codes": {"anyOf":[{"const":-1,"type":"integer","title":"Bad thing"},{"type":"integer"}]}
	}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	c := got["Closed"]
	if c.Kind != Struct || !c.Closed || !c.Fields[0].Nullable || !c.Fields[0].Required || c.Fields[1].Required || !c.Fields[1].Nullable || string(c.Fields[2].Default) != "true" {
		t.Errorf("closed: %+v", c)
	}
	if o := got["Open"]; o.Closed || string(o.Fields[0].Const) != `"v"` {
		t.Errorf("open: %+v", o)
	}
	if got["Free"].Kind != Struct || got["Free"].Closed || got["M"].Kind != MapType || got["U"].Kind != Union || got["U"].Union != ByKind || len(got["U"].Variants) != 2 || got["Ie"].Kind != Enum {
		t.Errorf("kinds: free %v map %v union %v ienum %v", got["Free"].Kind, got["M"].Kind, got["U"], got["Ie"])
	}
	if got["ID"].Kind != Scalar || got["ID"].Base.Kind != String {
		t.Errorf("named scalar: %+v", got["ID"])
	}
	if e := got["OpenEnum"]; e.Kind != Enum || !e.Open || e.Values[0].Go != "OpenEnumA" || e.Values[0].Doc != "A." {
		t.Errorf("open enum: %+v", e)
	}
	if e := got["ClosedEnum"]; e.Kind != Enum || !e.Open || len(e.Values) != 2 {
		t.Errorf("a string enum is open unless spec/overrides.json closes it: %+v", e)
	}
	if e := got["Codes"]; e.Kind != Enum || !e.Open || e.Base.Kind != Int || e.Values[0].Go != "CodesBadThing" || e.Values[0].Int != -1 {
		t.Errorf("titled integer enum: %+v", e.Values[0])
	}
}

func TestObjectUnions(t *testing.T) {
	p, err := build(t, `{
	  "a": {"type":"object","properties":{"x":{"type":"string"}},"required":["x"]},
	  "b": {"type":"object","properties":{"y":{"type":"string"}},"required":["y"]},
	  "c": {"type":"object","properties":{"z":{"type":"string"}}},
	  "by_members": {"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}]},
	  "with_default": {"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/c","title":"other"}]},
	  "tagged": {"discriminator":{"propertyName":"t"},"oneOf":[
	    {"allOf":[{"$ref":"#/$defs/a"}],"properties":{"t":{"const":"one","type":"string"}},"required":["t"],"type":"object"},
	    {"allOf":[{"$ref":"#/$defs/a"}],"properties":{"t":{"const":"two","type":"string"}},"required":["t"],"type":"object"},
	    {"allOf":[{"$ref":"#/$defs/b"}],"title":"plain"}]},
	  "lists": {"anyOf":[{"type":"array","title":"as","items":{"$ref":"#/$defs/a"}},{"type":"array","title":"bs","items":{"$ref":"#/$defs/b"}}]}
	}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	if u := got["ByMembers"]; u.Union != ByMembers || u.Variants[0].Keys[0] != "x" || u.Variants[1].Keys[0] != "y" {
		t.Errorf("by members: %+v", u.Variants)
	}
	if u := got["WithDefault"]; u.Union != ByMembers || !u.Variants[1].Default || u.Variants[1].Go != "Other" {
		t.Errorf("default: %+v", u.Variants[1])
	}
	u := got["Tagged"]
	if u.Union != ByTag || u.Tag != "t" || u.Variants[0].Ref.Named != got["A"] || u.Variants[1].Ref.Named != got["A"] || !u.Variants[2].Default || u.Variants[2].Go != "Plain" {
		t.Errorf("tagged, shared variant type, default: %+v", u.Variants)
	}
	if l := got["Lists"]; l.Union != ByElement || l.Variants[0].Ref.Kind != Array || l.Variants[1].Go != "Bs" {
		t.Errorf("lists: %+v", l.Variants)
	}
}

func TestUnsoundUnionsFail(t *testing.T) {
	for name, defs := range map[string]string{
		"objects alike": `{"a":{"type":"object","properties":{"x":{"type":"string"}}},"b":{"type":"object","properties":{"y":{"type":"string"}}},
		  "u":{"oneOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}]}}`,
		"kinds alike":      `{"u":{"anyOf":[{"type":"string"},{"type":"string","minLength":2}]}}`,
		"open oneOf":       `{"u":{"oneOf":[{"const":"a","type":"string"},{"type":"string"}]}}`,
		"allOf with shape": `{"a":{"type":"object","properties":{"x":{}}},"u":{"allOf":[{"$ref":"#/$defs/a"}],"properties":{"y":{"type":"string"}}}}`,
	} {
		if _, err := build(t, defs, nil); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestUnionTagOverride(t *testing.T) {
	ov := &schema.Overrides{Unions: map[string]schema.UnionOverride{"t.schema.json#/$defs/u": {Tag: "type", Reason: "r"}}}
	p, err := build(t, `{"a":{"type":"object","properties":{"x":{"type":"string"}}},"u":{"anyOf":[{"allOf":[{"$ref":"#/$defs/a"}],"title":"a"}]}}`, ov)
	if err != nil {
		t.Fatal(err)
	}
	if u := types(t, p)["U"]; u.Union != ByTag || u.Tag != "type" || !u.Variants[0].Default {
		t.Fatalf("%+v", u)
	}
}

func TestDefaultsMustFit(t *testing.T) {
	_, err := build(t, `{"x":{"type":"object","properties":{"a":{"type":"integer","default":"three"}}}}`, nil)
	if err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("got %v", err)
	}
}

func buildWithOverlays(t *testing.T, defs string, overlays ...catalogue.Overlay) (*Package, error) {
	t.Helper()
	s, err := schema.Parse([]byte(`{"$defs":`+defs+`}`), "t.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalogue.Catalogue{Package: "t", Schemas: []string{"t.schema.json"}, Sides: []catalogue.Side{{Name: "a", Go: "A"}, {Name: "b", Go: "B"}}, Overlays: overlays}
	return Build(cat, nil, map[string]*schema.File{"t.schema.json": {Name: "t.schema.json", Root: s}}, nil)
}

func TestForbiddenMembersAndAddedVariants(t *testing.T) {
	defs := `{
	  "o": {"type":"object","properties":{"a":{"type":"string"},"gone":false}},
	  "v": {"type":"object","properties":{"k":{"const":"x","type":"string"}},"required":["k"]},
	  "w": {"type":"object","properties":{"k":{"const":"y","type":"string"}},"required":["k"]},
	  "u": {"oneOf":[{"$ref":"#/$defs/v"}]}
	}`
	p, err := buildWithOverlays(t, defs,
		catalogue.Overlay{Def: "t.schema.json#/$defs/o", Forbid: []string{"moved"}, Reason: "r"},
		catalogue.Overlay{Def: "t.schema.json#/$defs/u", Variants: []string{"t.schema.json#/$defs/w"}, Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	if o := got["O"]; len(o.Fields) != 1 || strings.Join(o.Forbidden, ",") != "gone,moved" {
		t.Errorf("forbidden members: %+v %v", o.Fields, o.Forbidden)
	}
	if u := got["U"]; u.Union != ByTag || len(u.Variants) != 2 || u.Variants[1].Tag != "y" || u.Variants[1].Ref.Named != got["W"] {
		t.Errorf("added variant: %+v", u.Variants)
	}
	for name, o := range map[string]catalogue.Overlay{
		"forbids a named member":   {Def: "t.schema.json#/$defs/o", Forbid: []string{"a"}, Reason: "r"},
		"forbid matches no object": {Def: "t.schema.json#/$defs/u", Forbid: []string{"z"}, Reason: "r"},
		"variants match no union":  {Def: "t.schema.json#/$defs/o", Variants: []string{"t.schema.json#/$defs/w"}, Reason: "r"},
		"variant repeating a tag":  {Def: "t.schema.json#/$defs/u", Variants: []string{"t.schema.json#/$defs/v"}, Reason: "r"},
	} {
		if _, err := buildWithOverlays(t, defs, o); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// A forbid with a contract scopes its members: they are no field, not
// forbidden everywhere, and listed under the contract, which the package
// declares with its types; the same member forbidden twice, in either
// form, fails.
func TestContractScopedForbid(t *testing.T) {
	defs := `{"o": {"type":"object","properties":{"a":{"type":"string"},"gone":false}}, "p": {"type":"object"}}`
	p, err := buildWithOverlays(t, defs,
		catalogue.Overlay{Def: "t.schema.json#/$defs/o", Forbid: []string{"moved"}, Reason: "r"},
		catalogue.Overlay{Def: "t.schema.json#/$defs/o", Forbid: []string{"late", "later"}, Contract: "strict", Reason: "r"},
		catalogue.Overlay{Def: "t.schema.json#/$defs/p", Forbid: []string{"x"}, Contract: "strict", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	o := got["O"]
	if len(o.Fields) != 1 || strings.Join(o.Forbidden, ",") != "gone,moved" || len(o.Scoped) != 1 || o.Scoped[0].Contract != "strict" || o.Scoped[0].Go != "ContractStrict" || strings.Join(o.Scoped[0].Members, ",") != "late,later" {
		t.Errorf("scoped: %+v %v %+v", o.Fields, o.Forbidden, o.Scoped)
	}
	if len(p.Contracts) != 1 || p.Contracts[0].Go != "ContractStrict" || len(p.Contracts[0].Rules) != 2 || p.Contracts[0].Rules[0].Type != o || p.Contracts[0].Rules[1].Type != got["P"] {
		t.Errorf("contracts: %+v", p.Contracts)
	}
	for name, ovs := range map[string][]catalogue.Overlay{
		"scoped and everywhere": {{Def: "t.schema.json#/$defs/o", Forbid: []string{"moved"}, Reason: "r"}, {Def: "t.schema.json#/$defs/o", Forbid: []string{"moved"}, Contract: "strict", Reason: "r"}},
		"scoped names a member": {{Def: "t.schema.json#/$defs/o", Forbid: []string{"a"}, Contract: "strict", Reason: "r"}},
		"scoped and false":      {{Def: "t.schema.json#/$defs/o", Forbid: []string{"gone"}, Contract: "strict", Reason: "r"}},
	} {
		if _, err := buildWithOverlays(t, defs, ovs...); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// ACP v1's catch-all alternative ("other": any tag but the listed ones) adds
// no variant: the union keeps such objects in Unknown. A not of any other
// shape, or one that excludes other tags than the variants fix, fails.
func TestCatchAllAlternative(t *testing.T) {
	alt := func(tag string) string {
		return `{"type":"object","properties":{"kind":{"type":"string","const":"` + tag + `"}},"required":["kind"]}`
	}
	other := func(tags ...string) string {
		var ex []string
		for _, tg := range tags {
			ex = append(ex, alt(tg))
		}
		return `{"title":"other","type":"object","properties":{"kind":{"type":"string"}},"required":["kind"],"unevaluatedProperties":true,"not":{"anyOf":[` + strings.Join(ex, ",") + `]}}`
	}
	p, err := build(t, `{"u":{"anyOf":[`+alt("a")+`,`+alt("b")+`,`+other("a", "b")+`]}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := types(t, p)["U"]
	if u == nil || u.Union != ByTag || u.Tag != "kind" || len(u.Variants) != 2 {
		t.Fatalf("catch-all: %+v", u)
	}
	if _, err := build(t, `{"u":{"anyOf":[`+alt("a")+`,`+alt("b")+`,`+other("a")+`]}}`, nil); err == nil || !strings.Contains(err.Error(), "excludes [a]") {
		t.Fatalf("a catch-all that excludes too little must fail: %v", err)
	}
	if _, err := build(t, `{"u":{"type":"object","properties":{"a":{"type":"string"}},"not":{"required":["a"]}}}`, nil); err == nil || !strings.Contains(err.Error(), "not and unevaluatedProperties are supported only") {
		t.Fatalf("a stray not must fail: %v", err)
	}
}

// A definition that admits null is named without it, and members that use
// it are nullable (ACP v1's RequestId).
func TestNullableDefinition(t *testing.T) {
	p, err := build(t, `{"id":{"anyOf":[{"type":"null"},{"title":"Number","type":"integer"},{"title":"Str","type":"string"}]},
	  "o":{"type":"object","properties":{"id":{"allOf":[{"$ref":"#/$defs/id"}]}},"required":["id"]}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := types(t, p)["O"]
	if o == nil || len(o.Fields) != 1 || !o.Fields[0].Nullable || o.Fields[0].Ref.Named == nil || o.Fields[0].Ref.Named.Name != "ID" {
		t.Fatalf("%+v", o.Fields[0])
	}
}

// A string enum stays closed only where spec/overrides.json's closed table
// names it; an entry that matches nothing is reported.
func TestClosedEnumOverride(t *testing.T) {
	ov := &schema.Overrides{ClosedEnums: map[string]schema.Exclusion{
		"t.schema.json#/$defs/e":    {Reason: "r"},
		"t.schema.json#/$defs/gone": {Reason: "r"},
	}}
	p, err := build(t, `{"e":{"type":"string","enum":["a","b"]},"f":{"type":"string","enum":["a"]}}`, ov)
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	if got["E"].Open || !got["F"].Open {
		t.Fatalf("E open %v, F open %v", got["E"].Open, got["F"].Open)
	}
	if u := ov.Unused(); len(u) != 1 || !strings.Contains(u[0], "closed entry t.schema.json#/$defs/gone") {
		t.Fatalf("unused: %v", u)
	}
}

// A represent entry makes members of one object take another's
// representation; every way an entry can change nothing or not fit fails,
// and an entry of no definition is reported unused.
func TestRepresentOverride(t *testing.T) {
	defs := `{
	  "kind": {"type": "string", "enum": ["a", "b"]},
	  "call": {"type": "object", "required": ["id", "t"], "properties": {
	    "id": {"type": "string"}, "t": {"type": "string"}, "k": {"allOf": [{"$ref": "#/$defs/kind"}]},
	    "l": {"type": "array", "items": {"type": "string"}, "minItems": 1}, "n": {"type": "integer"},
	    "o": {"type": "string"}, "c": {"const": "x"}}},
	  "upd": {"type": "object", "required": ["id"], "properties": {
	    "id": {"type": "string"}, "t": {"type": ["string", "null"]}, "k": {"anyOf": [{"$ref": "#/$defs/kind"}, {"type": "null"}]},
	    "l": {"type": ["array", "null"], "items": {"type": "string"}}, "n": {"type": ["string", "null"]},
	    "o": {"type": "string"}, "c": {"const": "x"}}}
	}`
	entry := func(members ...string) *schema.Overrides {
		return &schema.Overrides{Represent: map[string]schema.RepresentOverride{
			"t.schema.json#/$defs/call": {As: "#/$defs/upd", Members: members, Reason: "r"},
		}}
	}
	p, err := build(t, defs, entry("k", "l"))
	if err != nil {
		t.Fatal(err)
	}
	got := types(t, p)
	for _, f := range got["Call"].Fields {
		want := map[string]string{"k": "Upd.k", "l": "Upd.l"}[f.JSON]
		if f.Represented != want || f.Nullable {
			t.Errorf("Call.%s: represented %q nullable %v, want %q and not nullable", f.JSON, f.Represented, f.Nullable, want)
		}
	}
	for _, f := range got["Upd"].Fields {
		if f.Represented != "" {
			t.Errorf("Upd.%s is represented as %s", f.JSON, f.Represented)
		}
	}
	for member, want := range map[string]string{
		"t":    `member "t" must be optional in both Call and Upd`,
		"id":   `member "id" must be optional in both`,
		"n":    `member "n" has another Go type in Call than in Upd`,
		"o":    `member "o" already has Upd.o's representation`,
		"c":    `member "c" is a const or raw JSON`,
		"nope": `member "nope" is not a property of both Call and Upd`,
	} {
		_, err := build(t, defs, entry("k", member))
		if err == nil || !strings.Contains(err.Error(), "spec/overrides.json: represent entry t.schema.json#/$defs/call: "+want) {
			t.Errorf("%s: got %v, want %q", member, err, want)
		}
	}
	ov := entry("k")
	ov.Represent["t.schema.json#/$defs/call"] = schema.RepresentOverride{As: "#/$defs/kind", Members: []string{"k"}, Reason: "r"}
	if _, err := build(t, defs, ov); err == nil || !strings.Contains(err.Error(), `as "#/$defs/kind" is not an object definition`) {
		t.Errorf("as an enum: %v", err)
	}
	ov = entry("k")
	ov.Represent["t.schema.json#/$defs/gone"] = schema.RepresentOverride{As: "#/$defs/upd", Members: []string{"k"}, Reason: "r"}
	if _, err := build(t, defs, ov); err != nil {
		t.Fatal(err)
	}
	if u := ov.Unused(); len(u) != 1 || !strings.Contains(u[0], "represent entry t.schema.json#/$defs/gone matches no schema node") {
		t.Fatalf("unused: %v", u)
	}
}

// ACP v2's shapes: a variant that wraps a union of its own (state_update,
// a union by state), a default variant chosen also by a null tag (the
// "none" stop reason), a catch-all that names more members than its tag,
// and a tag named like the union's Unknown.
func TestNestedVariantsAndNullTags(t *testing.T) {
	tagged := func(tag, val, ref string) string {
		s := `{"type":"object","properties":{"` + tag + `":{"type":"string","const":"` + val + `"}},"required":["` + tag + `"]`
		if ref != "" {
			s += `,"allOf":[{"$ref":"#/$defs/` + ref + `"}]`
		}
		return s + `}`
	}
	other := func(tag string, vals ...string) string {
		var ex []string
		for _, v := range vals {
			ex = append(ex, tagged(tag, v, ""))
		}
		return `{"title":"other","type":"object","properties":{"` + tag + `":{"type":"string"},"extra":{"type":"string"}},"required":["` + tag + `"],"additionalProperties":true,"not":{"anyOf":[` + strings.Join(ex, ",") + `]}}`
	}
	defs := `{
	  "run": {"type":"object","properties":{"n":{"type":"integer"}}},
	  "idle": {"type":"object","properties":{"bg":{"type":"string"}},"anyOf":[` +
		tagged("why", "done", "") + `,` + other("why", "done") + `,{"title":"none","type":"object","properties":{"why":{"type":"null"}}}]},
	  "state": {"anyOf":[` + tagged("state", "running", "run") + `,` + tagged("state", "idle", "idle") + `,` + tagged("state", "unknown", "run") + `,` + other("state", "running", "idle", "unknown") + `]},
	  "update": {"anyOf":[` + tagged("kind", "state_update", "state") + `,` + other("kind", "state_update") + `]}
	}`
	p, err := build(t, defs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := types(t, p)
	u := ts["Update"]
	if u == nil || u.Union != ByTag || len(u.Variants) != 1 || !u.Variants[0].Nested || u.Variants[0].Ref.Named != ts["State"] {
		t.Fatalf("update: %+v", u)
	}
	st := ts["State"]
	var gos []string
	for _, v := range st.Variants {
		gos = append(gos, v.Go)
	}
	if st.Tag != "state" || strings.Join(gos, " ") != "Running Idle UnknownState" {
		t.Fatalf("state: tag %q, variants %v", st.Tag, gos)
	}
	idle := ts["Idle"]
	last := idle.Variants[len(idle.Variants)-1]
	if idle.Tag != "why" || !last.Default || !last.NullTag || last.Go != "None" {
		t.Fatalf("idle: tag %q, default variant %+v", idle.Tag, last)
	}
	// A nested variant must be a union by a tag of its own.
	bad := `{
	  "o": {"type":"object","properties":{"n":{"type":"integer"}},"anyOf":[{"required":["n"]}]},
	  "u": {"anyOf":[` + tagged("kind", "a", "o") + `]}
	}`
	if _, err := build(t, bad, nil); err == nil || !strings.Contains(err.Error(), "wraps a union that is not one of objects with a tag of its own") {
		t.Fatalf("a nested variant that is not a union by tag must fail: %v", err)
	}
}
