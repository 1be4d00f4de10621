package harn_test

import (
	"bufio"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// gen/acp keeps a Harn update whose tag it does not know in Unknown;
// UpdateOf types it, and ACP turns it back into the same document. ACP's
// own variants give the zero SessionUpdate, a tag neither knows comes back
// in Unknown, and a Harn tag of the wrong shape is a typed error.
func TestUpdateOf(t *testing.T) {
	in := `{"_meta":{"harn":{"skillName":"rust","iteration":2},"zed":1},"sessionUpdate":"skill_activated","content":{"type":"text","text":"looks like a chunk"}}`
	var u acp.SessionUpdate
	if err := json.Unmarshal([]byte(in), &u); err != nil {
		t.Fatal(err)
	}
	if u.Unknown == nil || u.AgentMessageChunk != nil || u.Tag() != "skill_activated" {
		t.Fatalf("gen/acp must keep Harn's update in Unknown: %+v", u)
	}
	h, err := harn.UpdateOf(u)
	if err != nil || h.SkillActivated == nil || h.SkillActivated.Meta.Harn.SkillName != "rust" || *h.SkillActivated.Meta.Harn.Iteration != 2 || h.Tag() != "skill_activated" {
		t.Fatalf("UpdateOf: %+v %v", h, err)
	}
	// A member Harn's variant does not name is kept in its Extra, never
	// taken for a chunk's content.
	if v, ok := h.SkillActivated.Extra.Get("content"); !ok || string(v) != `{"type":"text","text":"looks like a chunk"}` {
		t.Fatalf("content: %+v", h.SkillActivated.Extra)
	}
	back, err := h.ACP()
	if err != nil || back.Unknown == nil {
		t.Fatalf("ACP: %+v %v", back, err)
	}
	if out, _ := json.Marshal(back, wire.Fidelity); !sameJSON(t, []byte(in), out) {
		t.Fatalf("ACP re-encoded as %s", out)
	}
	n, err := h.Notification("s1")
	if err != nil || n.SessionID != "s1" || n.Update.Tag() != "skill_activated" {
		t.Fatalf("Notification: %+v %v", n, err)
	}

	// One of ACP's own: nothing of Harn's.
	var chunk acp.SessionUpdate
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`), &chunk); err != nil {
		t.Fatal(err)
	}
	if h, err := harn.UpdateOf(chunk); err != nil || h.Tag() != "" || h.Unknown != nil {
		t.Fatalf("ACP's variant: %+v %v", h, err)
	}
	// A tag neither knows: kept as sent.
	later := `{"sessionUpdate":"skill_forgotten","x":[1]}`
	var lu acp.SessionUpdate
	if err := json.Unmarshal([]byte(later), &lu); err != nil {
		t.Fatal(err)
	}
	if h, err := harn.UpdateOf(lu); err != nil || string(h.Unknown) != later || h.Tag() != "skill_forgotten" || h.Progress != nil {
		t.Fatalf("unknown tag: %+v %v", h, err)
	}
	// ACP of an Unknown holding one of ACP's variants gives that variant.
	if back, err := (harn.SessionUpdate{Unknown: jsontext.Value(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`)}).ACP(); err != nil || back.AgentMessageChunk == nil {
		t.Fatalf("ACP of an ACP variant: %+v %v", back, err)
	}
	// A plain ACP agent's progress of another shape is ACP's Unknown, and not
	// Harn's progress.
	var p acp.SessionUpdate
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"progress","percent":40}`), &p); err != nil || p.Unknown == nil {
		t.Fatalf("plain progress: %+v %v", p, err)
	}
	_, err = harn.UpdateOf(p)
	var de *wire.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, wire.ErrMissingMember) && !errors.Is(err, wire.ErrForbiddenMember) {
		t.Fatalf("a progress of another shape: %v", err)
	}
}

// Harn's tool-call fixture: ACP keeps the _meta as sent, ToolLifecycleOf
// types it (the lifecycle fields are fields, enums keep values they do not
// list), and the whole document round-trips.
func TestToolLifecycleFixture(t *testing.T) {
	data := readShared(t, upstreamDir+"/conformance/protocols/fixtures/acp/session_update_tool_call_harn_meta.valid.json")
	var fixture struct {
		Documents []struct {
			Params stdjson.RawMessage `json:"params"`
		} `json:"documents"`
	}
	if err := stdjson.Unmarshal(data, &fixture); err != nil || len(fixture.Documents) != 2 {
		t.Fatalf("fixture: %v", err)
	}
	var n acp.SessionNotification
	if err := json.Unmarshal(fixture.Documents[0].Params, &n, harn.ContractHarn.Options()); err != nil {
		t.Fatal(err)
	}
	h, err := harn.ToolLifecycleOf(n.Update.ToolCall.Meta)
	if err != nil || h == nil || h.Parsing == nil || !*h.Parsing || *h.Audit.SessionID != "session_42" || *h.Audit.MutationScope != "apply_workspace" {
		t.Fatalf("tool_call _meta.harn: %+v %v", h, err)
	}
	var u acp.SessionNotification
	if err := json.Unmarshal(fixture.Documents[1].Params, &u, harn.ContractHarn.Options()); err != nil {
		t.Fatal(err)
	}
	h, err = harn.ToolLifecycleOf(u.Update.ToolCallUpdate.Meta)
	if err != nil || *h.DurationMS != 11 || *h.ExecutionDurationMS != 7 || *h.Error != "malformed args" ||
		*h.ErrorCategory != harn.ToolErrorCategoryParseAborted || *h.MutationStatus != harn.MutationStatusNotApplied ||
		*h.Executor.String != harn.ToolExecutorNameHostBridge || *h.Parsing || *h.RawInputPartial != `{"path":"src` {
		t.Fatalf("tool_call_update _meta.harn: %+v %v", h, err)
	}
	for i, v := range []any{&n, &u} {
		if out, err := json.Marshal(v, wire.Fidelity); err != nil || !sameJSON(t, fixture.Documents[i].Params, out) {
			t.Fatalf("round trip: %s %v", out, err)
		}
	}
}

