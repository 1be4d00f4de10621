package externalagent

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
)

// TestGoldenDocuments: the golden documents of testdata/externalagent
// round-trip (with this package's codec and encoding/json), and every
// generated type accepts exactly the documents its schema accepts
// (spec/schemas with the catalogues' overlays applied, rebuilt
// independently of the generator): its synthesised seeds, the golden
// documents and their systematic mutations, judged by a JSON Schema
// validator and by the generated decoder.
func TestGoldenDocuments(t *testing.T) { schematest.CheckPackage(t, "externalagent", fuzzTypes) }
