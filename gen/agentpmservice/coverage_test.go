package agentpmservice_test

import (
	stdjson "encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

const referenceService = "../../../shared/reference/agentpm/service.json"

// AgentPM's reference (shared/reference/agentpm/service.json) is covered
// exactly: every method of every role is a method of the catalogue with
// that wire name (with its casing) and role, sent from the Harness to the
// service, with a status that gives it a peer method (ServicePeer has it):
// the reference marks none of them legacy. Its (envelope), (error) and
// (event) entries describe framing, not methods.
func TestReferenceServiceCovered(t *testing.T) {
	data, err := os.ReadFile(referenceService)
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct{ Method, Role, Direction, Kind, Status, Source, Notes string }
	if err := stdjson.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	peer := reflect.TypeOf(&agentpmservice.ServicePeer{})
	exact, methods := 0, 0
	for _, e := range entries {
		if strings.HasPrefix(e.Method, "(") {
			continue
		}
		methods++
		where := e.Role + "/" + e.Method
		if e.Direction != "harness->service" {
			t.Errorf("%s: direction %q in the reference", where, e.Direction)
			continue
		}
		var m *wire.MethodInfo
		for i, c := range agentpmservice.Methods {
			if c.Wire == e.Method && c.Qualifier == e.Role {
				m = &agentpmservice.Methods[i]
			} else if strings.EqualFold(c.Wire, e.Method) && c.Qualifier == e.Role {
				t.Errorf("%s: catalogued as %q: the casing differs", where, c.Wire)
			}
		}
		if m == nil {
			t.Errorf("%s: not catalogued", where)
			continue
		}
		var problems []string
		// The handshake travels as an initialize frame, every other method
		// as a request; both are requests of the catalogue.
		if want := map[string]string{"initialize": "request", "request": "request"}[e.Kind]; m.Kind != want {
			problems = append(problems, "kind "+m.Kind+", "+e.Kind+" in the reference")
		}
		if m.From != "harness" || m.To != "service" {
			problems = append(problems, "sent from "+m.From+" to "+m.To)
		}
		if m.Status != "stable" && m.Status != "experimental" {
			problems = append(problems, "current in the reference, "+m.Status+" here: no peer method")
		} else if _, ok := peer.MethodByName(m.Go); !ok {
			problems = append(problems, "ServicePeer has no method "+m.Go)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", where, p)
		}
		if len(problems) == 0 {
			exact++
		}
	}
	t.Logf("%d of %d reference methods exact", exact, methods)
}
