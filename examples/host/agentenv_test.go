package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// hostSecret is a secret of the host's environment that no policy here
// names: it must never reach the agent.
const hostSecret = "MY_SERVICE_TOKEN=tok-0123456789abcdefghijklmnop"

// envNames are the names "fake agent env: NAME" lines of text report: the
// fake agent's real environment, as it read it.
func envNames(text string) []string {
	var names []string
	for line := range strings.Lines(text) {
		// The host shows the agent's stderr after "stderr:".
		if _, name, ok := strings.Cut(strings.TrimSpace(line), "fake agent env: "); ok {
			names = append(names, name)
		}
	}
	return names
}

// The agent the host starts gets the baseline and what the policy's
// agent.env and -pass-env name of the host's environment, nothing else:
// not a secret the policy does not name, nor an API key, nor a variable
// that changes what a program loads through a pattern (issue 34: the host
// gave the agent its whole environment).
func TestAgentGetsOnlyWhatThePolicyPasses(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	writeFile(t, pol, `{"agent": {"env": {"inherit": ["BRIDGEKIT_TEST_PATTERN_*", "NODE_*", "NO_SUCH_VARIABLE"]}}}`)
	env := []string{hostSecret, "OPENAI_API_KEY=sk-host-0123456789abcdef", "BRIDGEKIT_TEST_PASSED=1",
		"BRIDGEKIT_TEST_PATTERN_A=2", "NODE_OPTIONS=--require=/tmp/x.js", "NODE_NO_WARNINGS=1"}
	status, text := runFake(t, "env", env, "-policy", pol, "-pass-env", "BRIDGEKIT_TEST_PASSED")
	if status != exitCompleted {
		t.Fatalf("exit status %d:\n%s", status, text)
	}
	got := envNames(text)
	want := []string{fakeAgentEnv, "BRIDGEKIT_TEST_PASSED", "BRIDGEKIT_TEST_PATTERN_A"}
	for _, name := range child.BaselineEnv {
		if _, ok := os.LookupEnv(name); ok {
			want = append(want, name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the agent's environment has %v, want %v:\n%s", got, want, text)
	}
	if strings.Contains(text, "tok-0123456789") || strings.Contains(text, "sk-host-") {
		t.Errorf("a secret's value was shown:\n%s", text)
	}
}

// Serving the bridge over a child's pipes (no -prompt), the child gets the
// same environment: the baseline and what the policy passes.
func TestServedChildGetsOnlyWhatThePolicyPasses(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	writeFile(t, pol, `{"agent": {"env": {"inherit": ["BRIDGEKIT_TEST_PASSED"]}}}`)
	cmd := exec.Command(hostBin, "-policy", pol, "--", "/bin/sh", "-c", `env | sed 's/=.*//; s/^/fake agent env: /' >&2`)
	cmd.Env = append(os.Environ(), hostSecret, "BRIDGEKIT_TEST_PASSED=1", "BRIDGEKIT_TEST_OTHER=1")
	r := start(t, cmd, nil)
	r.stdin.Close()
	if status := r.wait(t, 20*time.Second); status != 0 {
		t.Fatalf("exit status %d:\n%s", status, r.stderrText())
	}
	got := envNames(r.stderrText())
	if !slices.Contains(got, "BRIDGEKIT_TEST_PASSED") || slices.Contains(got, "MY_SERVICE_TOKEN") || slices.Contains(got, "BRIDGEKIT_TEST_OTHER") {
		t.Errorf("the child's environment has %v:\n%s", got, r.stderrText())
	}
	for _, name := range got {
		// sh adds PWD, SHLVL and _ of its own.
		if name != "BRIDGEKIT_TEST_PASSED" && name != "PWD" && name != "SHLVL" && name != "_" && !slices.Contains(child.BaselineEnv, name) {
			t.Errorf("the child got %s", name)
		}
	}
}

// A key the host has but its policy does not pass is not the agent's: the
// method is not chosen, and the missing credential is reported as
// withheld by the policy, naming the variable and never its value.
func TestWithheldKeyIsReported(t *testing.T) {
	withoutKeys(t)
	const key = "sk-test-0123456789abcdef"
	status, text := runFake(t, "auth", []string{"OPENAI_API_KEY=" + key})
	// The listing's lines are joined by a visible ↵ (the host's status line).
	for _, want := range []string{
		"the agent requires authentication",
		"openai-api-key (env_var): set OPENAI_API_KEY [Use OPENAI_API_KEY]; OPENAI_API_KEY is set in the host's environment, and the host's policy withholds it from the agent↵",
		"codex-api-key (env_var): set CODEX_API_KEY [Use CODEX_API_KEY]↵",
		"-pass-env NAME",
	} {
		if status != exitAuth || !strings.Contains(text, want) {
			t.Errorf("not passed: status %d, want %d saying %q:\n%s", status, exitAuth, want, text)
		}
	}
	if strings.Contains(text, "authenticating with") {
		t.Errorf("a method was chosen with its variable withheld:\n%s", text)
	}
	// Named with -auth, the method fails before session/new, saying why.
	status, text = runFake(t, "auth", []string{"OPENAI_API_KEY=" + key}, "-auth", "openai-api-key")
	if status != exitAuth || !strings.Contains(text, `authentication method "openai-api-key" needs OPENAI_API_KEY, which the host's policy withholds from the agent (it is set in the host's environment)`) {
		t.Errorf("-auth, not passed: status %d:\n%s", status, text)
	}
	if strings.Contains(text, key) {
		t.Errorf("the key was shown:\n%s", text)
	}
	// The policy's agent.env passes it: it is chosen.
	pol := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, pol, `{"agent": {"env": {"inherit": ["OPENAI_API_KEY"]}}}`)
	status, text = runFake(t, "auth", []string{"OPENAI_API_KEY=" + key}, "-policy", pol)
	if status != exitCompleted || !strings.Contains(text, "fake agent: authenticated with openai-api-key") {
		t.Errorf("passed by the policy: status %d:\n%s", status, text)
	}
}

// The policy's agent.env entries and -pass-env values are names or
// PREFIX* patterns; anything else is refused before anything starts.
func TestAgentEnvEntries(t *testing.T) {
	for _, e := range []string{"OPENAI_API_KEY", "OPENAI_*", "lower_case", "A"} {
		if err := checkEnvEntry(e); err != nil {
			t.Errorf("%q: %v", e, err)
		}
	}
	for _, e := range []string{"", "*", "A=B", "A*B", "**", "A\x00", "A**"} {
		if err := checkEnvEntry(e); err == nil {
			t.Errorf("%q accepted", e)
		}
	}
	pol := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, pol, `{"agent": {"env": {"inherit": ["*"]}}}`)
	if _, err := loadPolicy(pol); err == nil || !strings.Contains(err.Error(), "agent.env.inherit") {
		t.Errorf("a bare * in the policy: %v", err)
	}
	r := start(t, exec.Command(hostBin, "-pass-env", "A=B", "-prompt", "x", "--", "/bin/true"), nil)
	r.stdin.Close()
	if status := r.wait(t, 20*time.Second); status != exitUsage {
		t.Errorf("-pass-env A=B: exit status %d:\n%s", status, r.stderrText())
	}
	environ := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=u", "openai_org=o", "LD_PRELOAD=x", "PATH=/bin", "SECRET=s"}
	got := agentEnv(environ, []string{"openai_*", "PATH"})
	if want := []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "openai_org", "PATH"}; !slices.Equal(got, want) {
		t.Errorf("agentEnv: %v, want %v", got, want)
	}
	if got := agentEnv(environ, []string{"LD_*"}); len(got) != 0 {
		t.Errorf("a pattern passed %v", got)
	}
	// Names differing in case are two variables on Linux: an entry passes
	// both, each as it is (internal/realagent sets HTTP_PROXY and
	// http_proxy).
	proxies := []string{"HTTP_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128"}
	if got := agentEnv(proxies, []string{"HTTP_PROXY"}); !slices.Equal(got, []string{"HTTP_PROXY", "http_proxy"}) {
		t.Errorf("HTTP_PROXY passed %v", got)
	}
}

