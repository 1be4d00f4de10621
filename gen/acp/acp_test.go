package acp_test

// Hand-written tests of the generated ACP types. They live beside the
// generated files; the generator only ever writes *_gen.go files.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	stdjson "encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

const shared = "../../../shared/fixtures/"

// missingShared skips a test that needs ../shared when it is absent, except
// in CI (CI set), where the reference material is always laid beside the
// checkout and its absence is a failure.
func missingShared(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("reference material missing in CI: %v", err)
	}
	t.Skipf("reference material not present: %v", err)
}

// Every vendored ACP schema is the upstream file byte for byte: v0.12.2
// and v1 with its unstable superset (from
// @agentclientprotocol/sdk 2.4.0), the latter also by the sha256 that
// spec/schemas/acp/v1/SOURCES.md records.
func TestVendoredSchemaIsUpstreamByteForByte(t *testing.T) {
	for _, c := range []struct{ ours, theirs, sha string }{
		{"v0.12.2/schema.json", "v0.12.2/schema.json", ""},
		{"v0.12.2/meta.json", "v0.12.2/meta.json", ""},
		{"v1/schema.json", "v1-sdk-2.4.0/schema.json", "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a"},
		{"v1/schema.unstable.json", "v1-sdk-2.4.0/schema.unstable.json", "ce7881d10c854bcac4f0e7d3a9ce4fb0f612ec0a09e64b572940beec4668c189"},
	} {
		ours, err := os.ReadFile("../../spec/schemas/acp/" + c.ours)
		if err != nil {
			t.Fatal(err)
		}
		if c.sha != "" {
			if sum := sha256.Sum256(ours); hex.EncodeToString(sum[:]) != c.sha {
				t.Errorf("spec/schemas/acp/%s: sha256 %x, SOURCES.md says %s: never edit vendored schemas, use overlays", c.ours, sum, c.sha)
			}
			sources, err := os.ReadFile("../../spec/schemas/acp/v1/SOURCES.md")
			if err != nil || !bytes.Contains(sources, []byte(c.sha)) {
				t.Errorf("spec/schemas/acp/v1/SOURCES.md does not record sha256 %s of %s (%v)", c.sha, c.ours, err)
			}
		}
		theirs, err := os.ReadFile(shared + "acp/" + c.theirs)
		if err != nil {
			missingShared(t, err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("spec/schemas/acp/%s differs from the pinned upstream file: never edit vendored schemas, use overlays", c.ours)
		}
	}
}

// sameJSON compares two documents structurally (member order aside).
func sameJSON(t *testing.T, a, b []byte) bool { return wiretest.EqualJSON(t, a, b) }

// types are constructors of the types whose GetX accessors
// TestDefaults calls on zero values.
var types = map[string]func() any{
	"SessionNotification":       func() any { return new(acp.SessionNotification) },
	"RequestPermissionRequest":  func() any { return new(acp.RequestPermissionRequest) },
	"RequestPermissionResponse": func() any { return new(acp.RequestPermissionResponse) },
	"Error":                     func() any { return new(acp.Error) },
	"InitializeRequest":         func() any { return new(acp.InitializeRequest) },
	"InitializeResponse":        func() any { return new(acp.InitializeResponse) },
	"NewSessionRequest":         func() any { return new(acp.NewSessionRequest) },
	"PromptRequest":             func() any { return new(acp.PromptRequest) },
	"PromptResponse":            func() any { return new(acp.PromptResponse) },
	"SessionConfigOption":       func() any { return new(acp.SessionConfigOption) },
}

func roundTrip(t *testing.T, in []byte, v any) {
	t.Helper()
	out, err := json.Marshal(v, wire.Fidelity)
	if err != nil || !sameJSON(t, in, out) {
		t.Fatalf("round trip changed (%v)\n in: %s\nout: %s", err, in, out)
	}
}

func TestSessionUpdateVariants(t *testing.T) {
	// Three tags share ContentChunk; the tag never lands in the chunk's Extra.
	for _, tag := range []string{"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"} {
		in := `{"content":{"type":"text","text":"hi"},"sessionUpdate":"` + tag + `"}`
		var u acp.SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatal(err)
		}
		chunks := map[string]*acp.ContentChunk{"user_message_chunk": u.UserMessageChunk, "agent_message_chunk": u.AgentMessageChunk, "agent_thought_chunk": u.AgentThoughtChunk}
		c := chunks[tag]
		if c == nil || c.Content.Text == nil || c.Content.Text.Text != "hi" || len(c.Extra) != 0 || u.Tag() != tag {
			t.Fatalf("%s: %+v", tag, u)
		}
		out, _ := json.Marshal(u)
		if !strings.HasPrefix(string(out), `{"sessionUpdate":"`+tag+`"`) {
			t.Fatalf("the tag is written first: %s", out)
		}
	}
	// A variant this version does not know (a vendor's extension, or a later
	// ACP's) is kept verbatim, never guessed from its members; a progress
	// update of any shape is one, from any agent.
	for _, in := range []string{
		`{"_meta":{"vendor":{"skillName":"rust"}},"sessionUpdate":"skill_forgotten","content":{"type":"text","text":"looks like a chunk"}}`,
		`{"sessionUpdate":"progress","percent":40,"message":"indexing"}`,
		`{"sessionUpdate":"progress","_meta":{"harn":{"phase":"p","message":"m"}}}`,
	} {
		var u acp.SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatal(err)
		}
		if u.Unknown == nil || u.AgentMessageChunk != nil || u.UserMessageChunk != nil || u.Tag() == "" {
			t.Fatalf("unknown variant: %+v", u)
		}
		if out, _ := json.Marshal(u, wire.Fidelity); string(out) != in {
			t.Fatalf("unknown variant re-encoded as %s", out)
		}
	}
	for doc, want := range map[string]error{
		`{"content":{"type":"text","text":"x"}}`:                                     wire.ErrMissingMember,
		`{"sessionUpdate":"agent_message_chunk"}`:                                    wire.ErrMissingMember,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}`:          wire.ErrMissingMember,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":1}}`: wire.ErrWrongKind,
	} {
		var v acp.SessionUpdate
		if err := json.Unmarshal([]byte(doc), &v); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", doc, err, want)
		}
	}
}

