package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/internal/interop/peers"
)

// How the host authenticates with, and answers, a plain ACP agent as
// today's agents behave (the TypeScript agent's --auth: an API-key agent
// method, a terminal login offered only to a client that can run one, and
// a prompt refused with "Authentication required" after an
// unauthenticated session/new).

// promptWithEnv runs `host ARGS -- node agent.mjs AGENTARGS` in env (the
// test's, without the variables named in drop, plus set).
func promptWithEnv(t *testing.T, drop, set, hostArgs []string, agentArgs ...string) *running {
	t.Helper()
	args := append(append(append([]string{}, hostArgs...), "--", peers.Node(t), agentScript), agentArgs...)
	cmd := exec.Command(hostBin, args...)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(drop, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, set...)
	r := start(t, cmd, nil)
	r.stdin.Close()
	return r
}

// -auth-terminal tells the agent that the host can run a terminal login
// (clientCapabilities.auth.terminal), and the agent then lists it; an
// "Authentication required" answer to session/prompt exits 11 with every
// method and what it needs (problems 1 and 2 of issue 34: the capability
// was never sent, and the prompt's error exited 3).
func TestPromptAuthRequiredOnPrompt(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		args := []string{"-prompt", "hi", "-workspace", t.TempDir()}
		if terminal {
			// The terminal login is chosen and run (the agent program with
			// --login, on the host's closed stdin: it ends at once), then
			// the prompt is refused all the same.
			args = append(args, "-auth-terminal")
		}
		r := promptWithEnv(t, []string{"OPENAI_API_KEY"}, nil, args, "--auth")
		got := r.wait(t, 20*time.Second)
		text := r.stderrText()
		if got != exitAuth {
			t.Errorf("-auth-terminal %v: exit status %d, want %d; stderr:\n%s", terminal, got, exitAuth, text)
		}
		for _, want := range []string{
			"session/prompt: the agent requires authentication",
			"api-key (agent): an API key for openai in OPENAI_API_KEY",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("-auth-terminal %v: stderr lacks %q:\n%s", terminal, want, text)
			}
		}
		sent := strings.Contains(text, `clientCapabilities {"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":true}}`)
		listed := strings.Contains(text, "login (terminal): an interactive run of the agent with --login in a terminal")
		if sent != terminal || listed != terminal {
			t.Errorf("-auth-terminal %v: auth.terminal sent %v, terminal login listed %v; stderr:\n%s", terminal, sent, listed, text)
		}
	}
}

// An API-key agent method is chosen unasked when its provider's variable
// is set in the environment the agent gets, which the host's policy
// decides (the policy's agent.env, or -pass-env): the agent, which reads
// the key from its own environment, then accepts authenticate. The key is
// never shown, nor sent in the request (problem 5 of issue 34).
func TestPromptChoosesAPIKeyMethod(t *testing.T) {
	const key = "sk-test-0123456789abcdefghij"
	pol := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, pol, `{"agent": {"env": {"inherit": ["OPENAI_API_KEY"]}}}`)
	for _, pass := range [][]string{{"-pass-env", "OPENAI_API_KEY"}, {"-policy", pol}} {
		r := promptWithEnv(t, []string{"OPENAI_API_KEY"}, []string{"OPENAI_API_KEY=" + key}, append([]string{"-prompt", "say hello", "-workspace", t.TempDir()}, pass...), "--auth")
		got := r.wait(t, 20*time.Second)
		text := r.stderrText()
		if got != exitCompleted {
			t.Fatalf("%v: exit status %d; stderr:\n%s", pass, got, text)
		}
		if !strings.Contains(text, "host: authenticating with api-key (agent)") || !strings.Contains(text, "[acp-ts agent] authenticate api-key") {
			t.Errorf("%v: stderr:\n%s", pass, text)
		}
		if strings.Contains(text, key) {
			t.Errorf("%v: the key was shown", pass)
		}
	}
}

// A key in the host's environment that its policy does not pass is not
// the agent's: the API-key method is not chosen, the agent refuses the
// prompt, and the host exits 11 saying the policy withholds the variable.
func TestPromptWithheldAPIKey(t *testing.T) {
	const key = "sk-test-0123456789abcdefghij"
	r := promptWithEnv(t, []string{"OPENAI_API_KEY"}, []string{"OPENAI_API_KEY=" + key}, []string{"-prompt", "say hello", "-workspace", t.TempDir()}, "--auth")
	got := r.wait(t, 20*time.Second)
	text := r.stderrText()
	if got != exitAuth {
		t.Errorf("exit status %d, want %d; stderr:\n%s", got, exitAuth, text)
	}
	for _, want := range []string{
		"session/prompt: the agent requires authentication",
		"api-key (agent): an API key for openai in OPENAI_API_KEY (read by the agent from its environment), through authenticate",
		"OPENAI_API_KEY is set in the host's environment, and the host's policy withholds it from the agent",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stderr lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "authenticating with") || strings.Contains(text, key) {
		t.Errorf("the method was chosen, or the key shown:\n%s", text)
	}
}

// A denial carries Harn's root "reason" only to a runtime that advertised
// Harn's extensions: a plain ACP agent gets {"outcome": ...} and nothing
// ACP does not define (problem 3 of issue 34).
func TestPromptDenialReasonOnlyToHarn(t *testing.T) {
	for _, harn := range []bool{false, true} {
		ws := t.TempDir()
		writeFile(t, filepath.Join(ws, "README.md"), "# readme\n")
		report := filepath.Join(t.TempDir(), "report.json")
		agentArgs := []string{"--report=" + report}
		if harn {
			agentArgs = append(agentArgs, "--harn")
		}
		r := startPrompt(t, []string{"-config", "example/host.json", "-policy", "example/policy.json", "-workspace", ws, "-prompt", "ask permission"}, agentArgs...)
		if got := r.wait(t, 20*time.Second); got != exitCompleted && !harn {
			t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatalf("no report: %v\n%s", err, r.stderrText())
		}
		var rep struct {
			Permission struct {
				Raw map[string]jsontext.Value `json:"raw"`
			} `json:"permission"`
		}
		if err := json.Unmarshal(data, &rep, json.RejectUnknownMembers(false)); err != nil {
			t.Fatal(err)
		}
		var members []string
		for k := range rep.Permission.Raw {
			members = append(members, k)
		}
		slices.Sort(members)
		want := "outcome"
		if harn {
			want = "outcome,reason"
		}
		if strings.Join(members, ",") != want {
			t.Errorf("Harn %v: the denial's members are %v, want %s (report %s)", harn, members, want, data)
		}
	}
}
