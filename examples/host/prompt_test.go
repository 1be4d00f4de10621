package main

import (
	"fmt"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
)

// These tests run the host the way its users do: the built binary, its
// stdin closed, the runtime a real ACP agent (the TypeScript SDK's, in
// testdata/interop/acp-ts) started as its child, signals sent to it.

// agentScript is the TypeScript agent; it needs `npm ci` in its folder.
var agentScript = peers.Script("agent.mjs")

// startPrompt runs `host HOSTARGS -- node agent.mjs AGENTARGS` with its
// stdin closed at once.
func startPrompt(t *testing.T, hostArgs []string, agentArgs ...string) *running {
	t.Helper()
	args := append(append(append([]string{}, hostArgs...), "--", peers.Node(t), agentScript), agentArgs...)
	r := start(t, exec.Command(hostBin, args...), nil)
	r.stdin.Close()
	return r
}

func TestPromptCompletesAgainstTypeScriptAgent(t *testing.T) {
	r := startPrompt(t, []string{"--prompt", "say hello", "--workspace", t.TempDir()}) // the double-dash spelling works too
	if got := r.wait(t, 20*time.Second); got != exitCompleted {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	text := r.stderrText()
	for _, want := range []string{
		"host: agent bridgekit-interop-agent 0.0.0 (a plain ACP agent)",
		"agent: onetwothree\n",
		"host: done: completed: end_turn (a plain ACP agent, which reports no Harn terminal outcome) (exit status 0)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stderr lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Errorf("colour in a pipe:\n%q", text)
	}
}

// A Harn-like runtime calls every method the host serves; what it got is
// what the configuration and policy say.
func TestPromptHarnRuntimeUsesEverything(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "README.md"), "# Workspace readme\nsecond line\n")
	if err := os.Mkdir(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	r := startPrompt(t, []string{"-config", "example/host.json", "-policy", "example/policy.json", "-workspace", ws,
		"-prompt", "Ship the new release to production"}, "--harn", "--report="+report)
	if got := r.wait(t, 20*time.Second); got != exitCompleted {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, r.stderrText())
	}
	var rep struct {
		Capabilities map[string][]string      `json:"capabilities"`
		Tools        harn.HostToolsListResult `json:"tools"`
		Skills       harn.SkillsListResult    `json:"skills"`
		Candidates   []harn.SkillCandidate    `json:"candidates"`
		Match        harn.SkillMatchResult    `json:"match"`
		Unknown      struct {
			ErrorCode int64 `json:"errorCode"`
		} `json:"unknownSkill"`
		Tool struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"tool"`
		RejectedTool struct {
			ErrorCode int64 `json:"errorCode"`
		} `json:"rejectedTool"`
		Permissions []struct {
			Title   string `json:"title"`
			Granted bool   `json:"granted"`
			Outcome struct {
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		} `json:"permissions"`
		File struct {
			Content string `json:"content"`
		} `json:"file"`
		OutsideFile    struct{ ErrorCode int64 } `json:"outsideFile"`
		Write          jsontext.Value            `json:"write"`
		DeniedWrite    struct{ ErrorCode int64 } `json:"deniedWrite"`
		DeniedTerminal struct{ ErrorCode int64 } `json:"deniedTerminal"`
		Terminal       struct {
			Exit struct {
				ExitCode *int `json:"exitCode"`
			} `json:"exit"`
			Output struct {
				Output    string `json:"output"`
				Truncated bool   `json:"truncated"`
			} `json:"output"`
		} `json:"terminal"`
	}
	if err := json.Unmarshal(data, &rep, json.MatchCaseInsensitiveNames(true)); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	check := func(ok bool, what string) {
		t.Helper()
		if !ok {
			t.Errorf("%s; report:\n%s", what, data)
		}
	}
	check(len(rep.Capabilities["process"]) == 4, "host/capabilities")
	var tools []harn.HostTool
	if o := rep.Tools.Object; o != nil && o.ToolsList != nil {
		tools = o.ToolsList.Tools
	}
	check(len(tools) == 3 && tools[0].Name == "Read" && *tools[1].Deprecated && string(tools[2].Schema) == "null" &&
		*tools[0].Description == "Read a file from the active workspace", "host/tools/list (canonical {tools})")
	skills := rep.Skills.List
	check(len(skills) == 3 && *skills[2].ID == "ship" && *skills[2].Source == "host", "skills/list (a bare array)")
	check(len(rep.Candidates) == 3 && rep.Candidates[2].WhenToUse == "User says ship, release or deploy" &&
		strings.Join(rep.Candidates[2].Paths, ",") == "infra/**,Dockerfile", "skills/fetch manifests")
	var matches []harn.SkillMatch
	if o := rep.Match.Object; o != nil && o.SkillMatches != nil {
		matches = o.SkillMatches.Matches
	}
	check(len(matches) == 1 && matches[0].Name == "ship" && *matches[0].Score > 1 &&
		strings.Contains(*matches[0].Reason, "infra/cluster.tf matches infra/**"), "skill/match (canonical {matches})")
	check(rep.Unknown.ErrorCode == -32602, "skills/fetch of an unknown id")
	check(rep.Tool.Path == "README.md" && rep.Tool.Content == "# Workspace readme\nsecond line\n", "builtin_call of a configured tool")
	check(rep.RejectedTool.ErrorCode == files.CodeDenied, "builtin_call of a tool the host does not offer")
	check(len(rep.Permissions) == 2 && rep.Permissions[0].Granted && rep.Permissions[0].Outcome.OptionID == "allow" &&
		!rep.Permissions[1].Granted && rep.Permissions[1].Outcome.OptionID == "reject", "permissions")
	check(rep.File.Content == "# Workspace readme\n", "fs/read_text_file")
	check(rep.OutsideFile.ErrorCode == files.CodeDenied, "fs/read_text_file outside the workspace")
	check(string(rep.Write) == "{}" && rep.DeniedWrite.ErrorCode == files.CodeDenied, "fs/write_text_file")
	check(rep.Terminal.Exit.ExitCode != nil && *rep.Terminal.Exit.ExitCode == 0 && rep.Terminal.Output.Output == "terminal works\n", "terminal")
	check(rep.DeniedTerminal.ErrorCode == files.CodeDenied, "a denied terminal")

	if b, _ := os.ReadFile(filepath.Join(ws, "src", "generated.txt")); string(b) != "written by the agent\n" {
		t.Errorf("src/generated.txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "README.md")); string(b) != "# Workspace readme\nsecond line\n" {
		t.Errorf("the denied write changed README.md: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "must-not-exist")); err == nil {
		t.Error("the denied command ran")
	}

	text := r.stderrText()
	for _, want := range []string{
		"host: agent bridgekit-interop-agent 0.0.0 (a Harn runtime)",
		"plan:\n  [~] Pick a skill (high)\n  [ ] Edit the code (medium)\n",
		"skill/match: ship ",
		"harn skill_activated: ship iteration 1 bm25 on ship, release, production",
		`permission "edit_file" (edit) src/main.go: allowed (rule edit-src) -> option "allow"`,
		`permission "delete_file" (delete) README.md: denied (rule never-delete) -> option "reject"`,
		"fs read /etc/hostname: denied",
		"fs write README.md: denied (fs.write does not list it)",
		"terminal term-1 echo terminal works: allowed (terminal.allow echo **)",
		"builtin Read (read_file): done",
		"builtin rm_rf: rejected (not a tool of this host)",
		"bridge progress: worker: spawned reviewer (1/2)",
		"bridge log: [info] tour under way",
		"event iteration_start: iteration=1",
		"idle: iteration 1, backoff 100ms",
		"harn progress: narration: almost done (2/3)",
		"harn log: [info] bridge calls finished",
		"agent: Used skill ship; edit granted.\n",
		"host: done: completed (Harn terminal outcome natural, reason done, owner agent) (exit status 0)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stderr lacks %q:\n%s", want, text)
		}
	}
}

// The exit status says how the prompt ended.
func TestPromptExitStatuses(t *testing.T) {
	for _, tc := range []struct {
		agentArgs []string
		status    int
		says      string
	}{
		{[]string{"--fail"}, exitAgentError, "the agent failed session/prompt: error -32000: model provider unavailable (Harn terminal class provider_unavailable, retryable)"},
		{[]string{"--crash"}, exitRuntimeDied, "the runtime ended the connection before it answered session/prompt ("},
		{[]string{"--stop-reason=refusal"}, exitRefused, "refused"},
		{[]string{"--stop-reason=max_tokens"}, exitMaxTokens, "max_tokens"},
		{[]string{"--stop-reason=max_turn_requests"}, exitMaxTurnRequests, "max_turn_requests"},
		{[]string{"--stop-reason=cancelled"}, exitAgentCancelled, "the agent cancelled the turn although the host did not ask it to"},
		{[]string{"--stop-reason=bogus"}, exitProtocol, `unknown stopReason "bogus"`}, // kept by the open enum, then refused by the host
		{[]string{"--harn", "--terminal=policy_budget"}, exitNotCompleted, "not completed: Harn terminal outcome policy_budget, reason stopped by policy, owner agent (stopReason end_turn)"},
		{[]string{"--harn", "--terminal=none"}, exitNotCompleted, "not completed: end_turn without the Harn terminal outcome this runtime advertises"},
	} {
		r := startPrompt(t, []string{"-prompt", "do it", "-workspace", t.TempDir()}, tc.agentArgs...)
		got := r.wait(t, 20*time.Second)
		text := r.stderrText()
		if got != tc.status || !strings.Contains(text, tc.says) || !strings.Contains(text, fmt.Sprintf("(exit status %d)\n", tc.status)) {
			t.Errorf("%q: exit status %d, want %d saying %q; stderr:\n%s", tc.agentArgs, got, tc.status, tc.says, text)
		}
	}
	if r := startPrompt(t, []string{"-prompt", "x"}, "--crash"); r.wait(t, 20*time.Second) != exitRuntimeDied || !strings.Contains(r.stderrText(), "exited with status 3") {
		t.Errorf("a crash does not report the runtime's status:\n%s", r.stderrText())
	}
	// A runtime that cannot start, and -prompt without one.
	r := start(t, exec.Command(hostBin, "-prompt", "x", "--", filepath.Join(t.TempDir(), "missing")), nil)
	r.stdin.Close()
	if got := r.wait(t, 10*time.Second); got != exitCannotStart {
		t.Errorf("missing runtime: exit status %d; stderr:\n%s", got, r.stderrText())
	}
	r = start(t, exec.Command(hostBin, "-prompt", "x"), nil)
	r.stdin.Close()
	if got := r.wait(t, 10*time.Second); got != exitUsage {
		t.Errorf("-prompt without a runtime: exit status %d", got)
	}
	// Values no one means are usage errors, not silently the default (a
	// -max-frame of 0 or less) or no wait at all (a negative -grace).
	for _, args := range [][]string{{"-max-frame", "0"}, {"-max-frame", "-5"}, {"-grace", "-1s"}} {
		r = start(t, exec.Command(hostBin, args...), nil)
		r.stdin.Close()
		if got := r.wait(t, 10*time.Second); got != exitUsage || !strings.Contains(r.stderrText(), args[0]) {
			t.Errorf("%q: exit status %d, want %d naming the flag; stderr:\n%s", args, got, exitUsage, r.stderrText())
		}
	}
}

// Ctrl-C sends session/cancel; the host exits once the agent has answered.
func TestPromptCtrlCCancelsThroughTheProtocol(t *testing.T) {
	skipWithoutSignals(t)
	r := startPrompt(t, []string{"-prompt", "until cancelled", "-workspace", t.TempDir()})
	r.waitStderr(t, "chunk 3")
	start := time.Now()
	sendSignal(t, r, syscall.SIGINT)
	if got := r.wait(t, 10*time.Second); got != 128+int(syscall.SIGINT) {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	t.Logf("exited %v after SIGINT", time.Since(start))
	text := r.stderrText()
	for _, want := range []string{
		"host: interrupt: sent session/cancel",
		"[acp-ts agent] session/cancel interop-0",
		"[acp-ts agent] prompt cancelled interop-0", // the agent ended the turn itself
		"host: failed: cancelled after interrupt: the agent ended the turn cancelled (exit status 130)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stderr lacks %q:\n%s", want, text)
		}
	}
}

// agentRunning reports whether a process whose command line contains
// marker still runs.
func agentRunning(t *testing.T, marker string) bool {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to look for the agent")
	}
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), marker) {
			return true
		}
	}
	return false
}

func waitAgentGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for agentRunning(t, marker) {
		if time.Now().After(deadline) {
			t.Fatal("the agent still runs after the host exited")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent that ignores session/cancel: a second Ctrl-C exits at once and
// kills it.
func TestPromptSecondCtrlCForcesExit(t *testing.T) {
	skipWithoutSignals(t)
	marker := "--report=" + filepath.Join(t.TempDir(), "second-ctrl-c")
	r := startPrompt(t, []string{"-prompt", "until cancelled", "-grace", "1m", "-workspace", t.TempDir()}, "--ignore-cancel", marker)
	r.waitStderr(t, "chunk 3")
	sendSignal(t, r, syscall.SIGINT)
	r.waitStderr(t, "sent session/cancel")
	start := time.Now()
	sendSignal(t, r, syscall.SIGINT)
	if got := r.wait(t, 5*time.Second); got != 130 {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the second Ctrl-C took %v", d)
	}
	if !strings.Contains(r.stderrText(), "host: second signal (interrupt): exiting now") {
		t.Errorf("stderr:\n%s", r.stderrText())
	}
	waitAgentGone(t, marker)
}

// An agent that does not answer session/cancel is stopped after -grace.
func TestPromptUnansweredCancelIsBoundedByGrace(t *testing.T) {
	skipWithoutSignals(t)
	marker := "--report=" + filepath.Join(t.TempDir(), "unanswered-cancel")
	r := startPrompt(t, []string{"-prompt", "until cancelled", "-grace", "300ms", "-workspace", t.TempDir()}, "--ignore-cancel", marker)
	r.waitStderr(t, "chunk 3")
	start := time.Now()
	sendSignal(t, r, syscall.SIGTERM)
	if got := r.wait(t, 10*time.Second); got != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("exited %v after the signal, before -grace", d)
	}
	if !strings.Contains(r.stderrText(), "the agent did not answer session/cancel within 300ms: stopping it") {
		t.Errorf("stderr:\n%s", r.stderrText())
	}
	waitAgentGone(t, marker)
}
