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
