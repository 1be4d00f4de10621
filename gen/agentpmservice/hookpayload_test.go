package agentpmservice

import (
	stdjson "encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// A hook-id method's payload needs only input, as the reference says
// (shared/reference/agentpm/service.json: required ["input"]; the Harness
// sends hook too): each seed example still decodes without hook.
func TestHookPayloadNeedsOnlyInput(t *testing.T) {
	data, err := os.ReadFile("../../testdata/agentpmservice/seed_examples.json")
	if err != nil {
		t.Fatal(err)
	}
	var examples map[string][]stdjson.RawMessage
	if err := stdjson.Unmarshal(data, &examples); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range Methods {
		if m.Qualifier != string(ServiceRoleHook) || m.Wire == MethodInitializeHook || m.Wire == MethodInvoke {
			continue
		}
		n++
		var typ *struct {
			name string
			new  func() any
		}
		for _, ft := range fuzzTypes {
			if strings.HasSuffix(ft.Schema, "/$defs/"+m.Wire+"_hook") {
				typ = &struct {
					name string
					new  func() any
				}{ft.Name, ft.New}
			}
		}
		if typ == nil || len(examples[typ.name]) == 0 {
			t.Errorf("%s: no payload type or seed example", m.Wire)
			continue
		}
		for _, raw := range examples[typ.name] {
			var ex map[string]stdjson.RawMessage
			if err := stdjson.Unmarshal(raw, &ex); err != nil {
				t.Fatal(err)
			}
			delete(ex, "hook")
			doc, _ := stdjson.Marshal(ex)
			if err := json.Unmarshal(doc, typ.new()); err != nil {
				t.Errorf("%s without hook: %v", m.Wire, err)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d hook-id methods, want 8", n)
	}
}
