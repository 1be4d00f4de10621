package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/conform"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"go.uber.org/goleak"
)

// conformRun runs bridgekit conform in-process with --json and returns
// the status, the report and the table.
func conformRun(t *testing.T, args ...string) (int, conform.Report, string) {
	t.Helper()
	// Nothing conform started may outlive it.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), proctest.IgnoreSpawner())
	out := filepath.Join(t.TempDir(), "results.json")
	all := append([]string{"conform", "--json-out", out}, args...)
	status, stdout, stderr := runCmd(t, "", all...)
	var rep conform.Report
	if b, err := os.ReadFile(out); err == nil {
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("results.json: %v\n%s", err, b)
		}
	} else if status != 2 {
		t.Fatalf("no results.json (status %d): %v\nstderr: %s", status, err, stderr)
	}
	return status, rep, stdout + stderr
}

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return p
}

func pythonHost(t *testing.T, workspace string, extra ...string) []string {
	return append([]string{python(t), filepath.Join("testdata", "conform", "python-host", "host.py"), "--workspace", workspace}, extra...)
}

func byID(rep conform.Report) map[string]conform.Result {
	m := map[string]conform.Result{}
	for _, r := range rep.Scenarios {
		m[r.ID] = r
	}
	return m
}

// A conforming host passes: every scenario passes or is not implemented,
// and the ones every host must pass do.
func checkConforming(t *testing.T, status int, rep conform.Report, table string) {
	t.Helper()
	if status != 0 || !rep.Summary.OK {
		t.Fatalf("status %d, summary %+v\n%s", status, rep.Summary, table)
	}
	res := byID(rep)
	for _, id := range []string{"harn-host/unknown-method", "harn-host/bad-json", "harn-host/large-line", "harn-host/duplicate-id",
		"harn-host/unknown-reply", "harn-host/u64-id", "harn-host/session-update", "harn-host/end-of-input", "harn-host/capabilities",
		"harn-host/host-call/process.list_shells", "harn-host/skills-fetch", "harn-host/permission", "harn-host/fs/read"} {
		if res[id].Status != conform.Pass {
			t.Errorf("%s: %s, want pass\n%s", id, res[id].Status, table)
		}
	}
	if len(rep.Scenarios) < 25 {
		t.Errorf("only %d scenarios ran", len(rep.Scenarios))
	}
}