// The accessors read only _meta.harn: absent, null or missing harn is nil;
// other keys are left alone; a harn member of another shape is an error;
// SetMeta writes harn and keeps the other keys in place.
func TestMetaAccessors(t *testing.T) {
	for _, m := range []wire.Nullable[jsontext.Value]{{}, wire.Null[jsontext.Value](), wire.Some(jsontext.Value(`{"zed":{"x":1}}`))} {
		if h, err := harn.ToolLifecycleOf(m); h != nil || err != nil {
			t.Errorf("%+v: %+v %v", m, h, err)
		}
	}
	meta := wire.Some(jsontext.Value(`{"zed":{"x":1},"harn":{"executor":{"kind":"mcp_server","serverName":"linear"},"errorCategory":"new_category","mutationStatus":"partially_applied","newField":[1]}}`))
	h, err := harn.ToolLifecycleOf(meta)
	if err != nil || h.Executor.Object == nil || h.Executor.Object.MCPServer == nil || h.Executor.Object.MCPServer.ServerName != "linear" {
		t.Fatalf("executor object: %+v %v", h, err)
	}
	if h.ErrorCategory.Known() || *h.ErrorCategory != "new_category" || h.MutationStatus.Known() {
		t.Fatalf("open enums keep values they do not list: %v %v", *h.ErrorCategory, *h.MutationStatus)
	}
	if v, ok := h.Extra.Get("newField"); !ok || string(v) != "[1]" {
		t.Fatalf("unknown harn members are kept: %+v", h.Extra)
	}
	for _, bad := range []string{`{"harn":{"durationMs":"soon"}}`, `{"harn":[]}`, `[]`, `{"harn":{"durationMs":-1}}`} {
		if _, err := harn.ToolLifecycleOf(wire.Some(jsontext.Value(bad))); !errors.As(err, new(*wire.DecodeError)) && !errors.Is(err, wire.ErrWrongKind) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if pr, err := harn.PromptResultOf(wire.Some(jsontext.Value(`{"harn":{"terminal":{"kind":"natural","reason":"done","owner":"agent"}},"other":1}`))); err != nil || pr.Terminal.Kind != harn.TerminalKindNatural {
		t.Fatalf("PromptResultOf: %+v %v", pr, err)
	}
	if c, err := harn.ContentFieldsOf(wire.Some(jsontext.Value(`{"harn":{"visible_text":"hi"}}`))); err != nil || *c.VisibleText != "hi" {
		t.Fatalf("ContentFieldsOf: %+v %v", c, err)
	}
	if a, err := harn.AgentCapabilitiesOf(wire.Some(jsontext.Value(`{"harn":{"sessionUpdateExtensions":["progress"]}}`))); err != nil || a.SessionUpdateExtensions[0] != "progress" {
		t.Fatalf("AgentCapabilitiesOf: %+v %v", a, err)
	}
	if p, err := harn.PermissionResponseOf(wire.Some(jsontext.Value(`{"harn":{}}`))); err != nil || p == nil {
		t.Fatalf("PermissionResponseOf: %+v %v", p, err)
	}

	// SetMeta: the other keys stay, in their place.
	m := wire.Some(jsontext.Value(`{"zed":{"x":1},"harn":{"parsing":true},"after":2}`))
	if err := harn.SetMeta(&m, &harn.ToolLifecycle{ToolName: new("read")}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := m.Get(); string(raw) != `{"zed":{"x":1},"harn":{"toolName":"read"},"after":2}` {
		t.Fatalf("SetMeta: %s", raw)
	}
	if err := harn.SetMeta(&m, (*harn.ToolLifecycle)(nil)); err != nil {
		t.Fatal(err)
	}
	if raw, _ := m.Get(); string(raw) != `{"zed":{"x":1},"after":2}` {
		t.Fatalf("SetMeta nil: %s", raw)
	}
	var absent wire.Nullable[jsontext.Value]
	if err := harn.SetMeta(&absent, (*harn.ContentFields)(nil)); err != nil || !absent.IsAbsent() {
		t.Fatalf("SetMeta nil on absent: %+v %v", absent, err)
	}
	if err := harn.SetMeta(&absent, &harn.ContentFields{VisibleDelta: new("d")}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := absent.Get(); string(raw) != `{"harn":{"visible_delta":"d"}}` {
		t.Fatalf("SetMeta on absent: %s", raw)
	}
	notObject := wire.Some(jsontext.Value(`[1]`))
	if err := harn.SetMeta(&notObject, &harn.PromptResult{}); !errors.Is(err, harn.ErrMetaNotObject) {
		t.Fatalf("SetMeta on an array: %v", err)
	}
}

// On a Harn connection Harn's contract checks Harn's updates, which ACP
// keeps in Unknown: one that does not fit Harn's schema never reaches the
// handler (a FrameBadParams report naming the member); on a plain ACP
// connection the same document is delivered, in Unknown.
func TestHarnConnectionChecksHarnUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bad := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"progress","percent":40}}}`
	good := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"progress","_meta":{"harn":{"phase":"p","message":"m"}}}}}`
	for _, harnConn := range []bool{true, false} {
		got := make(chan acp.SessionUpdate, 2)
		frameErrs := make(chan *rpc.FrameError, 2)
		client := &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			got <- n.Update
			return nil
		}}
		inR, inW := io.Pipe()
		opts := &rpc.Options{OnFrameError: func(fe *rpc.FrameError) { frameErrs <- fe }}
		var conn *rpc.Conn
		if harnConn {
			conn = harn.NewBridgeConn(inR, io.Discard, harn.HostHandler(nil, client), opts)
		} else {
			conn = acp.NewConn(inR, io.Discard, client, opts)
		}
		w := bufio.NewWriter(inW)
		fmt.Fprintln(w, bad)
		fmt.Fprintln(w, good)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if harnConn {
			select {
			case fe := <-frameErrs:
				var de *wire.DecodeError
				if fe.Kind != rpc.FrameBadParams || !errors.Is(fe.Err, rpc.ErrInvalidParams) || !errors.As(fe.Err, &de) || !strings.HasPrefix(de.Type, "Progress") {
					t.Errorf("report: %+v (%v)", fe, fe.Err)
				}
			case <-ctx.Done():
				t.Fatal("no report")
			}
		}
		var first acp.SessionUpdate
		select {
		case first = <-got:
		case <-ctx.Done():
			t.Fatal("not delivered")
		}
		switch h, err := harn.UpdateOf(first); {
		case harnConn && (err != nil || h.Progress == nil):
			t.Errorf("Harn connection: the good update: %+v %v", h, err)
		case !harnConn && (first.Unknown == nil || !strings.Contains(string(first.Unknown), "percent")):
			t.Errorf("plain connection: the plain agent's progress: %+v", first)
		}
		inW.Close()
		if err := conn.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
}

