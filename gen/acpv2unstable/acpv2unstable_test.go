package acpv2unstable

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// The golden documents of gen/acpv2 (testdata/acpv2; the unstable schema is
// a superset of the stable one) round-trip with this package's types, and
// the unstable schema and the decoders judge them, the seeds and their
// mutations alike.
func TestGoldenDocuments(t *testing.T) {
	const golden = "../../testdata/acpv2/seed_examples.json"
	t.Run("golden round trip", func(t *testing.T) {
		if n := wiretest.GoldenRoundTrip(t, fuzzTypes, golden); n < 20 {
			t.Fatalf("only %d golden documents round-tripped", n)
		}
	})
	t.Run("schema agrees with decoders", func(t *testing.T) {
		schematest.Run(t, "../..", fuzzTypes, golden, schematest.Options{})
	})
}
