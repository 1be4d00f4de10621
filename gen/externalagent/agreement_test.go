package externalagent

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schemacheck"
)

// TestTypesAgreeWithSchema: every generated type of this package accepts
// exactly the documents its schema accepts (spec/schemas with the
// catalogues' overlays applied, rebuilt independently of the generator):
// its synthesised seeds, the golden documents of testdata/externalagent and their
// systematic mutations, judged by a JSON Schema validator and by the
// generated decoder.
func TestTypesAgreeWithSchema(t *testing.T) {
	schemacheck.Run(t, "../..", fuzzTypes, "../../testdata/externalagent/seed_examples.json", schemacheck.Options{})
}
