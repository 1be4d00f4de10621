package catalogue

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

func TestRealCataloguesValid(t *testing.T) {
	paths, _ := filepath.Glob("../../../spec/catalogue/*.json")
	if len(paths) < 3 {
		t.Fatalf("found %v", paths)
	}
	for _, p := range paths {
		if _, err := Load(p); err != nil {
			t.Error(err)
		}
	}
}

const base = `{"protocol":"p","title":"t","package":"p","framing":"jsonrpc2-ndjson",
  "sides":[{"name":"a","go":"A"},{"name":"b","go":"B"}],"schemas":["s.schema.json","dir/s.json"],"methods":[%s]}`

func TestValidationErrors(t *testing.T) {
	for name, tc := range map[string]struct{ method, want string }{
		"unknown member":      {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":"","bogus":1}`, "unknown field"},
		"bad kind":            {`{"wire":"m","go":"M","from":"a","to":"b","kind":"call","params":null,"result":null,"errors":[],"status":"stable","doc":""}`, `kind "call"`},
		"bad side":            {`{"wire":"m","go":"M","from":"a","to":"c","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":""}`, "must name the two different sides"},
		"unlisted schema":     {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":"o.schema.json#/$defs/x","result":null,"errors":[],"status":"stable","doc":""}`, "is not listed"},
		"bad ref":             {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":"s.schema.json#/properties/x","result":null,"errors":[],"status":"stable","doc":""}`, "is not <file>.json#/$defs/<name>"},
		"bad status":          {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"gone","doc":""}`, `status "gone"`},
		"notification result": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"notification","params":null,"result":"s.schema.json#/$defs/x","errors":[],"status":"stable","doc":""}`, "no result"},
		"op selector": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":"",
		   "operations":{"selector":["name"],"payload":"args","items":[{"match":{"other":"x"},"go":"X","args":null,"result":null,"errors":[],"status":"stable","doc":""}]}}`, "lacks selector member"},
		"bad error code":  {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[{"code":1.5,"when":"x"}],"status":"stable","doc":""}`, "neither an integer nor a string"},
		"cancels nothing": {`{"wire":"c","go":"C","from":"a","to":"b","kind":"notification","params":null,"result":null,"errors":[],"status":"stable","doc":"","cancels":{"method":"m"}}`, `cancels "m", which is no method`},
		"cancels key and id": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":""},
		   {"wire":"c","go":"C","from":"a","to":"b","kind":"notification","params":null,"result":null,"errors":[],"status":"stable","doc":"","cancels":{"method":"m","key":"k","id":"i"}}`, "cancels by id names no method and no key"},
		"cancels a notification": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"notification","params":null,"result":null,"errors":[],"status":"stable","doc":""},
		   {"wire":"c","go":"C","from":"a","to":"b","kind":"notification","params":null,"result":null,"errors":[],"status":"stable","doc":"","cancels":{"method":"m"}}`, "not a request"},
		"duplicate go": {`{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":""},
		   {"wire":"n","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"errors":[],"status":"stable","doc":""}`, "already used"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(base, "%s", tc.method, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCatalogueLevelErrors(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"envelope missing":          {`"framing":"jsonrpc2-ndjson"`, `"framing":"envelope-ndjson"`, "required for, and only for"},
		"envelope extra":            {`"framing":"jsonrpc2-ndjson"`, `"framing":"jsonrpc2-ndjson","envelope":{"protocol":"p","version":1}`, "required for, and only for"},
		"bad schema file":           {`"schemas":["s.schema.json","dir/s.json"]`, `"schemas":["../s.json"]`, "not a .json path"},
		"annotations alone":         {`"methods":[`, `"annotations":{"m":{"status":"stable"}},"methods":[`, "derives none"},
		"overlay incomplete":        {`"methods":[`, `"overlays":[{"def":"s.schema.json#/$defs/x","member":"m","schema":"s.schema.json#/$defs/y"}],"methods":[`, "exactly one of member+schema, forbid or variants"},
		"contract adding":           {`"methods":[`, `"overlays":[{"def":"s.schema.json#/$defs/x","member":"m","add":true,"schema":"s.schema.json#/$defs/y","contract":"harn","reason":"r"}],"methods":[`, "does not add a member"},
		"contract schema elsewhere": {`"methods":[`, `"overlays":[{"def":"o.json#/$defs/x","member":"m","schema":"o.json#/$defs/y","contract":"harn","reason":"r"}],"methods":[`, "schema file \"o.json\" is not listed"},
		"contract name":             {`"methods":[`, `"overlays":[{"def":"s.schema.json#/$defs/x","forbid":["a"],"contract":"Harn","reason":"r"}],"methods":[`, "lower-case name"},
		"overlay two forms":         {`"methods":[`, `"overlays":[{"def":"s.schema.json#/$defs/x","forbid":["a"],"variants":["s.schema.json#/$defs/y"],"reason":"r"}],"methods":[`, "exactly one of"},
		"overlay bad variant":       {`"methods":[`, `"overlays":[{"def":"s.schema.json#/$defs/x","variants":["o.json#/$defs/y"],"reason":"r"}],"methods":[`, "not listed in schemas"},
		"derive unlisted":           {`"methods":[`, `"derive":{"schema":"o.json","requests":["R"],"notifications":[],"responses":[],"sides":{"a":"a"}},"methods":[`, "not listed in schemas"},
		"derive bad side":           {`"methods":[`, `"derive":{"schema":"s.schema.json","requests":["R"],"notifications":[],"responses":[],"sides":{"a":"z"}},"methods":[`, "which is not a side"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(strings.Replace(base, "%s", "", 1), tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A miniature of ACP's annotated schema: x-method/x-side on params and
// results, routing definitions for requests, notifications and responses.
const annotated = `{"$defs":{
  "CReq": {"properties":{"id":{},"method":{"type":"string"},"params":{"anyOf":[{"anyOf":[
     {"allOf":[{"$ref":"#/$defs/NewReq"}],"description":"Creates a session.","title":"NewReq"},
     {"allOf":[{"$ref":"#/$defs/Ext"}],"title":"Ext"}],"description":"all"},{"type":"null"}]}},"type":"object"},
  "AReq": {"properties":{"params":{"anyOf":[{"allOf":[{"$ref":"#/$defs/ReadReq"}]}]}},"type":"object"},
  "CNote": {"properties":{"params":{"anyOf":[{"allOf":[{"$ref":"#/$defs/Cancel"}],"description":"Cancels."}]}},"type":"object"},
  "AResp": {"anyOf":[{"properties":{"result":{"anyOf":[{"allOf":[{"$ref":"#/$defs/NewResp"}]}]}},"type":"object"},{"properties":{"error":{}},"type":"object"}]},
  "CResp": {"anyOf":[{"properties":{"result":{"anyOf":[{"allOf":[{"$ref":"#/$defs/ReadResp"}]}]}},"type":"object"}]},
  "NewReq": {"type":"object","properties":{"sid":{"type":"string"}},"x-method":"session/new","x-side":"agent","description":"Params of session/new."},
  "NewResp": {"type":"object","x-method":"session/new","x-side":"agent"},
  "ReadReq": {"type":"object","x-method":"fs/read","x-side":"client","description":"Reads."},
  "ReadResp": {"type":"object","x-method":"fs/read","x-side":"client"},
  "Cancel": {"type":"object","properties":{"sid":{"type":"string"}},"x-method":"session/cancel","x-side":"agent"},
  "Ext": {"description":"any"}
}}`

func deriveCatalogue(t *testing.T, derive, annotations, schemaText string, meta string) ([]Method, error) {
	t.Helper()
	s, err := schema.Parse([]byte(schemaText), "x/s.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(`{"protocol":"p","title":"t","package":"p","framing":"jsonrpc2-ndjson",
	  "sides":[{"name":"agent","go":"Agent"},{"name":"client","go":"Client"}],"schemas":["x/s.json"],
	  "derive":` + derive + `,"annotations":` + annotations + `,"methods":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Expand(map[string]*schema.File{"x/s.json": {Name: "x/s.json", Root: s}}, func(name string) ([]byte, error) {
		if meta == "" {
			return nil, os.ErrNotExist
		}
		return []byte(meta), nil
	})
}

const derive = `{"schema":"x/s.json","requests":["CReq","AReq"],"notifications":["CNote"],"responses":["AResp","CResp"],"sides":{"agent":"agent","client":"client"}}`

func TestDeriveMethods(t *testing.T) {
	ms, err := deriveCatalogue(t, derive, `{"session/cancel":{"cancels":{"method":"session/new","key":"sid"},"status":"experimental"}}`, annotated, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Wire+" "+m.Go+" "+string(m.Kind)+" "+m.From+">"+m.To)
	}
	want := []string{"session/new SessionNew request client>agent", "session/cancel SessionCancel notification client>agent", "fs/read FsRead request agent>client"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("derived %v", got)
	}
	if *ms[0].Params != "x/s.json#/$defs/NewReq" || *ms[0].Result != "x/s.json#/$defs/NewResp" || ms[0].Doc != "Creates a session." {
		t.Fatalf("session/new: %+v", ms[0])
	}
	if ms[1].Result != nil || ms[1].Cancels == nil || ms[1].Cancels.Key != "sid" || ms[1].Status != Experimental {
		t.Fatalf("session/cancel: %+v", ms[1])
	}
	if ms[2].Doc != "Reads." {
		t.Fatalf("a routing alternative without a description takes the params': %q", ms[2].Doc)
	}
}

func TestDeriveChecksMeta(t *testing.T) {
	meta := `{"agentMethods":{"new":"session/new","cancel":"session/cancel"},"clientMethods":{"read":"fs/read"}}`
	d := strings.Replace(derive, `"schema":"x/s.json"`, `"schema":"x/s.json","meta":"x/meta.json"`, 1)
	if _, err := deriveCatalogue(t, d, `{}`, annotated, meta); err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(meta, `"read":"fs/read"`, `"read":"fs/read","write":"fs/write"`, 1)
	if _, err := deriveCatalogue(t, d, `{}`, annotated, wrong); err == nil || !strings.Contains(err.Error(), "x/meta.json lists") {
		t.Fatalf("a meta file that disagrees must fail: %v", err)
	}
}

func TestDeriveErrors(t *testing.T) {
	for name, tc := range map[string]struct{ schema, annotations, want string }{
		"unknown annotation":     {annotated, `{"session/old":{"status":"retired"}}`, `annotation for "session/old" matches no derived method`},
		"unrouted":               {strings.Replace(annotated, `"Ext": {`, `"Lost": {"type":"object","x-method":"lost","x-side":"agent"}, "Ext": {`, 1), `{}`, "Lost has x-method but no routing definition lists it"},
		"no side":                {strings.Replace(annotated, `"x-method":"fs/read","x-side":"client","description"`, `"x-method":"fs/read","description"`, 1), `{}`, "no x-side"},
		"request without result": {strings.Replace(annotated, `"ReadResp": {"type":"object","x-method":"fs/read","x-side":"client"}`, `"ReadResp": {"type":"object"}`, 1), `{}`, "request fs/read has no result"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := deriveCatalogue(t, derive, tc.annotations, tc.schema, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// An extension is its base with the rebased files and its own members; its
// own form is kept for fmt; what it may not give, or a base that extends in
// turn, fails.
func TestExtends(t *testing.T) {
	dir := t.TempDir()
	base := `{"protocol":"p","title":"P","package":"p","framing":"jsonrpc2-ndjson",
	  "sides":[{"name":"a","go":"A"},{"name":"b","go":"B"}],"schemas":["v1/s.json","ours.json"],
	  "overlays":[{"def":"v1/s.json#/$defs/X","member":"m","add":true,"schema":"ours.json#/$defs/y","reason":"r"},
	              {"def":"v1/s.json#/$defs/U","variants":["ours.json#/$defs/z"],"reason":"r"}],
	  "methods":[{"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":"v1/s.json#/$defs/P","result":null,"errors":[],"status":"stable","doc":""}]}`
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("base.json", base)
	ext := write("ext.json", `{"protocol":"p-next","title":"P next","package":"pnext",
	  "extends":{"catalogue":"base.json","rebase":{"v1/s.json":"v1/s.next.json"},"reason":"opt in"},
	  "methods":[{"wire":"n","go":"N","from":"b","to":"a","kind":"notification","params":"v1/s.next.json#/$defs/Q","result":null,"errors":[],"status":"experimental","doc":""}]}`)
	c, err := Load(ext)
	if err != nil {
		t.Fatal(err)
	}
	if c.Package != "pnext" || c.Framing != JSONRPC2NDJSON || len(c.Sides) != 2 || !slices.Equal(c.Schemas, []string{"v1/s.next.json", "ours.json"}) {
		t.Fatalf("merged: %+v", c)
	}
	if c.Overlays[0].Def != "v1/s.next.json#/$defs/X" || !c.Overlays[0].Add || c.Overlays[1].Def != "v1/s.next.json#/$defs/U" || c.Overlays[1].Variants[0] != "ours.json#/$defs/z" {
		t.Fatalf("overlays: %+v", c.Overlays)
	}
	if len(c.Methods) != 2 || *c.Methods[0].Params != "v1/s.next.json#/$defs/P" || c.Methods[1].Go != "N" {
		t.Fatalf("methods: %+v", c.Methods)
	}
	if c.Written == nil || c.Written.Framing != "" || len(c.Written.Methods) != 1 || c.Rebased("v1/s.json") != "v1/s.next.json" {
		t.Fatalf("written form: %+v", c.Written)
	}
	if _, err := Parse([]byte(`{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"base.json","reason":"r"},"methods":[]}`)); err == nil {
		t.Fatal("Parse cannot read a base")
	}
	for name, doc := range map[string]string{
		"framing given":           `{"protocol":"x","title":"x","package":"x","framing":"jsonrpc2-ndjson","extends":{"catalogue":"base.json","reason":"r"},"methods":[]}`,
		"same package":            `{"protocol":"x","title":"x","package":"p","extends":{"catalogue":"base.json","reason":"r"},"methods":[]}`,
		"no reason":               `{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"base.json"},"methods":[]}`,
		"rebase unlisted":         `{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"base.json","rebase":{"v2/s.json":"v3/s.json"},"reason":"r"},"methods":[]}`,
		"path as base":            `{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"../base.json","reason":"r"},"methods":[]}`,
		"unrouted, no derivation": `{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"base.json","unrouted":{"D":"r"},"reason":"r"},"methods":[]}`,
		"base extends":            `{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"ext.json","reason":"r"},"methods":[]}`,
		"duplicate go":            `{"protocol":"x","title":"x","package":"x","extends":{"catalogue":"base.json","reason":"r"},"methods":[{"wire":"m2","go":"M","from":"a","to":"b","kind":"notification","params":null,"result":null,"errors":[],"status":"stable","doc":""}]}`,
	} {
		if _, err := Load(write("bad.json", doc)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := Parse([]byte(`{"protocol":"x","title":"x","package":"x","framing":"jsonrpc2-ndjson","sides":[{"name":"a","go":"A"},{"name":"b","go":"B"}],"schemas":["s.json"],
	  "overlays":[{"def":"s.json#/$defs/X","add":true,"reason":"r"}],"methods":[]}`)); err == nil {
		t.Error("an add overlay without member and schema is accepted")
	}
}
