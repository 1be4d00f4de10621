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

// The conversation view in a real (headless) Chromium, over a real turn
// (qwen 0.24.4's recording, testdata/acp/traffic): the prompt, the
// thought and message chunks joined, one card per tool call with its
// permission request, its options and the answer chosen and the fs
// request it caused; a request and its reply linked both ways, side by
// side; an error reply with its code and message. Screenshots are kept.
func TestInspectorConversationInBrowser(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on PATH (.ci/run installs Debian's chromium)")
		}
		t.Skip("no Chromium on PATH")
	}
	path := "../../testdata/acp/traffic/qwen-0.24.4/turn.jsonl"
	format, err := traffic.Sniff(path)
	if err != nil || format != traffic.Recording {
		t.Fatalf("%s: %v, %v", path, format, err)
	}
	mem := inspect.NewMemory(64 << 20)
	if err := traffic.Read(context.Background(), path, format, "", func(_ int, r *tracelog.Record) error { mem.Put(r); return nil }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(inspect.NewHandler(mem, inspectOptions(true)))
	defer srv.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("browser, %s: %v", what, err)
		}
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("browser, text of %s: %v", sel, err)
		}
		return s
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		if err != nil {
			t.Fatalf("browser, count %s: %v", sel, err)
		}
		return n
	}
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		p := filepath.Join(artifactDir(t), name)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}

	const sid = "f07fbbe8-a140-4625-a7d8-25f1985d2d05"
	do("open", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`#timeline tbody tr[data-seq="39"]`)),
		chromedp.Click(css(`#views button[data-view="conversation"]`)),
		chromedp.WaitVisible(css(`#conversation .conv-session[data-acp-session="`+sid+`"]`)))
	conv := `#conversation .conv-session[data-acp-session="` + sid + `"]`
	if u := text(conv + ` .msg.user`); !strings.Contains(u, "Read notes.txt, write a one-line summary") {
		t.Errorf("user prompt %q", u)
	}
	// Three thought chunks, one thought.
	if n, th := count(conv+` .msg.thought`), text(conv+` .msg.thought`); n != 1 || th != "I will read the notes, write a summary, then clean up." {
		t.Errorf("%d thoughts, the first %q", n, th)
	}
	if n := count(conv + ` .msg.agent`); n < 4 {
		t.Errorf("%d agent messages, want the four the turn says", n)
	}
	// One card per tool call: four, each with its updates.
	if n := count(conv + ` .toolcard`); n != 4 {
		t.Errorf("%d tool cards, want 4", n)
	}
	read := conv + ` .toolcard[data-tool-call="call_2"]`
	if c := text(read); !strings.Contains(c, "ReadFile: notes.txt") || !strings.Contains(c, "completed") ||
		!strings.Contains(c, "fs/read_text_file /tmp/realagent/workspace/notes.txt → ok") {
		t.Errorf("read card %q", c)
	}
	write := conv + ` .toolcard[data-tool-call="call_4"]`
	if c := text(write + ` .permission`); !strings.Contains(c, "Allow All Edits") || !strings.Contains(text(write+` .permission .answer.allow`), "proceed_once") {
		t.Errorf("write card's permission %q", c)
	}
	if c := text(write); !strings.Contains(c, "fs/write_text_file /tmp/realagent/workspace/summary.txt → ok") {
		t.Errorf("write card %q", c)
	}
	rm := conv + ` .toolcard[data-tool-call="call_8"]`
	if st, a := text(rm+` .status`), text(rm+` .permission .answer`); st != "failed" || !strings.Contains(a, "cancel") {
		t.Errorf("rm card: status %q, answer %q", st, a)
	}
	// qwen's own request the client does not know: the error reply, red,
	// with its code and message.
	if e := text(conv + ` .msg.error`); !strings.Contains(e, "craft/drainMidTurnQueue") || !strings.Contains(e, "-32601") || !strings.Contains(e, "method not found") {
		t.Errorf("error reply %q", e)
	}
	if s := text(conv + ` .msg.stop`); !strings.Contains(s, "end_turn") {
		t.Errorf("stop %q", s)
	}
	shot("inspector-conversation.png")

	// The permission request opens beside its reply, each linked to the
	// other.
	do("permission request", chromedp.Click(css(write+` .permission div[data-seq="21"]`)),
		chromedp.WaitVisible(css(`#pair .side[data-side="reply"] a[data-seq="22"]`)))
	if q, a := text(`#pair .side[data-side="request"]`), text(`#pair .side[data-side="reply"]`); !strings.Contains(q, "session/request_permission") || !strings.Contains(a, "proceed_once") {
		t.Errorf("pair: %q | %q", q, a)
	}
	do("follow the link", chromedp.Click(css(`#pair .side[data-side="reply"] a[data-seq="22"]`)),
		chromedp.WaitVisible(css(`#pair .side.on[data-side="reply"]`)))
	if title := text(`#detail-title`); !strings.HasPrefix(title, "#22 ") {
		t.Errorf("after the link: %q", title)
	}
	// The error reply, from the timeline: its code and message in the
	// row, and in red beside its request.
	do("timeline", chromedp.Click(css(`#views button[data-view="timeline"]`)),
		chromedp.WaitVisible(css(`#timeline tbody tr[data-seq="17"]`)))
	if row := text(`#timeline tbody tr[data-seq="17"] td.err`); !strings.Contains(row, "-32601") || !strings.Contains(row, "method not found") {
		t.Errorf("error row %q", row)
	}
	do("error reply", chromedp.Click(css(`#timeline tbody tr[data-seq="17"]`)), chromedp.WaitVisible(css(`#pair .errline`)))
	if e := text(`#pair .errline`); e != "error -32601: method not found: craft/drainMidTurnQueue" {
		t.Errorf("error line %q", e)
	}
	if q := text(`#pair .side[data-side="request"]`); !strings.Contains(q, "#16") {
		t.Errorf("the request beside it: %q", q)
	}
	shot("inspector-pair.png")

	// Finding things: full-text search over the frames, and filters by
	// direction, kind and update type.
	set := func(sel, v string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf(
			`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("input")); return "" })()`, sel, v))); err != nil {
			t.Fatalf("browser, set %s: %v", sel, err)
		}
	}
	set(`#filter-text`, "DRAINmidturn")
	if n := count(`#timeline tbody tr`); n != 2 {
		t.Errorf("search: %d rows, want the request and its reply", n)
	}
	set(`#filter-text`, "")
	set(`#filter-update`, "tool_call")
	if n := count(`#timeline tbody tr`); n != 4 {
		t.Errorf("tool_call updates: %d rows, want 4", n)
	}
	set(`#filter-update`, "")
	set(`#filter-kind`, "error")
	if n := count(`#timeline tbody tr`); n != 1 {
		t.Errorf("error replies: %d rows, want 1", n)
	}
	set(`#filter-dir`, "out")
	if n := count(`#timeline tbody tr`); n != 0 {
		t.Errorf("error replies the agent sent: %d rows, want 0", n)
	}
	set(`#filter-kind`, "request")
	if n := count(`#timeline tbody tr`); n != 6 {
		t.Errorf("the agent's requests: %d rows, want 6 (fs read and write, three permissions, craft/drainMidTurnQueue)", n)
	}

	set(`#filter-kind`, "")
	set(`#filter-dir`, "")

	// Context: initialize as probe prints it, and each method's p50 and
	// p99, as the server computes them from the same records.
	do("context", chromedp.Click(css(`#views button[data-view="context"]`)),
		chromedp.WaitVisible(css(`#latency tbody tr[data-method="session/prompt"]`)))
	sum := text(`#init-summary`)
	for _, want := range []string{"agent                qwen-code 0.24.4 (Qwen Code)", "protocol version     1", "auth methods         openai",
		"client               bridgekit-host (devel)", "capabilities", "session              session/new answered (#"} {
		if !strings.Contains(sum, want) {
			t.Errorf("initialize summary lacks %q:\n%s", want, sum)
		}
	}
	recs, _ := mem.Records(context.Background(), "turn", 0, 0)
	lat := inspect.Latencies(recs)
	if n := count(`#latency tbody tr`); n != len(lat) || n < 4 {
		t.Errorf("%d latency rows, want %d", n, len(lat))
	}
	for _, m := range lat {
		row := fmt.Sprintf(`#latency tbody tr[data-method=%q][data-dir=%q]`, m.Method, m.Dir)
		if m.Count == 0 {
			continue
		}
		if p50, p99 := text(row+` .p50`), text(row+` .p99`); p50 != jsLatency(m.P50US) || p99 != jsLatency(m.P99US) {
			t.Errorf("%s: p50 %q p99 %q, want %q %q", m.Method, p50, p99, jsLatency(m.P50US), jsLatency(m.P99US))
		}
	}
	if n := count(`#latency tbody tr[data-method="session/request_permission"][data-dir="out"]`); n != 1 {
		t.Errorf("the agent's permission requests: %d rows", n)
	}
	shot("inspector-context.png")
}

// jsLatency formats microseconds as the page's fmtLatency does.
func jsLatency(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1f ms", us/1e3)
	}
	return fmt.Sprintf("%.0f µs", us)
}
