package prompt

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/auth"
)

// fakeAgent is an ACP agent in this process that answers each method from
// a table of raw JSON results or errors, and keeps the params it got.
type fakeAgent struct {
	answers map[string]any // method -> jsontext.Value result, or error

	mu  sync.Mutex
	got map[string][]jsontext.Value
}

func (f *fakeAgent) Handle(_ context.Context, req *rpc.Request) (any, error) {
	f.mu.Lock()
	if f.got == nil {
		f.got = map[string][]jsontext.Value{}
	}
	f.got[req.Method] = append(f.got[req.Method], jsontext.Value(append([]byte(nil), req.Params...)))
	f.mu.Unlock()
	switch a := f.answers[req.Method].(type) {
	case error:
		return nil, a
	case string:
		return jsontext.Value(a), nil
	}
	if req.Kind == rpc.KindNotification {
		return nil, nil
	}
	return nil, rpc.MethodNotFound(req.Method)
}

func (f *fakeAgent) params(method string) []jsontext.Value {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[method]
}

// run runs a prompt with opts against f, over pipes.
func (f *fakeAgent) run(t *testing.T, opts Options) Outcome {
	t.Helper()
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	agent := acp.NewConn(ar, aw, rpc.HandlerFunc(f.Handle), nil)
	client := acp.NewConn(cr, cw, &acp.ClientHandlers{}, nil)
	defer func() {
		client.Close()
		agent.Close()
		cw.Close()
		aw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	return New(opts).Run(ctx, client)
}

// claudeInit is claude-agent-acp 0.101.0's initialize answer to a client
// that allows terminal logins and gateways (its terminal methods appear
// only then), cut to what matters here.
const claudeInit = `{"protocolVersion":1,"agentCapabilities":{"loadSession":true},
	"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.101.0"},
	"authMethods":[
		{"id":"claude-ai-login","name":"Claude Subscription","type":"terminal","args":["--cli","auth","login","--claudeai"]},
		{"id":"gateway","name":"Custom model gateway","_meta":{"gateway":{"protocol":"anthropic"}}},
		{"id":"gateway-bedrock","name":"Custom model gateway","_meta":{"gateway":{"protocol":"bedrock"}}}]}`

// -auth-terminal must reach the agent: initialize's clientCapabilities
// say auth.terminal (problem 1 of issue 34: the capabilities carried only
// the gateway option, so claude-agent-acp listed no terminal login).
func TestTerminalLoginsAreAdvertised(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		f := &fakeAgent{answers: map[string]any{
			acp.MethodInitialize:    claudeInit,
			acp.MethodSessionNew:    `{"sessionId":"s1"}`,
			acp.MethodSessionPrompt: `{"stopReason":"end_turn"}`,
		}}
		// A terminal login the host may run, but whose run fails at once
		// (no agent program): what matters here is initialize.
		f.run(t, Options{Text: "hi", Auth: auth.Options{Terminal: allowed, Method: "none"}})
		got := f.params(acp.MethodInitialize)
		if len(got) != 1 {
			t.Fatalf("initialize sent %d times", len(got))
		}
		var p struct {
			ClientCapabilities struct {
				Auth *struct {
					Terminal *bool `json:"terminal"`
				} `json:"auth"`
			} `json:"clientCapabilities"`
		}
		if err := json.Unmarshal(got[0], &p, json.RejectUnknownMembers(false)); err != nil {
			t.Fatal(err)
		}
		says := p.ClientCapabilities.Auth != nil && p.ClientCapabilities.Auth.Terminal != nil && *p.ClientCapabilities.Auth.Terminal
		if says != allowed {
			t.Errorf("terminal logins allowed %v: initialize sent %s", allowed, got[0])
		}
	}
}

