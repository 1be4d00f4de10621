package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/realagent"
	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// realAgents are the npm agents the host is run against end to end
// (testdata/agents, pinned by its package-lock.json): codex-acp and
// claude-agent-acp run their tools themselves, claude-code-acp through the
// host's fs/* and terminal/*.
var realAgents = []string{"codex-acp", "claude-agent-acp", "claude-code-acp"}

// realPolicy is the policy of the end-to-end runs: reads anywhere, the
// summary written, the commands of the turn allowed, rm denied.
const realPolicy = `{
  "permissions": [
    {"id": "no-rm", "commands": ["rm **", "/bin/bash -lc rm **"], "decision": "deny"},
    {"id": "read", "kinds": ["read", "search"], "paths": ["**"], "decision": "allow"},
    {"id": "turn-commands", "kinds": ["read", "execute"], "commands": ["cat notes.txt", "/bin/bash -lc cat notes.txt", "wc -l notes.txt", "sleep 37", "/bin/bash -lc sleep 37"], "decision": "allow"},
    {"id": "write-summary", "kinds": ["edit"], "paths": ["summary.txt"], "decision": "allow"}
  ],
  "fs": {"read": ["**"], "write": ["summary.txt"]},
  "terminal": {"allow": ["wc -l notes.txt", "sleep 37"], "env": {"inherit": ["PATH"], "allow": ["CLAUDECODE"]}}
}`

// requireRealAgent skips when node is missing, and otherwise leaves the
// decision to realagent.Require (which fails in CI rather than skip).
func requireRealAgent(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the real ACP agents cannot run")
	}
	realagent.Require(t, name)
}

// hostWithAgent prepares agent name with script and starts the host binary
// on it: -prompt text, the policy above, the agent's workspace, the agent
// (in its network namespace) as the runtime, the agent's environment as
// the host's (which the agent inherits).
func hostWithAgent(t *testing.T, name string, files map[string]string, script func(ws string) scriptedmodel.Script, text string) (*realagent.Agent, *running) {
	t.Helper()
	root := t.TempDir()
	a, err := realagent.Prepare(name, realagent.Options{Root: root, Files: files, Script: script(filepath.Join(root, "workspace"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	policy := filepath.Join(root, "policy.json")
	if err := os.WriteFile(policy, []byte(realPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-prompt", text, "-policy", policy, "-workspace", a.Workspace, "-grace", "2s", "--"}, a.Argv...)
	cmd := exec.Command(hostBin, args...)
	cmd.Env = a.Env
	cmd.Dir = root
	r := start(t, cmd, nil)
	r.stdin.Close()
	return a, r
}

// agentGone waits for every process of the agent's namespace to go.
func agentGone(t *testing.T, a *realagent.Agent) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(a.Procs()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the agent left running after the host exited: %v", a.Procs())
		}
	}
}

// A whole turn through the host: initialize, authenticate where the agent
// asks (codex-acp's env_var method, CODEX_API_KEY), session/new, a prompt
// whose model reads notes.txt, writes summary.txt (allowed by the policy)
// and runs rm (denied by it); for claude-code-acp the read and the write
// go through the host's workspace and a command through its terminals.
func TestRealAgentTurnThroughTheHost(t *testing.T) {
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireRealAgent(t, name)
			turn := realagent.TurnFor(name)
			a, r := hostWithAgent(t, name, turn.Files, turn.Script, turn.Prompt)
			status := r.wait(t, 120*time.Second)
			text := r.stderrText()
			defer func() {
				if t.Failed() {
					t.Logf("host stderr:\n%s", text)
				}
			}()
			want := map[string]int{"codex-acp": exitDeniedCancelled, "claude-agent-acp": exitCompleted, "claude-code-acp": exitCompleted}[name]
			if status != want {
				t.Errorf("exit status %d, want %d", status, want)
			}
			says := []string{
				name + " " + realagent.Agents[name].Version + " (a plain ACP agent)",
				"permission ", ": allowed (rule write-summary) -> option ",
				": denied (rule no-rm) -> option ",
			}
			switch name {
			case "codex-acp":
				says = append(says, "host: authenticating with codex-api-key (env_var)",
					"the agent ended the turn cancelled after the host denied a permission")
			case "claude-code-acp":
				says = append(says, "fs read notes.txt: allowed (fs.read)", "fs write summary.txt: allowed (fs.write)",
					"[sh -c] wc -l notes.txt: allowed (terminal.allow wc -l notes.txt)", "completed: end_turn")
			}
			for _, s := range says {
				if !strings.Contains(text, s) {
					t.Errorf("stderr lacks %q", s)
				}
			}
			if strings.Contains(text, realagent.FakeKey) {
				t.Error("the host showed the agent's key")
			}
			if b, err := os.ReadFile(filepath.Join(a.Workspace, "summary.txt")); err != nil || !strings.Contains(string(b), "two lines") {
				t.Errorf("summary.txt: %q %v", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(a.Workspace, "notes.txt")); err != nil || string(b) != realagent.Notes {
				t.Errorf("notes.txt after the denied rm: %q %v", b, err)
			}
			if err := a.Model.Err(); err != nil {
				t.Error(err)
			}
			agentGone(t, a)
		})
	}
}

// Ctrl-C in the middle of a turn (the agent waiting for a sleep it was
// allowed to run): the host sends session/cancel, the agent ends the turn
// cancelled, the host exits 130, and nothing of the agent, nor the
// command, is left running.
func TestRealAgentCtrlCThroughTheHost(t *testing.T) {
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireRealAgent(t, name)
			script := func(string) scriptedmodel.Script {
				call := scriptedmodel.Call{Name: "exec_command", Input: []byte(`{"cmd":"sleep 37"}`)}
				switch name {
				case "claude-agent-acp":
					call = scriptedmodel.Call{Name: "Bash", Input: []byte(`{"command":"sleep 37","description":"Wait","timeout":60000}`)}
				case "claude-code-acp":
					call = scriptedmodel.Call{Name: "mcp__acp__Bash", Input: []byte(`{"command":"sleep 37","description":"Wait","timeout":60000}`)}
				}
				return scriptedmodel.Script{{Text: "Waiting.", Calls: []scriptedmodel.Call{call}}, {Text: "Done."}}
			}
			a, r := hostWithAgent(t, name, map[string]string{"notes.txt": realagent.Notes}, script, "Wait a while.")
			defer func() {
				if t.Failed() || os.Getenv("HOST_E2E_SHOW") != "" {
					t.Logf("host stderr:\n%s", r.stderrText())
				}
			}()
			deadline := time.Now().Add(90 * time.Second)
			for !sleeping(a) {
				select {
				case <-r.exited:
					t.Fatal("the host exited before the command started")
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the command never started; stderr:\n%s", r.stderrText())
				}
				time.Sleep(50 * time.Millisecond)
			}
			sendSignal(t, r, syscall.SIGINT)
			if status := r.wait(t, 30*time.Second); status != 128+int(syscall.SIGINT) {
				t.Errorf("exit status %d, want %d", status, 128+int(syscall.SIGINT))
			}
			text := r.stderrText()
			for _, s := range []string{"sent session/cancel", "cancelled after interrupt", "(exit status 130)"} {
				if !strings.Contains(text, s) {
					t.Errorf("stderr lacks %q", s)
				}
			}
			agentGone(t, a)
			for deadline := time.Now().Add(5 * time.Second); sleeping(a); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("sleep 37 outlived the host")
				}
			}
		})
	}
}