// FuzzAgentEnv: agentEnv passes a variable of the host's only when an
// entry names it exactly (case aside), or a PREFIX* pattern matches it and
// it does not change what a program runs or loads; each at most once, and
// only names the host has.
func FuzzAgentEnv(f *testing.F) {
	f.Add("OPENAI_API_KEY", "OPENAI_API_KEY", "k")
	f.Add("OPENAI_*", "openai_base_url", "u")
	f.Add("LD_*", "LD_PRELOAD", "x")
	f.Add("NODE_OPTIONS", "NODE_OPTIONS", "--require=x")
	f.Add("*", "ANY", "v")
	f.Add("A=B", "A", "B=C")
	f.Fuzz(func(t *testing.T, entry, name, value string) {
		entries := strings.Split(entry, ",")
		valid := true
		for _, e := range entries {
			valid = valid && checkEnvEntry(e) == nil
		}
		if valid && slices.Contains(entries, "*") {
			t.Fatalf("a bare * was accepted")
		}
		environ := []string{name + "=" + value, strings.ToLower(name) + "=" + value, "OTHER_SECRET=s"}
		got := agentEnv(environ, entries)
		for i, n := range got {
			if slices.Contains(got[:i], n) {
				t.Fatalf("%q passed twice: %v", n, got)
			}
			host := slices.ContainsFunc(environ, func(kv string) bool { k, _, _ := strings.Cut(kv, "="); return k == n })
			if !host || n == "" || strings.IndexByte(n, 0) >= 0 {
				t.Fatalf("entries %q passed %q, which the host does not have (%q)", entries, n, environ)
			}
			exact := slices.ContainsFunc(entries, func(e string) bool { return asciiFold(e, n) })
			pattern := slices.ContainsFunc(entries, func(e string) bool {
				p, ok := strings.CutSuffix(e, "*")
				return ok && strings.HasPrefix(asciiUpper(n), asciiUpper(p))
			})
			if !exact && (!pattern || terminal.Steering(n)) {
				t.Fatalf("entries %q passed %q, which no entry names, and a pattern may not pass", entries, n)
			}
		}
		for _, kv := range environ {
			n, _, _ := strings.Cut(kv, "=")
			if n != "" && strings.IndexByte(n, 0) < 0 && slices.ContainsFunc(entries, func(e string) bool { return asciiFold(e, n) }) && !slices.Contains(got, n) {
				t.Fatalf("entries %q did not pass %q, which one names (got %q)", entries, n, got)
			}
		}
		if slices.Contains(got, "OTHER_SECRET") && !slices.ContainsFunc(entries, func(e string) bool {
			p, ok := strings.CutSuffix(e, "*")
			return asciiFold(e, "OTHER_SECRET") || ok && strings.HasPrefix("OTHER_SECRET", asciiUpper(p))
		}) {
			t.Fatalf("entries %q passed OTHER_SECRET", entries)
		}
	})
}

// asciiUpper is s with ASCII letters upper-cased, and nothing else changed.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// asciiFold reports a and b equal but for ASCII letters' case.
func asciiFold(a, b string) bool { return asciiUpper(a) == asciiUpper(b) }
