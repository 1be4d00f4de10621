package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// fixtures is the upstream reference material (../shared/fixtures beside
// the worktree, HELPERS.md): the fixtures of Harn's and AgentPM's own
// repositories.
const fixtures = "../../../shared/fixtures"

// A fixtureCase says how a file under fixtures becomes frames: a list of
// frames as they are, or a bare payload wrapped into the frame of the
// method it is for (fixtureTable). A file that holds no frame says why
// (notFrames), so that none is left out silently: the test fails on a
// file neither table names.
type fixtureCase struct {
	// frames builds the NDJSON to validate from the file's JSON (decoded
	// into any, but for documents, which keeps each frame as it is).
	frames func(t *testing.T, raw []byte) []string
	// problem, when set, is a problem the output must have (an .invalid
	// fixture); the output must be empty otherwise.
	problem string
}

func jsonLine(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// documents: a conformance fixture's "documents", or a bare array of
// frames, each as it is in the file (compacted onto one line).
func documents(pre ...string) func(*testing.T, []byte) []string {
	return func(t *testing.T, raw []byte) []string {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			var fixture struct{ Documents []json.RawMessage }
			if err := json.Unmarshal(raw, &fixture); err != nil || len(fixture.Documents) == 0 {
				t.Fatalf("no documents: %v", err)
			}
			list = fixture.Documents
		}
		out := append([]string(nil), pre...)
		for _, d := range list {
			var b bytes.Buffer
			if err := json.Compact(&b, d); err != nil {
				t.Fatal(err)
			}
			out = append(out, b.String())
		}
		return out
	}
}

// decoded adapts a wrapper of the decoded file.
func decoded(f func(*testing.T, any) []string) func(*testing.T, []byte) []string {
	return func(t *testing.T, raw []byte) []string {
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		return f(t, doc)
	}
}

func service(kind, id, svc, method string, body any, t *testing.T) string {
	m := map[string]any{"protocol": "agentpm-service", "version": 1, "kind": kind, "id": id, "service": svc}
	if kind == "request" {
		m["method"], m["payload"] = method, body
	} else {
		m["result"] = body
	}
	return jsonLine(t, m)
}

// request wraps a request payload into an agentpm-service request and
// its response, with result.
func request(svc, method string, result any) func(*testing.T, []byte) []string {
	return decoded(func(t *testing.T, doc any) []string {
		return []string{service("request", "r1", svc, method, doc, t), service("response", "r1", svc, "", result, t)}
	})
}

// result wraps a result into an agentpm-service response, after the
// request (with payload) it answers.
func result(svc, method string, payload any) func(*testing.T, []byte) []string {
	return decoded(func(t *testing.T, doc any) []string {
		return []string{service("request", "r1", svc, method, payload, t), service("response", "r1", svc, "", doc, t)}
	})
}

// each wraps every member of a fixture object as the result of one request.
func each(svc, method string, reqPayload any) func(*testing.T, []byte) []string {
	return decoded(func(t *testing.T, doc any) []string {
		var out []string
		for i, name := range sortedKeys(doc.(map[string]any)) {
			id := "r" + string(rune('a'+i))
			out = append(out, service("request", id, svc, method, reqPayload, t), service("response", id, svc, "", doc.(map[string]any)[name], t))
		}
		return out
	})
}

// hooks wraps knowledge_hooks.json: each hook's input object (the
// request payload's input) and its decision (the result).
var hooks = decoded(func(t *testing.T, doc any) []string {
	m := doc.(map[string]any)
	var out []string
	for i, hook := range []string{"before_knowledge_request", "after_knowledge_retrieval"} {
		id := "h" + string(rune('0'+i))
		out = append(out, service("request", id, "hook", hook, map[string]any{"input": m[hook]}, t), service("response", id, "hook", "", m[hook+"_result"], t))
	}
	return out
})

// The other half of an exchange whose fixture is one half.
var (
	knowledgeRequest = map[string]any{"request": map[string]any{"package": "@zack/docs", "version": "1.2.3", "mode": "vector_query", "query": "q"}}
	knowledgeResult  = map[string]any{"ok": true, "package": "@zack/docs", "version": "1.2.3", "mode": "vector_query", "query": "q", "results": []any{}}
	embedRequest     = map[string]any{"provider": "p", "model": "m", "dimensions": 3, "normalized": true, "text": "t"}
	embedResult      = map[string]any{"vector": []any{1.0, 0.0, 0.0}}
)

