package auth_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/auth"
)

// codexInit is codex-acp 0.16.0's initialize answer's authMethods
// (testdata/acp/traffic/codex-acp-0.16.0/turn.jsonl), with a terminal
// method added.
const codexInit = `{"protocolVersion":1,"authMethods":[
	{"id":"chatgpt","name":"Login with ChatGPT","description":"Use your ChatGPT login"},
	{"type":"env_var","id":"codex-api-key","name":"Use CODEX_API_KEY","vars":[{"name":"CODEX_API_KEY"}]},
	{"type":"env_var","id":"openai-api-key","name":"Use OPENAI_API_KEY","vars":[{"name":"OPENAI_API_KEY"},{"name":"OPENAI_ORG","optional":true}]},
	{"type":"terminal","id":"login","name":"Log in","args":["--login"],"env":{"MODE":"login"}}]}`

func methods(t testing.TB, doc string) []auth.Method {
	t.Helper()
	var init acp.InitializeResponse
	if err := json.Unmarshal([]byte(doc), &init); err != nil {
		t.Fatal(err)
	}
	return auth.Methods(&init)
}

func env(vars ...string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range vars {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v, true
			}
		}
		return "", false
	}
}

func TestMethods(t *testing.T) {
	ms := methods(t, codexInit)
	if len(ms) != 4 {
		t.Fatalf("%d methods: %+v", len(ms), ms)
	}
	if ms[0].Type != auth.TypeAgent || ms[0].Description != "Use your ChatGPT login" {
		t.Errorf("agent method: %+v", ms[0])
	}
	if ms[2].Type != auth.TypeEnvVar || len(ms[2].Vars) != 2 || ms[2].Vars[0].Name != "OPENAI_API_KEY" || !ms[2].Vars[1].Optional || ms[2].Invalid != "" {
		t.Errorf("env_var method: %+v", ms[2])
	}
	if ms[3].Type != auth.TypeTerminal || !slices.Equal(ms[3].Args, []string{"--login"}) || ms[3].Env["MODE"] != "login" {
		t.Errorf("terminal method: %+v", ms[3])
	}
	bad := methods(t, `{"protocolVersion":1,"authMethods":[{"type":"env_var","id":"a","name":"A"},{"type":"env_var","id":"c","name":"C","vars":[{"name":"A=B"}]},{"type":"oauth","id":"d","name":"D"}]}`)
	for i, m := range bad[:2] {
		if m.Invalid == "" {
			t.Errorf("method %d is usable: %+v", i, m)
		}
	}
	if bad[1].ID != "c" || bad[2].Type != "oauth" || bad[2].Invalid != "" {
		t.Errorf("%+v", bad)
	}
	// env_var is typed (bridgekit's overlay): vars of the wrong kind fail
	// the answer's decode, at their pointer, rather than pass as a method.
	var init acp.InitializeResponse
	err := json.Unmarshal([]byte(`{"protocolVersion":1,"authMethods":[{"type":"env_var","id":"b","name":"B","vars":"X"}]}`), &init)
	if err == nil || !strings.Contains(err.Error(), "/authMethods/0/vars") {
		t.Errorf("vars of the wrong kind: %v", err)
	}
	if ms := methods(t, `{"protocolVersion":1}`); len(ms) != 0 {
		t.Errorf("no authMethods: %+v", ms)
	}
}

