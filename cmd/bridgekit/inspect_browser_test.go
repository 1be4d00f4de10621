package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
