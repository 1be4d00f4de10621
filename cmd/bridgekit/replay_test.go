package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/gen/harn"
)

// recordSession runs examples/acp-client against agent behind bridgekit
// trace and returns the trace's path.
func recordSession(t *testing.T, prompt string, agent ...string) string {
	t.Helper()
	_, client, _ := testBins(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "session.jsonl")
	args := append([]string{"-allow", "-cwd", dir, "-prompt", prompt, "--", bins.bridgekit, "trace", "--out", out, "--"}, agent...)
	c := exec.Command(client, args...)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("acp-client: %v\n%s", err, b)
	}
	return out
}

func TestReplayOfATraceHasNoDifferences(t *testing.T) {
	agent, _, _ := testBins(t)
	// The agent asks permission and reads a file through the client: the
	// replay answers the agent's own requests, under its live ids.
	trace := recordSession(t, "read notes.txt", agent)
	status, stdout, stderr := runCmd(t, "", "replay", trace, "--", agent)
	if status != 0 || !strings.Contains(stdout, "no differences (5 frames sent, 8 compared)") {
		t.Fatalf("status %d\nstdout: %s\nstderr: %s", status, stdout, stderr)
	}
	// --side client is the same side (the client sends initialize).
	if status, stdout, _ := runCmd(t, "", "replay", "--side", "client", trace, "--", agent); status != 0 {
		t.Fatalf("--side client: status %d: %s", status, stdout)
	}
}

func TestReplayBindsWhatTheCommandChooses(t *testing.T) {
	_, _, testAgent := testBins(t)
	// testagent's session ids are random UUIDs and its updates carry the
	// time: both differ in every run, and the default rules see through it.
	trace := recordSession(t, "hello there", testAgent)
	status, stdout, _ := runCmd(t, "", "replay", trace, "--", testAgent)
	if status != 0 {
		t.Fatalf("against the same agent: status %d\n%s", status, stdout)
	}
	// Without the rules, the session id differs, and the replay sends the
	// recorded one, which the agent does not know.
	status, stdout, _ = runCmd(t, "", "replay", "--no-default-rules", "--wait", "1s", trace, "--", testAgent)
	if status != 1 || !strings.Contains(stdout, "session/new response /result/sessionId recorded ") {
		t.Fatalf("--no-default-rules: status %d\n%s", status, stdout)
	}
	// Only the times rule back: the ids still differ, the times do not.
	_, stdout, _ = runCmd(t, "", "replay", "--no-default-rules", "--bind", "**/sessionId", "--wait", "1s", trace, "--", testAgent)
	if !strings.Contains(stdout, "/params/update/_meta/sentAt recorded ") || strings.Contains(stdout, "/result/sessionId") {
		t.Fatalf("without the times rule the update times differ:\n%s", stdout)
	}
}

