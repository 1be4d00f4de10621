package acp

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
)

// TestGoldenDocuments: the golden documents of testdata/acp round-trip
// (with this package's codec and encoding/json), and every generated type
// accepts exactly the documents its schema accepts (spec/schemas with the
// catalogues' overlays applied, rebuilt independently of the generator):
// its synthesised seeds, the golden documents and their systematic
// mutations, judged by a JSON Schema validator and by the generated decoder.
func TestGoldenDocuments(t *testing.T) { schematest.CheckPackage(t, "acp", fuzzTypes) }

// Every params and result definition of ACP, those the schema marks with
// x-method and x-side, is among the types judged above.
func TestEveryMethodDefinitionJudged(t *testing.T) {
	data, err := os.ReadFile("../../spec/schemas/acp/v0.12.2/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, typ := range fuzzTypes {
		judged[typ.Schema] = true
	}
	n := 0
	for name, def := range s.Defs {
		if _, ok := def["x-method"]; !ok {
			continue
		}
		n++
		if !judged["acp/v0.12.2/schema.json#/$defs/"+name] {
			t.Errorf("%s (x-method %v) is not judged", name, def["x-method"])
		}
	}
	if n < 30 {
		t.Fatalf("only %d x-method definitions found", n)
	}
	t.Logf("%d x-method definitions judged", n)
}