func TestChoose(t *testing.T) {
	ms := methods(t, codexInit)
	for _, tc := range []struct {
		name   string
		o      auth.Options
		action auth.Action
		id     acp.AuthMethodID
		err    error
	}{
		{"nothing set", auth.Options{LookupEnv: env()}, auth.None, "", nil},
		{"an empty value is not set", auth.Options{LookupEnv: env("CODEX_API_KEY=")}, auth.None, "", nil},
		{"the first env_var method set", auth.Options{LookupEnv: env("OPENAI_API_KEY=k", "CODEX_API_KEY=c")}, auth.Authenticate, "codex-api-key", nil},
		{"optional variables not needed", auth.Options{LookupEnv: env("OPENAI_API_KEY=k")}, auth.Authenticate, "openai-api-key", nil},
		{"terminal when allowed", auth.Options{LookupEnv: env(), Terminal: true}, auth.RunTerminal, "login", nil},
		{"env_var before terminal", auth.Options{LookupEnv: env("OPENAI_API_KEY=k"), Terminal: true}, auth.Authenticate, "openai-api-key", nil},
		{"chosen agent method", auth.Options{Method: "chatgpt", LookupEnv: env()}, auth.Authenticate, "chatgpt", nil},
		{"chosen env_var, set", auth.Options{Method: "openai-api-key", LookupEnv: env("OPENAI_API_KEY=k", "CODEX_API_KEY=c")}, auth.Authenticate, "openai-api-key", nil},
		{"chosen env_var, unset", auth.Options{Method: "openai-api-key", LookupEnv: env("CODEX_API_KEY=c")}, 0, "", auth.ErrMissing},
		{"chosen terminal, not allowed", auth.Options{Method: "login", LookupEnv: env()}, 0, "", auth.ErrUnusable},
		{"chosen terminal", auth.Options{Method: "login", Terminal: true, LookupEnv: env()}, auth.RunTerminal, "login", nil},
		{"unknown", auth.Options{Method: "nope", LookupEnv: env()}, 0, "", auth.ErrUnknownMethod},
	} {
		p, err := auth.Choose(ms, tc.o)
		if !errors.Is(err, tc.err) || (tc.err != nil) != (err != nil) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if p.Action != tc.action || (p.Method == nil) != (tc.id == "") || p.Method != nil && p.Method.ID != tc.id {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
	if _, err := auth.Choose(methods(t, `{"protocolVersion":1,"authMethods":[{"type":"oauth","id":"d","name":"D"}]}`), auth.Options{Method: "d"}); !errors.Is(err, auth.ErrUnusable) {
		t.Errorf("an unknown type chosen: %v", err)
	}
}

// A missing credential names every method and the variables each needs,
// and never a variable's value.
func TestMissingCredentialReport(t *testing.T) {
	ms := methods(t, codexInit)
	_, err := auth.Choose(ms, auth.Options{Method: "openai-api-key", LookupEnv: env("CODEX_API_KEY=sk-secret-value")})
	var me *auth.MissingError
	if !errors.As(err, &me) || !slices.Equal(me.Unset, []string{"OPENAI_API_KEY"}) {
		t.Fatalf("%v", err)
	}
	text := err.Error()
	for _, want := range []string{
		`authentication method "openai-api-key" needs OPENAI_API_KEY, which is not set`,
		"codex-api-key (env_var): set CODEX_API_KEY",
		"openai-api-key (env_var): set OPENAI_API_KEY, OPENAI_ORG (optional)",
		"chatgpt (agent): the agent's own login",
		"login (terminal): an interactive run of the agent with --login in a terminal",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "sk-secret") {
		t.Errorf("the report shows a value: %s", text)
	}
	agentErr := rpc.NewError(int64(acp.ErrorCodeAuthenticationRequired), "Authentication required", nil)
	err = auth.Required(agentErr, ms, auth.Options{})
	if !errors.Is(err, auth.ErrMissing) || !errors.Is(err, agentErr) || !strings.Contains(err.Error(), "set CODEX_API_KEY") {
		t.Errorf("auth_required: %v", err)
	}
	other := rpc.NewError(-32603, "boom", nil)
	if err := auth.Required(other, ms, auth.Options{}); err != other {
		t.Errorf("another error was changed: %v", err)
	}
	if got := auth.Describe(nil); !strings.Contains(got, "no authentication method") {
		t.Error(got)
	}
}

func TestTerminalCommand(t *testing.T) {
	ms := methods(t, codexInit)
	cmd, err := auth.TerminalCommand(&ms[3], []string{"npx", "codex-acp"}, []string{"PATH=/bin", "MODE=serve"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cmd.Args, []string{"npx", "codex-acp", "--login"}) || !slices.Equal(cmd.Env, []string{"PATH=/bin", "MODE=login"}) {
		t.Errorf("%q %q", cmd.Args, cmd.Env)
	}
	if _, err := auth.TerminalCommand(&ms[0], []string{"x"}, nil); !errors.Is(err, auth.ErrUnusable) {
		t.Errorf("an agent method: %v", err)
	}
	if _, err := auth.TerminalCommand(&ms[3], nil, nil); !errors.Is(err, auth.ErrUnusable) {
		t.Errorf("no command: %v", err)
	}
	if _, ok := os.LookupEnv("PATH"); ok { // the zero Options read the process environment
		t.Setenv("BRIDGEKIT_AUTH_TEST", "v")
		p, err := auth.Choose(methods(t, `{"protocolVersion":1,"authMethods":[{"type":"env_var","id":"e","name":"E","vars":[{"name":"BRIDGEKIT_AUTH_TEST"}]}]}`), auth.Options{})
		if err != nil || p.Action != auth.Authenticate {
			t.Errorf("%+v %v", p, err)
		}
	}
}

func FuzzMethods(f *testing.F) {
	f.Add(codexInit)
	f.Add(`{"protocolVersion":1,"authMethods":[{"type":"env_var","id":"b","name":"B","vars":[{}]}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var init acp.InitializeResponse
		if json.Unmarshal([]byte(doc), &init) != nil {
			return
		}
		ms := auth.Methods(&init)
		if len(ms) != len(init.AuthMethods) {
			t.Fatalf("%d methods of %d", len(ms), len(init.AuthMethods))
		}
		p, err := auth.Choose(ms, auth.Options{LookupEnv: env("OPENAI_API_KEY=k")})
		if err == nil && p.Action != auth.None && (p.Method == nil || p.Method.Invalid != "") {
			t.Fatalf("chose %+v", p)
		}
		for _, m := range ms {
			_ = m.Needs()
		}
		_ = auth.Describe(ms)
	})
}

// codexInit26 and geminiInit are the authMethods of codex-acp 2.6.0 and
// gemini-cli 0.61.0 to a client that supports gateways: agent methods, the
// API-key one marked by _meta["api-key"], the gateways by their protocol.
const (
	codexInit26 = `{"protocolVersion":1,"authMethods":[
	{"id":"api-key","name":"API Key","description":"Use an API key to authenticate","_meta":{"api-key":{"provider":"openai"}}},
	{"id":"chat-gpt","name":"ChatGPT","description":"Use ChatGPT to authenticate"},
	{"id":"gateway","name":"Custom model gateway","_meta":{"gateway":{"protocol":"openai","restartRequired":"false"}}}]}`
	geminiInit = `{"protocolVersion":1,"authMethods":[
	{"id":"oauth-personal","name":"Log in with Google","description":"Log in with your Google account"},
	{"id":"gemini-api-key","name":"Gemini API key","_meta":{"api-key":{"provider":"google"}}},
	{"id":"vertex-ai","name":"Vertex AI","description":"Use an API key with Vertex AI GenAI API"},
	{"id":"gateway","name":"AI API Gateway","_meta":{"gateway":{"protocol":"google","restartRequired":"false"}}}]}`
)

// An agent method marked _meta["api-key"] is an API-key method: chosen
// unasked when its provider's variable is set in the agent's environment,
// reported by that variable when it is not (problem 5 of issue 34: the
// automatic choice knew only env_var methods, and the exit-11 listing
// called codex's api-key "the agent's own login").
func TestAPIKeyMethods(t *testing.T) {
	for _, tc := range []struct {
		doc, id, provider, variable string
	}{
		{codexInit26, "api-key", "openai", "OPENAI_API_KEY"},
		{geminiInit, "gemini-api-key", "google", "GEMINI_API_KEY"},
	} {
		ms := methods(t, tc.doc)
		i := slices.IndexFunc(ms, func(m auth.Method) bool { return m.ID == acp.AuthMethodID(tc.id) })
		if i < 0 || !ms[i].APIKey || ms[i].KeyProvider != tc.provider || !slices.Equal(ms[i].KeyVars, []string{tc.variable}) || ms[i].Gateway {
			t.Fatalf("%s: %+v", tc.id, ms)
		}
		if needs := ms[i].Needs(); !strings.Contains(needs, "an API key for "+tc.provider+" in "+tc.variable) || strings.Contains(needs, "own login") {
			t.Errorf("%s needs: %s", tc.id, needs)
		}
		p, err := auth.Choose(ms, auth.Options{LookupEnv: env(tc.variable + "=k")})
		if err != nil || p.Action != auth.Authenticate || p.Method.ID != acp.AuthMethodID(tc.id) {
			t.Errorf("%s set: %+v %v", tc.variable, p, err)
		}
		// The key goes to the agent through its environment, never in the
		// request.
		if req, _ := json.Marshal(p.Request(auth.Options{})); string(req) != `{"methodId":"`+tc.id+`"}` {
			t.Errorf("authenticate %s", req)
		}
		if p, err := auth.Choose(ms, auth.Options{LookupEnv: env()}); err != nil || p.Action != auth.None {
			t.Errorf("%s unset: %+v %v", tc.variable, p, err)
		}
		_, err = auth.Choose(ms, auth.Options{Method: acp.AuthMethodID(tc.id), LookupEnv: env("OTHER=x")})
		var me *auth.MissingError
		if !errors.As(err, &me) || !slices.Equal(me.Unset, []string{tc.variable}) || !strings.Contains(err.Error(), tc.variable+", which is not set") {
			t.Errorf("%s named, %s unset: %v", tc.id, tc.variable, err)
		}
		// The listing of a missing credential names the variable.
		if text := auth.Required(rpc.NewError(-32000, "Authentication required", nil), ms, auth.Options{}).Error(); !strings.Contains(text, tc.id+" (agent): an API key for "+tc.provider+" in "+tc.variable) {
			t.Errorf("listing:\n%s", text)
		}
	}
	// A provider this package does not know: never chosen unasked, and
	// named, used as the agent's own.
	ms := methods(t, `{"protocolVersion":1,"authMethods":[{"id":"k","name":"K","_meta":{"api-key":{"provider":"acme"}}}]}`)
	if p, err := auth.Choose(ms, auth.Options{LookupEnv: env("ACME_API_KEY=x")}); err != nil || p.Action != auth.None {
		t.Errorf("unknown provider chosen unasked: %+v %v", p, err)
	}
	if p, err := auth.Choose(ms, auth.Options{Method: "k", LookupEnv: env()}); err != nil || p.Action != auth.Authenticate {
		t.Errorf("unknown provider named: %+v %v", p, err)
	}
	if needs := ms[0].Needs(); !strings.Contains(needs, "an API key for acme in the agent's environment") {
		t.Errorf("needs %s", needs)
	}
}

// A variable the host has and withholds from the agent (Options.Withheld)
// never makes a method chosen, and every report of a missing credential
// names it as withheld by the host's policy, apart from one not set.
func TestWithheldVariables(t *testing.T) {
	withheld := func(name string) bool { return name == "OPENAI_API_KEY" || name == "GEMINI_API_KEY" }
	for _, tc := range []struct{ doc, id, variable string }{
		{codexInit26, "api-key", "OPENAI_API_KEY"},
		{geminiInit, "gemini-api-key", "GEMINI_API_KEY"},
		{codexInit, "openai-api-key", "OPENAI_API_KEY"},
	} {
		ms := methods(t, tc.doc)
		o := auth.Options{LookupEnv: env("CODEX_API_KEY_X=1"), Withheld: withheld}
		if p, err := auth.Choose(ms, o); err != nil || p.Action != auth.None {
			t.Errorf("%s: chosen with its variable withheld: %+v %v", tc.id, p, err)
		}
		o.Method = acp.AuthMethodID(tc.id)
		_, err := auth.Choose(ms, o)
		var me *auth.MissingError
		want := `authentication method "` + tc.id + `" needs ` + tc.variable + `, which the host's policy withholds from the agent (it is set in the host's environment)`
		if !errors.As(err, &me) || !slices.Equal(me.Withheld, []string{tc.variable}) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s named: %v", tc.id, err)
		}
		o.Method = ""
		text := auth.Required(rpc.NewError(-32000, "Authentication required", nil), ms, o).Error()
		if !strings.Contains(text, tc.variable+" is set in the host's environment, and the host's policy withholds it from the agent") {
			t.Errorf("%s listing:\n%s", tc.id, text)
		}
		if strings.Count(text, "withholds") != 1 {
			t.Errorf("%s listing names another method's variable as withheld:\n%s", tc.id, text)
		}
	}
	// Withheld and unset apart: an env_var method needing both.
	ms := methods(t, `{"protocolVersion":1,"authMethods":[{"type":"env_var","id":"two","name":"Two","vars":[{"name":"OPENAI_API_KEY"},{"name":"OPENAI_ORG"}]}]}`)
	_, err := auth.Choose(ms, auth.Options{Method: "two", LookupEnv: env(), Withheld: withheld})
	if err == nil || !strings.Contains(err.Error(), "needs OPENAI_API_KEY, which the host's policy withholds from the agent (it is set in the host's environment), and OPENAI_ORG, which is not set") {
		t.Errorf("two variables: %v", err)
	}
}
