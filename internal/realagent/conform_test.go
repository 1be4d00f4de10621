package realagent

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// conformScripts are the model's replies to the three prompts of the
// acp-agent suite (acp-agent/prompt, acp-agent/permission/reject and
// acp-agent/cancel), per agent: the first reads the prompt's file, the
// second runs a command the client rejects, the third runs a command that
// lasts longer than the time conform waits to cancel it.
var conformScripts = map[string]func(ws string) scriptedmodel.Script{
	"codex-acp": func(string) scriptedmodel.Script { return codexConformScript },
	"claude-code-acp": func(ws string) scriptedmodel.Script {
		notes, summary := filepath.Join(ws, "conform-notes.txt"), filepath.Join(ws, "conform-summary.txt")
		return scriptedmodel.Script{
			{Text: "Reading it.", Calls: []scriptedmodel.Call{{Name: "mcp__acp__Read", Input: obj(map[string]any{"file_path": notes})}}},
			{Text: "Writing a summary.", Calls: []scriptedmodel.Call{{Name: "mcp__acp__Write", Input: obj(map[string]any{"file_path": summary, "content": "Two lines.\n"})}}},
			{Text: "It has two lines."},
			{Text: "Removing it.", Calls: []scriptedmodel.Call{{Name: "Bash", Input: obj(map[string]any{"command": "rm -f " + notes, "description": "Remove the notes", "timeout": 10000})}}},
			{Text: "Kept."},
			{Text: "Waiting.", Calls: []scriptedmodel.Call{{Name: "Bash", Input: obj(map[string]any{"command": "sleep 5", "description": "Wait", "timeout": 10000})}}},
			{Text: "Done waiting."},
		}
	},
}

var codexConformScript = scriptedmodel.Script{
	{Text: "Reading it.", Calls: []scriptedmodel.Call{{Name: "exec_command", Input: js(`{"cmd":"cat conform-notes.txt"}`)}}},
	{Text: "It has two lines."},
	// The rejection aborts codex's turn: it asks for no closing reply.
	{Text: "Removing it.", Calls: []scriptedmodel.Call{{Name: "exec_command", Input: js(`{"cmd":"rm -f conform-notes.txt"}`)}}},
	// A command that outlasts the cancel: the turn is still running
	// when session/cancel comes.
	{Thinking: "Taking my time.", Text: "Waiting.", Calls: []scriptedmodel.Call{{Name: "exec_command", Input: js(`{"cmd":"sleep 5"}`)}}},
	{Text: "Done waiting."},
}

// bridgekit conform --side acp-agent runs against a real agent from npm on
// the scripted model: every stable scenario passes or is in the agent's
// baseline (cmd/bridgekit/testdata/conform/<agent>-<version>.baseline),
// whose entries must all still fail.
func TestConformRealAgent(t *testing.T) {
	for name, script := range conformScripts {
		t.Run(name, func(t *testing.T) {
			Require(t, name)
			spec := Agents[name]
			repo := filepath.Join(Dir(), "..", "..")
			bk := filepath.Join(t.TempDir(), "bridgekit")
			build := exec.Command("go", "build", "-o", bk, ".")
			build.Dir = filepath.Join(repo, "cmd", "bridgekit")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building cmd/bridgekit: %v\n%s", err, out)
			}
			root := t.TempDir()
			a, err := Prepare(name, Options{Root: root, Script: script(filepath.Join(root, "workspace"))})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			results := filepath.Join(t.TempDir(), "results.json")
			baseline := filepath.Join(repo, "cmd", "bridgekit", "testdata", "conform", name+"-"+spec.Version+".baseline")
			args := []string{"conform", "--side", "acp-agent", "--timeout", "15s", "--grace", "5s",
				"--workdir", a.Workspace, "--baseline", baseline, "--json", results}
			if spec.AuthMethod != "" {
				args = append(args, "--auth", spec.AuthMethod)
			}
			cmd := exec.Command(bk, append(append(args, "--"), a.Argv...)...)
			cmd.Env, cmd.Dir = a.Env, a.Workspace
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			began := time.Now()
			err = cmd.Run()
			t.Logf("conform --side acp-agent against %s %s: %v\n%s", name, spec.Version, time.Since(began), out.String())
			if err != nil {
				t.Fatalf("conform: %v (the table above; stderr of the agent:\n%s)", err, a.Stderr())
			}
			b, err := os.ReadFile(results)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Summary struct {
					Pass int  `json:"pass"`
					OK   bool `json:"ok"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if !rep.Summary.OK || rep.Summary.Pass < 8 {
				t.Errorf("summary %+v", rep.Summary)
			}
			if err := a.Model.Err(); err != nil {
				t.Errorf("scripted model: %v", err)
			}
			// Each refused by the trap; only the agent's known ones are allowed.
			for _, o := range a.Outbound() {
				if !slices.Contains(spec.KnownOutbound, o) {
					t.Errorf("a request to an outside host: %q", o)
				}
			}
		})
	}
}