// sleeping reports whether a "sleep 37" of the turn runs: in the agent's
// namespace (codex-acp runs it) or as a terminal of the host
// (claude-code-acp's goes through terminal/create).
func sleeping(a *realagent.Agent) bool {
	for _, p := range a.Procs() {
		if strings.Contains(p.Command, "sleep 37") {
			return true
		}
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "sleep\x0037") && strings.Contains(cwdOf(d.Name()), a.Root) {
			return true
		}
	}
	return false
}

func cwdOf(pid string) string {
	s, _ := os.Readlink(fmt.Sprintf("/proc/%s/cwd", pid))
	return s
}

// gatewaySecret is the value of the gateway's header in
// TestRealAgentTurnThroughAGateway: it must reach the model, and never the
// host's stderr.
const gatewaySecret = "gw-secret-3f9a1c7e5b2d4860"

// A whole turn of claude-agent-acp through a model gateway the host names
// with -gateway: initialize says the client supports gateway methods, the
// host authenticates with the agent's gateway method and passes the
// gateway's base URL and header (its value read from a variable named by
// -gateway-header) in authenticate's _meta.gateway. The agent's own
// environment points nowhere (no ANTHROPIC_BASE_URL, no key): the model
// is reached through the gateway URL or not at all, and every request it
// gets carries the gateway's header. The header's value never shows on the
// host's stderr.
func TestRealAgentTurnThroughAGateway(t *testing.T) {
	const name = "claude-agent-acp"
	requireRealAgent(t, name)
	turn := realagent.TurnFor(name)
	root := t.TempDir()
	a, err := realagent.Prepare(name, realagent.Options{Root: root, Files: turn.Files, Script: turn.Script(filepath.Join(root, "workspace"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	var env []string
	for _, kv := range a.Env {
		if !strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") && !strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GATEWAY_KEY="+gatewaySecret)
	policy := filepath.Join(root, "policy.json")
	if err := os.WriteFile(policy, []byte(realPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-prompt", turn.Prompt, "-policy", policy, "-workspace", a.Workspace, "-grace", "2s", "-v",
		"-gateway", a.ModelURL, "-gateway-protocol", "anthropic", "-gateway-header", "x-api-key=GATEWAY_KEY", "--"}, a.Argv...)
	cmd := exec.Command(hostBin, args...)
	cmd.Env = env
	cmd.Dir = root
	r := start(t, cmd, nil)
	r.stdin.Close()
	status := r.wait(t, 120*time.Second)
	text := r.stderrText()
	defer func() {
		if t.Failed() {
			t.Logf("host stderr:\n%s", text)
		}
	}()
	if status != exitCompleted {
		t.Errorf("exit status %d, want %d", status, exitCompleted)
	}
	for _, s := range []string{
		"host: authenticating with gateway (agent) through the gateway " + a.ModelURL,
		": allowed (rule write-summary) -> option ", ": denied (rule no-rm) -> option ",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("stderr lacks %q", s)
		}
	}
	if strings.Contains(text, gatewaySecret) {
		t.Error("the host showed the gateway's header value")
	}
	main := 0
	for _, req := range a.Model.Requests() {
		if got := req.Header.Get("X-Api-Key"); got != gatewaySecret {
			t.Errorf("%s %s reached the model with x-api-key %q, not the gateway's header", req.Method, req.Path, got)
		}
		if req.Main {
			main++
		}
	}
	if main < 2 {
		t.Errorf("%d turns of the script reached the model through the gateway", main)
	}
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "summary.txt")); err != nil || !strings.Contains(string(b), "two lines") {
		t.Errorf("summary.txt: %q %v", b, err)
	}
	if err := a.Model.Err(); err != nil {
		t.Error(err)
	}
	agentGone(t, a)
}
