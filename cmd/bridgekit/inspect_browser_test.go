package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
)

// browser drives a headless Chromium for the inspector's tests.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts Debian's headless Chromium with a window of w×h (it
// skips the test where there is none, outside CI).
func newBrowser(t *testing.T, w, h int) *browser {
	t.Helper()
	chrome := findChromium()
	if chrome == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on PATH (.ci/run installs Debian's chromium)")
		}
		t.Skip("no Chromium on PATH")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(w, h),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return &browser{t: t, ctx: bctx}
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser, %s: %v", what, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser, text of %s: %v", sel, err)
	}
	return s
}

func (b *browser) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("browser, %s: %v", js, err)
	}
	return v
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		b.t.Fatalf("browser, count %s: %v", sel, err)
	}
	return n
}

// set sets a form field's value and fires its input and change events.
func (b *browser) set(sel, v string) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("input")); e.dispatchEvent(new Event("change")); return "" })()`, sel, v))
}

// shot keeps a screenshot in artifactDir.
func (b *browser) shot(name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(artifactDir(b.t), name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
}

// loadRecording puts the real recording at path into mem as session name.
func loadRecording(t *testing.T, mem *inspect.Memory, path, name string) {
	t.Helper()
	format, err := traffic.Sniff(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := traffic.Read(context.Background(), path, format, "", func(_ int, r *tracelog.Record) error {
		r.Session = name
		return mem.Put(r)
	}); err != nil {
		t.Fatal(err)
	}
}

// The diff of two real sessions in a real (headless) Chromium: codex-acp
// 2.6.0's turn recorded twice through the host (testdata/acp/traffic).
// Under replay's rules the session ids (UUIDs, in 36 frames) are bound,
// so no row differs by an id: the rows that differ are what codex said
// differently (one more _auth/status_update; its token counts). A changed
// row opens to the two frames side by side, the difference marked at its
// pointer. Without the rules, every frame naming the session differs.
func TestInspectorDiffOfRealSessionsInBrowser(t *testing.T) {
	b := newBrowser(t, 1280, 900)
	mem := inspect.NewMemory(64 << 20)
	loadRecording(t, mem, "../../testdata/acp/traffic/codex-acp-2.6.0/turn.jsonl", "codex-run-1")
	loadRecording(t, mem, "../../testdata/acp/traffic/codex-acp-2.6.0/turn-2.jsonl", "codex-run-2")
	srv := httptest.NewServer(inspect.NewHandler(mem, inspectOptions(true)))
	defer srv.Close()

	b.do("open", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#sessions li[data-session="codex-run-2"]`)),
		chromedp.Click(chromedp.CSS(`#views button[data-view="diff"]`)), chromedp.WaitVisible(chromedp.CSS(`#diff-go`)))
	b.set(`#diff-a`, "codex-run-1")
	b.set(`#diff-b`, "codex-run-2")
	b.do("diff", chromedp.Click(chromedp.CSS(`#diff-go`)), chromedp.WaitVisible(chromedp.CSS(`#diff[data-changes] tbody tr`)))
	if n, ch := b.count(`#diff tbody tr`), b.eval(`document.querySelector("#diff").dataset.changes`); n != 47 || ch != "6" {
		t.Errorf("diff: %d rows, %s changes (want 47, 6)", n, ch)
	}
	// No spurious row: the one frame of B only is the extra status
	// notification, and every changed row differs in token counts only.
	if n := b.count(`#diff tbody tr.removed`); n != 0 {
		t.Errorf("%d rows of A only", n)
	}
	if n, row := b.count(`#diff tbody tr.added`), b.text(`#diff tbody tr.added`); n != 1 || !strings.Contains(row, "_auth/status_update") {
		t.Errorf("%d rows of B only: %q", n, row)
	}
	notes := b.eval(`[...document.querySelectorAll("#diff tbody tr.changed td.note")].map((e) => e.textContent).join("\n")`)
	if n := b.count(`#diff tbody tr.changed`); n != 5 {
		t.Errorf("%d changed rows, want 5:\n%s", n, notes)
	}
	for _, note := range strings.Split(notes, "\n") {
		for _, p := range strings.Split(note, ", ") {
			if !strings.HasSuffix(p, "/used") && !strings.HasSuffix(p, "Tokens") {
				t.Errorf("a changed row differs at %q (notes %q)", p, note)
			}
		}
	}
	if s := b.text(`#diff-summary`); !strings.Contains(s, "1 values bound") || !strings.Contains(s, "uuids") {
		t.Errorf("summary %q", s)
	}
	// A changed row opens to the two frames side by side.
	b.do("open a changed row", chromedp.Click(chromedp.CSS(`#diff tbody tr.changed[data-a="20"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pair .side[data-side="B"] .differs`)))
	if a, bb := b.text(`#pair .side[data-side="A"] .differs`), b.text(`#pair .side[data-side="B"] .differs`); !strings.Contains(a, "10489") || !strings.Contains(bb, "10488") {
		t.Errorf("side by side: A %q, B %q", a, bb)
	}
	if n := b.count(`#pair .differs[data-pointer="/params/update/used"]`); n != 2 {
		t.Errorf("%d marks at /params/update/used, want one a side", n)
	}
	if title := b.text(`#detail-title`); !strings.Contains(title, "A #20") || !strings.Contains(title, "B #21") {
		t.Errorf("detail title %q", title)
	}
	b.shot("inspector-diff-real.png")

	// Without replay's rules, the session id is a difference in every
	// frame that names it.
	b.do("rules off", chromedp.Click(chromedp.CSS(`#diff-rules`)), chromedp.Click(chromedp.CSS(`#diff-go`)),
		chromedp.WaitVisible(chromedp.CSS(`#diff[data-changes] tbody tr`)))
	if ch := b.eval(`document.querySelector("#diff").dataset.changes`); ch == "6" {
		t.Errorf("without the rules: still %s changes", ch)
	}
	if n := b.count(`#diff tbody tr.changed`); n < 35 {
		t.Errorf("without the rules: %d changed rows", n)
	}
	b.shot("inspector-diff-real-norules.png")
}