func TestConformExampleHost(t *testing.T) {
	bin := bins.host // built by TestMain (trace_test.go) into a temporary directory
	ws := t.TempDir()
	// The example policy lets a runtime write under src/ only: the file
	// scenarios go there, so that both the read and the write succeed.
	src := filepath.Join(ws, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	example := filepath.Join("..", "..", "examples", "host", "example")
	began := time.Now()
	status, rep, table := conformRun(t, "--workdir", src, "--",
		bin, "-config", filepath.Join(example, "host.json"), "-policy", filepath.Join(example, "policy.json"), "-workspace", ws)
	elapsed := time.Since(began)
	checkConforming(t, status, rep, table)
	// The whole suite must stay well under the 10 s on a loaded machine.
	if elapsed > 10*time.Second {
		t.Errorf("the harn-host suite took %v against examples/host, want under 10s", elapsed)
	}
	t.Logf("harn-host suite against examples/host: %v (%d scenarios)", elapsed, len(rep.Scenarios))
	if r := byID(rep)["harn-host/fs/write"]; r.Status != conform.Pass || strings.Contains(r.Detail, "refused") {
		t.Errorf("fs/write: %s %q, want a write that succeeded", r.Status, r.Detail)
	}
	if !strings.Contains(table, "harn-host/u64-id") || !strings.Contains(table, "ok: ") {
		t.Errorf("table:\n%s", table)
	}
}

func TestConformPythonHost(t *testing.T) {
	ws := t.TempDir()
	status, rep, table := conformRun(t, append([]string{"--workdir", ws, "--"}, pythonHost(t, ws)...)...)
	checkConforming(t, status, rep, table)
	if res := byID(rep); res["harn-host/fs/write"].Status != conform.Pass || res["harn-host/host-call/process.shell_invocation"].Status != conform.Pass {
		t.Errorf("fs/write %s, shell_invocation %s\n%s", res["harn-host/fs/write"].Status, res["harn-host/host-call/process.shell_invocation"].Status, table)
	}
}

// problemAt reports whether result r failed with a problem naming method,
// a frame and pointer.
func problemAt(r conform.Result, method, pointer string) bool {
	for _, p := range r.Problems {
		if p.Method == method && p.Frame > 0 && p.Pointer == pointer {
			return true
		}
	}
	return false
}

func TestConformBrokenHostFails(t *testing.T) {
	ws := t.TempDir()
	t.Run("shapes", func(t *testing.T) {
		status, rep, table := conformRun(t, append([]string{"--workdir", ws, "--"}, pythonHost(t, ws, "--broken", "shapes")...)...)
		if status != 1 || rep.Summary.OK {
			t.Fatalf("status %d\n%s", status, table)
		}
		res := byID(rep)
		for _, c := range []struct{ id, method, pointer string }{
			{"harn-host/capabilities", "host/capabilities", "/result/process"},
			{"harn-host/host-call/process.list_shells", "host/call process.list_shells", "/result/shells"},
			{"harn-host/skills-list", "skills/list", "/result/0/id"},
		} {
			if r := res[c.id]; r.Status != conform.Fail || !problemAt(r, c.method, c.pointer) {
				t.Errorf("%s: %s %+v, want a failure of %s at %s", c.id, r.Status, r.Problems, c.method, c.pointer)
			}
		}
		// The table names them too.
		if !strings.Contains(table, "host/capabilities: frame 2: /result/process: ") {
			t.Errorf("table:\n%s", table)
		}
	})
	t.Run("codes", func(t *testing.T) {
		status, rep, table := conformRun(t, append([]string{"--workdir", ws, "--"}, pythonHost(t, ws, "--broken", "codes")...)...)
		if status != 1 {
			t.Fatalf("status %d\n%s", status, table)
		}
		res := byID(rep)
		for _, c := range []struct{ id, method string }{
			{"harn-host/unknown-method", "conform/no_such_method"},
			{"harn-host/wrong-params", "session/request_permission"},
			{"harn-host/skills-fetch/unknown-id", "skills/fetch"},
			{"harn-host/host-call/unknown-operation", "host/call"},
		} {
			if r := res[c.id]; r.Status != conform.Fail || !problemAt(r, c.method, "/error/code") {
				t.Errorf("%s: %s %+v, want a failure of %s at /error/code", c.id, r.Status, r.Problems, c.method)
			}
		}
		if res["harn-host/session-update"].Status != conform.Pass {
			t.Errorf("session-update: %s", res["harn-host/session-update"].Status)
		}
	})
}

func writeBaseline(t *testing.T, entries ...conform.BaselineEntry) string {
	t.Helper()
	b, err := json.Marshal(conform.Baseline{Side: "harn-host", Expected: entries})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "baseline.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConformBaseline(t *testing.T) {
	ws := t.TempDir()
	broken := pythonHost(t, ws, "--broken", "codes")
	run := "harn-host/unknown-method,harn-host/capabilities"
	t.Run("an expected failure passes the run", func(t *testing.T) {
		bl := writeBaseline(t, conform.BaselineEntry{ID: "harn-host/unknown-method", Reason: "answers -32600 for now"})
		status, rep, table := conformRun(t, append([]string{"--run", run, "--baseline", bl, "--"}, broken...)...)
		if status != 0 || byID(rep)["harn-host/unknown-method"].Status != conform.ExpectedFail || rep.Summary.ExpectedFail != 1 {
			t.Fatalf("status %d %+v\n%s", status, rep.Summary, table)
		}
		if !strings.Contains(table, "baseline: answers -32600 for now") {
			t.Errorf("table:\n%s", table)
		}
	})
	t.Run("without it the run fails", func(t *testing.T) {
		if status, _, table := conformRun(t, append([]string{"--run", run, "--"}, broken...)...); status != 1 {
			t.Fatalf("status %d\n%s", status, table)
		}
	})
	t.Run("a listed scenario that passes is stale", func(t *testing.T) {
		bl := writeBaseline(t,
			conform.BaselineEntry{ID: "harn-host/unknown-method", Reason: "answers -32600 for now"},
			conform.BaselineEntry{ID: "harn-host/capabilities", Reason: "was broken once"})
		status, rep, table := conformRun(t, append([]string{"--run", run, "--baseline", bl, "--"}, broken...)...)
		if status != 1 || byID(rep)["harn-host/capabilities"].Status != conform.Stale || rep.Summary.Stale != 1 {
			t.Fatalf("status %d %+v\n%s", status, rep.Summary, table)
		}
	})
	t.Run("a listed scenario that does not exist is stale", func(t *testing.T) {
		bl := writeBaseline(t, conform.BaselineEntry{ID: "harn-host/no-such-scenario", Reason: "typo"})
		status, rep, table := conformRun(t, append([]string{"--baseline", bl, "--workdir", ws, "--"}, pythonHost(t, ws)...)...)
		if status != 1 || byID(rep)["harn-host/no-such-scenario"].Status != conform.Stale {
			t.Fatalf("status %d\n%s", status, table)
		}
	})
	t.Run("an entry without a reason is a usage error", func(t *testing.T) {
		bl := writeBaseline(t, conform.BaselineEntry{ID: "harn-host/unknown-method"})
		if status, _, out := conformRun(t, append([]string{"--baseline", bl, "--"}, broken...)...); status != 2 || !strings.Contains(out, "needs a reason") {
			t.Fatalf("status %d: %s", status, out)
		}
	})
}

// A host that never answers times every scenario out, and it and what it
// started are gone when conform returns.
func TestConformStopsAHungHostAndItsGroup(t *testing.T) {
	mark := proctest.Mark(t)
	script := `export ` + mark + `; sleep 300 & exec sleep 300`
	began := time.Now()
	status, rep, table := conformRun(t, "--timeout", "300ms", "--grace", "200ms", "--run", "harn-host/capabilities,harn-host/unknown-method", "--", "sh", "-c", script)
	if status != 1 || rep.Summary.Fail != 2 {
		t.Fatalf("status %d %+v\n%s", status, rep.Summary, table)
	}
	if !strings.Contains(table, "no answer to request") {
		t.Errorf("table:\n%s", table)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	proctest.MarkedGone(t, mark, 2*time.Second)
}

// A host that dies in a scenario ends the run: that scenario fails with
// one problem that says when and how (its exit status, the end of its
// stderr), and the rest are not run, not failed on a broken pipe.
func TestConformEndsTheRunWhenTheHostDies(t *testing.T) {
	ws := t.TempDir()
	// Exits at its first bad JSON line: a host that does not survive it.
	script := `import sys, runpy; sys.argv = sys.argv[1:]
import json
_loads = json.loads
def loads(s, *a, **k):
    try:
        return _loads(s, *a, **k)
    except ValueError:
        sys.stderr.write("host: cannot parse its input\n")
        sys.exit(3)
json.loads = loads
runpy.run_path(sys.argv[0], run_name="__main__")`
	argv := append([]string{python(t), "-c", script}, pythonHost(t, ws)[1:]...)
	// In the side's order: capabilities, bad-json, large-line, unknown-reply.
	status, rep, table := conformRun(t, append([]string{"--timeout", "60s", "--run", "harn-host/capabilities,harn-host/bad-json,harn-host/unknown-reply,harn-host/large-line", "--"}, argv...)...)
	res := byID(rep)
	died := res["harn-host/bad-json"]
	if status != 1 || res["harn-host/capabilities"].Status != conform.Pass || died.Status != conform.Fail ||
		res["harn-host/unknown-reply"].Status != conform.NotRun || res["harn-host/large-line"].Status != conform.NotRun ||
		rep.Summary.NotRun != 2 || rep.Summary.OK {
		t.Fatalf("status %d %+v\n%s", status, rep.Summary, table)
	}
	if len(died.Problems) != 1 {
		t.Errorf("the row it died in has %d problems, want one:\n%s", len(died.Problems), table)
	}
	for _, want := range []string{"exit status 3", "after it started", "cannot parse its input"} {
		if !strings.Contains(died.Problems[0].Message, want) {
			t.Errorf("the problem does not say %q: %s", want, died.Problems[0].Message)
		}
	}
	if d := res["harn-host/unknown-reply"].Detail; !strings.Contains(d, "died in harn-host/bad-json") {
		t.Errorf("not run, but why: %q", d)
	}
	if strings.Contains(table, "broken pipe") || !strings.Contains(table, "not run") {
		t.Errorf("table:\n%s", table)
	}
}

// --deadline bounds the whole run: the scenario it passes in fails saying
// so, those not begun are not run, and the run fails, in about the
// deadline, whatever each scenario's --timeout.
func TestConformDeadline(t *testing.T) {
	began := time.Now()
	status, rep, table := conformRun(t, "--timeout", "20s", "--deadline", "800ms", "--grace", "200ms",
		"--run", "harn-host/capabilities,harn-host/unknown-method,harn-host/unknown-reply", "--", "sh", "-c", "exec sleep 300")
	if status != 1 || rep.Summary.OK || rep.Summary.NotRun == 0 || len(rep.Scenarios) != 3 {
		t.Fatalf("status %d %+v\n%s", status, rep.Summary, table)
	}
	// A slow start may use the whole deadline: then nothing is begun.
	for _, r := range rep.Scenarios {
		switch {
		case r.Status == conform.NotRun && strings.Contains(r.Detail, "deadline passed"):
		case r.Status == conform.Fail && len(r.Problems) == 1 && strings.Contains(r.Problems[0].Message, "deadline"):
		default:
			t.Errorf("%s: %s %v", r.ID, r.Status, r.Problems)
		}
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestConformUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"conform"}, 2, "no COMMAND"},
		{[]string{"conform", "--side", "nope", "--", "true"}, 2, "unknown side"},
		{[]string{"conform", "--side", "agentpm-service", "--", "true"}, 2, "needs --role"},
		{[]string{"conform", "--", "/nonexistent/conform-impl"}, 1, "cannot start"},
	} {
		status, _, stderr := runCmd(t, "", c.args...)
		if status != c.status || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: status %d, stderr %q; want %d and %q", c.args, status, stderr, c.status, c.want)
		}
	}
	status, stdout, _ := runCmd(t, "", "conform", "--list")
	if status != 0 || !strings.Contains(stdout, "harn-host/large-line\t") {
		t.Errorf("--list: %d %q", status, stdout)
	}
}

