package conform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/envelope"
)

// parseEnv reads whatever an implementation writes without panicking,
// keeps each member's raw text, and str reads only JSON strings.
func FuzzParseEnv(f *testing.F) {
	for _, s := range []string{
		`{"protocol":"agentpm-service","version":1,"kind":"response","id":"k-1","service":"knowledge","result":{}}`,
		`{"protocol":"agentpm-harness-machine","version":"1","kind":"error","id":7,"payload":null,"error":{"code":400}}`,
		`{"id":"\u00e9\"x"}`, `[]`, `null`, `{`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok := parseEnv(line)
		if !ok {
			return
		}
		if !json.Valid(line) {
			t.Fatalf("%q read as an envelope but is not JSON", line)
		}
		for _, raw := range []json.RawMessage{e.Protocol, e.Version, e.Kind, e.ID, e.Service, e.Method} {
			if raw != nil && !json.Valid(raw) {
				t.Fatalf("member %q of %q is not JSON", raw, line)
			}
			if s := str(raw); s != "" {
				var back string
				if json.Unmarshal(raw, &back) != nil || back != s {
					t.Fatalf("str(%q) = %q", raw, s)
				}
			}
		}
		r := &EnvReply{Env: e, Kind: str(e.Kind)}
		_ = r.ErrorCode()
		_ = r.Body()
	})
}

// The standard failures the service suite expects are runtime/envelope's
// names, which the catalogue's unsupported_capability is one of.
func TestServiceRefusalCodes(t *testing.T) {
	for c, want := range map[int64]string{failMalformed: "malformed_frame", failProtocol: "protocol_error",
		failUnsupported: "unsupported_capability", failInvalid: "invalid_request"} {
		if got := envCode(envelope.Service, c); got != want {
			t.Errorf("code %d: %q, want %q", c, got, want)
		}
	}
	for _, role := range ServiceRoles {
		if len(serviceCalls[role]) == 0 {
			t.Errorf("no calls for role %s", role)
		}
		for _, c := range serviceCalls[role] {
			if c.bad == nil || c.payload == nil {
				t.Errorf("%s/%s: a payload and a bad payload are needed", role, c.method)
			}
		}
	}
}

// Every method spec/catalogue/agentpm-service.json gives a role the side
// knows is called by the suite, and nothing else is.
func TestServiceCallsAreTheCatalogues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "spec", "catalogue", "agentpm-service.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Methods []struct {
			Wire      string            `json:"wire"`
			Qualifier map[string]string `json:"qualifier"`
		} `json:"methods"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, m := range cat.Methods {
		role := m.Qualifier["service"]
		if m.Wire != "initialize" && slices.Contains(ServiceRoles, role) {
			want[role] = append(want[role], m.Wire)
		}
	}
	for _, role := range ServiceRoles {
		var got []string
		for _, c := range serviceCalls[role] {
			got = append(got, c.method)
		}
		slices.Sort(got)
		slices.Sort(want[role])
		if !slices.Equal(got, want[role]) {
			t.Errorf("%s: the suite calls %v, the catalogue has %v", role, got, want[role])
		}
	}
}