// A Harn host types the updates ACP does not know with one call.
func ExampleUpdateOf() {
	params := []byte(`{"sessionId":"s","update":{"sessionUpdate":"progress","_meta":{"harn":{"phase":"index","message":"indexing","progress":3,"total":8}}}}`)
	var n acp.SessionNotification
	if err := json.Unmarshal(params, &n); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ACP knows it:", n.Update.Unknown == nil)
	u, err := harn.UpdateOf(n.Update)
	if err != nil {
		fmt.Println(err)
		return
	}
	if p := u.Progress; p != nil {
		fmt.Println(u.Tag(), p.Meta.Harn.Message, *p.Meta.Harn.Progress, "of", *p.Meta.Harn.Total)
	}
	// Output:
	// ACP knows it: false
	// progress indexing 3 of 8
}

// Harn's fields of a tool call live under its _meta.harn, which ACP keeps
// as sent.
func ExampleToolLifecycleOf() {
	tc := acp.ToolCallUpdate{ToolCallID: "t1", Meta: wire.Some(jsontext.Value(`{"harn":{"durationMs":12,"executor":"host_bridge"}}`))}
	h, err := harn.ToolLifecycleOf(tc.Meta)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*h.DurationMS, *h.Executor.String)

	call := acp.ToolCall{ToolCallID: "t2", Title: "Read file"}
	if err := harn.SetMeta(&call.Meta, &harn.ToolLifecycle{ToolName: new("read")}); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(call)
	fmt.Println(string(out))
	// Output:
	// 12 host_bridge
	// {"toolCallId":"t2","title":"Read file","_meta":{"harn":{"toolName":"read"}}}
}