// conform --side acp-client is the agent examples/acp-client starts, and
// the client passes.
func TestConformACPClient(t *testing.T) {
	dir := t.TempDir()
	client := filepath.Join(dir, "acp-client")
	build := exec.Command("go", "build", "-o", client, "./examples/acp-client")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/acp-client: %v\n%s", err, out)
	}
	ws := t.TempDir()
	results := filepath.Join(dir, "results.json")
	cmd := exec.Command(client, "-prompt", "hello", "-cwd", ws, "--", bins.bridgekit, "conform", "--side", "acp-client", "--agent", "--json-out", results)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("acp-client: %v\n%s", err, out)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	var rep conform.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Summary.OK || rep.Summary.Pass < 13 {
		t.Fatalf("summary %+v\n%s", rep.Summary, out)
	}
	res := byID(rep)
	for _, id := range []string{"acp-client/initialize", "acp-client/permission", "acp-client/fs/read", "acp-client/big-id", "acp-client/large-line"} {
		if res[id].Status != conform.Pass {
			t.Errorf("%s: %s\n%s", id, res[id].Status, out)
		}
	}
	// The client's stdout is the agent's messages, never the table.
	if !strings.Contains(string(out), "acp-client/initialize") || !strings.Contains(string(out), "stop reason end_turn") {
		t.Errorf("output:\n%s", out)
	}
	entries, _ := os.ReadDir(ws)
	if len(entries) != 0 {
		t.Errorf("conform left files in the session's cwd: %v", entries)
	}
}

