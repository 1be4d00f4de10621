package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
)

var update = flag.Bool("update", false, "rewrite the golden files of the rendering tests")

// tourFile holds every session/update kind of ACP v0.12.2, and extension
// variants (see testdata/interop/acp-ts/README.md).
const tourFile = "../../testdata/interop/acp-ts/tour.json"

// harnFixture is Harn's own fixture of its session/update extensions.
const harnFixture = "../../../shared/fixtures/harn/upstream/crates/harn-serve/tests/fixtures/acp/session_update_extensions.json"

// missingShared skips a test whose reference material is absent, except in
// CI (CI set), where its absence is a failure.
func missingShared(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("reference material missing in CI: %v", err)
	}
	t.Skipf("reference material not present: %v", err)
}

// tourUpdates decodes the tour's updates, extension variants last.
func tourUpdates(t *testing.T) []acp.SessionNotification {
	t.Helper()
	data, err := os.ReadFile(tourFile)
	if err != nil {
		t.Fatal(err)
	}
	var tour struct {
		Updates          []jsontext.Value `json:"updates"`
		ExtensionUpdates []jsontext.Value `json:"extensionUpdates"`
	}
	if err := json.Unmarshal(data, &tour); err != nil {
		t.Fatal(err)
	}
	var out []acp.SessionNotification
	for _, raw := range append(tour.Updates, tour.ExtensionUpdates...) {
		var n acp.SessionNotification
		doc := `{"sessionId":"s","update":` + string(raw) + `}`
		if err := json.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		out = append(out, n)
	}
	return out
}

// renderAll renders notifications and returns the output.
func renderAll(color bool, ns []acp.SessionNotification) string {
	out := &syncBuffer{}
	r := newRenderer(out, color)
	for i := range ns {
		r.Update(&ns[i])
	}
	r.close(5 * time.Second)
	return out.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("rendering differs from %s (go test -update to accept):\n%s", path, got)
	}
}

// Every session/update kind renders readably: plain without a single escape
// sequence (what a pipe gets), and coloured for a terminal.
func TestRenderEveryUpdateKind(t *testing.T) {
	ns := tourUpdates(t)
	plain := renderAll(false, ns)
	if strings.Contains(plain, "\x1b") {
		t.Errorf("escape sequences in plain output:\n%q", plain)
	}
	golden(t, "tour.plain", plain)
	colored := renderAll(true, ns)
	if !strings.Contains(colored, "\x1b[33;1mtool\x1b[0m") || !strings.Contains(colored, "\x1b[32mcompleted\x1b[0m") {
		t.Errorf("no colour:\n%q", colored)
	}
	// Without the escape sequences it is the plain rendering.
	if stripped := ansi(colored); stripped != plain {
		t.Errorf("coloured output differs from plain beyond colour:\n%s", stripped)
	}
}

// ansi removes SGR escape sequences.
func ansi(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && s[j] != 'm' {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Harn's own fixture of its extension variants renders one "harn" line per
// update, from _meta.harn.
func TestRenderHarnExtensions(t *testing.T) {
	data, err := os.ReadFile(harnFixture)
	if err != nil {
		missingShared(t, err)
	}
	var msgs []struct {
		Params acp.SessionNotification `json:"params"`
	}
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	var ns []acp.SessionNotification
	for _, m := range msgs {
		ns = append(ns, m.Params)
	}
	text := renderAll(false, ns)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != len(ns) {
		t.Fatalf("%d lines for %d updates:\n%s", len(lines), len(ns), text)
	}
	for i, line := range lines {
		tag := ns[i].Update.Tag()
		if !strings.HasPrefix(line, "harn "+tag+": ") || len(line) <= len("harn "+tag+": ") {
			t.Errorf("update %d (%s) rendered as %q", i, tag, line)
		}
	}
	golden(t, "harn-extensions.plain", text)
}

// The "harn" label follows initialize's advertisement; a variant gen/acp
// does not know stays generic even when advertised.
func TestRenderExtensionsFollowTheAdvertisement(t *testing.T) {
	var n, unknown acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"stance_transition","_meta":{"harn":{"phase":"enter","escapeTool":"x"}}}`), &n.Update); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"harn_future","_meta":{"harn":{"phase":"enter"}}}`), &unknown.Update); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	r := newRenderer(out, false)
	r.Update(&n)
	r.Update(&unknown)
	r.setHarnExtensions([]string{"stance_transition", "harn_future"})
	r.Update(&n)
	r.Update(&unknown)
	r.close(time.Second)
	want := "update stance_transition: enter escape x\nupdate harn_future: phase=enter\n" +
		"harn stance_transition: enter escape x\nupdate harn_future: phase=enter\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// An agent cannot drive the terminal: control characters in its text are
