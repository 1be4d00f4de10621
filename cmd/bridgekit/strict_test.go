package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/conform"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// The three typos of the issue, each an enum value or union variant the
// wire keeps (they decode) and a checker should name, with the pointer and
// the nearest known value.
var typos = []struct{ pointer, message string }{
	{"/params/update/sessionUpdate", `"agent_mesage_chunk": did you mean "agent_message_chunk"?`},
	{"/params/update/status", `"bogus" is not a value of status this version knows; the nearest is`},
	{"/result/stopReason", `"done" is not a value of stopReason this version knows; the nearest is "end_turn"`},
}

const typoSession = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}
{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}
{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_mesage_chunk","content":{"type":"text","text":"hello"}}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"bogus"}}}
{"jsonrpc":"2.0","id":1,"result":{"stopReason":"done"}}
`

// hasTypos says which of the typos lines (text) show, with their pointer.
func hasTypos(t *testing.T, what, text string) {
	t.Helper()
	for _, ty := range typos {
		found := false
		for _, l := range strings.Split(text, "\n") {
			found = found || strings.Contains(l, ty.pointer) && strings.Contains(l, ty.message)
		}
		if !found {
			t.Errorf("%s does not say %s: %s:\n%s", what, ty.pointer, ty.message, text)
		}
	}
}

// validate lists the typos as notes (exit 0), and --strict makes them
// problems (exit 1).
func TestValidateStrict(t *testing.T) {
	file := filepath.Join(t.TempDir(), "typos.ndjson")
	if err := os.WriteFile(file, []byte(typoSession), 0o644); err != nil {
		t.Fatal(err)
	}
	status, stdout, _ := runCmd(t, "", "validate", file)
	if status != 0 || strings.Count(stdout, ": note: ") != 3 {
		t.Errorf("without --strict: status %d, want 0 and three notes:\n%s", status, stdout)
	}
	hasTypos(t, "validate", stdout)
	status, stdout, _ = runCmd(t, "", "validate", "--strict", file)
	if status != 1 || strings.Contains(stdout, "note:") || strings.Count(stdout, "\n") != 3 {
		t.Errorf("--strict: status %d, want 1 and three problems:\n%s", status, stdout)
	}
	hasTypos(t, "validate --strict", stdout)
	status, stdout, _ = runCmd(t, "", "validate", "--json", file)
	if status != 0 || strings.Count(stdout, `"note":true`) != 3 || !strings.Contains(stdout, `"notes":3`) {
		t.Errorf("--json: status %d:\n%s", status, stdout)
	}
}

// trace records the typos of a real turn (testagent -typos) as notes on
// their frames, and with --strict as problems.
func TestTraceStrict(t *testing.T) {
	_, client, testAgent := testBins(t)
	for _, strict := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "t.jsonl")
		args := []string{"trace", "--out", out}
		if strict {
			args = append(args, "--strict")
		}
		args = append(args, "--", testAgent, "-typos")
		runClient(t, client, args)
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := tracelog.ReadAll(strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, r := range recs {
			list := r.Notes
			if strict {
				if len(r.Notes) > 0 {
					t.Errorf("--strict: frame %d has notes %v", r.Seq, r.Notes)
				}
				list = r.Problems
			}
			for _, n := range list {
				lines = append(lines, n.Pointer+" "+n.Message)
			}
			if !strict && slices.ContainsFunc(r.Problems, func(p frames.Problem) bool { return strings.HasPrefix(p.Code, "unknown_") }) {
				t.Errorf("frame %d: an unknown value is a problem without --strict", r.Seq)
			}
		}
		hasTypos(t, "trace", strings.Join(lines, "\n"))
	}
}

// conform lists the typos under their scenario as notes (the agent
// passes), and with --strict fails the scenario on them.
func TestConformStrict(t *testing.T) {
	_, _, testAgent := testBins(t)
	status, rep, table := conformRun(t, "--side", "acp-agent", "--run", "acp-agent/initialize,acp-agent/session-new,acp-agent/prompt", "--", testAgent, "-typos")
	prompt := byID(rep)["acp-agent/prompt"]
	var notes []string
	for _, n := range prompt.Notes {
		notes = append(notes, n.Pointer+" "+n.Message)
	}
	hasTypos(t, "conform's notes", strings.Join(notes, "\n"))
	if !strings.Contains(table, "note: session/update: frame") {
		t.Errorf("the table does not list the notes:\n%s", table)
	}
	_ = status
	status, rep, table = conformRun(t, "--strict", "--side", "acp-agent", "--run", "acp-agent/initialize,acp-agent/session-new,acp-agent/prompt", "--", testAgent, "-typos")
	prompt = byID(rep)["acp-agent/prompt"]
	var problems []string
	for _, p := range prompt.Problems {
		problems = append(problems, p.Pointer+" "+p.Message)
	}
	if status != 1 || prompt.Status != conform.Fail || len(prompt.Notes) > 0 {
		t.Errorf("--strict: status %d, %s\n%s", status, prompt.Status, table)
	}
	hasTypos(t, "conform --strict's problems", strings.Join(problems, "\n"))
}

// runClient runs examples/acp-client's one prompt turn through bridgekit
// with args (trace ... -- AGENT): what a client that starts its agent does.
func runClient(t *testing.T, client string, args []string) {
	t.Helper()
	cmd := exec.Command(client, append([]string{"-prompt", "hello", "-cwd", t.TempDir(), "--", bins.bridgekit}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		// The turn's stop reason is one the client does not know: it may
		// say so and fail; what it sent and got is recorded all the same.
		t.Logf("acp-client: %v\n%s", err, out)
	}
}