func TestConformAgentUsage(t *testing.T) {
	for _, args := range [][]string{
		{"conform", "--side", "acp-client", "--", "true"},
		{"conform", "--side", "acp-client", "--agent", "--", "true"},
		{"conform", "--agent"},
		{"conform", "--side", "acp-client", "--agent", "--json"},
	} {
		if status, _, _ := runCmd(t, "", args...); status != 2 {
			t.Errorf("%q: status %d, want 2", args, status)
		}
	}
}

// conform --side acp-agent passes against examples/acp-agent: it reads
// the file of the prompt after a permission allowed once, does not after
// one rejected, and ends a cancelled "wait" with stopReason cancelled.
func TestConformACPAgent(t *testing.T) {
	agent, _, _ := testBins(t)
	began := time.Now()
	status, rep, table := conformRun(t, "--side", "acp-agent", "--", agent)
	if status != 0 || !rep.Summary.OK {
		t.Fatalf("status %d, summary %+v\n%s", status, rep.Summary, table)
	}
	res := byID(rep)
	for _, sc := range conform.ACPAgent.Scenarios(&conform.Config{}) {
		want := conform.Pass
		switch sc.ID {
		case "acp-agent/authenticate", "acp-agent/fs/write":
			// It lists no auth method, and it never writes.
			want = conform.NotImplemented
		}
		if res[sc.ID].Status != want {
			t.Errorf("%s: %s, want %s\n%s", sc.ID, res[sc.ID].Status, want, table)
		}
	}
	if d := res["acp-agent/fs/read"].Detail; d != "1 requests answered" {
		t.Errorf("fs/read: %q", d)
	}
	t.Logf("acp-agent suite against examples/acp-agent: %v", time.Since(began))
}

func pythonRuntime(t *testing.T, extra ...string) []string {
	return append([]string{python(t), filepath.Join("testdata", "conform", "python-runtime", "runtime.py")}, extra...)
}

