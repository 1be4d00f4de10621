package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// fakeSession feeds lines through a recorder into mem, as trace would,
// with times spaced so that latencies show.
func fakeSession(mem *inspect.Memory, id string, lines []struct {
	dir  frames.Direction
	text string
}, status int) {
	rec := &recorder{session: id, cls: frames.New(frames.Unknown), red: redact.New(), sinks: []sink{mem}}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec.start(t0, []string{"examples/host", "--", "harn", "serve", "acp"})
	at := t0
	for i, l := range lines {
		at = at.Add(time.Duration(3+i%4) * time.Millisecond)
		rec.frame(l.dir, at, []byte(l.text), len(l.text), false, false)
	}
	rec.end(at.Add(time.Millisecond), status, "")
}

type fl = struct {
	dir  frames.Direction
	text string
}

var harnSession = []fl{
	{frames.In, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
	{frames.Out, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}`},
	{frames.In, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"mcpServers":[]}}`},
	{frames.Out, `{"jsonrpc":"2.0","id":"h1","method":"host/capabilities","params":{}}`},
	{frames.In, `{"jsonrpc":"2.0","id":"h1","result":{}}`},
	{frames.Out, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}`},
	{frames.In, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"hello"}]}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"_meta":{"harn":{"iteration":1,"reason":"matched","skillName":"rust"}},"sessionUpdate":"skill_activated"}}}`},
	{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello from the agent"}}}}`},
}

