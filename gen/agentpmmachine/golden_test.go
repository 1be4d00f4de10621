package agentpmmachine

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// Every golden document decodes into its type and encodes back to the same
// JSON, with encoding/json v2 and v1.
func TestGoldenDocumentsRoundTrip(t *testing.T) {
	n := wiretest.GoldenRoundTrip(t, fuzzTypes, "../../testdata/agentpmmachine/seed_examples.json")
	t.Logf("%d golden documents round-tripped", n)
}

// The schema the package is generated from and its decoders judge the
// golden documents and their mutations alike.
func TestSchemaAgreesWithDecoders(t *testing.T) {
	v := schematest.Agree(t, "../../spec/schemas", "types_gen.go", "../../testdata/agentpmmachine/seed_examples.json", fuzzTypes)
	t.Logf("%+v", v)
}
