package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/internal/realagent"
)

// built holds the programs the probe and replay tests build once per
// test binary, into TestMain's directory: examples/acp-agent and
// examples/acp-client (root module) and internal/testagent (this one).
var built struct {
	once                   sync.Once
	err                    error
	agent, client, testAgt string
}

func testBins(t *testing.T) (agent, client, testAgent string) {
	t.Helper()
	built.once.Do(func() {
		built.agent = filepath.Join(bins.dir, "acp-agent")
		built.client = filepath.Join(bins.dir, "acp-client")
		built.testAgt = filepath.Join(bins.dir, "testagent")
		for _, b := range []struct{ dir, out, pkg string }{
			{"../..", built.agent, "./examples/acp-agent"},
			{"../..", built.client, "./examples/acp-client"},
			{".", built.testAgt, "./internal/testagent"},
		} {
			c := exec.Command("go", "build", "-o", b.out, b.pkg)
			c.Dir = b.dir
			if out, err := c.CombinedOutput(); err != nil {
				built.err = &buildError{b.pkg, string(out), err}
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.agent, built.client, built.testAgt
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

func compactJSON(t *testing.T, v json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	return b.String()
}

type probeOutput struct {
	Probes []*probeResult `json:"probes"`
	Matrix []matrixRow    `json:"matrix"`
}

func probeJSON(t *testing.T, args ...string) (int, probeOutput, string) {
	t.Helper()
	status, stdout, stderr := runCmd(t, "", append([]string{"probe", "--json"}, args...)...)
	var out probeOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("probe --json: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	return status, out, stderr
}

func TestProbeExampleAgent(t *testing.T) {
	agent, _, _ := testBins(t)
	status, out, stderr := probeJSON(t, "--", agent)
	if status != 0 || len(out.Probes) != 1 {
		t.Fatalf("status %d, %d probes; stderr %s", status, len(out.Probes), stderr)
	}
	p := out.Probes[0]
	if !p.OK || p.Kind != "acp-agent" || string(p.ProtocolVersion) != "1" || agentText(p.AgentInfo) != "bridgekit-acp-agent 0.1.0" {
		t.Fatalf("probe: %+v", p)
	}
	if len(p.AuthMethods) != 0 || len(p.Flat) != 0 || p.Harn != nil || len(p.Problems) != 0 || len(p.Called) != 0 {
		t.Fatalf("examples/acp-agent offers nothing more: %+v", p)
	}
	if p.Session == nil || p.Session.Error != "" || len(p.Session.Modes) != 0 {
		t.Fatalf("session: %+v", p.Session)
	}
	if compactJSON(t, p.Raw["session/new"]) != `{"sessionId":"session-1"}` {
		t.Fatalf("raw session/new: %s", p.Raw["session/new"])
	}

	status, text, _ := runCmd(t, "", "probe", "--", agent)
	for _, want := range []string{"agent             bridgekit-acp-agent 0.1.0", "protocol version  1", "auth methods      none", "session           opened in an empty temporary directory"} {
		if status != 0 || !strings.Contains(text, want) {
			t.Errorf("status %d; text output lacks %q:\n%s", status, want, text)
		}
	}
}

func TestProbeShowsWhatARuntimeOffers(t *testing.T) {
	_, _, testAgent := testBins(t)
	status, out, stderr := probeJSON(t, "--", testAgent, "-harn")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	p := out.Probes[0]
	// A request is called back, a notification notified: _auth/status_update
	// is not a request answered "method not found" (problem 6 of issue 34).
	if p.Kind != "harn-runtime" || !slices.Equal(p.Called, []string{"host/capabilities"}) || !slices.Equal(p.Notified, []string{"_auth/status_update"}) {
		t.Fatalf("kind %q, called %v, notified %v", p.Kind, p.Called, p.Notified)
	}
	var harn map[string]json.RawMessage
	if err := json.Unmarshal(p.Harn, &harn); err != nil || compactJSON(t, harn["sessionUpdateExtensions"]) != `["artifact","progress"]` {
		t.Fatalf("harn: %s", p.Harn)
	}
	caps := map[string]string{}
	for _, c := range p.Flat {
		caps[c.Path] = c.Value
	}
	want := map[string]string{"loadSession": "yes", "promptCapabilities.image": "yes", "mcpCapabilities.http": "yes",
		"sessionCapabilities.list": "yes", "sessionCapabilities.close": "no", "promptCapabilities.embeddedContext": "yes"}
	if len(caps) != len(want) {
		t.Errorf("capabilities %v, want %v", caps, want)
	}
	for k, v := range want {
		if caps[k] != v {
			t.Errorf("capability %s = %q, want %q", k, caps[k], v)
		}
	}
	if len(p.AuthMethods) != 3 {
		t.Fatalf("auth methods: %+v", p.AuthMethods)
	}
	login, key, tui := p.AuthMethods[0], p.AuthMethods[1], p.AuthMethods[2]
	if login.Type != "agent" || !login.Typed || login.Description != "Opens a browser" {
		t.Errorf("agent method: %+v", login)
	}
	// env_var is typed by bridgekit's overlay (no published schema has it);
	// its vars are read with the defaults codex-acp documents.
	if key.Type != "env_var" || !key.Typed || !strings.Contains(string(key.Raw), `"vars"`) ||
		!slices.Equal(key.Vars, []authVar{{Name: "TESTAGENT_API_KEY", Label: "Key", Secret: true}, {Name: "TESTAGENT_ORG", Optional: true}}) {
		t.Errorf("env_var method: %+v", key)
	}
	if tui.Type != "terminal" || !tui.Typed || !slices.Equal(tui.Args, []string{"--login"}) {
		t.Errorf("terminal method: %+v", tui)
	}
	s := p.Session
	if s == nil || s.Error != "" || s.CurrentMode != "ask" || len(s.Modes) != 2 || s.Modes[1] != (choice{ID: "code", Name: "Code"}) ||
		s.CurrentModel != "small" || len(s.Models) != 2 || s.Models[1].Description != "Slower" {
		t.Fatalf("session: %+v", s)
	}
	if len(s.ConfigOptions) != 1 || s.ConfigOptions[0].Category != "thought_level" || !slices.Equal(s.ConfigOptions[0].Values, []string{"low", "high"}) {
		t.Fatalf("config options: %+v", s.ConfigOptions)
	}

	_, text, _ := runCmd(t, "", "probe", "--", testAgent, "-harn")
	for _, want := range []string{
		"Harn runtime",
		`api-key  "API key" [env_var] needs TESTAGENT_API_KEY (secret), TESTAGENT_ORG (optional)`,
		"ask*  Ask: Asks before it edits",
		"effort (thought_level, select): low*, high",
		"hostCapabilityOperations: process [list_shells]",
		"called back       host/capabilities",
		"notified          _auth/status_update (notifications, which need no answer)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

func TestProbeAuthenticatesWhenAsked(t *testing.T) {
	_, _, testAgent := testBins(t)
	status, out, _ := probeJSON(t, "--", testAgent, "-require-auth")
	if s := out.Probes[0].Session; status != 0 || s == nil || !strings.Contains(s.Error, "-32000 Authentication required (try --authenticate") {
		t.Fatalf("status %d, session %+v", status, s)
	}
	if status, _, _ := probeJSON(t, "--strict", "--", testAgent, "-require-auth"); status != 1 {
		t.Fatalf("--strict with a failed session/new: status %d, want 1", status)
	}
	status, out, _ = probeJSON(t, "--authenticate", "api-key", "--", testAgent, "-require-auth")
	if s := out.Probes[0].Session; status != 0 || s == nil || s.Error != "" || s.CurrentModel != "small" {
		t.Fatalf("with --authenticate: status %d, session %+v", status, s)
	}
	status, out, _ = probeJSON(t, "--authenticate", "nope", "--", testAgent)
	if p := out.Probes[0]; status != 1 || p.OK || !strings.Contains(p.Error, "authenticate: rpc error -32602") {
		t.Fatalf("a refused authenticate: status %d, %+v", status, p)
	}
}

func TestProbeMatrixComparesCommands(t *testing.T) {
	agent, _, testAgent := testBins(t)
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	status, stdout, _ := runCmd(t, "", "probe", "--cmd", agent, "--cmd", "'"+testAgent+"' -harn", "--", missing)
	if status != 1 {
		t.Fatalf("status %d with a command that cannot start, want 1", status)
	}
	lines := strings.Split(stdout, "\n")
	head := strings.Fields(lines[0])
	if !slices.Equal(head, []string{"acp-agent", "testagent", "no-such-agent"}) {
		t.Fatalf("header %q", lines[0])
	}
	row := func(name string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, name+"  ") {
				return strings.Fields(strings.TrimPrefix(l, name))
			}
		}
		t.Fatalf("no row %q in\n%s", name, stdout)
		return nil
	}
	if got := row("loadSession"); !slices.Equal(got, []string{"-", "yes", "-"}) {
		t.Errorf("loadSession row %v", got)
	}
	if got := row("kind"); !slices.Equal(got, []string{"acp-agent", "harn-runtime", "-"}) {
		t.Errorf("kind row %v", got)
	}
	if got := row("modes"); !slices.Equal(got, []string{"-", "ask*,", "code", "-"}) {
		t.Errorf("modes row %v", got)
	}
	if !strings.Contains(stdout, "no-such-agent: "+missing) || !strings.Contains(row("error")[2], "acpcmd:") {
		t.Errorf("legend or error missing:\n%s", stdout)
	}

	// The same two, as ';'-separated commands, in JSON.
	status, out, _ := probeJSON(t, "--", agent, ";", testAgent, "-harn")
	if status != 0 || len(out.Probes) != 2 || len(out.Matrix) == 0 || out.Matrix[0].Row != "kind" {
		t.Fatalf("status %d, %d probes, matrix %v", status, len(out.Probes), out.Matrix)
	}
	for _, r := range out.Matrix {
		if len(r.Values) != 2 {
			t.Fatalf("row %+v", r)
		}
	}
}

func TestProbeTimesOutAndStopsTheGroup(t *testing.T) {
	mark := proctest.Mark(t)
	// It never answers; its background job must not outlive the probe.
	script := "export " + mark + "; sleep 60 & exec cat > /dev/null"
	start := time.Now()
	status, out, _ := probeJSON(t, "--timeout", "300ms", "--", "sh", "-c", script)
	if p := out.Probes[0]; status != 1 || p.OK || !strings.Contains(p.Error, "initialize: no answer within 300ms") {
		t.Fatalf("status %d, %+v", status, p)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	proctest.MarkedGone(t, mark, 5*time.Second)
}

func TestProbeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"probe"},
		{"probe", "--", "a", ";", ";", "b"},
		{"probe", "--cmd", "'unterminated"},
		{"probe", "--client-capabilities", "[]", "--", "x"},
		{"probe", "--timeout", "0s", "--", "x"},
	} {
		if status, _, _ := runCmd(t, "", args...); status != 2 {
			t.Errorf("%q: status %d, want 2", args, status)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		`a b  c`:                  {"a", "b", "c"},
		`'a b' "c \"d\"" e\ f`:    {"a b", `c "d"`, "e f"},
		`x'y'"z"`:                 {"xyz"},
		`''`:                      {""},
		"  \t":                    nil,
		`"a\b"`:                   {`a\b`},
		`/usr/bin/agent --flag=1`: {"/usr/bin/agent", "--flag=1"},
	} {
		got, err := splitWords(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`'a`, `"a`, `a\`} {
		if _, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q): no error", bad)
		}
	}
}

// FuzzSplitWords checks that words quoted for the shell split back into
// themselves, and that no input panics.
func FuzzSplitWords(f *testing.F) {
	f.Add("a b", `'c d' "e"`)
	f.Add(`x\y`, "")
	f.Fuzz(func(t *testing.T, a, b string) {
		_, _ = splitWords(a + " " + b)
		quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
		got, err := splitWords(quote(a) + " " + quote(b))
		if err != nil || !slices.Equal(got, []string{a, b}) {
			t.Fatalf("split(quote(%q) quote(%q)) = %q, %v", a, b, got, err)
		}
	})
}

// TestProbeRealAgents probes the ACP agents from npm (testdata/agents) on
// a loopback of their own: each must answer initialize with its auth
// methods, and open a session with modes or models, and leave no process
// behind.
func TestProbeRealAgents(t *testing.T) {
	t.Setenv(realagent.ContainmentEnv, realagent.Containment) // the probe starts the agent in this process
	for _, name := range []string{"codex-acp", "claude-agent-acp"} {
		t.Run(name, func(t *testing.T) {
			realagent.Require(t, name)
			a, err := realagent.Prepare(name, realagent.Options{Root: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := a.Close(); err != nil {
					t.Error(err)
				}
			}()
			// The probe starts the agent itself: with its environment
			// alone, in its namespace.
			argv := append(append([]string{"/usr/bin/env", "-i"}, a.Env...), a.Argv...)
			args := []string{"--timeout", "90s"}
			if a.Spec.AuthMethod != "" {
				args = append(args, "--authenticate", a.Spec.AuthMethod)
			}
			status, out, stderr := probeJSON(t, append(append(args, "--"), argv...)...)
			p := out.Probes[0]
			if status != 0 || !p.OK {
				t.Fatalf("status %d: %+v\nstderr: %s", status, p, stderr)
			}
			if string(p.ProtocolVersion) != "1" || len(p.AuthMethods) == 0 || p.AgentInfo == nil {
				t.Errorf("initialize: version %s, auth %+v, agentInfo %s", p.ProtocolVersion, p.AuthMethods, p.AgentInfo)
			}
			if p.Session == nil || p.Session.Error != "" || len(p.Session.Modes)+len(p.Session.Models)+len(p.Session.ConfigOptions) == 0 {
				t.Errorf("session: %+v\nraw: %s", p.Session, p.Raw["session/new"])
			}
			if a.Spec.AuthMethod != "" && !slices.ContainsFunc(p.AuthMethods, func(m authMethod) bool { return m.ID == a.Spec.AuthMethod }) {
				t.Errorf("no auth method %s in %+v", a.Spec.AuthMethod, p.AuthMethods)
			}
			// codex-acp 2.6.0 offers its API key as an "agent" method whose
			// _meta names the provider: the probe keeps the method's raw
			// JSON, _meta and all.
			if name == "codex-acp" && !slices.ContainsFunc(p.AuthMethods, func(m authMethod) bool {
				var raw struct {
					Meta map[string]struct {
						Provider string `json:"provider"`
					} `json:"_meta"`
				}
				return m.ID == "api-key" && m.Type == "agent" && json.Unmarshal(m.Raw, &raw) == nil && raw.Meta["api-key"].Provider == "openai"
			}) {
				t.Errorf("codex-acp: no agent method api-key with its _meta kept in %+v", p.AuthMethods)
			}
			t.Logf("%s: %d capabilities, auth %v, %d modes, %d models, %d config options, problems %v", name, len(p.Flat),
				slices.Collect(func(yield func(string) bool) {
					for _, m := range p.AuthMethods {
						if !yield(m.ID + ":" + m.Type) {
							return
						}
					}
				}), len(p.Session.Modes), len(p.Session.Models), len(p.Session.ConfigOptions), p.Problems)
			// The group was killed: give its processes a moment to die.
			for deadline := time.Now().Add(3 * time.Second); len(a.Procs()) > 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if left := a.Procs(); len(left) > 0 {
				t.Errorf("processes left in the agent's namespace: %v", left)
			}
		})
	}
}

// FuzzProbeRead: whatever an agent answers, reading it never panics, and
// the capabilities come out sorted.
func FuzzProbeRead(f *testing.F) {
	f.Add(`{"protocolVersion":1,"agentCapabilities":{"a":{"b":[1,"x"],"c":{}},"_meta":{"harn":{"k":{"p":["q"]}}}},"authMethods":[{"id":"x","type":"env_var","vars":[{"name":"K"}]}]}`)
	f.Add(`{"modes":{"currentModeId":"a","availableModes":[{"id":"a"}]},"configOptions":[{"id":"o","options":[{"options":[{"value":"v"}]}]}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, doc string) {
		r := &probeResult{}
		r.readInitialize(json.RawMessage(doc))
		if !slices.IsSortedFunc(r.Flat, func(a, b capEntry) int { return strings.Compare(a.Path, b.Path) }) {
			t.Fatalf("capabilities not sorted: %v", r.Flat)
		}
		for _, a := range r.AuthMethods {
			_ = authText(a, true)
		}
		_ = harnLines(r.Harn)
		var s probeSession
		s.read(json.RawMessage(doc))
		for _, c := range s.ConfigOptions {
			_ = configText(c)
		}
	})
}
