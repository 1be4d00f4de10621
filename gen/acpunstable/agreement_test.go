package acpunstable

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/bridgekit/bridgekit/internal/schematest"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// The golden documents of gen/acp (testdata/acp; the unstable schema is a
// superset of the stable one) round-trip with this package's types, and
// every generated type accepts exactly the documents its schema accepts:
// schema.unstable.json with acp.json's overlays rebased onto it, rebuilt
// independently of the generator, judging the synthesised seeds, the golden
// documents and their mutations.
func TestGoldenDocuments(t *testing.T) {
	const golden = "../../testdata/acp/seed_examples.json"
	t.Run("golden round trip", func(t *testing.T) {
		if n := wiretest.GoldenRoundTrip(t, fuzzTypes, golden); n < 10 {
			t.Fatalf("only %d golden documents round-tripped", n)
		}
	})
	t.Run("schema agrees with decoders", func(t *testing.T) {
		// SubagentUpdate.state is a StateUpdate, which spec/overrides.json
		// leaves raw: the decoder keeps any value of it verbatim.
		schematest.Run(t, "../..", fuzzTypes, golden, schematest.Options{RawMembers: map[string]map[string]json.RawMessage{
			"SubagentUpdate": {"state": json.RawMessage(`{"state":"running"}`)},
		}})
	})
}

// unstableDefs reads the $defs of the vendored unstable schema.
func unstableDefs(t *testing.T) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../spec/schemas/acp/v1/schema.unstable.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s.Defs
}

// Every params and result definition of the unstable schema is among the
// types judged above, except those spec/overrides.json leaves raw.
func TestEveryMethodDefinitionJudged(t *testing.T) {
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
	judged := map[string]bool{}
	for _, typ := range fuzzTypes {
		judged[typ.Schema] = true
	}
	n := 0
	for name, def := range unstableDefs(t) {
		if _, ok := def["x-method"]; !ok {
			continue
		}
		n++
		loc := "acp/v1/schema.unstable.json#/$defs/" + name
		stable := "acp/v1/schema.json#/$defs/" + name
		if raw, ok := ov.Raw[loc]; ok {
			t.Logf("%s (x-method %v) is not typed: %s", name, def["x-method"], raw.Reason)
			continue
		}
		if raw, ok := ov.Raw[stable]; ok {
			t.Logf("%s (x-method %v) is not typed, as in gen/acp: %s", name, def["x-method"], raw.Reason)
			continue
		}
		if !judged[loc] && def["x-side"] != "proxy" {
			t.Errorf("%s (x-method %v) is not judged", name, def["x-method"])
		}
	}
	if n < 50 {
		t.Fatalf("only %d x-method definitions found", n)
	}
}

// Every method of the unstable schema between a client and an agent has its
// entry in Methods, served by the side its x-side names and so with a handler
// field there and a peer method on the other; those gen/acp lacks are
// experimental. The proxy-chain methods (x-side proxy) are between a
// conductor and a proxy and have none.
func TestEveryUnstableMethodGenerated(t *testing.T) {
	stable := map[string]bool{}
	data, err := os.ReadFile("../../spec/schemas/acp/v1/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	for _, def := range s.Defs {
		if w, ok := def["x-method"].(string); ok {
			stable[w+"@"+def["x-side"].(string)] = true
		}
	}
	found := 0
	for name, def := range unstableDefs(t) {
		w, ok := def["x-method"].(string)
		side, _ := def["x-side"].(string)
		if !ok || side == "proxy" || w == "$/cancel_request" {
			continue
		}
		i := slices.IndexFunc(Methods, func(m wire.MethodInfo) bool { return m.Wire == w && m.To == side })
		if i < 0 {
			t.Errorf("%s: %s served by %s has no method", name, w, side)
			continue
		}
		found++
		m := Methods[i]
		if want := map[bool]string{true: "stable", false: "experimental"}[stable[w+"@"+side]]; m.Status != want {
			t.Errorf("%s (to %s) is %s, want %s", w, side, m.Status, want)
		}
		handlers, peer := reflect.TypeFor[AgentHandlers](), reflect.TypeFor[*AgentPeer]()
		if side == "client" {
			handlers, peer = reflect.TypeFor[ClientHandlers](), reflect.TypeFor[*ClientPeer]()
		}
		if f, ok := handlers.FieldByName(m.Go); !ok || f.Type.Kind() != reflect.Func {
			t.Errorf("%s: %s has no handler field %s", w, handlers.Name(), m.Go)
		}
		if _, ok := peer.MethodByName(m.Go); !ok {
			t.Errorf("%s: %s has no method %s", w, peer.Elem().Name(), m.Go)
		}
	}
	if found < 60 {
		t.Fatalf("only %d method definitions found", found)
	}
}