func TestMCPServerDefaultVariant(t *testing.T) {
	var s acp.MCPServer
	if err := json.Unmarshal([]byte(`{"name":"fs","command":"c","args":[],"env":[]}`), &s); err != nil || s.Stdio == nil || s.Tag() != "" {
		t.Fatalf("no type: the stdio variant: %+v %v", s, err)
	}
	if err := json.Unmarshal([]byte(`{"name":"w","url":"u","headers":[],"type":"http"}`), &s); err != nil || s.HTTP == nil {
		t.Fatalf("http: %+v %v", s, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"websocket","name":"w","command":"c","args":[],"env":[]}`), &s); err != nil || s.Unknown == nil || s.Stdio != nil {
		t.Fatalf("an unknown type is never the default stdio: %+v %v", s, err)
	}
	if err := json.Unmarshal([]byte(`{"name":"fs"}`), &s); !errors.Is(err, wire.ErrMissingMember) {
		t.Fatalf("stdio still requires its members: %v", err)
	}
	out, _ := json.Marshal(acp.MCPServer{Stdio: &acp.MCPServerStdio{Name: "fs", Command: "c"}})
	if string(out) != `{"name":"fs","command":"c","args":[],"env":[]}` {
		t.Fatalf("stdio is written without a type: %s", out)
	}
}

func TestAuthMethodKeepsUnknownTypes(t *testing.T) {
	var a acp.AuthMethod
	if err := json.Unmarshal([]byte(`{"id":"i","name":"n"}`), &a); err != nil || a.Agent == nil || a.Agent.ID != "i" {
		t.Fatalf("%+v %v", a, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"i","name":"n","type":"oauth2","url":"u"}`), &a); err != nil || a.Agent != nil || a.Unknown == nil {
		t.Fatalf("a type this version does not know: %+v %v", a, err)
	}
}

