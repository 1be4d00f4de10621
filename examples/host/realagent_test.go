package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/internal/realagent"
	"github.com/bridgekit/bridgekit/internal/recorder"
	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// realAgents are the npm agents the host is run against end to end
// (testdata/agents, pinned by its package-lock.json).
var realAgents = realagent.Names()

// realPolicy is the policy of the end-to-end runs: reads anywhere, the
// summary written, the commands of the turn allowed, rm denied; and the
// agents get, beside the baseline, the variables internal/realagent sets
// for them (their endpoints, fake keys, configuration directories, the
// proxy trap, telemetry switches), each named: no pattern.
const realPolicy = `{
  "agent": {"env": {"inherit": [
    "TERM", "NO_COLOR", "SHELL", "DO_NOT_TRACK", "BRIDGEKIT_CONTAINMENT",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "MAX_THINKING_TOKENS",
    "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_PLUGIN_CACHE_DIR", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE",
    "DISABLE_AUTOUPDATER", "DISABLE_BUG_COMMAND", "DISABLE_COST_WARNINGS", "DISABLE_ERROR_REPORTING", "DISABLE_TELEMETRY", "IS_SANDBOX",
    "CODEX_HOME", "CODEX_API_KEY", "RUST_LOG", "NO_BROWSER", "INITIAL_AGENT_MODE",
    "OPENCODE_CONFIG_CONTENT", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS", "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_SHARE",
    "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "QWEN_CODE_NO_RELAUNCH", "QWEN_DEFAULT_AUTH_TYPE",
    "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "GEMINI_MODEL", "GEMINI_CLI_NO_RELAUNCH", "GEMINI_CLI_TRUST_WORKSPACE",
    "PI_CODING_AGENT_DIR", "PI_ACP_PI_COMMAND", "PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY",
    "npm_config_offline", "npm_config_update_notifier"
  ]}},
  "permissions": [
    {"id": "turn-command-titles", "kinds": ["execute"], "tools": ["touch checked.txt"], "decision": "allow", "trust_workspace_code": true},
    {"id": "no-rm", "commands": ["rm **", "/bin/bash -lc rm **", "bash -c rm **", "/bin/sh -c rm **", "sh -c rm **"], "decision": "deny"},
    {"id": "read", "kinds": ["read", "search"], "paths": ["**"], "decision": "allow"},
    {"id": "turn-commands", "kinds": ["read", "execute", "other"], "commands": ["cat notes.txt", "/bin/bash -lc cat notes.txt", "touch checked.txt", "/bin/bash -lc touch checked.txt", "sleep 37", "/bin/bash -lc sleep 37"], "decision": "allow", "trust_workspace_code": true},
    {"id": "write-summary", "kinds": ["edit", "other"], "paths": ["summary.txt"], "decision": "allow"}
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
	policyPassesAgentEnv(t, policy, a.Env)
	// -grace 30s: six agents at once on a loaded machine may take more than
	// the default 5 s to shut down at the end of their input.
	args := append([]string{"-prompt", text, "-policy", policy, "-workspace", a.Workspace, "-grace", "30s", "-record", filepath.Join(root, "traffic.jsonl"), "--"}, a.Argv...)
	cmd := exec.Command(hostBin, args...)
	cmd.Env = a.Env
	cmd.Dir = a.Workspace // where a user runs it: gemini runs commands in its own directory
	r := start(t, cmd, nil)
	r.stdin.Close()
	return a, r
}

// policyPassesAgentEnv fails the test unless the policy file passes the
// agent every variable of env (the environment internal/realagent made
// for it) beside the baseline: the host gives the agent nothing else.
func policyPassesAgentEnv(t *testing.T, path string, env []string) {
	t.Helper()
	pol, err := loadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	passed := agentEnv(env, pol.Agent.Env.Inherit)
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(passed, name) && !slices.Contains(child.BaselineEnv, name) {
			t.Fatalf("the end-to-end policy does not pass the agent %s, which internal/realagent sets: name it in realPolicy's agent.env", name)
		}
	}
}

// The end-to-end policy passes each agent every variable
// internal/realagent sets for it (the host gives the agent nothing else),
// checked without starting an agent, so that a variable added there fails
// here at once, and not as a turn that goes wrong minutes later.
func TestRealAgentPolicyPassesTheirEnvironment(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(realPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			requireRealAgent(t, name)
			a, err := realagent.Prepare(name, realagent.Options{Root: t.TempDir(), Script: scriptedmodel.Script{}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := a.Close(); err != nil {
					t.Error(err)
				}
			}()
			policyPassesAgentEnv(t, policy, a.Env)
		})
	}
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

var recordTraffic = flag.Bool("record", false, "write each real agent's traffic through the host to testdata/acp/traffic/<agent>-<version>/turn.jsonl")

// A whole turn through the host, each agent in a network namespace with
// only loopback and no credential but a fake key: initialize,
// authenticate where the agent asks (by the host's own choice),
// session/new, a prompt whose model thinks, talks, reads notes.txt, writes
// summary.txt (allowed by the policy; through fs/* where the agent
// delegates it), runs wc (allowed) and rm (denied; pi asks no permission
// and runs a harmless command instead), and reports usage, which the host
// shows; then the end of input: the agent exits by itself, no process is
// left, and the host writes the traffic it exchanged (-record), which
// -args -record keeps under testdata/acp/traffic.
func TestRealAgentTurnThroughTheHost(t *testing.T) {
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireRealAgent(t, name)
			spec := realagent.Agents[name]
			turn := realagent.TurnFor(name)
			a, r := hostWithAgent(t, name, turn.Files, turn.Script, turn.Prompt)
			status := r.wait(t, 240*time.Second)
			text := r.stderrText()
			defer func() {
				if t.Failed() || os.Getenv("HOST_E2E_SHOW") != "" {
					t.Logf("host stderr:\n%s", text)
					for _, req := range a.Model.Requests() {
						t.Logf("model request %s %s main=%v reply=%d tools=%v", req.Method, req.Path, req.Main, req.Reply, req.Tools)
					}
				}
			}()
			// codex-acp's only reject option ("No, and tell Codex what to do
			// differently") ends its turn cancelled.
			wantStatus, ends := exitCompleted, "host: done: completed: end_turn"
			if name == "codex-acp" {
				wantStatus, ends = exitDeniedCancelled, "the agent ended the turn cancelled after the host denied a permission"
			}
			if status != wantStatus {
				t.Errorf("exit status %d, want %d", status, wantStatus)
			}
			says := []string{
				spec.Version + " (a plain ACP agent)",
				"thinking: ", "I will read the notes", // Gemini's thoughts carry a subject first
				"agent: Reading the notes.",
				"usage: ",
				ends,
			}
			if spec.AuthMethod != "" {
				says = append(says, "host: authenticating with "+spec.AuthMethod+" (agent)")
			}
			if spec.Permissions {
				says = append(says, ": allowed (rule ", ": denied (rule no-rm) -> option ")
			}
			if spec.FSRead {
				says = append(says, "fs read notes.txt: allowed (fs.read)")
			}
			if spec.FSWrite {
				says = append(says, "fs write summary.txt: allowed (fs.write)")
			}
			for _, s := range says {
				if !strings.Contains(text, s) {
					t.Errorf("stderr lacks %q", s)
				}
			}
			// No label without text after it, no bare tool line, no key.
			for _, l := range strings.Split(text, "\n") {
				if f := strings.Fields(l); len(f) == 1 && strings.HasSuffix(f[0], ":") || len(f) == 2 && f[0] == "tool" {
					t.Errorf("an empty line: %q", l)
				}
			}
			if strings.Contains(text, realagent.FakeKey) {
				t.Error("the host showed the agent's key")
			}
			switch {
			case strings.Contains(text, "in the middle of a frame"):
				t.Error("the agent was stopped while it wrote a frame")
			case strings.Contains(text, "did not exit within") && name == "qwen":
				// qwen 0.24.4 sometimes stays up after the end of its input
				// of a turn (without one it exits in under a second): its
				// EOF shutdown (runAcpAgent, chunks/acpAgent-*.js) closes
				// each session after the session's active work settles
				// (closeStoredSession's close gate and active turns, then
				// its chat recorder's flush, bounded by
				// SESSION_DRAIN_TIMEOUT_MS, 30 s, as long as -grace here)
				// and drains its MCP pool (up to 8 s); the host then stops
				// it, whole, after -grace.
				t.Log("qwen did not exit by itself within -grace; the host stopped it")
			case strings.Contains(text, "did not exit within"):
				t.Error("the agent did not exit by itself at the end of its input")
			}
			if b, err := os.ReadFile(filepath.Join(a.Workspace, "summary.txt")); err != nil || string(b) != realagent.Summary {
				t.Errorf("summary.txt: %q %v", b, err)
			}
			// codex runs the command in its read-only sandbox without asking,
			// where it fails; the others ran it once allowed (pi unasked).
			if _, err := os.Stat(filepath.Join(a.Workspace, "checked.txt")); err != nil && name != "codex-acp" {
				t.Errorf("the allowed command did not run: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(a.Workspace, "notes.txt")); err != nil || string(b) != realagent.Notes {
				t.Errorf("notes.txt after the denied rm: %q %v", b, err)
			}
			if used := a.Model.Used(); used < 4 {
				t.Errorf("the agent asked the model for %d replies of the turn's 5", used)
			}
			if err := a.Model.Err(); err != nil {
				t.Error(err)
			}
			for _, o := range a.Outbound() {
				if !slices.Contains(spec.KnownOutbound, o) {
					t.Errorf("the agent tried to reach outside loopback: %s", o)
				}
			}
			agentGone(t, a)
			if dir := os.Getenv("HOST_E2E_KEEP"); dir != "" { // a debugging aid: keep the raw record
				if b, err := os.ReadFile(filepath.Join(a.Root, "traffic.jsonl")); err == nil {
					_ = os.WriteFile(filepath.Join(dir, name+".jsonl"), b, 0o644)
				}
			}
			frames, err := recorder.ReadFile(filepath.Join(a.Root, "traffic.jsonl"))
			if err != nil || len(frames) < 10 {
				t.Fatalf("the host's record: %d frames, %v", len(frames), err)
			}
			if *recordTraffic && !t.Failed() {
				dir := filepath.Join(realagent.Dir(), "..", "acp", "traffic", name+"-"+spec.Version)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := recorder.WriteFile(filepath.Join(dir, "turn.jsonl"), realagent.Scrub(frames, a.Root)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Ctrl-C in the middle of a turn (the model thinking, its answer slow to
// come): the host sends session/cancel, the agent ends the turn cancelled
// (its model request abandoned), the host exits 130, and nothing of the
// agent is left running.
func TestRealAgentCtrlCThroughTheHost(t *testing.T) {
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireRealAgent(t, name)
			turn := realagent.SlowTurnFor(name)
			a, r := hostWithAgent(t, name, turn.Files, turn.Script, turn.Prompt)
			defer func() {
				if t.Failed() || os.Getenv("HOST_E2E_SHOW") != "" {
					t.Logf("host stderr:\n%s", r.stderrText())
				}
			}()
			// The turn is under way once the model was asked and its first
			// event is out.
			ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
			defer cancel()
			if err := a.Model.Wait(ctx, 1); err != nil {
				t.Fatalf("the agent never asked the model: %v", err)
			}
			time.Sleep(500 * time.Millisecond) // the slow answer's first event reaches the agent
			sendSignal(t, r, syscall.SIGINT)
			if status := r.wait(t, 60*time.Second); status != 128+int(syscall.SIGINT) {
				t.Errorf("exit status %d, want %d", status, 128+int(syscall.SIGINT))
			}
			text := r.stderrText()
			for _, s := range []string{"sent session/cancel", "cancelled after interrupt", "(exit status 130)"} {
				if !strings.Contains(text, s) {
					t.Errorf("stderr lacks %q", s)
				}
			}
			agentGone(t, a)
		})
	}
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
	t.Parallel() // with the other real agents' turns
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
	// All but GATEWAY_KEY, which the host reads itself and does not pass.
	policyPassesAgentEnv(t, policy, env[:len(env)-1])
	args := append([]string{"-prompt", turn.Prompt, "-policy", policy, "-workspace", a.Workspace, "-grace", "2s", "-v",
		"-gateway", a.ModelURL, "-gateway-protocol", "anthropic", "-gateway-header", "x-api-key=GATEWAY_KEY", "-grace", "30s", "--"}, a.Argv...)
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
