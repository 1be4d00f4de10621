package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeAgentEnv makes the test binary a scripted ACP agent (fakeAgent)
// instead of running the tests: the host under test starts it as its child.
const fakeAgentEnv = "BRIDGEKIT_HOST_FAKE_AGENT"

// codexAuthMethods are codex-acp 0.16.0's (testdata/acp/traffic).
const codexAuthMethods = `[{"id":"chatgpt","name":"Login with ChatGPT","description":"Use your ChatGPT login with Codex CLI"},` +
	`{"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","vars":[{"name":"CODEX_API_KEY"}]},` +
	`{"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","vars":[{"name":"OPENAI_API_KEY"}]}]`

// fakeAgent speaks ACP on stdin/stdout as scenario says, like codex-acp:
// it offers codex's auth methods and answers session/new with
// auth_required until authenticate succeeded; scenario "deny" asks to run
// a command, offering codex's options, and ends the turn cancelled when the
// host rejects it (codex's "abort"); "crash-init" exits before it answers
// initialize; "env" first writes the names of its environment's
// variables to stderr ("fake agent env: NAME"), then needs no
// authentication.
func fakeAgent(scenario string) int {
	if scenario == "env" {
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			fmt.Fprintln(os.Stderr, "fake agent env:", name)
		}
		scenario = "no-auth"
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	send := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	authed := ""
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				MethodID string `json:"methodId"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.Method == "" {
			continue
		}
		id := string(msg.ID)
		switch msg.Method {
		case "initialize":
			if scenario == "slow-init" {
				time.Sleep(3 * time.Second)
			}
			send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":%s,"agentInfo":{"name":"fake-codex","version":"1"}}}`, id, codexAuthMethods)
		case "authenticate":
			if msg.Params.MethodID == "chatgpt" {
				send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"no browser"}}`, id)
				continue
			}
			authed = msg.Params.MethodID
			fmt.Fprintln(os.Stderr, "fake agent: authenticated with", authed)
			send(`{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
		case "session/new":
			if authed == "" && scenario != "no-auth" {
				send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"Authentication required"}}`, id)
				continue
			}
			send(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}`, id)
		case "session/prompt":
			if scenario != "deny" {
				send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, id)
				continue
			}
			send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run rm -rf build","kind":"execute","status":"pending","rawInput":{"command":["rm","-rf","build"]}}}}`)
			send(`{"jsonrpc":"2.0","id":"perm-1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c1"},` +
				`"options":[{"optionId":"approved","name":"Yes","kind":"allow_once"},{"optionId":"abort","name":"No, and tell Codex what to do differently","kind":"reject_once"}]}}`)
			for in.Scan() { // the host's answer
				if strings.Contains(in.Text(), `"perm-1"`) {
					break
				}
			}
			if !strings.Contains(in.Text(), `"optionId":"abort"`) {
				fmt.Fprintln(os.Stderr, "fake agent: unexpected answer", in.Text())
				return 3
			}
			send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"cancelled"}}`, id)
		}
	}
	return 0
}

// runFake runs the host with the fake agent as its runtime, which the
// host passes the variable that makes it one (-pass-env).
func runFake(t *testing.T, scenario string, env []string, hostArgs ...string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"-prompt", "go", "-workspace", t.TempDir(), "-grace", "2s", "-pass-env", fakeAgentEnv}, hostArgs...), "--", self)
	cmd := exec.Command(hostBin, args...)
	cmd.Env = append(append(os.Environ(), fakeAgentEnv+"="+scenario), env...)
	r := start(t, cmd, nil)
	r.stdin.Close()
	return r.wait(t, 30*time.Second), r.stderrText()
}

// withoutKeys is the environment with no OpenAI or Codex key.
func withoutKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("CODEX_API_KEY", "")
	os.Unsetenv("OPENAI_API_KEY")
	os.Unsetenv("CODEX_API_KEY")
}

func TestPromptAuthenticates(t *testing.T) {
	withoutKeys(t)
	// An env_var method whose variable is set and passed to the agent is
	// used.
	status, text := runFake(t, "auth", []string{"OPENAI_API_KEY=sk-test-0123456789abcdef"}, "-pass-env", "OPENAI_API_KEY")
	if status != exitCompleted || !strings.Contains(text, "authenticating with openai-api-key (env_var)") || !strings.Contains(text, "fake agent: authenticated with openai-api-key") {
		t.Errorf("env_var: status %d:\n%s", status, text)
	}
	if strings.Contains(text, "sk-test-0123456789abcdef") {
		t.Errorf("the key was shown:\n%s", text)
	}
	// -auth chooses among them.
	status, text = runFake(t, "auth", []string{"OPENAI_API_KEY=k", "CODEX_API_KEY=c"}, "-auth", "openai-api-key", "-pass-env", "OPENAI_API_KEY", "-pass-env", "CODEX_API_KEY")
	if status != exitCompleted || !strings.Contains(text, "authenticated with openai-api-key") {
		t.Errorf("-auth: status %d:\n%s", status, text)
	}
	// No credential: the agent's auth_required is reported with every
	// method and the variables each needs.
	status, text = runFake(t, "auth", nil)
	for _, want := range []string{
		"the agent requires authentication",
		"codex-api-key (env_var): set CODEX_API_KEY",
		"openai-api-key (env_var): set OPENAI_API_KEY",
		"chatgpt (agent): the agent's own login",
		"-auth ID",
		fmt.Sprintf("(exit status %d)", exitAuth),
	} {
		if status != exitAuth || !strings.Contains(text, want) {
			t.Errorf("no credential: status %d, want %d saying %q:\n%s", status, exitAuth, want, text)
		}
	}
	// A chosen method whose variable is not set fails before session/new.
	status, text = runFake(t, "auth", nil, "-auth", "codex-api-key")
	if status != exitAuth || !strings.Contains(text, `authentication method "codex-api-key" needs CODEX_API_KEY, which is not set`) {
		t.Errorf("-auth unset: status %d:\n%s", status, text)
	}
	// A chosen method the agent refuses, and one it does not offer.
	status, text = runFake(t, "auth", nil, "-auth", "chatgpt")
	if status != exitAuth || !strings.Contains(text, "authenticate chatgpt: ") || !strings.Contains(text, "no browser") {
		t.Errorf("refused: status %d:\n%s", status, text)
	}
	status, text = runFake(t, "auth", nil, "-auth", "nope")
	if status != exitAuth || !strings.Contains(text, `no such method: "nope"`) {
		t.Errorf("unknown: status %d:\n%s", status, text)
	}
	// An agent that needs nothing is not authenticated.
	status, text = runFake(t, "no-auth", nil)
	if status != exitCompleted || strings.Contains(text, "authenticating") {
		t.Errorf("no-auth: status %d:\n%s", status, text)
	}
}

// codex ends the turn "cancelled" when the host rejects a command (its
// only reject option is "abort"): that is reported as such, apart from a
// spontaneous cancel. The rejection never selects codex's "approved".
func TestPromptCancelledAfterDenial(t *testing.T) {
	withoutKeys(t)
	status, text := runFake(t, "deny", []string{"CODEX_API_KEY=k"}, "-pass-env", "CODEX_API_KEY")
	if status != exitDeniedCancelled || !strings.Contains(text, `the agent ended the turn cancelled after the host denied a permission ("Run rm -rf build" (execute))`) ||
		!strings.Contains(text, `permission "Run rm -rf build" (execute): denied (no rule allows it) -> option "abort"`) {
		t.Errorf("status %d, want %d:\n%s", status, exitDeniedCancelled, text)
	}
}

// Waiting for a slow initialize is shown on a terminal only: not in a
// pipe, and on a pseudo-terminal (util-linux script gives the host one).
func TestSlowInitializeNotice(t *testing.T) {
	withoutKeys(t)
	status, text := runFake(t, "slow-init", []string{"CODEX_API_KEY=k"}, "-pass-env", "CODEX_API_KEY")
	if status != exitCompleted || strings.Contains(text, "waiting for the agent") {
		t.Errorf("stderr is no terminal, yet: status %d:\n%s", status, text)
	}
	scriptBin, err := exec.LookPath("script")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("no util-linux script to give the host a terminal")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join([]string{hostBin, "-prompt", "go", "-workspace", t.TempDir(), "-pass-env", fakeAgentEnv, "-pass-env", "CODEX_API_KEY", "--", self}, " ")
	cmd := exec.Command(scriptBin, "-qfec", line, "/dev/null")
	cmd.Env = append(os.Environ(), fakeAgentEnv+"=slow-init", "CODEX_API_KEY=k")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "waiting for the agent to answer initialize (2s)") || !strings.Contains(string(out), "(exit status 0)") {
		t.Errorf("on a terminal: %v:\n%s", err, out)
	}
}
