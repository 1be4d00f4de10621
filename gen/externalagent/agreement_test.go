package externalagent

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schemacheck"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// TestTypesAgreeWithSchema: every generated type of this package accepts
// exactly the documents its schema accepts (spec/schemas with the
// catalogues' overlays applied, rebuilt independently of the generator):
// its synthesised seeds, the golden documents of testdata/externalagent and their
// systematic mutations, judged by a JSON Schema validator and by the
// generated decoder.
func TestTypesAgreeWithSchema(t *testing.T) {
	spec, err := schemacheck.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := wiretest.Golden("../../testdata/externalagent/seed_examples.json")
	if err != nil {
		t.Fatal(err)
	}
	res := spec.Agreement(t, fuzzTypes, schemacheck.Options{Golden: golden})
	t.Logf("%d types, %d documents judged alike (%d accepted only as unknown union variants); skipped %v", res.Types, res.Documents, res.Unknown, res.Skipped)
}
