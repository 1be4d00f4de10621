package acp

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// TestGoldenDocuments: the golden documents of testdata/acp round-trip
// (with this package's codec and encoding/json), and every generated type
// accepts exactly the documents its schema accepts (spec/schemas with the
// catalogues' overlays applied, rebuilt independently of the generator):
// its synthesised seeds, the golden documents and their systematic
// mutations, judged by a JSON Schema validator and by the generated decoder.
func TestGoldenDocuments(t *testing.T) { schematest.CheckPackage(t, "acp", fuzzTypes) }

// Every params and result definition of ACP v1, those the schema marks with
// x-method and x-side, is among the types judged above, except those
// spec/overrides.json leaves raw (each with its reason), which are listed.
func TestEveryMethodDefinitionJudged(t *testing.T) {
	data, err := os.ReadFile("../../spec/schemas/acp/v1/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	ovData, err := os.ReadFile("../../spec/overrides.json")
	if err != nil {
		t.Fatal(err)
	}
	var ov struct {
		Raw map[string]struct{ Reason string } `json:"raw"`
	}
	if err := json.Unmarshal(ovData, &ov); err != nil {
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
		loc := "acp/v1/schema.json#/$defs/" + name
		if raw, ok := ov.Raw[loc]; ok {
			t.Logf("%s (x-method %v) is not typed: %s", name, def["x-method"], raw.Reason)
			continue
		}
		if !judged[loc] {
			t.Errorf("%s (x-method %v) is not judged", name, def["x-method"])
		}
	}
	if n < 30 {
		t.Fatalf("only %d x-method definitions found", n)
	}
	t.Logf("%d x-method definitions judged", n)
}

// TestV0122DocumentsUnchanged is the differential test of the move to ACP
// v1: every document valid under ACP v0.12.2 as the catalogue's overlays
// extend it decodes with the v1 types and re-encodes to the
// same JSON: the seeds, the golden documents of testdata/acp and their
// systematic mutations, judged by v0.12.2's definition of the same name.
func TestV0122DocumentsUnchanged(t *testing.T) {
	spec, err := schematest.LoadRetargeted("../..", "acp/v1/schema.json", "acp/v0.12.2/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := wiretest.Golden("../../testdata/acp/seed_examples.json")
	if err != nil {
		t.Fatal(err)
	}
	n := spec.Differential(t, fuzzTypes, "acp/v0.12.2/schema.json", golden, 200)
	if floor := 1000 * schematest.MutationLimit(200) / 200; n < floor {
		t.Fatalf("only %d documents valid under v0.12.2 judged, want %d at least", n, floor)
	}
	t.Logf("%d documents valid under v0.12.2 decode and round-trip under the v1 types", n)
}