var agentpmSession = []fl{
	{frames.In, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c1","method":"initialize","payload":{}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"act-1","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-1","session_id":"s","session_sequence":1,"timestamp":"2025-06-01T10:00:00Z","event_type":"tool_invoked","correlation_id":"act-1","payload":{"payload_type":"empty"}}}`},
	{frames.Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"c1","payload":{}}`},
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the browser test keeps its screenshots:
// $BRIDGEKIT_ARTIFACTS, else bridgekit-artifacts in the temporary
// directory. The test prints the paths.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("BRIDGEKIT_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "bridgekit-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The inspector in a real (headless) Chromium: sessions, the timeline, a
// schema violation at its pointer, filters, Harn's and AgentPM's frames
// rendered by kind, the waterfall and a diff, with screenshots kept.
func TestInspectorInBrowser(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on PATH (.ci/run installs Debian's chromium)")
		}
		t.Skip("no Chromium on PATH")
	}
	mem := inspect.NewMemory(64 << 20)
	fakeSession(mem, "harn-session", harnSession, 0)
	second := append([]fl(nil), harnSession...)
	second[8] = fl{frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Another answer"}}}}`}
	fakeSession(mem, "harn-session-again", second, 0)
	fakeSession(mem, "agentpm-session", agentpmSession, 0)
	srv := httptest.NewServer(inspect.Handler(mem, true))
	defer srv.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1600, 1000),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	dir := artifactDir(t)
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
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("browser, %s: %v", js, err)
		}
		return v
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
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}

	do("open", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`#sessions li[data-session="harn-session"]`)),
		chromedp.Click(css(`#sessions li[data-session="harn-session"]`)),
		chromedp.WaitVisible(css(`#timeline tbody[data-session="harn-session"] tr[data-seq="9"]`)))
	sessionsText := text(`#sessions`)
	for _, id := range []string{"harn-session", "harn-session-again", "agentpm-session"} {
		if !strings.Contains(sessionsText, id) {
			t.Errorf("sessions list %q lacks %s", sessionsText, id)
		}
	}
	if n := count(`#timeline tbody tr`); n != 9 {
		t.Errorf("%d timeline rows, want 9", n)
	}
	if end := text(`#end`); !strings.Contains(end, "never answered") || !strings.Contains(end, "session/prompt") {
		t.Errorf("end line %q", end)
	}
	if row := text(`#timeline tbody tr[data-seq="5"]`); !strings.Contains(row, "host/capabilities") || !strings.Contains(row, "ms") {
		t.Errorf("reply row %q: no method or latency", row)
	}

	// The schema violation: session/new without cwd, at its pointer.
	do("schema tab", chromedp.Click(css(`#timeline tbody tr[data-seq="3"]`)), chromedp.Click(css(`#tab-schema`)),
		chromedp.WaitVisible(css(`#tab-schema-body .pointer`)))
	if p := text(`#tab-schema-body .pointer`); p != "/params/cwd" {
		t.Errorf("schema tab pointer %q", p)
	}
	if v := text(`#tab-schema-body .violation[data-pointer="/params/cwd"]`); !strings.Contains(v, "missing required member") {
		t.Errorf("violation in the tree: %q", v)
	}
	shot("inspector-schema.png")

	// Harn's _meta.harn variant, rendered by kind; the tree and raw tabs.
	do("harn update", chromedp.Click(css(`#timeline tbody tr[data-seq="8"]`)),
		chromedp.WaitVisible(css(`#rendered .card[data-render="skill_activated"]`)))
	if r := text(`#rendered`); !strings.Contains(r, "skill_activated") || !strings.Contains(r, "skillName") || !strings.Contains(r, "rust") || !strings.Contains(r, "Harn") {
		t.Errorf("rendered Harn update: %q", r)
	}
	do("raw tab", chromedp.Click(css(`#detail-tabs button[data-tab="raw"]`)), chromedp.WaitVisible(css(`#tab-raw`)))
	if raw := text(`#tab-raw`); raw != harnSession[7].text {
		t.Errorf("raw tab %q", raw)
	}
	do("tree tab", chromedp.Click(css(`#detail-tabs button[data-tab="tree"]`)), chromedp.WaitVisible(css(`#tab-tree .tree`)))
	shot("inspector-harn.png")

	// Filters: by method, by problems.
	do("filter method", chromedp.SendKeys(css(`#filter-method`), "session/update"))
	if n := count(`#timeline tbody tr`); n != 2 {
		t.Errorf("%d rows for session/update, want 2", n)
	}
	eval(`(() => { const f = document.querySelector("#filter-method"); f.value = ""; f.dispatchEvent(new Event("input")); return "" })()`)
	do("filter errors", chromedp.Click(css(`#filter-errors`)))
	if n := count(`#timeline tbody tr`); n != 1 {
		t.Errorf("%d rows with problems, want 1", n)
	}
	do("unfilter", chromedp.Click(css(`#filter-errors`)))

	// The waterfall: four requests, one never answered.
	do("waterfall", chromedp.Click(css(`#views button[data-view="waterfall"]`)), chromedp.WaitVisible(css(`#waterfall .row`)))
	if n, u := count(`#waterfall .row`), count(`#waterfall .bar.unanswered`); n != 4 || u != 1 {
		t.Errorf("waterfall: %d bars (want 4), %d unanswered (want 1)", n, u)
	}
	shot("inspector-waterfall.png")

	// A diff between the two Harn sessions: one frame differs.
	do("diff", chromedp.Click(css(`#views button[data-view="diff"]`)),
		chromedp.WaitVisible(css(`#diff-go`)))
	eval(`(() => { document.querySelector("#diff-a").value = "harn-session"; document.querySelector("#diff-b").value = "harn-session-again"; return "" })()`)
	do("diff go", chromedp.Click(css(`#diff-go`)), chromedp.WaitVisible(css(`#diff tbody tr`)))
	if n, ch := count(`#diff tbody tr`), eval(`document.querySelector("#diff").dataset.changes`); n != 9 || ch != "1" {
		t.Errorf("diff: %d rows, %s changes (want 9, 1)", n, ch)
	}
	if n := count(`#diff tbody tr.changed`); n != 1 {
		t.Errorf("%d changed rows", n)
	}
	shot("inspector-diff.png")

	// The AgentPM session: the harness_event rendered by its kind.
	do("agentpm", chromedp.Click(css(`#views button[data-view="timeline"]`)),
		chromedp.Click(css(`#sessions li[data-session="agentpm-session"]`)),
		chromedp.WaitVisible(css(`#timeline tbody[data-session="agentpm-session"] tr[data-seq="2"]`)),
		chromedp.Click(css(`#timeline tbody[data-session="agentpm-session"] tr[data-seq="2"]`)),
		chromedp.WaitVisible(css(`#rendered .card[data-render="tool_invoked"]`)))
	if ev := text(`#rendered`); !strings.Contains(ev, "AgentPM event") || !strings.Contains(ev, "empty") {
		t.Errorf("rendered event %q", ev)
	}
	shot("inspector-agentpm.png")

	// Live: a frame added to the session appears without a reload.
	rec := &recorder{session: "agentpm-session", cls: frames.New(frames.Unknown), red: redact.New(), sinks: []sink{mem}, seq: 4}
	rec.frame(frames.In, time.Now(), []byte(agentpmSession[0].text), len(agentpmSession[0].text), false, false)
	do("live update", chromedp.WaitVisible(css(`#timeline tbody[data-session="agentpm-session"] tr[data-seq="5"]`)))
}

func TestInspectUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"inspect"},
		{"inspect", "--addr", "0.0.0.0:7878", "x.jsonl"},
		{"inspect", "a", "b"},
	} {
		if status, _, stderr := runCmd(t, "", args...); status != 2 {
			t.Errorf("%v: status %d, %s", args, status, stderr)
		}
	}
	if status, _, _ := runCmd(t, "", "inspect", "--addr", "127.0.0.1:0", filepath.Join(t.TempDir(), "missing.db")); status != 1 {
		t.Errorf("missing store: status %d", status)
	}
	for addr, ok := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, "10.0.0.1:1": false, "example.com:1": false} {
		if err := inspect.CheckAddr(addr, false); (err == nil) != ok {
			t.Errorf("CheckAddr(%s): %v", addr, err)
		}
	}
}

// The handler refuses a Host that is not a loopback name (DNS rebinding)
// and serves the page with a policy that forbids fetching elsewhere.
func TestInspectorHandlerGuards(t *testing.T) {
	mem := inspect.NewMemory(1 << 20)
	fakeSession(mem, "s", harnSession, 0)
	srv := httptest.NewServer(inspect.Handler(mem, true))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/sessions", nil)
	req.Host = "evil.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(string(body), "bridgekit inspector") {
		t.Errorf("page: CSP %q, body %.80q", csp, body)
	}
	if strings.Contains(string(body), "http://") || strings.Contains(string(body), "https://") {
		t.Error("the page references another origin")
	}
	resp, err = http.Get(srv.URL + "/api/records?session=s&after=5")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), `[{"type":"frame","session":"s","seq":6`) {
		t.Errorf("records after 5: %.120s", body)
	}
}

// A file that cannot be read, or is no traffic, is said at once (status
// 1), not served as an empty inspector.
func TestInspectRefusesAFileItCannotRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Files that are no traffic: each was once served as an empty list.
	for name, data := range map[string]string{
		"binary.jsonl": "\x00\x01\x02ELF",
		"log.txt":      "2026-12-06 starting agent\nready\n",
		"object.json":  `{"name":"not a frame"}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"missing.jsonl", "d.jsonl", "binary.jsonl", "log.txt", "object.json"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errb strings.Builder
		status := run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb},
			[]string{"inspect", "--addr", "127.0.0.1:0", filepath.Join(dir, name)})
		cancel()
		if status != 1 || !strings.Contains(errb.String(), name) || strings.Contains(errb.String(), "inspector on") {
			t.Errorf("%s: status %d, stderr %q", name, status, errb.String())
		}
	}
}

// Follow hands each complete line over as it is read, not once the file
// has been read to its end: a large trace is never held whole, and a
// file still being written shows what it has.
func TestFollowHandsOverLinesAsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	mem := inspect.NewMemory(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- inspect.Follow(ctx, path, mem, 10*time.Millisecond, true, traffic.NewConverter(traffic.Trace, path, "").Line, nil)
	}()
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The writer stays open: the pipe has no end yet.
	if _, err := w.WriteString(`{"type":"session","session":"s","seq":0,"time":"2026-12-01T12:00:00Z","v":1,"command":["x"]}` + "\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ss, _ := mem.Sessions(ctx); len(ss) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session line was not handed over while the file was open")
		}
	}
	cancel()
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Past its limit, Memory drops frames in bulk: dropping copies the rest of
// the session, so dropping one frame per record put would make every Put
// of a long session cost as much as the whole session.
func TestMemoryDropsInBulk(t *testing.T) {
	mem := inspect.NewMemory(1 << 20)
	line := `{"jsonrpc":"2.0","method":"session/update","params":{}}`
	put := func(seq int64) {
		raw := line
		mem.Put(&tracelog.Record{Type: tracelog.TypeFrame, Session: "s", Seq: seq, Dir: frames.Out, Size: len(raw), Raw: &raw})
	}
	seq := int64(1)
	for ; mem.Dropped == 0; seq++ {
		put(seq)
	}
	dropped := mem.Dropped
	for range 100 {
		put(seq)
		seq++
	}
	if mem.Dropped != dropped || dropped < 100 {
		t.Errorf("dropped %d at the limit, then %d more over 100 puts", dropped, mem.Dropped-dropped)
	}
}

// A store with no session yet lists none as an empty array, which the
// page reads, not as null.
func TestInspectorListsNoSessionsAsAnArray(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(inspect.Handler(db, true))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "[]" {
		t.Errorf("sessions of an empty store: %d %s", resp.StatusCode, body)
	}
}