func TestReplayReportsAChangedAnswer(t *testing.T) {
	_, _, testAgent := testBins(t)
	trace := recordSession(t, "hello there", testAgent)
	status, stdout, _ := runCmd(t, "", "replay", "--json", trace, "--", testAgent, "-variant")
	var res replayResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if status != 1 || len(res.Differences) != 1 {
		t.Fatalf("status %d, differences %+v", status, res.Differences)
	}
	d := res.Differences[0]
	if d.Method != "session/update" || d.Frame != "notification" || d.Pointer != "/params/update/content/text" ||
		d.Recorded != `"said: "` || d.Live != `"wrote: "` || d.Kind != "differs" || d.Line == 0 {
		t.Fatalf("difference %+v", d)
	}
	// The text form names the trace's line.
	_, text, _ := runCmd(t, "", "replay", trace, "--", testAgent, "-variant")
	want := trace + ":" + itoa(d.Line) + `: session/update notification /params/update/content/text recorded "said: ", got "wrote: "`
	if !strings.Contains(text, want) {
		t.Fatalf("text output lacks %q:\n%s", want, text)
	}
	// An ignore rule for that member makes the replay pass.
	if status, stdout, _ := runCmd(t, "", "replay", "--ignore", "session/update /params/update/content/text", trace, "--", testAgent, "-variant"); status != 0 {
		t.Fatalf("with --ignore: status %d\n%s", status, stdout)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestReplayAgainstACommandThatAnswersNothing(t *testing.T) {
	agent, _, _ := testBins(t)
	trace := recordSession(t, "hello", agent)
	start := time.Now()
	status, stdout, _ := runCmd(t, "", "replay", "--wait", "300ms", trace, "--", "sh", "-c", "cat > /dev/null")
	if status != 1 || !strings.Contains(stdout, "initialize response was not sent") || !strings.Contains(stdout, "session/prompt response was not sent") {
		t.Fatalf("status %d\n%s", status, stdout)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("took %v", d)
	}
	// One that exits at once: every frame is missing, and its status differs
	// from the recorded 0.
	status, stdout, _ = runCmd(t, "", "replay", "--wait", "300ms", trace, "--", "sh", "-c", "exit 3")
	if status != 1 || !strings.Contains(stdout, "exit status 3, recorded 0") {
		t.Fatalf("status %d\n%s", status, stdout)
	}
}

func TestReplayUsage(t *testing.T) {
	agent, _, _ := testBins(t)
	trace := recordSession(t, "hello", agent)
	for _, args := range [][]string{
		{"replay"},
		{"replay", trace},
		{"replay", "--ignore", "nope", trace, "--", agent},
		{"replay", "--bind", "x y z w", trace, "--", agent},
		{"replay", "--side", "host", trace, "--", agent},
		{"replay", "--wait", "0s", trace, "--", agent},
	} {
		if status, _, _ := runCmd(t, "", args...); status != 2 {
			t.Errorf("%q: status %d, want 2", args, status)
		}
	}
	if status, _, stderr := runCmd(t, "", "replay", filepath.Join(t.TempDir(), "none.jsonl"), "--", agent); status != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("a missing trace: status %d, %s", status, stderr)
	}
	if status, _, stderr := runCmd(t, "", "replay", "--session", "other", trace, "--", agent); status != 1 || !strings.Contains(stderr, `has no session "other"`) {
		t.Errorf("--session other: status %d, %s", status, stderr)
	}
	status, stdout, _ := runCmd(t, "", "replay", "--rules", "--ignore", "session/update **/_meta")
	if status != 0 || !strings.HasPrefix(stdout, "bind **/sessionId\n") || !strings.Contains(stdout, "\ntimes\nuuids\nignore session/update **/_meta\n") {
		t.Errorf("--rules: status %d\n%s", status, stdout)
	}
}

func TestReplaySides(t *testing.T) {
	s := &replaySession{family: frames.ACP, frames: []*rframe{
		{dir: frames.In, kind: frames.Request, method: "initialize"},
		{dir: frames.In, kind: frames.Response, method: "initialize"},
	}}
	for side, want := range map[string]frames.Direction{"": frames.In, "peer": frames.In, "traced": frames.Out, "client": frames.In, "agent": frames.Out} {
		if got, err := s.playDirection(side); err != nil || got != want {
			t.Errorf("--side %q: %q, %v; want %q", side, got, err, want)
		}
	}
	// The old names, read backwards as often as not, are refused with the
	// new ones.
	for old, now := range map[string]string{"in": "--side peer", "out": "--side traced"} {
		if _, err := s.playDirection(old); err == nil || !strings.Contains(err.Error(), now) {
			t.Errorf("--side %s: %v", old, err)
		}
	}
	if _, err := s.playDirection("host"); err == nil || !strings.Contains(err.Error(), "sides are peer, traced, agent, client") {
		t.Errorf("--side host for an ACP session: %v", err)
	}
	// A runtime (the peer) calls the traced host.
	h := &replaySession{family: frames.Harn, frames: []*rframe{{dir: frames.In, kind: frames.Request, method: "host/capabilities"}}}
	for side, want := range map[string]frames.Direction{"runtime": frames.In, "vm": frames.In, "agent": frames.In, "host": frames.Out, "client": frames.Out} {
		if got, err := h.playDirection(side); err != nil || got != want {
			t.Errorf("Harn --side %q: %q, %v; want %q", side, got, err, want)
		}
	}
	empty := &replaySession{family: frames.ACP, frames: []*rframe{{dir: frames.In, kind: frames.Request, method: "_x/y"}}}
	if _, err := empty.playDirection("client"); err == nil {
		t.Error("no catalogue request: no error")
	}
}

func TestReplayRulePatterns(t *testing.T) {
	for _, tc := range []struct {
		rule, method, ptr string
		want              bool
	}{
		{"bind **/sessionId", "x", "/params/sessionId", true},
		{"bind **/sessionId", "x", "/sessionId", true},
		{"bind **/sessionId", "x", "/params/sessionIds", false},
		{"ignore session/update /params/*/text", "session/update", "/params/update/text", true},
		{"ignore session/update /params/*/text", "session/prompt", "/params/update/text", false},
		{"ignore /params/**", "m", "/params", true},
		{"ignore /params/**", "m", "/params/a/b/c", true},
		{"ignore /a~1b/c~0d", "m", "/a~1b/c~0d", true},
	} {
		r, err := parseReplayRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		var path []string
		for _, seg := range strings.Split(tc.ptr, "/")[1:] {
			path = append(path, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
		if got := r.Matches(tc.method, path); got != tc.want {
			t.Errorf("%q matches %s %s = %v", tc.rule, tc.method, tc.ptr, got)
		}
	}
	for _, bad := range []string{"", "keep /x", "times /x", "bind x", "bind a b c"} {
		if _, err := parseReplayRule(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReplayRewriteKeepsTheFrame(t *testing.T) {
	var rules []replayRule
	for _, s := range defaultReplayRules {
		r, _ := parseReplayRule(s)
		rules = append(rules, r)
	}
	rs := newReplayRules(rules)
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s-1","note":"s-1","n":1.50}}`)
	if got, _ := rs.Rewrite("session/prompt", line, nil); string(got) != string(line) {
		t.Fatalf("nothing bound: %s", got)
	}
	if msg := rs.Bind("s-1", "live-9"); msg != "" {
		t.Fatal(msg)
	}
	got, err := rs.Rewrite("session/prompt", line, []byte(`"x"`))
	want := `{"jsonrpc":"2.0","id":"x","method":"session/prompt","params":{"sessionId":"live-9","note":"s-1","n":1.50}}`
	if err != nil || string(got) != want {
		t.Fatalf("rewrite = %s, %v\nwant     %s", got, err, want)
	}
	if msg := rs.Bind("s-1", "other"); !strings.Contains(msg, `stands for "live-9"`) {
		t.Fatalf("a second binding: %q", msg)
	}
	if msg := rs.Bind("s-2", "live-9"); !strings.Contains(msg, `already stands for recorded "s-1"`) {
		t.Fatalf("two recorded values for one live value: %q", msg)
	}
}

func TestReplayCompareValues(t *testing.T) {
	rp := &replayer{rules: newReplayRules([]replayRule{{Kind: "times"}}), max: 10}
	cmp := func(a, b string) []replayDiff {
		rp.res.Differences = nil
		ra, _ := decodeGeneric([]byte(a))
		rb, _ := decodeGeneric([]byte(b))
		rp.compareValues(replayDiff{}, "m", nil, ra, rb)
		return rp.res.Differences
	}
	if d := cmp(`{"a":1,"b":[1,2],"t":"2026-01-01T00:00:00Z"}`, `{"b":[1,2],"a":1.0,"t":"2027-02-02T10:00:00.5+01:00"}`); len(d) != 0 {
		t.Fatalf("equal documents: %+v", d)
	}
	d := cmp(`{"a":[1,2,3],"b":null,"c":"x"}`, `{"a":[1,9],"b":false,"d":1}`)
	var got []string
	for _, x := range d {
		got = append(got, x.Pointer+" "+x.Message)
	}
	want := []string{`/a/1 recorded 2, got 9`, `/a 2 items, recorded 3`, `/b recorded null, got false`, `/c missing (recorded "x")`, `/d not in the recording: 1`}
	if !slices.Equal(got, want) {
		t.Fatalf("differences\n%q\nwant\n%q", got, want)
	}
}

// FuzzReplayRewrite: rewriting a frame never fails on JSON it accepted,
// and gives valid JSON.
func FuzzReplayRewrite(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"params":{"sessionId":"a","x":["a",{"sessionId":"a"}]}}`)
	f.Add(`[1,"a",{"id":"a"}]`)
	f.Add(`"a"`)
	f.Fuzz(func(t *testing.T, doc string) {
		r, _ := parseReplayRule("bind **/sessionId")
		rs := newReplayRules([]replayRule{r, {Kind: "uuids"}})
		rs.Bind("a", "b")
		out, err := rs.Rewrite("m", []byte(doc), []byte(`"id-1"`))
		if err == nil && !json.Valid(out) && json.Valid([]byte(doc)) {
			t.Fatalf("rewrite(%s) = %s: not JSON", doc, out)
		}
	})
}

// FuzzParseReplayRule: no rule text panics, and a parsed rule prints as a
// rule that parses the same.
func FuzzParseReplayRule(f *testing.F) {
	for _, s := range defaultReplayRules {
		f.Add(s)
	}
	f.Add("ignore m /a/*/b")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseReplayRule(s)
		if err != nil {
			return
		}
		again, err := parseReplayRule(r.String())
		if err != nil || again.String() != r.String() {
			t.Fatalf("%q -> %q -> %q, %v", s, r.String(), again.String(), err)
		}
		r.Matches("m", []string{"a", "b"})
	})
}

// A Harn host against yesterday's traffic: a runtime's calls to
// examples/host, recorded by trace, replayed against examples/host (the
// recorded runtime's side, by its role) with no differences.
func TestReplayHarnHostSession(t *testing.T) {
	dir := t.TempDir()
	hostArgs := []string{bins.host, "-config", filepath.Join(bins.hostDir, "example/host.json"),
		"-policy", filepath.Join(bins.hostDir, "example/policy.json"), "-workspace", dir}
	tr := startTrace(t, nil, hostArgs...)
	conn := harn.NewConn(tr.stdout, tr.stdin, nil, nil)
	host := harn.NewHostPeer(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := host.HostCapabilities(ctx, &harn.HostCapabilitiesParams{}); err != nil {
		t.Fatalf("host/capabilities: %v; stderr:\n%s", err, tr.stderr.String())
	}
	if _, err := host.HostToolsList(ctx, &harn.NoArgs{}); err != nil {
		t.Fatalf("host/tools/list: %v", err)
	}
	_, _ = host.ProcessListShells(ctx, &harn.HostCallParams{}, &harn.NoArgs{}) // an error reply is traffic too
	tr.stdin.Close()
	if status := tr.wait(t); status != 0 {
		t.Fatalf("trace: status %d; stderr:\n%s", status, tr.stderr.String())
	}
	conn.Close()

	for _, side := range []string{"", "runtime"} {
		args := []string{"replay", tr.out, "--"}
		if side != "" {
			args = []string{"replay", "--side", side, tr.out, "--"}
		}
		status, stdout, stderr := runCmd(t, "", append(args, hostArgs...)...)
		if status != 0 || !strings.Contains(stdout, "no differences (3 frames sent, 3 compared)") {
			t.Fatalf("--side %q: status %d\n%s\n%s", side, status, stdout, stderr)
		}
	}
	// --side host plays the host's answers: to a host, that is not what it
	// expects.
	if status, stdout, _ := runCmd(t, "", append([]string{"replay", "--side", "host", "--wait", "300ms", tr.out, "--"}, hostArgs...)...); status != 1 {
		t.Fatalf("--side host against a host: status %d\n%s", status, stdout)
	}
}

func TestReplayRefusesATruncatedFrameToPlay(t *testing.T) {
	agent, _, _ := testBins(t)
	file := filepath.Join(t.TempDir(), "cut.jsonl")
	recs := `{"type":"session","session":"s","seq":0,"time":"2026-12-01T00:00:00Z","v":1,"command":["agent"]}
{"type":"frame","session":"s","seq":1,"time":"2026-12-01T00:00:00Z","dir":"in","size":5000,"raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"x\":\"aaaa","truncated":true,"family":"acp","kind":"request","method":"initialize","id":1}
{"type":"end","session":"s","seq":2,"time":"2026-12-01T00:00:01Z","status":0}
`
	if err := os.WriteFile(file, []byte(recs), 0o600); err != nil {
		t.Fatal(err)
	}
	status, _, stderr := runCmd(t, "", "replay", file, "--", agent)
	if status != 1 || !strings.Contains(stderr, "cut.jsonl:2: the frame was recorded truncated") {
		t.Fatalf("status %d: %s", status, stderr)
	}
}

// A session kept in a store (trace --store) replays as its JSONL does;
// differences name the frame's seq.
func TestReplayFromAStore(t *testing.T) {
	_, client, testAgent := testBins(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	c := exec.Command(client, "-prompt", "hi", "--", bins.bridgekit, "trace", "--store", db, "--", testAgent)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("acp-client: %v\n%s", err, b)
	}
	if status, stdout, stderr := runCmd(t, "", "replay", db, "--", testAgent); status != 0 || !strings.Contains(stdout, "no differences") {
		t.Fatalf("status %d\n%s\n%s", status, stdout, stderr)
	}
	status, stdout, _ := runCmd(t, "", "replay", db, "--", testAgent, "-variant")
	if status != 1 || !strings.Contains(stdout, db+": seq ") || !strings.Contains(stdout, `/params/update/content/text recorded "said: ", got "wrote: "`) {
		t.Fatalf("status %d\n%s", status, stdout)
	}
}

// replay reads what the other subcommands read: a tee log (the frames of
// both sides, NDJSON) and a recording are replayed as the trace they came
// from; a file that is no traffic is refused with the reason.
func TestReplayReadsEveryForm(t *testing.T) {
	agent, _, _ := testBins(t)
	trace := recordSession(t, "read notes.txt", agent)
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tee, rec strings.Builder
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Type, Dir string
			Raw       *string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Type != "frame" || r.Raw == nil {
			continue
		}
		n++
		tee.WriteString(*r.Raw + "\n")
		dir := "send"
		if r.Dir == "out" {
			dir = "recv"
		}
		b, _ := json.Marshal(map[string]any{"seq": n, "ms": n, "dir": dir, "line": *r.Raw})
		rec.WriteString(string(b) + "\n")
	}
	dir := t.TempDir()
	for name, data := range map[string]string{"tee.log": tee.String(), "recording.jsonl": rec.String()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		status, stdout, stderr := runCmd(t, "", "replay", path, "--", agent)
		if status != 0 || !strings.Contains(stdout, "no differences (5 frames sent, 8 compared)") {
			t.Errorf("%s: status %d\nstdout: %s\nstderr: %s", name, status, stdout, stderr)
		}
	}
	log := filepath.Join(dir, "agent.log")
	if err := os.WriteFile(log, []byte("starting\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if status, _, stderr := runCmd(t, "", "replay", log, "--", agent); status != 1 || !strings.Contains(stderr, "not recorded traffic") {
		t.Errorf("a log: status %d, %s", status, stderr)
	}
}
