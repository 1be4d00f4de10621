package codegen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The published JSON Schema of the catalogue format (reflected from the
// loader's Go types by invopop/jsonschema) and the loader must agree: every
// catalogue of the repository validates, and documents the loader rejects
// for their shape are rejected by the schema too.
func TestCatalogueSchemaAgreesWithLoader(t *testing.T) {
	data, err := CatalogueSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("catalogue.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("catalogue.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob("../../spec/catalogue/*.json")
	paths = append(paths, "../testdata/features/spec/catalogue/features.json")
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s does not fit docs/reference/catalogue.schema.json: %v", p, err)
		}
	}
	for name, bad := range map[string]string{
		"unknown member": `{"protocol":"p","title":"t","package":"p","framing":"jsonrpc2-ndjson","sides":[],"schemas":[],"methods":[],"extra":1}`,
		"bad framing":    `{"protocol":"p","title":"t","package":"p","framing":"websocket","sides":[],"schemas":[],"methods":[]}`,
		"bad kind": `{"protocol":"p","title":"t","package":"p","framing":"jsonrpc2-ndjson","sides":[],"schemas":[],"methods":[
		  {"wire":"m","go":"M","from":"a","to":"b","kind":"call","params":null,"result":null,"errors":[],"status":"stable","doc":""}]}`,
		"missing errors": `{"protocol":"p","title":"t","package":"p","framing":"jsonrpc2-ndjson","sides":[],"schemas":[],"methods":[
		  {"wire":"m","go":"M","from":"a","to":"b","kind":"request","params":null,"result":null,"status":"stable","doc":""}]}`,
	} {
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(bad)))
		if sch.Validate(v) == nil {
			t.Errorf("%s: the published schema accepts what the loader rejects", name)
		}
	}
}