// "Authentication required" (-32000) answers any request, session/prompt
// included, with the missing-credentials outcome listing every method
// (problem 2 of issue 34: only a session/new error was read so; Claude
// accepts session/new unauthenticated and refuses the prompt).
func TestAuthRequiredOnAnyRequest(t *testing.T) {
	authRequired := rpc.NewError(-32000, "Authentication required", nil)
	for _, method := range []string{acp.MethodSessionNew, acp.MethodSessionPrompt} {
		answers := map[string]any{
			acp.MethodInitialize:    claudeInit,
			acp.MethodSessionNew:    `{"sessionId":"s1"}`,
			acp.MethodSessionPrompt: `{"stopReason":"end_turn"}`,
		}
		answers[method] = authRequired
		o := (&fakeAgent{answers: answers}).run(t, Options{Text: "hi"})
		if o.Kind != Auth {
			t.Errorf("%s answered auth_required: outcome %+v", method, o)
			continue
		}
		for _, want := range []string{method + ": the agent requires authentication", "Authentication required",
			"claude-ai-login (terminal): an interactive run of the agent with --cli auth login --claudeai in a terminal",
			"gateway-bedrock (agent): a model gateway speaking bedrock"} {
			if !strings.Contains(o.Summary, want) {
				t.Errorf("%s: summary lacks %q:\n%s", method, want, o.Summary)
			}
		}
	}
	// A Harn prompt error shares the code, with a document of its own: it
	// stays the agent's error.
	harnErr := rpc.NewError(-32000, "model provider unavailable", map[string]any{"schema": "harn.acp.prompt_error.v1", "terminalClass": "provider_unavailable"})
	o := (&fakeAgent{answers: map[string]any{
		acp.MethodInitialize: claudeInit, acp.MethodSessionNew: `{"sessionId":"s1"}`, acp.MethodSessionPrompt: harnErr,
	}}).run(t, Options{Text: "hi"})
	if o.Kind != AgentError {
		t.Errorf("a Harn prompt error: %+v", o)
	}
	// Another code is the agent's error too.
	o = (&fakeAgent{answers: map[string]any{
		acp.MethodInitialize: claudeInit, acp.MethodSessionNew: `{"sessionId":"s1"}`, acp.MethodSessionPrompt: rpc.NewError(-32603, "Internal error", nil),
	}}).run(t, Options{Text: "hi"})
	if o.Kind != AgentError || !strings.Contains(o.Summary, "error -32603: Internal error") {
		t.Errorf("an internal error: %+v", o)
	}
}

// The turn's usage, when the agent reports it in its answer (ACP's
// unstable PromptResponse.usage), is part of the outcome (problem 6 of
// issue 34: it was never shown).
func TestPromptUsage(t *testing.T) {
	for doc, want := range map[string]string{
		`{"stopReason":"end_turn","usage":{"totalTokens":1240,"inputTokens":1200,"outputTokens":40,"thoughtTokens":12,"cachedReadTokens":800,"cachedWriteTokens":0}}`: "1240 tokens: 1200 input (800 cached), 40 output (12 thinking)",
		`{"stopReason":"end_turn","usage":{"totalTokens":3,"inputTokens":2,"outputTokens":1}}`:                                                                        "3 tokens: 2 input, 1 output",
		`{"stopReason":"end_turn"}`: "",
		// gemini 0.61: only in _meta.
		`{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":49845,"output_tokens":169},"model_usage":[]}}}`: "50014 tokens: 49845 input, 169 output",
		`{"stopReason":"end_turn","usage":"not an object"}`:                                                                       "",
	} {
		o := (&fakeAgent{answers: map[string]any{
			acp.MethodInitialize: claudeInit, acp.MethodSessionNew: `{"sessionId":"s1"}`, acp.MethodSessionPrompt: doc,
		}}).run(t, Options{Text: "hi"})
		got := ""
		if o.Usage != nil {
			got = o.Usage.String()
		}
		if o.Kind != Completed || got != want {
			t.Errorf("%s: %+v usage %q, want %q", doc, o, got, want)
		}
	}
}