// codex-acp's env_var methods are typed by our overlay (no published schema
// defines them), vars and all, and re-encode byte for byte; an entry of an
// earlier draft's shape (varName, no vars) still decodes, its member kept.
func TestAuthMethodEnvVarByOverlay(t *testing.T) {
	const doc = `{"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","description":"Requires setting the ` + "`CODEX_API_KEY`" + ` environment variable.","vars":[{"name":"CODEX_API_KEY"}]}`
	var a acp.AuthMethod
	if err := json.Unmarshal([]byte(doc), &a); err != nil || a.EnvVar == nil || a.Unknown != nil {
		t.Fatalf("%+v %v", a, err)
	}
	if a.Tag() != "env_var" || a.EnvVar.ID != "codex-api-key" || len(a.EnvVar.Vars) != 1 || a.EnvVar.Vars[0].Name != "CODEX_API_KEY" || !a.EnvVar.Vars[0].Secret.IsAbsent() {
		t.Fatalf("%+v", a.EnvVar)
	}
	out, err := json.Marshal(a)
	if err != nil || string(out) != doc {
		t.Fatalf("re-encoded %s %v", out, err)
	}
	a = acp.AuthMethod{}
	if err := json.Unmarshal([]byte(`{"type":"env_var","id":"k","name":"n","varName":"K"}`), &a); err != nil || a.EnvVar == nil || a.EnvVar.Vars != nil || len(a.EnvVar.Extra) != 1 {
		t.Fatalf("earlier draft: %+v %v", a.EnvVar, err)
	}
}

// The Claude agents' session models on session/new are typed by our overlay.
func TestNewSessionModelsByOverlay(t *testing.T) {
	const doc = `{"sessionId":"s","models":{"availableModels":[{"modelId":"default","name":"Default"}],"currentModelId":"default"}}`
	var r acp.NewSessionResponse
	if err := json.Unmarshal([]byte(doc), &r); err != nil || len(r.Extra) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	m, ok := r.Models.Get()
	if !ok || m.CurrentModelID == nil || *m.CurrentModelID != "default" || len(m.AvailableModels) != 1 || m.AvailableModels[0].ModelID != "default" {
		t.Fatalf("%+v", r.Models)
	}
	out, err := json.Marshal(r)
	if err != nil || string(out) != doc {
		t.Fatalf("re-encoded %s %v", out, err)
	}
	for _, absentOrNull := range []string{`{"sessionId":"s"}`, `{"sessionId":"s","models":null}`} {
		r = acp.NewSessionResponse{}
		if err := json.Unmarshal([]byte(absentOrNull), &r); err != nil {
			t.Fatal(err)
		}
		if out, _ := json.Marshal(r); string(out) != absentOrNull {
			t.Fatalf("%s became %s", absentOrNull, out)
		}
	}
}

