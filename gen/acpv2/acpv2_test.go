package acpv2

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/internal/schematest"
)

// The vendored draft schemas are the TypeScript SDK 2.4.0's, byte for byte
// (spec/schemas/acp/v2/SOURCES.md), and identical to the reference copy
// when it is present.
func TestVendoredSchemas(t *testing.T) {
	want := map[string]string{
		"schema.json":          "b6c91055df549d6f1db1d76d692d0561dad433e03d8ed114ea9b5baed9da72c5",
		"schema.unstable.json": "49e10f8c1935854363ed5b176cc6560d856642ba5020c97d264d34de4b6f1b31",
	}
	sources, err := os.ReadFile("../../spec/schemas/acp/v2/SOURCES.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, sum := range want {
		data, err := os.ReadFile("../../spec/schemas/acp/v2/" + name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("%s: sha256 %s, want %s", name, got, sum)
		}
		if !strings.Contains(string(sources), sum) {
			t.Errorf("SOURCES.md does not name %s's sha256", name)
		}
		ref, err := os.ReadFile("../../../shared/reference/acp/v2-sdk-2.4.0/" + name)
		if err != nil {
			continue // the reference copy is on the development machine only
		}
		if !bytes.Equal(ref, data) {
			t.Errorf("%s differs from the reference copy", name)
		}
	}
}

// Every golden document (testdata/acpv2) round-trips byte for byte, and the
// schema and the decoders judge them, the seeds and their mutations alike.
func TestGoldenDocuments(t *testing.T) {
	schematest.CheckPackage(t, "acpv2", fuzzTypes)
}

// A state_update decodes into the nested unions it is made of: by
// sessionUpdate, then by state, then by stopReason, and an omitted or null
// stopReason is the none variant (a null kept, so that it re-encodes).
func TestStateUpdate(t *testing.T) {
	for _, c := range []struct {
		doc  string
		pick func(*StateUpdate) bool
	}{
		{`{"sessionUpdate":"state_update","state":"running"}`, func(s *StateUpdate) bool { return s.Running != nil }},
		{`{"sessionUpdate":"state_update","state":"requires_action"}`, func(s *StateUpdate) bool { return s.RequiresAction != nil }},
		{`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`, func(s *StateUpdate) bool { return s.Idle != nil && s.Idle.EndTurn != nil }},
		{`{"stopReason":"cancelled","state":"idle","sessionUpdate":"state_update"}`, func(s *StateUpdate) bool { return s.Idle != nil && s.Idle.Cancelled != nil }},
		{`{"sessionUpdate":"state_update","state":"idle"}`, func(s *StateUpdate) bool { return s.Idle != nil && s.Idle.None != nil && len(s.Idle.None.Extra) == 0 }},
		{`{"sessionUpdate":"state_update","state":"idle","stopReason":null}`, func(s *StateUpdate) bool {
			return s.Idle != nil && s.Idle.None != nil && len(s.Idle.None.Extra) == 1
		}},
		{`{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{"code":-32603,"message":"m"}}`, func(s *StateUpdate) bool {
			if s.Idle == nil || s.Idle.Error == nil {
				return false
			}
			e, ok := s.Idle.Error.Error.Get()
			return ok && e.Message == "m"
		}},
		{`{"sessionUpdate":"state_update","state":"idle","stopReason":"_paused"}`, func(s *StateUpdate) bool {
			return s.Idle != nil && string(s.Idle.Unknown) == `{"stopReason":"_paused"}` && s.Idle.Tag() == "_paused"
		}},
		{`{"sessionUpdate":"state_update","state":"_thinking","depth":2}`, func(s *StateUpdate) bool {
			return string(s.Unknown) == `{"state":"_thinking","depth":2}` && s.Tag() == "_thinking"
		}},
	} {
		var u SessionUpdate
		if err := json.Unmarshal([]byte(c.doc), &u); err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		if u.StateUpdate == nil || !c.pick(u.StateUpdate) {
			t.Errorf("%s: decoded as %+v", c.doc, u.StateUpdate)
		}
		out, err := json.Marshal(u)
		if err != nil {
			t.Errorf("%s: encode: %v", c.doc, err)
			continue
		}
		var a, b any
		_ = json.Unmarshal([]byte(c.doc), &a)
		_ = json.Unmarshal(out, &b)
		if !jsonEqual(a, b) {
			t.Errorf("%s re-encoded as %s", c.doc, out)
		}
	}
}

// A nested variant's errors are typed and name where they are.
func TestStateUpdateErrors(t *testing.T) {
	for _, doc := range []string{
		`{"sessionUpdate":"state_update"}`,
		`{"sessionUpdate":"state_update","state":7}`,
		`{"sessionUpdate":"state_update","state":"idle","stopReason":5}`,
		`{"sessionUpdate":"state_update","state":"idle","background":{}}`,
		`{"sessionUpdate":"state_update","state":"running","background":[{"kind":1}]}`,
	} {
		var u SessionUpdate
		if err := json.Unmarshal([]byte(doc), &u); err == nil {
			t.Errorf("%s: no error; decoded %+v", doc, u)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a, json.Deterministic(true))
	y, _ := json.Marshal(b, json.Deterministic(true))
	return bytes.Equal(x, y)
}

// Error.data and an elicitation's content values take the shapes ACP defines
// or any other value (their "Other" alternative): the defined shapes decode
// typed, anything else is kept as it came, and both round-trip.
func TestUnionsWithOther(t *testing.T) {
	for in, check := range map[string]func(Error) bool{
		`{"code":-32022,"message":"Unsupported protocol version","data":{"requested":1,"supported":[2]}}`: func(e Error) bool {
			d, ok := e.Data.Get()
			return ok && d.UnsupportedProtocolVersion != nil && d.UnsupportedProtocolVersion.Requested == 1 && d.Other == nil
		},
		`{"code":-32002,"message":"Resource not found","data":{"sessionId":"s1"}}`: func(e Error) bool {
			d, ok := e.Data.Get()
			return ok && d.SessionNotFound != nil && d.SessionNotFound.SessionID == "s1"
		},
		`{"code":-32602,"message":"Invalid params","data":"initialize.protocolVersion must be a valid ACP protocol version"}`: func(e Error) bool {
			d, ok := e.Data.Get()
			return ok && string(d.Other) == `"initialize.protocolVersion must be a valid ACP protocol version"`
		},
		`{"code":-32002,"message":"Resource not found","data":{"sessionId":7}}`: func(e Error) bool {
			d, ok := e.Data.Get()
			return ok && d.SessionNotFound == nil && string(d.Other) == `{"sessionId":7}`
		},
		`{"code":-32603,"message":"Internal error","data":null}`: func(e Error) bool { return e.Data.IsNull() },
	} {
		var e Error
		if err := json.Unmarshal([]byte(in), &e); err != nil || !check(e) {
			t.Errorf("%s: %+v, %v", in, e, err)
			continue
		}
		if out, err := json.Marshal(e); err != nil || string(out) != in {
			t.Errorf("%s round-tripped to %s (%v)", in, out, err)
		}
	}
	in := `{"a":"x","b":3,"c":true,"d":["p","q"],"e":{"custom":1},"f":null}`
	var c ElicitationAcceptActionContent
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if *c["a"].String != "x" || *c["b"].Number != 3 || !*c["c"].Boolean || len(c["d"].StringArray) != 2 || string(c["e"].Other) != `{"custom":1}` || string(c["f"].Other) != "null" {
		t.Fatalf("%+v", c)
	}
	if out, err := json.Marshal(c); err != nil || string(out) != in {
		t.Fatalf("round trip gave %s (%v)", out, err)
	}
}