// removed, line breaks kept only in streamed text.
func TestRenderStripsControlCharacters(t *testing.T) {
	var ns []acp.SessionNotification
	for _, doc := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"red\u001b[31m\u0007 and\nnext\tline"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c\u001b]0;title\u0007","title":"t\u001b[2J\nx","kind":"read"}`,
		`{"sessionUpdate":"progress","_meta":{"harn":{"phase":"p","message":"m\u001b[1m\nn"}}}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+doc+`}`), &n); err != nil {
			t.Fatal(err)
		}
		ns = append(ns, n)
	}
	text := renderAll(true, ns)
	for _, bad := range []string{"\x1b[31m", "\x07", "\x1b[2J", "\x1b]0", "\x1b[1mn"} {
		if strings.Contains(text, bad) {
			t.Errorf("%q reached the terminal:\n%q", bad, text)
		}
	}
	plain := ansi(text)
	for _, want := range []string{"agent: red[31m and\nnext\tline\n", `tool c]0;title "t[2J x" (read)`, "harn progress: p: m[1m n"} {
		if !strings.Contains(plain, want) {
			t.Errorf("rendering lacks %q:\n%q", want, plain)
		}
	}
}

// blockingWriter blocks every write until released.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// A stderr nobody reads never blocks the handler: lines are dropped and
// counted.
func TestRenderNeverBlocks(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	r := newRenderer(w, false)
	n := acp.SessionNotification{SessionID: "s", Update: acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: "code"}}}
	done := make(chan struct{})
	go func() {
		for range 3 * rendererQueue {
			r.Update(&n)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("rendering blocked on a writer that does not write")
	}
	close(w.release)
	r.close(10 * time.Second)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !strings.Contains(w.buf.String(), "lines not shown: stderr is not being read") {
		t.Fatalf("no note of the dropped lines (%d bytes written)", w.buf.Len())
	}
}

// Closing gives up after its timeout when stderr is never read, even with
// dropped lines to report: the host exits.
func TestRenderCloseWithStderrNeverRead(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	defer close(w.release)
	r := newRenderer(w, false)
	n := acp.SessionNotification{SessionID: "s", Update: acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: "code"}}}
	for range 3 * rendererQueue {
		r.Update(&n)
	}
	closed := make(chan struct{})
	go func() {
		r.close(100 * time.Millisecond)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close waited for a stderr nobody reads")
	}
}

func TestColorMode(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for mode, want := range map[string]bool{"always": true, "never": false, "auto": false, "": false} {
		if got, err := colorMode(mode, f); err != nil || got != want {
			t.Errorf("%q on a file: %v %v", mode, got, err)
		}
	}
	if _, err := colorMode("sometimes", f); err == nil {
		t.Error("a bad mode is accepted")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if got, _ := colorMode("auto", null); got {
		t.Error("auto colours /dev/null")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer tty.Close()
		t.Setenv("NO_COLOR", "")
		t.Setenv("TERM", "xterm")
		if got, _ := colorMode("auto", tty); !got {
			t.Error("auto does not colour a terminal")
		}
		t.Setenv("NO_COLOR", "1")
		if got, _ := colorMode("auto", tty); got {
			t.Error("auto colours despite NO_COLOR")
		}
	}
}

// Every Harn variant is rendered from its typed fields (those with none to
// show, session_rollback and session_redo, generically from their members),
// and every variant gen/acp adds beyond ACP v0.12.2's has a case here.
func TestRenderTypedHarnVariants(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range []struct{ update, want string }{
		{`{"sessionUpdate":"reminder_emitted","_meta":{"harn":{"reminder":{"reminderId":"reminder-1","tags":["token_pressure"],` +
			`"body":"Refresh the compacted context before answering.","roleHint":"developer","renderedRole":"user","source":"stdlib_provider","ttlTurns":2}}}}`,
			`harn reminder_emitted: reminder-1 "Refresh the compacted context before answering." token_pressure`},
		{`{"sessionUpdate":"user_message","messageId":"msg_inj_1","content":"use the staging db"}`, "harn user_message: msg_inj_1 use the staging db"},
		{`{"sessionUpdate":"user_message","messageId":"msg_inj_2","content":[{"type":"text","text":"look"},{"type":"resource_link","uri":"file:///a","name":"a"}]}`,
			"harn user_message: msg_inj_2 look link a file:///a"},
		{`{"sessionUpdate":"worker_update","content":{"worker_id":"w1","worker_name":"review","status":"running"}}`, "harn worker_update: review (w1) -> running (legacy)"},
		{`{"sessionUpdate":"artifact","_meta":{"harn":{"artifactId":"a1","kind":"report","title":"Coverage","mimeType":"text/html"}}}`,
			`harn artifact: "Coverage" report text/html a1`},
		{`{"sessionUpdate":"log","_meta":{"harn":{"level":"error","message":"boom"}}}`, "harn log: [error] boom"},
		{`{"sessionUpdate":"hitl_resolved","_meta":{"harn":{"requestId":"hitl_approval_1","kind":"approval","outcome":"approved"}}}`,
			"harn hitl_resolved: approval hitl_approval_1 approved"},
		{`{"sessionUpdate":"transcript_projected","_meta":{"harn":{"policy":"keep","keptCount":3,"droppedCount":1,"reclaimedTokens":900}}}`,
			"harn transcript_projected: kept 3, dropped 1, reclaimed tokens 900 policy keep"},
		{`{"sessionUpdate":"transcript_compacted","_meta":{"harn":{"mode":"auto","strategy":"summary","archivedMessages":12,"reason":"token_pressure"}}}`,
			"harn transcript_compacted: (summary, auto) archived 12 messages token_pressure"},
		{`{"sessionUpdate":"progress","_meta":{"harn":{"phase":"index","message":"scanning","progress":2,"total":8}}}`, "harn progress: index: scanning (2/8)"},
		{`{"sessionUpdate":"skill_activated","_meta":{"harn":{"skillName":"deploy","iteration":2,"reason":"host match"}}}`, "harn skill_activated: deploy iteration 2 host match"},
		{`{"sessionUpdate":"skill_deactivated","_meta":{"harn":{"skillName":"deploy","iteration":3}}}`, "harn skill_deactivated: deploy iteration 3"},
		{`{"sessionUpdate":"skill_scope_tools","_meta":{"harn":{"skillName":"deploy","allowedTools":["bash","git"]}}}`, "harn skill_scope_tools: deploy: bash, git"},
		{`{"sessionUpdate":"skill_narrow","_meta":{"harn":{"reason":"scoped to deploy","removedTools":["edit","web"],"remainingTools":["bash"]}}}`,
			"harn skill_narrow: scoped to deploy removed edit, web remaining bash"},
		{`{"sessionUpdate":"tool_search_query","_meta":{"harn":{"toolUseId":"s1","name":"tool_search","query":"open file","strategy":"bm25","mode":"client"}}}`,
			"harn tool_search_query: tool_search query open file (bm25, client) s1"},
		{`{"sessionUpdate":"tool_search_result","_meta":{"harn":{"toolUseId":"s1","promoted":["read",{"name":"grep"}],"strategy":"bm25"}}}`,
			`harn tool_search_result: promoted read, {"name":"grep"} (bm25) s1`},
		{`{"sessionUpdate":"fs_watch","_meta":{"harn":{"subscriptionId":"w1","events":[{"kind":"create","paths":["/p/a.go"]},` +
			`{"kind":"modify","paths":["/p/b.go"],"relative_paths":["b.go"]},{"kind":"error","error":"watch\u001b limit"}]}}}`,
			`harn fs_watch: w1: create /p/a.go; modify b.go; error error "watch limit"`},
		{`{"sessionUpdate":"handoff","_meta":{"harn":{"handoffId":"h1","artifactId":"a1","handoff":{"task":"Review the patch","target_persona_or_human":{"label":"reviewer"}}}}}`,
			`harn handoff: h1 to reviewer "Review the patch" artifact a1`},
		{`{"sessionUpdate":"hitl_request","_meta":{"harn":{"requestId":"q1","kind":"question","payload":{}}}}`, "harn hitl_request: question q1"},
		{`{"sessionUpdate":"worker_update","_meta":{"harn":{"workerId":"w1","workerName":"review","workerTask":"review pr","event":"WorkerSpawned","status":"running"}}}`,
			`harn worker_update: review (w1) WorkerSpawned -> running "review pr"`},
		{`{"sessionUpdate":"stance_transition","_meta":{"harn":{"phase":"exit","allowedTools":["read"],"justification":"done editing"}}}`,
			"harn stance_transition: exit allowed read done editing"},
		{`{"sessionUpdate":"session_truncated","keptTurnCount":4,"removedTurnCount":2,"newTipTurnId":"turn_4","reason":"user"}`,
			"update session_truncated: kept 4 turns, removed 2, tip turn_4 user"},
		{`{"sessionUpdate":"session_rollback","turnId":"turn_3"}`, "update session_rollback: turnId=turn_3"},
		{`{"sessionUpdate":"session_redo","turnId":"turn_4"}`, "update session_redo: turnId=turn_4"},
		{`{"sessionUpdate":"call_start","content":{"toolCallId":"c1","call_type":"builtin","name":"read_file","script":"main"}}`,
			"update call_start: read_file (builtin) c1"},
		{`{"sessionUpdate":"call_progress","content":{"toolCallId":"c1","delta":"raw","visible_delta":"reading…","accumulated_tokens":12}}`,
			`update call_progress: c1 "reading…" 12 tokens`},
		{`{"sessionUpdate":"call_end","content":{"toolCallId":"c1","name":"read_file","status":"completed","duration_ms":31}}`,
			"update call_end: read_file c1 -> completed 31ms"},
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+tc.update+`}`), &n); err != nil {
			t.Fatalf("%s: %v", tc.update, err)
		}
		covered[setVariant(t, &n.Update)] = true
		out := &syncBuffer{}
		r := newRenderer(out, false)
		r.setHarnExtensions(append(defaultHarnExtensions, "live_session_client", "stance_transition"))
		r.Update(&n)
		r.close(time.Second)
		if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}

	// live_session_client, as servers/harnvm/live sends it.
	var n acp.SessionNotification
	doc := `{"sessionId":"s","update":{"sessionUpdate":"live_session_client","_meta":{"harn":{"action":"takeover","state":{"client":` +
		`{"client_id":"portal","mode":"controller","attached_at":"1","last_seen_at":"1","prompt_injection":true,"permission_routing":true,"metadata":{}},` +
		`"previous_controller_id":"tui","active_controller_id":"portal","clients":[]}}}}}`
	if err := json.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	r := newRenderer(out, false)
	r.setHarnExtensions([]string{"live_session_client"})
	r.Update(&n)
	r.close(time.Second)
	if got := out.String(); got != "harn live_session_client: takeover portal controller (controller portal, 0 clients)\n" {
		t.Errorf("live_session_client: %q", got)
	}
	covered[setVariant(t, &n.Update)] = true

	// ACP v1's variants beyond v0.12.2.
	for _, tc := range []struct{ update, want string }{
		{`{"sessionUpdate":"usage_update","used":1200,"size":200000,"cost":{"amount":0.25,"currency":"USD"}}`, "usage: 1200/200000 tokens cost 0.25 USD"},
		{`{"sessionUpdate":"usage_update","used":5,"size":10}`, "usage: 5/10 tokens"},
		{`{"sessionUpdate":"notice","severity":"warning","title":"Rate limited","description":"retrying in 5s"}`, `notice: warning "Rate limited" retrying in 5s`},
		{`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"failed","error":"too\u001b long"}`, `compaction: c1 failed error "too long"`},
		{`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"summary"}}`, "compaction c1: summary"},
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+tc.update+`}`), &n); err != nil {
			t.Fatalf("%s: %v", tc.update, err)
		}
		covered[setVariant(t, &n.Update)] = true
		out := &syncBuffer{}
		r := newRenderer(out, false)
		r.Update(&n)
		r.close(time.Second)
		if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}

	// ACP v0.12.2's own variants are the tour's (TestRenderEveryUpdateKind).
	for _, n := range tourUpdates(t) {
		covered[setVariant(t, &n.Update)] = true
	}
	for f := range reflect.TypeFor[acp.SessionUpdate]().Fields() {
		if f.Type.Kind() == reflect.Pointer && !covered[f.Name] {
			t.Errorf("SessionUpdate.%s: no rendering test", f.Name)
		}
	}
}

// setVariant names the SessionUpdate field a decoded update set.
func setVariant(t *testing.T, u *acp.SessionUpdate) string {
	t.Helper()
	v := reflect.ValueOf(u).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return v.Type().Field(i).Name
		}
	}
	return "Unknown"
}

// The runtime's top-level notifications (agent/idle in both shapes,
// _harn/agentEvent, progress, log, output) are rendered too.
func TestRenderBridgeNotifications(t *testing.T) {
	out := &syncBuffer{}
	r := newRenderer(out, false)
	decode := func(doc string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(doc), v); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
	}
	var idle, wait harn.AgentIdleParams
	decode(`{"iteration":3,"backoff_ms":1000,"persist_path":"/tmp/state","watch_paths":["src"]}`, &idle)
	decode(`{"session_id":"s1","timeout_ms":5000}`, &wait)
	r.Idle(&idle)
	r.Idle(&wait)
	var ev, unknown harn.AgentEvent
	decode(`{"sessionId":"s","kind":"budget_exhausted","budget":"llm_cost_usd"}`, &ev)
	decode(`{"sessionId":"s","kind":"a_future_kind","x":1}`, &unknown)
	r.AgentEvent(&ev)
	r.AgentEvent(&unknown)
	r.Progress(&harn.Progress{Phase: "llm", Message: "warming up"})
	r.Log(&harn.Log{Level: "debug", Message: "x"})
	r.Output(&harn.OutputParams{Text: "printed\u001b[2J"})
	r.close(time.Second)
	want := "idle: iteration 3, backoff 1000ms, persist /tmp/state, watching src\n" +
		"idle: session s1, timeout 5000ms\n" +
		"event budget_exhausted: budget=llm_cost_usd\n" +
		"event a_future_kind: x=1\n" +
		"bridge progress: llm: warming up\n" +
		"bridge log: [debug] x\n" +
		"output: printed[2J\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// An update with nothing to show makes no line: no "agent:" label before
// an empty chunk, no "session:" line for a session_info_update of _meta
// alone, no bare "tool ID" line for an update that names only its call
// (problem 6 of issue 34: each of the six agents sends some of these).
func TestRenderNoEmptyLines(t *testing.T) {
	var ns []acp.SessionNotification
	for _, raw := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}`,
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":""}}`,
		`{"sessionUpdate":"session_info_update","_meta":{"claudeCode":{"x":1}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_1"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","_meta":{"claudeCode":{"toolName":"Read"}}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" there."}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"completed"}`,
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"\n\n"}}`,
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"\nPondering."}}`,
		`{"sessionUpdate":"session_info_update","title":"Notes"}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+raw+`}`), &n); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		ns = append(ns, n)
	}
	got := renderAll(false, ns)
	want := "agent: Hello there.\ntool call_2 completed\nthinking: Pondering.\nsession: title \"Notes\"\n"
	if got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
}
