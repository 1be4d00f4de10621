package harn_test

// Hand-written tests of the generated Harn types. They live beside the
// generated files; the generator only ever writes *_gen.go files.

import (
	stdjson "encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// types maps a Go type name to a constructor, for table-driven tests.
var types = map[string]func() any{
	"Shell":                          func() any { return new(harn.Shell) },
	"ListShellsResponse":             func() any { return new(harn.ListShellsResponse) },
	"ShellInvocationRequest":         func() any { return new(harn.ShellInvocationRequest) },
	"ShellInvocationResponse":        func() any { return new(harn.ShellInvocationResponse) },
	"SetDefaultShellRequest":         func() any { return new(harn.SetDefaultShellRequest) },
	"NoArgs":                         func() any { return new(harn.NoArgs) },
	"HostCallParams":                 func() any { return new(harn.HostCallParams) },
	"HostCapabilitiesParams":         func() any { return new(harn.HostCapabilitiesParams) },
	"HostCapabilities":               func() any { return new(harn.HostCapabilities) },
	"CapabilityOps":                  func() any { return new(harn.CapabilityOps) },
	"CapabilityObject":               func() any { return new(harn.CapabilityObject) },
	"Meta":                           func() any { return new(harn.Meta) },
	"HypothesisAttestation":          func() any { return new(harn.HypothesisAttestation) },
	"AgentIdleParams":                func() any { return new(harn.AgentIdleParams) },
	"AgentResumeParams":              func() any { return new(harn.AgentResumeParams) },
	"SessionRemindParams":            func() any { return new(harn.SessionRemindParams) },
	"SessionAttachParams":            func() any { return new(harn.SessionAttachParams) },
	"HostToolsListResult":            func() any { return new(harn.HostToolsListResult) },
	"SkillsListResult":               func() any { return new(harn.SkillsListResult) },
	"Skill":                          func() any { return new(harn.Skill) },
	"SkillMatchParams":               func() any { return new(harn.SkillMatchParams) },
	"SkillMatchResult":               func() any { return new(harn.SkillMatchResult) },
	"SessionIDParams":                func() any { return new(harn.SessionIDParams) },
	"SessionRevokeReminderParams":    func() any { return new(harn.SessionRevokeReminderParams) },
	"SkillsFetchParams":              func() any { return new(harn.SkillsFetchParams) },
	"SessionInjectParams":            func() any { return new(harn.SessionInjectParams) },
	"SessionInjectResult":            func() any { return new(harn.SessionInjectResult) },
	"InjectionRace":                  func() any { return new(harn.InjectionRace) },
	"SessionPendingInjectionsResult": func() any { return new(harn.SessionPendingInjectionsResult) },
	"AgentEvent":                     func() any { return new(harn.AgentEvent) },
	"SessionSetBudgetParams":         func() any { return new(harn.SessionSetBudgetParams) },
	"SessionCancelToolCallParams":    func() any { return new(harn.SessionCancelToolCallParams) },
	"SessionCancelToolCallResult":    func() any { return new(harn.SessionCancelToolCallResult) },
	"HITLRequestedParams":            func() any { return new(harn.HITLRequestedParams) },
	"BuiltinCallParams":              func() any { return new(harn.BuiltinCallParams) },
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stdjson.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// sameJSON compares two documents structurally (member order aside).
func sameJSON(t *testing.T, a, b []byte) bool { return wiretest.EqualJSON(t, a, b) }

func roundTrip(t *testing.T, typ string, doc []byte) []byte {
	t.Helper()
	v := types[typ]()
	if err := json.Unmarshal(doc, v); err != nil {
		t.Fatalf("%s: decode %s: %v", typ, doc, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: encode: %v", typ, err)
	}
	// The v1 encoding/json methods apply the same rules.
	v1 := types[typ]()
	if err := stdjson.Unmarshal(doc, v1); err != nil {
		t.Fatalf("%s: encoding/json decode: %v", typ, err)
	}
	out1, err := stdjson.Marshal(v1)
	if err != nil || !sameJSON(t, out, out1) {
		t.Fatalf("%s: encoding/json disagrees: %s vs %s (%v)", typ, out1, out, err)
	}
	return out
}

func TestCases(t *testing.T) {
	var cases struct {
		Valid []struct {
			Type      string
			Doc       stdjson.RawMessage
			Why       string
			Reencoded stdjson.RawMessage
		}
		Invalid []struct {
			Type, Error, Why string
			// Is names the wire sentinel the error must wrap (errors.Is).
			Is  string
			Doc stdjson.RawMessage
		}
	}
	readJSON(t, "../../testdata/harn/cases.json", &cases)
	for _, c := range cases.Valid {
		out := roundTrip(t, c.Type, c.Doc)
		want := c.Doc
		if c.Reencoded != nil {
			want = c.Reencoded
		}
		if !sameJSON(t, want, out) {
			t.Errorf("%s (%s): got %s, want %s", c.Type, c.Why, out, want)
		}
	}
	sentinels := map[string]error{
		"ErrUnknownMember": wire.ErrUnknownMember, "ErrMissingMember": wire.ErrMissingMember, "ErrNullValue": wire.ErrNullValue,
		"ErrWrongKind": wire.ErrWrongKind, "ErrConstraint": wire.ErrConstraint,
	}
	for _, c := range cases.Invalid {
		err := json.Unmarshal(c.Doc, types[c.Type]())
		if err == nil || !strings.Contains(err.Error(), c.Error) {
			t.Errorf("%s (%s): got error %v, want one containing %q", c.Type, c.Why, err, c.Error)
		}
		if c.Is != "" {
			want, ok := sentinels[c.Is]
			if !ok {
				t.Fatalf("%s (%s): unknown sentinel %s", c.Type, c.Why, c.Is)
			}
			if !errors.Is(err, want) {
				t.Errorf("%s (%s): got error %v, want errors.Is %s", c.Type, c.Why, err, c.Is)
			}
		}
	}
}

func TestTypedErrors(t *testing.T) {
	var s harn.Shell
	err := json.Unmarshal([]byte(`{"id":"a","label":"a","path":"/a","platform":"linux","available":true,"supports_login":true,"supports_interactive":true,"default_args":[],"login_args":[],"source":"env","x":1}`), &s)
	var de *wire.DecodeError
	if !errors.Is(err, wire.ErrUnknownMember) || !errors.As(err, &de) || de.Type != "Shell" || de.Member != "x" {
		t.Fatalf("closed object: %v", err)
	}
	err = json.Unmarshal([]byte(`{"shells":[]}`), new(harn.ListShellsResponse))
	if !errors.Is(err, wire.ErrMissingMember) || !errors.As(err, &de) || de.Member != "default_shell_id" {
		t.Fatalf("missing member: %v", err)
	}
	err = json.Unmarshal([]byte(`{"shell_id":""}`), new(harn.SetDefaultShellRequest))
	if !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("constraint: %v", err)
	}
}

func TestOpenObjectKeepsUnknownMembersInOrder(t *testing.T) {
	in := `{"shell_id":"bash","z":1,"a":{"b":[true,null]},"m":"x"}`
	var r harn.SetDefaultShellRequest
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Extra.Get("a"); !ok || string(v) != `{"b":[true,null]}` {
		t.Fatalf("Extra.Get(a) = %s %v", v, ok)
	}
	out, _ := json.Marshal(r)
	if string(out) != in {
		t.Fatalf("byte-exact round trip: got %s", out)
	}
	// The same from a stream read one byte at a time, where member names
	// live in a decoder buffer that moves while values are read.
	var streamed harn.SetDefaultShellRequest
	if err := json.UnmarshalRead(iotest.OneByteReader(strings.NewReader(in)), &streamed); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(streamed); string(out) != in {
		t.Fatalf("streamed round trip: got %s", out)
	}
}

func TestAbsentNullAndDefaults(t *testing.T) {
	var req harn.ShellInvocationRequest
	if err := json.Unmarshal([]byte(`{"command":"ls"}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.Login != nil || req.GetLogin() || req.GetInteractive() {
		t.Fatal("absent login must stay absent and read as its default false")
	}
	if out, _ := json.Marshal(req); string(out) != `{"command":"ls"}` {
		t.Fatalf("defaults were written back: %s", out)
	}
	var list harn.ListShellsResponse
	if err := json.Unmarshal([]byte(`{"shells":[],"default_shell_id":null}`), &list); err != nil {
		t.Fatal(err)
	}
	if list.DefaultShellID != nil || list.Shells == nil {
		t.Fatal("null default and empty (not absent) shells expected")
	}
	if out, _ := json.Marshal(list); string(out) != `{"shells":[],"default_shell_id":null}` {
		t.Fatalf("got %s", out)
	}
	// A zero value encodes to a document that decodes again: required arrays as [].
	out, err := json.Marshal(harn.ListShellsResponse{})
	if err != nil || string(out) != `{"shells":[],"default_shell_id":null}` {
		t.Fatalf("zero value: %s %v", out, err)
	}
}

func TestUnions(t *testing.T) {
	var caps harn.HostCapabilities
	in := `{"b":{"ops":["x"]},"a":["y"]}`
	if err := json.Unmarshal([]byte(in), &caps); err != nil {
		t.Fatal(err)
	}
	if caps["a"].List[0] != "y" || caps["b"].Object.Ops[0] != "x" {
		t.Fatalf("variants: %+v", caps)
	}
	if out, _ := json.Marshal(caps); string(out) != `{"a":["y"],"b":{"ops":["x"]}}` {
		t.Fatalf("maps are written in sorted key order: %s", out)
	}
	if _, err := json.Marshal(harn.CapabilityOps{}); !errors.Is(err, wire.ErrNoVariant) {
		t.Fatalf("empty union: %v", err)
	}
}

func TestRawValuesPreservedByteForByte(t *testing.T) {
	in := `{"name":"n","args":{"b":1.50,"a":"\u00e9"},"_meta":{"z":[1e3]}}`
	var p harn.HostCallParams
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(p, wire.Fidelity); string(out) != in {
		t.Fatalf("got %s", out)
	}
	if out, _ := p.MarshalJSON(); string(out) != in {
		t.Fatalf("MarshalJSON: got %s", out)
	}
	if string(p.Args) != `{"b":1.50,"a":"\u00e9"}` || !jsontext.Value(p.Args).IsValid() {
		t.Fatalf("args %s", p.Args)
	}
}

// Each union the bridge carries keeps a variant this version does not know
// verbatim in Unknown and writes it back byte for byte, never as another
// variant; a known one is typed.
func TestUnionsKeepUnknownVariants(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		v       any
		unknown func(any) jsontext.Value
	}{
		{`{"sessionUpdate":"future_update","content":{"type":"text","text":"x"},"_meta":{"harn":{"a":1}}}`, new(acp.SessionUpdate),
			func(v any) jsontext.Value { return v.(*acp.SessionUpdate).Unknown }},
		{`{"sessionId":"s","kind":"future_event","iteration":"not a number"}`, new(harn.AgentEvent),
			func(v any) jsontext.Value { return v.(*harn.AgentEvent).Unknown }},
		{`{"type":"video","uri":"u","_meta":{}}`, new(acp.ContentBlock),
			func(v any) jsontext.Value { return v.(*acp.ContentBlock).Unknown }},
		{`{"type":"chart","path":"p","newText":"x"}`, new(acp.ToolCallContent),
			func(v any) jsontext.Value { return v.(*acp.ToolCallContent).Unknown }},
		{`{"kind":"a2a_peer","serverName":"s"}`, new(harn.ToolExecutorObject),
			func(v any) jsontext.Value { return v.(*harn.ToolExecutorObject).Unknown }},
		{`{"outcome":"deferred","optionId":"allow"}`, new(acp.RequestPermissionOutcome),
			func(v any) jsontext.Value { return v.(*acp.RequestPermissionOutcome).Unknown }},
		{`{"kind":"system","id":"x","mode":"audit_only","position":0}`, new(harn.PendingInjection),
			func(v any) jsontext.Value { return v.(*harn.PendingInjection).Unknown }},
	} {
		if err := json.Unmarshal([]byte(tc.doc), tc.v); err != nil {
			t.Errorf("%T: %v", tc.v, err)
			continue
		}
		if string(tc.unknown(tc.v)) != tc.doc {
			t.Errorf("%T: Unknown is %s", tc.v, tc.unknown(tc.v))
		}
		if out, err := json.Marshal(tc.v, wire.Fidelity); err != nil || string(out) != tc.doc {
			t.Errorf("%T: re-encoded as %s (%v)", tc.v, out, err)
		}
	}
	// The executor is a string (open: any name) or such an object.
	var e harn.ToolExecutor
	if err := json.Unmarshal([]byte(`"host_bridge"`), &e); err != nil || *e.String != harn.ToolExecutorNameHostBridge {
		t.Fatalf("executor name: %+v %v", e, err)
	}
	if err := json.Unmarshal([]byte(`{"kind":"mcp_server","serverName":"linear"}`), &e); err != nil || e.Object.MCPServer.ServerName != "linear" {
		t.Fatalf("executor object: %+v %v", e, err)
	}
}