// Sharing, in a real (headless) Chromium at 1280×800, over codex-acp
// 0.16.0's real session (its permission requests have UUID ids): the
// timeline fits the screen with long ids elided, times are absolute (UTC),
// the keyboard moves through the rows and switches views, one frame is
// copied, the session is exported as a redacted trace and imported back,
// and the diff of the import with the original is empty.
func TestInspectorSharingInBrowser(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	mem := inspect.NewMemory(64 << 20)
	const path = "../../testdata/acp/traffic/codex-acp-0.16.0/turn.jsonl"
	loadRecording(t, mem, path, "codex-016")
	srv := httptest.NewServer(inspect.NewHandler(mem, inspectOptions(true)))
	defer srv.Close()
	recs := readRecording(t, path)

	b.do("open", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#timeline tbody[data-session="codex-016"] tr[data-seq="31"]`)))
	// The columns fit: nothing wider than the page, the table no wider
	// than its pane, and the UUID ids elided (whole in their tooltip).
	if w := b.eval(`String(document.documentElement.scrollWidth)`); w != "1280" {
		t.Errorf("the page is %s px wide at 1280", w)
	}
	if over := b.eval(`String(document.querySelector("#timeline").scrollWidth - document.querySelector("#centre").clientWidth)`); !strings.HasPrefix(over, "-") && over != "0" {
		t.Errorf("the timeline is %s px wider than its pane", over)
	}
	var uuidSeq int64
	for _, r := range recs {
		if r.Type == tracelog.TypeFrame && len(r.ID) > 30 {
			uuidSeq = r.Seq
			break
		}
	}
	idCell := fmt.Sprintf(`#timeline tbody tr[data-seq="%d"] td.id`, uuidSeq)
	if id, title := b.text(idCell), b.eval(`document.querySelector('`+idCell+`').title`); uuidSeq == 0 || len([]rune(id)) > 14 || !strings.Contains(id, "…") || title != string(recs[uuidSeq].ID) {
		t.Errorf("frame %d: id shown %q, title %q (the frame's id %s)", uuidSeq, id, title, recs[uuidSeq].ID)
	}
	// Absolute times, UTC to the millisecond.
	for _, seq := range []int64{1, 17} {
		want := recs[seq].Time.UTC().Format("15:04:05.000")
		if got := b.text(fmt.Sprintf(`#timeline tbody tr[data-seq="%d"] td.time`, seq)); got != want {
			t.Errorf("frame %d's time %q, want %q", seq, got, want)
		}
	}
	b.shot("inspector-1280.png")

	// The keyboard: j/k and the arrows move, 1-5 switch views, / goes to
	// the search box and Esc leaves it.
	title := func() string { return b.text(`#detail-title`) }
	b.do("j", chromedp.KeyEvent("j"))
	if got := title(); !strings.HasPrefix(got, "#1 ") {
		t.Errorf("after j: %q", got)
	}
	b.do("j j ↓", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent(kb.ArrowDown))
	if got := title(); !strings.HasPrefix(got, "#4 ") {
		t.Errorf("after j j ↓: %q", got)
	}
	b.do("k", chromedp.KeyEvent("k"))
	if got := title(); !strings.HasPrefix(got, "#3 ") {
		t.Errorf("after k: %q", got)
	}
	if n := b.count(`#timeline tbody tr.on[data-seq="3"]`); n != 1 {
		t.Errorf("the row of #3 is not marked")
	}
	// c copies the frame.
	b.do("c", chromedp.KeyEvent("c"), chromedp.WaitVisible(chromedp.CSS(`#copied[data-seq="3"]`)))
	if got := b.text(`#copied`); !strings.HasPrefix(got, "copied #3") {
		t.Errorf("copy: %q", got)
	}
	b.do("3", chromedp.KeyEvent("3"), chromedp.WaitVisible(chromedp.CSS(`#view-context.on #latency tbody tr`)))
	b.do("1", chromedp.KeyEvent("1"), chromedp.WaitVisible(chromedp.CSS(`#view-timeline.on`)))
	b.do("/", chromedp.KeyEvent("/"))
	if got := b.eval(`document.activeElement.id`); got != "filter-text" {
		t.Errorf("after /: focus on %q", got)
	}
	b.do("esc", chromedp.KeyEvent(kb.Escape))
	if got := b.eval(`document.activeElement.id`); got == "filter-text" {
		t.Errorf("Esc left the focus in the search box")
	}

	// Export: the session as a trace, redacted; import it back: a session
	// beside the original, whose diff with it is empty.
	href := b.eval(`document.querySelector("#export").href`)
	if !strings.HasSuffix(href, "/api/export?session=codex-016") || b.eval(`document.querySelector("#export").getAttribute("download")`) != "codex-016.jsonl" {
		t.Errorf("export link %q", href)
	}
	exported, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch(document.querySelector("#export").href).then((r) => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tracelog.ReadAll(strings.NewReader(exported))
	if err != nil || len(got) != len(recs) || got[0].Type != tracelog.TypeSession || got[len(got)-1].Type != tracelog.TypeEnd {
		t.Fatalf("exported %d records (%v), want %d", len(got), err, len(recs))
	}
	b.eval(`(() => { importFile(new File([` + jsString(exported) + `], "codex-016.jsonl")); return "" })()`)
	b.do("imported", chromedp.WaitVisible(chromedp.CSS(`#sessions li[data-session="codex-016 (imported 1)"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline tbody[data-session="codex-016 (imported 1)"] tr[data-seq="31"]`)))
	if n := b.text(`#notice`); !strings.Contains(n, "imported codex-016 (imported 1)") {
		t.Errorf("notice %q", n)
	}
	b.do("diff", chromedp.KeyEvent("5"), chromedp.WaitVisible(chromedp.CSS(`#diff-go`)))
	b.set(`#diff-a`, "codex-016")
	b.set(`#diff-b`, "codex-016 (imported 1)")
	b.do("diff go", chromedp.Click(chromedp.CSS(`#diff-go`)), chromedp.WaitVisible(chromedp.CSS(`#diff[data-changes] tbody tr`)))
	if n, ch := b.count(`#diff tbody tr`), b.eval(`document.querySelector("#diff").dataset.changes`); n != len(recs)-2 || ch != "0" {
		t.Errorf("the import against the original: %d rows, %s changes", n, ch)
	}
	// The keyboard in the diff: j opens the rows one by one.
	b.do("j in the diff", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"))
	if got := title(); !strings.HasPrefix(strings.ToLower(got), "diff: a #2 = b #2") {
		t.Errorf("after j j in the diff: %q", got)
	}
	b.shot("inspector-import-diff.png")
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The command's stderr, as trace records it, in the timeline between the
// frames in the order it came, masked; a filter shows it alone, and a
// line opens in the detail pane.
func TestInspectorShowsStderrInBrowser(t *testing.T) {
	path, _ := traceWithStderr(t)
	b := newBrowser(t, 1280, 800)
	mem := inspect.NewMemory(64 << 20)
	if err := traffic.Read(context.Background(), path, traffic.Trace, "", func(_ int, r *tracelog.Record) error { return mem.Put(r) }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(inspect.NewHandler(mem, inspectOptions(true)))
	defer srv.Close()
	b.do("open", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#timeline tbody tr.stderr`)))
	rows := b.eval(`[...document.querySelectorAll("#timeline tbody tr")].map((r) => r.classList.contains("stderr") ? "stderr:" + r.cells[3].textContent : r.cells[4].textContent).join("|")`)
	if !strings.HasPrefix(rows, "initialize|stderr:warming up|session/cancel|") || strings.Count(rows, "stderr:") != 3 ||
		!strings.Contains(rows, "stderr:using [REDACTED]") || !strings.Contains(rows, "stderr:no newline") {
		t.Errorf("timeline %q", rows)
	}
	b.set(`#filter-dir`, "stderr")
	if n, all := b.count(`#timeline tbody tr.stderr`), b.count(`#timeline tbody tr`); n != 3 || all != 3 {
		t.Errorf("the stderr filter: %d of %d rows", n, all)
	}
	b.do("open a line", chromedp.Click(chromedp.CSS(`#timeline tbody tr.stderr`)), chromedp.WaitVisible(chromedp.CSS(`#tab-tree .stderr-line`)))
	if got := b.text(`#tab-tree .stderr-line`); got != "warming up" {
		t.Errorf("detail %q", got)
	}
	b.set(`#filter-dir`, "")
	b.shot("inspector-stderr.png")
}

// Harn's extension session updates and notifications, from the shapes
// of the bridge contract (000_….txt: vendor fields under
// update._meta.harn).
var harnKindsSession = []fl{
	{frames.In, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"hs","prompt":[{"type":"text","text":"index the repo"}]}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"skill_activated","_meta":{"harn":{"skillName":"rust","iteration":1,"reason":"matched Cargo.toml"}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"progress","_meta":{"harn":{"phase":"indexing","message":"scanning","progress":3,"total":10}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"log","_meta":{"harn":{"level":"warn","message":"slow disk"}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"tool_search_query","_meta":{"harn":{"toolUseId":"t1","name":"search","query":"git blame","strategy":"bm25"}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"hitl_request","_meta":{"harn":{"requestId":"h-1","kind":"question","payload":{"text":"Which branch?"}}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"reminder_emitted","_meta":{"harn":{"reminder":{"reminderId":"reminder-1","tags":["token_pressure"],"body":"Refresh the compacted context before answering.","source":"stdlib_provider","renderedRole":"user"}}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"worker_update","_meta":{"harn":{"workerId":"w3","workerName":"indexer","event":"started","status":"running"}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hs","update":{"sessionUpdate":"transcript_compacted","_meta":{"harn":{"mode":"auto","estimatedTokensBefore":90000,"estimatedTokensAfter":12000,"archivedMessages":40}}}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"agent/idle","params":{"sessionId":"hs","iteration":3,"backoff_ms":1000}}`},
	{frames.Out, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`},
}

// AgentPM harness events of each payload type.
var agentpmKindsSession = []fl{
	{frames.In, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c1","method":"initialize","payload":{}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"e1","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-1","session_id":"s","session_sequence":1,"timestamp":"2025-06-01T10:00:00Z","event_type":"session_starting","payload":{"payload_type":"lifecycle","message":"starting the session"}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"e2","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-2","session_id":"s","session_sequence":2,"timestamp":"2025-06-01T10:00:01Z","event_type":"service_ready","payload":{"payload_type":"service","service":"knowledge","status":"ready","fields":{"registry_id":"k1","message":"up"}}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"e3","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-3","session_id":"s","session_sequence":3,"timestamp":"2025-06-01T10:00:02Z","event_type":"phase_result_ready","payload":{"payload_type":"phase","phase_id":"plan","outcome":"done","transition_to":"build"}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"e4","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-4","session_id":"s","session_sequence":4,"timestamp":"2025-06-01T10:00:03Z","event_type":"tool_completed","payload":{"payload_type":"action","action_kind":"tool","identity":"read_file","status":"completed"}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"e5","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-5","session_id":"s","session_sequence":5,"timestamp":"2025-06-01T10:00:04Z","event_type":"content_streamed","payload":{"payload_type":"content","label":"assistant","content":"The build is green."}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"e6","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-6","session_id":"s","session_sequence":6,"timestamp":"2025-06-01T10:00:05Z","event_type":"run_completed","payload":{"payload_type":"terminal","status":"ended"}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"c1","payload":{}}`},
}

// The conversation by kind in a real (headless) Chromium: Harn's
// extension updates and AgentPM's events as what they say; and, over
// claude-code-acp's and gemini's recorded turns, each fs/terminal request
// in the card of the tool call that caused it, with how it is known:
// exact where the wire says it (the terminal the tool call shows),
// inferred (and marked so) where it does not (the path it names).
func TestInspectorConversationByKindInBrowser(t *testing.T) {
	b := newBrowser(t, 1280, 900)
	mem := inspect.NewMemory(64 << 20)
	fakeSession(mem, "harn-kinds", harnKindsSession, 0)
	fakeSession(mem, "agentpm-kinds", agentpmKindsSession, 0)
	loadRecording(t, mem, "../../testdata/acp/traffic/claude-code-acp-0.16.2/turn.jsonl", "claude-code")
	loadRecording(t, mem, "../../testdata/acp/traffic/gemini-0.61.0/turn.jsonl", "gemini")
	srv := httptest.NewServer(inspect.NewHandler(mem, inspectOptions(true)))
	defer srv.Close()
	open := func(session, wait string) {
		t.Helper()
		b.do("open "+session, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#sessions li[data-session="`+session+`"]`)),
			chromedp.Click(chromedp.CSS(`#sessions li[data-session="`+session+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#timeline tbody[data-session="`+session+`"] tr`)),
			chromedp.Click(chromedp.CSS(`#views button[data-view="conversation"]`)), chromedp.WaitVisible(chromedp.CSS(wait)))
	}

	open("harn-kinds", `#conversation [data-render="skill_activated"]`)
	for kind, want := range map[string]string{
		"skill_activated":      "skill rust activated (iteration 1)\nmatched Cargo.toml",
		"progress":             "indexing: scanning (3/10)",
		"log":                  "[warn] slow disk",
		"tool_search_query":    "tool search (bm25): git blame",
		"hitl_request":         "asks a human (question h-1)\n{\"text\":\"Which branch?\"}",
		"reminder_emitted":     "reminder: Refresh the compacted context before answering.\ntoken_pressure · stdlib_provider · user",
		"worker_update":        "worker indexer: started, running",
		"transcript_compacted": "transcript compacted (auto): ~90000 → ~12000 tokens, 40 messages archived",
		"agent/idle":           "idle (iteration 3, next check in 1000 ms)",
	} {
		sel := fmt.Sprintf(`#conversation [data-render=%q]`, kind)
		if got := b.text(sel); got != kind+want {
			t.Errorf("%s: %q, want %q", kind, got, kind+want)
		}
	}
	b.shot("inspector-harn-kinds.png")

	open("agentpm-kinds", `#conversation [data-render="run_completed"]`)
	if h := b.text(`#conversation h3`); !strings.HasPrefix(h, "AgentPM session s") {
		t.Errorf("heading %q", h)
	}
	for kind, want := range map[string]string{
		"session_starting":   "lifecyclestarting the session",
		"service_ready":      "serviceservice knowledge: ready\nup",
		"phase_result_ready": "phasephase plan: done → build",
		"tool_completed":     "actiontool read_file: completed",
		"content_streamed":   "contentassistant: The build is green.",
		"run_completed":      "terminalterminal: ended",
	} {
		sel := fmt.Sprintf(`#conversation [data-render=%q]`, kind)
		if got := b.text(sel); got != kind+want {
			t.Errorf("%s: %q, want %q", kind, got, kind+want)
		}
	}
	b.shot("inspector-agentpm-kinds.png")

	// claude-code-acp: the read and the write are inferred by their path;
	// the terminal's four requests are linked by the terminal the tool
	// call shows (term-1, which terminal/create's reply named).
	open("claude-code", `#conversation .toolcard[data-tool-call="toolu_8"]`)
	card := func(id string) string { return `#conversation .toolcard[data-tool-call="` + id + `"]` }
	links := func(id string) string {
		return b.eval(`[...document.querySelectorAll('` + card(id) + ` li[data-link]')].map((l) => l.dataset.seq + ":" + l.dataset.link).join(" ")`)
	}
	for id, want := range map[string]string{"toolu_4": "18:path", "toolu_6": "28:path", "toolu_8": "38:terminal 41:terminal 43:terminal 45:terminal", "toolu_10": ""} {
		if got := links(id); got != want {
			t.Errorf("%s's requests %q, want %q", id, got, want)
		}
	}
	if got := b.text(card("toolu_4") + ` li[data-seq="18"]`); !strings.Contains(got, "fs/read_text_file /tmp/realagent/workspace/notes.txt → ok") || !strings.Contains(got, "inferred: the tool call names this path") {
		t.Errorf("the read %q", got)
	}
	if got := b.text(card("toolu_8") + ` li[data-seq="38"]`); !strings.Contains(got, "terminal/create wc -l notes.txt → ok") || !strings.Contains(got, "linked by its terminal") || strings.Contains(got, "inferred") {
		t.Errorf("the terminal %q", got)
	}
	b.shot("inspector-caused-requests.png")

	// gemini reads summary.txt before it asks to write it: the read goes
	// with the write's tool call (its permission request names the path).
	open("gemini", `#conversation .toolcard`)
	if got := links("write_file__write_file_1796543473160_0"); got != "14:path 18:path 20:path" {
		t.Errorf("gemini's write: %q", got)
	}
}