func TestResourceByRequiredMembers(t *testing.T) {
	var r acp.EmbeddedResourceResource
	if err := json.Unmarshal([]byte(`{"uri":"u","text":"t"}`), &r); err != nil || r.TextResourceContents == nil || r.TextResourceContents.URI != "u" {
		t.Fatalf("%+v %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"uri":"u","mimeType":null,"blob":"AA=="}`), &r); err != nil || r.BlobResourceContents == nil || !r.BlobResourceContents.MIMEType.IsNull() {
		t.Fatalf("%+v %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"uri":"u"}`), &r); !errors.Is(err, wire.ErrMissingMember) {
		t.Fatalf("neither text nor blob: %v", err)
	}
}

func TestConfigOptionsGroupedOrNot(t *testing.T) {
	var o acp.SessionConfigSelectOptions
	if err := json.Unmarshal([]byte(`[{"name":"A","value":"a"},{"name":"B","value":"b"}]`), &o); err != nil || len(o.Ungrouped) != 2 || o.Grouped != nil {
		t.Fatalf("%+v %v", o, err)
	}
	if err := json.Unmarshal([]byte(`[{"group":"g","name":"G","options":[]}]`), &o); err != nil || len(o.Grouped) != 1 || o.Ungrouped != nil {
		t.Fatalf("%+v %v", o, err)
	}
	if err := json.Unmarshal([]byte(`[]`), &o); err != nil || o.Ungrouped == nil {
		t.Fatalf("empty: %+v %v", o, err)
	}
	if err := json.Unmarshal([]byte(`[{"name":"A","value":"a"},{"group":"g","name":"G","options":[]}]`), &o); !errors.Is(err, wire.ErrMissingMember) {
		t.Fatalf("mixed lists are not options: %v", err)
	}
}

func TestEnums(t *testing.T) {
	var s acp.StopReason
	if err := json.Unmarshal([]byte(`"paused"`), &s); err != nil || s != "paused" || s.Known() {
		t.Fatalf("string enums are open: an unknown value is kept and told apart: %q %v", s, err)
	}
	if out, err := json.Marshal(acp.StopReason("paused")); err != nil || string(out) != `"paused"` {
		t.Fatalf("and written back unchanged: %s %v", out, err)
	}
	if !acp.StopReasonEndTurn.Known() {
		t.Fatal("a listed value is known")
	}
	var de *wire.DecodeError
	if err := json.Unmarshal([]byte(`1`), &s); !errors.Is(err, wire.ErrWrongKind) || !errors.As(err, &de) || de.Type != "StopReason" {
		t.Fatalf("a value of another JSON kind still fails: %v", err)
	}
	var c acp.SessionConfigOptionCategory
	if err := json.Unmarshal([]byte(`"_vendor"`), &c); err != nil || c != "_vendor" || c.Known() {
		t.Fatalf("open enums keep other values: %q %v", c, err)
	}
	var code acp.ErrorCode
	if err := json.Unmarshal([]byte(`-32099`), &code); err != nil || code != -32099 || code.Known() {
		t.Fatalf("open integer enum: %v %v", code, err)
	}
	if err := json.Unmarshal([]byte(`-32601`), &code); err != nil || code != acp.ErrorCodeMethodNotFound {
		t.Fatalf("%v %v", code, err)
	}
	var p acp.ProtocolVersion
	if err := json.Unmarshal([]byte(`70000`), &p); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("ProtocolVersion maximum: %v", err)
	}
}

// Defaults are never written or applied on decode; GetX returns them.
func TestDefaults(t *testing.T) {
	var r acp.InitializeRequest
	if err := json.Unmarshal([]byte(`{"protocolVersion":1}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.ClientCapabilities != nil {
		t.Fatal("an absent member with a default stays absent")
	}
	caps := r.GetClientCapabilities()
	if caps.GetTerminal() || caps.Fs == nil || caps.Fs.GetReadTextFile() {
		t.Fatalf("default capabilities: %+v", caps)
	}
	if out, _ := json.Marshal(r); string(out) != `{"protocolVersion":1}` {
		t.Fatalf("defaults were written: %s", out)
	}
	// Every GetX of every type works on zero values.
	for _, typ := range types {
		callGetters(t, reflect.ValueOf(typ()))
	}
	callGetters(t, reflect.ValueOf(new(acp.AgentCapabilities)))
	callGetters(t, reflect.ValueOf(new(acp.PromptCapabilities)))
}

func callGetters(t *testing.T, v reflect.Value) {
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		if strings.HasPrefix(m.Name, "Get") && m.Type.NumIn() == 1 && m.Type.NumOut() == 1 {
			v.Method(i).Call(nil)
		}
	}
}

func TestRawMetaByteForByte(t *testing.T) {
	in := `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]},"_meta":{"b":1.50,"a":"\u00e9"}}`
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(in), &n); err != nil {
		t.Fatal(err)
	}
	if m, _ := n.Meta.Get(); string(m) != `{"b":1.50,"a":"\u00e9"}` {
		t.Fatalf("_meta: %s", m)
	}
	out, _ := json.Marshal(n, wire.Fidelity)
	if !bytes.Contains(out, []byte(`"_meta":{"b":1.50,"a":"\u00e9"}`)) {
		t.Fatalf("raw JSON is written byte for byte: %s", out)
	}
	var null acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]},"_meta":null}`), &null); err != nil || !null.Meta.IsNull() {
		t.Fatalf("null _meta stays null: %v", err)
	}
}

