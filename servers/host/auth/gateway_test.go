package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
	"github.com/bridgekit/bridgekit/servers/host/auth"
)

// claudeInit is claude-agent-acp 0.23.1's initialize answer's authMethods
// to a client that supports gateway methods (dist/acp-agent.js), with an
// env_var method added.
const claudeInit = `{"protocolVersion":1,"authMethods":[
	{"type":"env_var","id":"api-key","name":"Use ANTHROPIC_API_KEY","vars":[{"name":"ANTHROPIC_API_KEY"}]},
	{"id":"gateway","name":"Custom model gateway","description":"Use a custom gateway to authenticate and access models","_meta":{"gateway":{"protocol":"anthropic"}}}]}`

const secret = "sk-gateway-0123456789abcdef"

func gateway() *auth.Gateway {
	return &auth.Gateway{BaseURL: "http://127.0.0.1:8080", Headers: map[string]string{"x-api-key": secret}}
}

func TestGatewayMethod(t *testing.T) {
	ms := methods(t, claudeInit)
	if len(ms) != 2 || ms[0].Gateway || !ms[1].Gateway || ms[1].GatewayProtocol != "anthropic" || ms[1].Type != auth.TypeAgent {
		t.Fatalf("methods %+v", ms)
	}
	if !strings.Contains(ms[1].Needs(), "model gateway speaking anthropic") {
		t.Errorf("needs: %s", ms[1].Needs())
	}
	// With a gateway it is chosen before an env_var method whose variable
	// is set; without one, never unasked; named without one, refused.
	lookup := env("ANTHROPIC_API_KEY=x")
	if p, err := auth.Choose(ms, auth.Options{Gateway: gateway(), LookupEnv: lookup}); err != nil || p.Action != auth.Authenticate || p.Method.ID != "gateway" {
		t.Errorf("with a gateway: %+v %v", p, err)
	}
	if p, err := auth.Choose(ms, auth.Options{LookupEnv: lookup}); err != nil || p.Method.ID != "api-key" {
		t.Errorf("without a gateway: %+v %v", p, err)
	}
	if _, err := auth.Choose(ms, auth.Options{Method: "gateway", LookupEnv: lookup}); !errors.Is(err, auth.ErrUnusable) {
		t.Errorf("gateway named without a gateway: %v", err)
	}
	if _, err := auth.Choose(ms, auth.Options{Method: "api-key", Gateway: gateway(), LookupEnv: lookup}); !errors.Is(err, auth.ErrUnusable) {
		t.Errorf("another method named with a gateway: %v", err)
	}
	// A gateway and an agent that offers no gateway method: refused, not
	// another way to the model.
	_, err := auth.Choose(methods(t, codexInit), auth.Options{Gateway: gateway(), LookupEnv: env("CODEX_API_KEY=x")})
	if !errors.Is(err, auth.ErrUnusable) || !strings.Contains(err.Error(), "no gateway method") {
		t.Errorf("no gateway method: %v", err)
	}
	// A _meta of another shape makes no gateway method, and no invalid one.
	odd := methods(t, `{"protocolVersion":1,"authMethods":[{"id":"g","name":"g","_meta":{"gateway":true}}]}`)
	if odd[0].Gateway || odd[0].Invalid != "" {
		t.Errorf("_meta.gateway true: %+v", odd[0])
	}
}

// The authenticate request carries the gateway in _meta.gateway, in the
// shape claude-agent-acp reads (baseUrl, headers); initialize's
// capabilities say the client supports gateway methods.
func TestGatewayRequest(t *testing.T) {
	ms := methods(t, claudeInit)
	o := auth.Options{Gateway: gateway()}
	p, err := auth.Choose(ms, o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Marshal(p.Request(o))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"methodId":"gateway","_meta":{"gateway":{"baseUrl":"http://127.0.0.1:8080","headers":{"x-api-key":"` + secret + `"}}}}`; !wiretest.EqualJSON(t, data, []byte(want)) {
		t.Errorf("authenticate %s, want %s", data, want)
	}
	plain, _ := wire.Marshal(auth.Plan{Action: auth.Authenticate, Method: &ms[0]}.Request(o))
	if !wiretest.EqualJSON(t, plain, []byte(`{"methodId":"api-key"}`)) {
		t.Errorf("a method that is not a gateway's: %s", plain)
	}
	yes := true
	caps := &acp.ClientCapabilities{Terminal: &yes}
	got, err := wire.Marshal(auth.Capabilities(caps, o))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"terminal":true,"auth":{"_meta":{"gateway":true}}}`; !wiretest.EqualJSON(t, got, []byte(want)) {
		t.Errorf("capabilities %s, want %s", got, want)
	}
	if caps.Auth != nil {
		t.Error("Capabilities changed its argument")
	}
	if none, _ := wire.Marshal(auth.Capabilities(caps, auth.Options{})); !wiretest.EqualJSON(t, none, []byte(`{"terminal":true}`)) {
		t.Errorf("capabilities without a gateway: %s", none)
	}
}