var fixtureTable = map[string]fixtureCase{
	// Harn's conformance fixtures: whole JSON-RPC frames. The error
	// replies answer requests the fixture leaves out: the request their
	// data names (session/set_mode), and a prompt for the prompt error.
	"harn/upstream/conformance/protocols/fixtures/acp/jsonrpc_error.valid.json": {frames: documents(
		`{"jsonrpc":"2.0","id":9,"method":"session/set_mode","params":{"sessionId":"session-missing","modeId":"code"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)},
	"harn/upstream/conformance/protocols/fixtures/acp/session_request_permission.valid.json":         {frames: documents()},
	"harn/upstream/conformance/protocols/fixtures/acp/session_update_tool_call_harn_meta.valid.json": {frames: documents()},
	"harn/upstream/conformance/protocols/fixtures/acp/session_update_tool_call_legacy_top_level_harn_fields.invalid.json": {frames: documents(),
		problem: "<stdin>:1: session/update: /params/update/durationMs: "},
	"harn/upstream/crates/harn-serve/tests/fixtures/acp/session_update_extensions.json": {frames: documents()},
	// AgentPM's knowledge fixtures: bare payloads and results of
	// agentpm-service methods (SOURCES.txt says which).
	"agentpm/harness/knowledge/embedding_provider_request.json": {frames: request("embedding", "embed", embedResult)},
	"agentpm/harness/knowledge/embedding_provider_result.json":  {frames: result("embedding", "embed", embedRequest)},
	"agentpm/harness/knowledge/knowledge_runtime_request.json":  {frames: request("knowledge", "retrieve", knowledgeResult)},
	"agentpm/harness/knowledge/knowledge_runtime_result.json":   {frames: result("knowledge", "retrieve", knowledgeRequest)},
	"agentpm/harness/knowledge/typed_failures.json":             {frames: each("knowledge", "retrieve", knowledgeRequest)},
	"agentpm/harness/knowledge/knowledge_hooks.json":            {frames: hooks},
}

// notFrames are the fixture files that hold no frame, and why.
var notFrames = map[string]string{
	"acp/SOURCES.txt":                       "provenance notes",
	"acp/v1-sdk-2.4.0/schema.json":          "a schema (vendored as spec/schemas/acp/v1)",
	"acp/v1-sdk-2.4.0/schema.unstable.json": "a schema (ACP v1's unstable superset)",
	"acp/v0.12.2/schema.json":               "a schema (vendored as spec/schemas/acp/v0.12.2)",
	"acp/v0.12.2/meta.json":                 "the schema's method list",
	"agentpm/SOURCES.txt":                   "provenance notes",
	"harn/SOURCES.txt":                      "provenance notes",
	"harn/upstream/spec/schemas/host-shell-discovery.schema.json": "a schema",
	"harn/upstream/spec/protocol-artifacts/manifest.json":         "Harn's protocol artifact manifest, no traffic",
}

// Every upstream fixture frame is valid (the .invalid one refused at its
// pointer), each fixture file mapped to frames or said to hold none.
func TestValidateFixtures(t *testing.T) {
	if _, err := os.Stat(fixtures); err != nil {
		t.Skipf("no upstream fixtures beside the checkout: %v", err)
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(fixtures, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixtures, p)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		if why, ok := notFrames[rel]; ok {
			t.Logf("%s: not frames: %s", rel, why)
			return nil
		}
		tc, ok := fixtureTable[rel]
		if !ok {
			t.Errorf("%s: in neither fixtureTable nor notFrames", rel)
			return nil
		}
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			lines := tc.frames(t, data)
			args := []string{"validate", "-"}
			if strings.HasPrefix(rel, "harn/") {
				// Harn's fixtures are a Harn runtime's traffic, judged under
				// Harn's contract (a plain ACP stream keeps its extra members).
				args = []string{"validate", "--protocol", "harn", "-"}
			}
			status, stdout, stderr := runCmd(t, strings.Join(lines, "\n")+"\n", args...)
			switch {
			case tc.problem == "" && (status != 0 || stdout != ""):
				t.Errorf("status %d, problems:\n%s%s\nframes:\n%s", status, stdout, stderr, strings.Join(lines, "\n"))
			case tc.problem != "" && (status != 1 || !strings.Contains(stdout, tc.problem)):
				t.Errorf("status %d, want 1 and %q in:\n%s%s", status, tc.problem, stdout, stderr)
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range fixtureTable {
		if !seen[name] {
			t.Errorf("%s: in fixtureTable but not under %s", name, fixtures)
		}
	}
}

// The output is one line per problem, file:line: method: pointer: message;
// exit status 1 with problems, 0 without, 2 for a usage error.
func TestValidateOutputAndStatus(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ndjson")
	bad := filepath.Join(dir, "bad.ndjson")
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}` + "\n"
	if err := os.WriteFile(good, []byte(init), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(init+`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":7,"update":{}}}`+"\n"+`not json`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if status, stdout, stderr := runCmd(t, "", "validate", good); status != 0 || stdout != "" || stderr != "" {
		t.Errorf("a valid file: status %d, %q, %q (quiet off a terminal)", status, stdout, stderr)
	}
	status, stdout, _ := runCmd(t, "", "validate", good, bad)
	want := bad + ":3: session/update: /params/sessionId: "
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if status != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], want) || !strings.HasPrefix(lines[1], bad+":4: -: -: ") {
		t.Errorf("status %d, output:\n%s\nwant lines starting %q and %q", status, stdout, want, bad+":4: -: -: ")
	}
	status, stdout, _ = runCmd(t, "", "validate", "--json", bad)
	jl := strings.Split(strings.TrimSpace(stdout), "\n")
	var first struct {
		File, Method, Code, Pointer string
		Line                        int
	}
	var summary struct{ Summary map[string]int }
	if status != 1 || len(jl) != 3 || json.Unmarshal([]byte(jl[0]), &first) != nil || json.Unmarshal([]byte(jl[2]), &summary) != nil ||
		first.Line != 3 || first.Pointer != "/params/sessionId" || first.Method != "session/update" || summary.Summary["problems"] != 2 || summary.Summary["frames"] != 4 {
		t.Errorf("--json: status %d, output:\n%s", status, stdout)
	}
	for _, args := range [][]string{{"validate"}, {"validate", "--protocol", "nope", good}, {"validate", "--bogus", good}} {
		if status, _, _ := runCmd(t, "", args...); status != 2 {
			t.Errorf("%v: status %d, want 2", args, status)
		}
	}
	if status, _, stderr := runCmd(t, "", "validate", filepath.Join(dir, "missing")); status != 1 || !strings.Contains(stderr, "missing") {
		t.Errorf("a missing file: status %d, %q", status, stderr)
	}
	status, _, stderr := runCmd(t, "", "validate", "-h")
	for _, flag := range []string{"usage: bridgekit validate", "-protocol", "acp-v0.12.2", "-json"} {
		if status != 0 || !strings.Contains(stderr, flag) {
			t.Errorf("validate -h: status %d, lacks %q: %s", status, flag, stderr)
		}
	}
}

// The real agents' traffic passes through the command, but for the
// methods outside ACP that the traffic's untyped baseline lists (qwen's
// craft/drainMidTurnQueue), each an unknown method and nothing else.
func TestValidateRealAgentTraffic(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/acp/traffic/*/turn.jsonl")
	if len(files) == 0 {
		t.Fatal("no traffic")
	}
	_, stdout, stderr := runCmd(t, "", append([]string{"validate"}, files...)...)
	baseline, err := os.ReadFile("../../testdata/acp/traffic/untyped_baseline.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		// FILE:LINE: METHOD: /method: ACP has no method "METHOD"
		rec, rest, _ := strings.Cut(strings.TrimPrefix(line, "../../testdata/acp/traffic/"), ":")
		_, rest, _ = strings.Cut(rest, ": ")
		method, _, _ := strings.Cut(rest, ":")
		if !strings.Contains(line, "/method: ACP has no method") || !strings.Contains(string(baseline), rec+"\t"+method+" params\t(a method no catalogue types)") {
			t.Errorf("%s", line)
		}
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
}

// A store is checked session by session, as the traces it holds (it was
// once read as lines of NDJSON: a "malformed frame" per line); a file that
// is no traffic is refused with the reason, not checked.
func TestValidateReadsAStoreAndRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	recs := []*tracelog.Record{{Type: tracelog.TypeSession, Session: "a", Time: at, Version: tracelog.Version, Command: []string{"agent"}}}
	for i, l := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":7,"update":{}}}`,
	} {
		dir := frames.In
		if i > 0 {
			dir = frames.Out
		}
		r := &tracelog.Record{Type: tracelog.TypeFrame, Session: "a", Seq: int64(i + 1), Time: at, Dir: dir, Size: len(l)}
		r.SetLine([]byte(l))
		recs = append(recs, r)
	}
	recs = append(recs, &tracelog.Record{Type: tracelog.TypeEnd, Session: "a", Seq: 4, Time: at})
	if err := db.Put(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	db.Close()
	status, stdout, stderr := runCmd(t, "", "validate", path)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if status != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], path+"#a:4: session/update: /params/sessionId: ") || stderr != "" {
		t.Errorf("a store: status %d, stdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	log := filepath.Join(dir, "agent.log")
	if err := os.WriteFile(log, []byte("starting agent\nready\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr = runCmd(t, "", "validate", log)
	if status != 1 || stdout != "" || !strings.Contains(stderr, log) || !strings.Contains(stderr, "not recorded traffic") {
		t.Errorf("a log: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
}