// conform --side harn-runtime passes against the Python runtime of
// testdata/conform, which does everything the suite asks of a runtime.
func TestConformHarnRuntime(t *testing.T) {
	began := time.Now()
	status, rep, table := conformRun(t, append([]string{"--side", "harn-runtime", "--"}, pythonRuntime(t)...)...)
	if status != 0 || !rep.Summary.OK {
		t.Fatalf("status %d, summary %+v\n%s", status, rep.Summary, table)
	}
	res := byID(rep)
	for _, sc := range conform.HarnRuntime.Scenarios(&conform.Config{}) {
		if res[sc.ID].Status != conform.Pass {
			t.Errorf("%s: %s, want pass\n%s", sc.ID, res[sc.ID].Status, table)
		}
	}
	if len(res) < 20 {
		t.Errorf("%d scenarios\n%s", len(res), table)
	}
	t.Logf("harn-runtime suite against the Python runtime: %v", time.Since(began))
}

// A runtime that breaks Harn's contract fails, with rows naming the
// method, the frame and the pointer: a Harn field at the root of a tool
// call update, a variant it did not advertise, a prompt result without the
// terminal outcome it advertised.
func TestConformBrokenRuntimeFails(t *testing.T) {
	t.Run("variants", func(t *testing.T) {
		status, rep, table := conformRun(t, append([]string{"--side", "harn-runtime", "--run", "harn-runtime/prompt,harn-runtime/session-update", "--"},
			pythonRuntime(t, "--broken", "variants")...)...)
		res := byID(rep)
		if status != 1 || !problemAt(res["harn-runtime/prompt"], "session/update", "/params/update/executor") ||
			!problemAt(res["harn-runtime/session-update"], "session/update", "/params/update/sessionUpdate") {
			t.Fatalf("status %d\n%s", status, table)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		_, _, testAgent := testBins(t)
		status, rep, table := conformRun(t, "--side", "harn-runtime", "--", testAgent, "-harn")
		res := byID(rep)
		if status != 1 || !problemAt(res["harn-runtime/prompt-result"], "session/prompt", "/result/_meta/harn/terminal") {
			t.Fatalf("status %d\n%s", status, table)
		}
		// Without -harn it is no Harn runtime at all.
		status, rep, table = conformRun(t, "--side", "harn-runtime", "--run", "harn-runtime/initialize", "--", testAgent)
		if status != 1 || !problemAt(byID(rep)["harn-runtime/initialize"], "initialize", "/result/agentCapabilities/_meta/harn") {
			t.Fatalf("status %d\n%s", status, table)
		}
	})
}

// An agent that reads outside the session's cwd and ignores session/cancel
// fails the rows of those, at the frame and pointer.
func TestConformBrokenAgentFails(t *testing.T) {
	status, rep, table := conformRun(t, append([]string{"--side", "acp-agent", "--"}, pythonRuntime(t, "--broken", "client")...)...)
	res := byID(rep)
	if status != 1 || !problemAt(res["acp-agent/fs/read"], "fs/read_text_file", "/params/path") ||
		!problemAt(res["acp-agent/cancel"], "session/prompt", "/result/stopReason") || res["acp-agent/prompt"].Status != conform.Pass {
		t.Fatalf("status %d\n%s", status, table)
	}
	// The same program, not broken, is a conforming ACP agent too.
	status, rep, table = conformRun(t, append([]string{"--side", "acp-agent", "--"}, pythonRuntime(t)...)...)
	if status != 0 || byID(rep)["acp-agent/fs/write"].Status != conform.Pass {
		t.Fatalf("status %d\n%s", status, table)
	}
}

// acp-agent/bad-json accepts what harn-host and acp-client accept: a line
// that is not JSON dropped, or answered -32700 with id null; an answer
// without an id member, or with another code, fails at its pointer.
func TestConformACPAgentBadJSON(t *testing.T) {
	for mode, want := range map[string]string{"": "", "drop-bad-json": "", "bad-json-no-id": "/id", "bad-json-code": "/error/code"} {
		// --timeout: the scenario's wait includes the Python runtime's
		// start, which took over the default 5s on a loaded machine.
		args := []string{"--side", "acp-agent", "--run", "acp-agent/bad-json", "--timeout", "60s", "--"}
		if mode != "" {
			args = append(args, pythonRuntime(t, "--broken", mode)...)
		} else {
			args = append(args, pythonRuntime(t)...)
		}
		status, rep, table := conformRun(t, args...)
		r := byID(rep)["acp-agent/bad-json"]
		switch {
		case want == "" && (status != 0 || r.Status != conform.Pass):
			t.Errorf("%q: status %d\n%s", mode, status, table)
		case want != "" && (status != 1 || !problemAt(r, "(bad JSON)", want)):
			t.Errorf("%q: status %d, want a problem at %s\n%s", mode, status, want, table)
		}
	}
}