// A gateway that cannot be passed on is refused without its secrets
// quoted; the redactor masks the header values and the URL's password.
func TestGatewayValidateAndRedact(t *testing.T) {
	for _, g := range []auth.Gateway{
		{BaseURL: "127.0.0.1:8080"},
		{BaseURL: "file:///etc/passwd"},
		{BaseURL: "http://127.0.0.1", Headers: map[string]string{"x-api-key": secret + "\nx-evil: 1"}},
		{BaseURL: "http://127.0.0.1", Headers: map[string]string{"x-api-key": secret + "\r"}},
		{BaseURL: "http://127.0.0.1", Headers: map[string]string{"bad name": secret}},
		{BaseURL: "http://127.0.0.1", Headers: map[string]string{"": secret}},
	} {
		err := g.Validate()
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%q %q: %v", g.BaseURL, g.Headers, err)
		}
		if _, err := auth.Choose(methods(t, claudeInit), auth.Options{Gateway: &g}); !errors.Is(err, auth.ErrUnusable) {
			t.Errorf("Choose with %q %q: %v", g.BaseURL, g.Headers, err)
		}
	}
	g := &auth.Gateway{BaseURL: "https://user:pa55word-xyz@gw.example/v1", Headers: map[string]string{"Authorization": "Bearer " + secret}}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := g.Redactor().String("auth failed: Bearer " + secret + " at https://user:pa55word-xyz@gw.example/v1"); strings.Contains(s, secret) || strings.Contains(s, "pa55word-xyz") {
		t.Errorf("redacted: %s", s)
	}
	var none *auth.Gateway
	if s := none.Redactor().String("plain"); s != "plain" {
		t.Errorf("nil gateway's redactor: %q", s)
	}
}

// claudeInit101 is claude-agent-acp 0.101.0's authMethods to a client
// that supports gateways: two gateway methods, anthropic's first.
const claudeInit101 = `{"protocolVersion":1,"authMethods":[
	{"id":"gateway","name":"Custom model gateway","_meta":{"gateway":{"protocol":"anthropic"}}},
	{"id":"gateway-bedrock","name":"Custom model gateway","_meta":{"gateway":{"protocol":"bedrock"}}}]}`

// The gateway method is chosen by the protocol the gateway speaks
// (problem 5 of issue 34: the first gateway method was taken, right for
// Claude only because its anthropic method comes first).
func TestGatewayChosenByProtocol(t *testing.T) {
	ms := methods(t, claudeInit101)
	g := gateway()
	for protocol, want := range map[string]string{"bedrock": "gateway-bedrock", "anthropic": "gateway"} {
		g.Protocol = protocol
		p, err := auth.Choose(ms, auth.Options{Gateway: g, LookupEnv: env()})
		if err != nil || p.Method.ID != acp.AuthMethodID(want) {
			t.Errorf("a %s gateway: %+v %v", protocol, p, err)
		}
	}
	g.Protocol = "openai"
	if _, err := auth.Choose(ms, auth.Options{Gateway: g, LookupEnv: env()}); !errors.Is(err, auth.ErrUnusable) || !strings.Contains(err.Error(), "the gateway speaks openai") {
		t.Errorf("no method for the gateway's protocol: %v", err)
	}
	if _, err := auth.Choose(ms, auth.Options{Method: "gateway-bedrock", Gateway: g, LookupEnv: env()}); !errors.Is(err, auth.ErrUnusable) {
		t.Errorf("a named method of another protocol: %v", err)
	}
	// Unsaid, the protocol is the agent's only one, and ambiguous between several.
	g.Protocol = ""
	if _, err := auth.Choose(ms, auth.Options{Gateway: g, LookupEnv: env()}); !errors.Is(err, auth.ErrUnusable) || !strings.Contains(err.Error(), "several APIs") {
		t.Errorf("two protocols, the gateway's unsaid: %v", err)
	}
	if p, err := auth.Choose(methods(t, codexInit26), auth.Options{Gateway: g, LookupEnv: env()}); err != nil || p.Method.ID != "gateway" {
		t.Errorf("one gateway method, the protocol unsaid: %+v %v", p, err)
	}
}
