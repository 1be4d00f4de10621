package agentpmservice

import (
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
)

// The golden documents round-trip, and the schema the package is generated
// from and its decoders judge them and their mutations alike.
func TestGoldenDocuments(t *testing.T) { schematest.CheckPackage(t, "agentpmservice", fuzzTypes) }
