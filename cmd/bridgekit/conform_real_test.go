package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/conform"
	"github.com/bridgekit/bridgekit/internal/realagent"
	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// conformRealScripts are the model's replies to the three prompts of the
// acp-agent suite (acp-agent/prompt and acp-agent/permission/reject, which
// conform sends as "read {file}", then acp-agent/cancel's "wait"), per
// agent, with the agent's own tools: the first prompt reads the file conform
// made and changes the workspace (a permission the client allows), the
// second runs a command the client rejects, the third runs one that
// outlasts the time conform waits before it cancels.
var conformRealScripts = map[string]func(ws string) scriptedmodel.Script{
	"claude-agent-acp": toolConformScript,
	"codex-acp":        func(string) scriptedmodel.Script { return codexConformScript },
}

var codexConformScript = scriptedmodel.Script{
	// A read, which codex runs unasked, then a removal, which it asks
	// permission for (conform allows it once: the file is a scratch
	// one). codex 2.6.0 runs a plain write (touch) in its workspace
	// unasked too.
	{Text: "Reading it.", Calls: []scriptedmodel.Call{codexShell("cat conform-notes.txt")}},
	{Text: "Clearing the scratch file.", Calls: []scriptedmodel.Call{codexShell("rm -f conform-scratch.txt")}},
	{Text: "It has two lines."},
	// The rejection aborts codex's turn: it asks for no closing reply.
	{Text: "Removing it.", Calls: []scriptedmodel.Call{codexShell("rm -f conform-notes.txt")}},
	{Thinking: "Taking my time.", Text: "Waiting.", Calls: []scriptedmodel.Call{codexShell("sleep 5")}},
	{Text: "Done waiting."},
}

// toolConformScript is conformRealScripts' for the agents whose tools
// take absolute paths in the workspace at ws, called by the names of one
// meaning across them (as realagent.TurnFor does). claude-agent-acp
// 0.101.0 reads and writes the workspace itself, so no agent here
// exercises acp-agent/fs/*: qwen 0.24.4, which goes through the client,
// ended the cancelled turn end_turn in one run of three and outlived the
// end of its input in another, too unsteady for a baseline.
func toolConformScript(ws string) scriptedmodel.Script {
	notes, summary := filepath.Join(ws, "conform-notes.txt"), filepath.Join(ws, "conform-summary.txt")
	shell := func(command string) scriptedmodel.Call {
		return scriptedmodel.Call{Names: []string{"mcp__acp__Bash", "Bash", "run_shell_command", "bash", "shell"}, Args: map[string]any{"command": command},
			Optional: map[string]any{"description": "Run " + command, "timeout": 60000}}
	}
	return scriptedmodel.Script{
		{Text: "Reading it.", Calls: []scriptedmodel.Call{{Names: []string{"mcp__acp__Read", "Read", "read_file", "read"}, Args: map[string]any{"path": notes}}}},
		{Text: "Writing a summary.", Calls: []scriptedmodel.Call{{Names: []string{"mcp__acp__Write", "Write", "write_file", "write"},
			Args: map[string]any{"path": summary, "content": "Two lines.\n"}}}},
		{Text: "It has two lines."},
		{Text: "Removing it.", Calls: []scriptedmodel.Call{shell("rm -f " + notes)}},
		{Text: "Kept."},
		{Thinking: "Taking my time.", Text: "Waiting.", Calls: []scriptedmodel.Call{shell("sleep 5")}},
		{Text: "Done waiting."},
	}
}

func codexShell(command string) scriptedmodel.Call {
	return scriptedmodel.Call{Names: []string{"exec_command", "shell"}, Args: map[string]any{"command": command}}
}

// TestConformRealAgent runs bridgekit conform --side acp-agent against a
// real agent from npm (testdata/agents, internal/realagent) on the
// scripted model, on a loopback of its own: every scenario passes or is in
// the agent's baseline (testdata/conform/<agent>-<version>.baseline, each
// entry with its reason), whose entries must all still fail; and nothing
// is left running.
func TestConformRealAgent(t *testing.T) {
	t.Setenv(realagent.ContainmentEnv, realagent.Containment) // conform starts the agent in this process
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range conformRealScripts {
			if !yield(n) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			realagent.Require(t, name)
			root := t.TempDir()
			a, err := realagent.Prepare(name, realagent.Options{Root: root, Script: conformRealScripts[name](filepath.Join(root, "workspace"))})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := a.Close(); err != nil {
					t.Error(err)
				}
			}()
			baseline := filepath.Join("testdata", "conform", name+"-"+a.Spec.Version+".baseline")
			args := []string{"--side", "acp-agent", "--timeout", "30s", "--grace", "5s", "--workdir", a.Workspace, "--baseline", baseline}
			if a.Spec.AuthMethod != "" {
				args = append(args, "--authenticate", a.Spec.AuthMethod)
			}
			// conform starts the agent itself: with its environment alone,
			// in its namespace.
			argv := append(append([]string{"/usr/bin/env", "-i"}, a.Env...), a.Argv...)
			began := time.Now()
			status, rep, out := conformRun(t, append(append(args, "--"), argv...)...)
			t.Logf("conform --side acp-agent against %s %s: %v\n%s", name, a.Spec.Version, time.Since(began).Round(time.Millisecond), out)
			if status != 0 || !rep.Summary.OK {
				t.Fatalf("status %d, summary %+v (the table above; the agent's stderr:\n%s)", status, rep.Summary, a.Stderr())
			}
			var passed []string
			for _, r := range rep.Scenarios {
				if r.Status == conform.Pass {
					passed = append(passed, r.ID)
				}
			}
			// What the suite is for: a turn with a tool call, a permission
			// answered each way, a cancel.
			for _, id := range []string{"acp-agent/initialize", "acp-agent/session-new", "acp-agent/prompt", "acp-agent/permission/allow", "acp-agent/permission/reject", "acp-agent/cancel"} {
				if !slices.Contains(passed, id) {
					t.Errorf("%s did not pass: %s", id, fmt.Sprint(rep.Scenarios))
				}
			}
			if err := a.Model.Err(); err != nil {
				t.Errorf("scripted model: %v", err)
			}
			for _, o := range a.Outbound() {
				if !slices.Contains(a.Spec.KnownOutbound, o) {
					t.Errorf("a request to an outside host: %q", o)
				}
			}
			for deadline := time.Now().Add(3 * time.Second); len(a.Procs()) > 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if left := a.Procs(); len(left) > 0 {
				t.Errorf("processes left in the agent's namespace: %v", left)
			}
		})
	}
}