var benchDocs = map[string]string{
	"agent_message_chunk": `{"sessionId":"sess_abc123","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is the change to main.go you asked for."}}}`,
	"tool_call_update_meta": `{"sessionId":"sess_abc123","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_42","title":"edit_file","status":"completed",` +
		`"_meta":{"harn":{"audit":{"session_id":"session_42","mutation_scope":"apply_workspace"},"durationMs":11,"executionDurationMs":7,` +
		`"executor":"host_bridge","mutationStatus":"applied","parsing":false,"changedPaths":["src/main.go"]}}}}`,
}

// BenchmarkDecodeSessionNotification decodes session/update params, the
// message an agent sends most, from a decoder reused the way the runtime
// reuses one per connection.
func BenchmarkDecodeSessionNotification(b *testing.B) {
	for _, name := range []string{"agent_message_chunk", "tool_call_update_meta"} {
		in := []byte(benchDocs[name])
		b.Run(name, func(b *testing.B) {
			rd := bytes.NewReader(in)
			dec := jsontext.NewDecoder(rd)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(in)
				dec.Reset(rd)
				var n acp.SessionNotification
				if err := n.UnmarshalJSONFrom(dec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestBenchDocsDecode(t *testing.T) {
	for name, doc := range benchDocs {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		roundTrip(t, []byte(doc), &n)
	}
}

// CurrentProtocolVersion is the version the vendored v0.12.2 meta.json states (v1's
// schema is the same wire version: its SOURCES.md says so).
func TestCurrentProtocolVersion(t *testing.T) {
	data, err := os.ReadFile("../../spec/schemas/acp/v0.12.2/meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version int64 }
	if err := stdjson.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if int64(acp.CurrentProtocolVersion) != meta.Version {
		t.Fatalf("ProtocolVersion %d, meta.json %d", acp.CurrentProtocolVersion, meta.Version)
	}
	sources, err := os.ReadFile("../../spec/schemas/acp/v1/SOURCES.md")
	if err != nil || !bytes.Contains(sources, []byte("Wire `protocolVersion` is 1.")) {
		t.Fatalf("v1 SOURCES.md must state the wire version 1 (%v)", err)
	}
	out, err := json.Marshal(acp.InitializeRequest{ProtocolVersion: acp.CurrentProtocolVersion})
	if err != nil || !bytes.Contains(out, []byte(`"protocolVersion":1`)) {
		t.Fatalf("%s %v", out, err)
	}
}

// A session/prompt result whose stopReason v1 does not list (an agent
// sends "completed") decodes, keeps the value and a vendor's _meta as sent,
// and re-encodes byte for byte.
func TestStopReasonCompletedKeepsMeta(t *testing.T) {
	in := `{"stopReason":"completed","_meta":{"harn":{"terminal":{"kind":"natural","reason":"done","owner":"agent"}},"other":1}}`
	var r acp.PromptResponse
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.StopReason != "completed" || r.StopReason.Known() {
		t.Fatalf("stopReason %q known=%v", r.StopReason, r.StopReason.Known())
	}
	if meta, ok := r.Meta.Get(); !ok || !bytes.Contains(meta, []byte(`"terminal"`)) {
		t.Fatalf("_meta lost: %+v", r.Meta)
	}
	out, err := json.Marshal(&r, wire.Fidelity)
	if err != nil || string(out) != in {
		t.Fatalf("re-encoded as %s (%v)", out, err)
	}
}

// Plan entries with a status or priority v1 does not list decode, keep
// them, tell them apart and round-trip.
func TestPlanEntryUnknownStatusAndPriority(t *testing.T) {
	in := `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"urgent","status":"cancelled"},{"content":"b","priority":"high","status":"pending"}]}}`
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(in), &n); err != nil {
		t.Fatal(err)
	}
	e := n.Update.Plan.Entries
	if e[0].Status != "cancelled" || e[0].Status.Known() || e[0].Priority != "urgent" || e[0].Priority.Known() || !e[1].Status.Known() || !e[1].Priority.Known() {
		t.Fatalf("%+v", e)
	}
	out, err := json.Marshal(&n, wire.Fidelity)
	if err != nil || string(out) != in {
		t.Fatalf("re-encoded as %s (%v)", out, err)
	}
}
