// Command testagent is an ACP agent for bridgekit's own tests: it offers
// what probe reports (auth methods of every type, including an env_var
// method this SDK has no type for, modes, models, config options, Harn's
// extension contract) and answers prompts as examples/acp-agent does, but
// with random session ids and a time in every update, which replay has to
// see through. Flags change what it offers and says, so that a test can
// make it differ from a recording.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type agent struct {
	harn, requireAuth, variant bool
	mu                         sync.Mutex
	authed                     bool
	sessions                   map[string]bool
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := &agent{sessions: map[string]bool{}}
	fs.BoolVar(&a.harn, "harn", false, "advertise Harn's extension contract and call host/capabilities during initialize, as a Harn runtime does")
	fs.BoolVar(&a.requireAuth, "require-auth", false, "refuse session/new until the client has authenticated")
	fs.BoolVar(&a.variant, "variant", false, "answer prompts with other words (\"You wrote:\")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	conn := acp.NewConn(stdin, stdout, rpc.HandlerFunc(a.handle), &rpc.Options{MaxConcurrentRequests: 4})
	defer conn.Close()
	if err := conn.Wait(context.Background()); err != nil {
		fmt.Fprintln(stderr, "testagent:", err)
		return 1
	}
	return 0
}

func (a *agent) handle(ctx context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case "initialize":
		return a.initialize(ctx)
	case "authenticate":
		var p struct {
			MethodID string `json:"methodId"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, rpc.InvalidParams(err)
		}
		if p.MethodID != "agent-login" && p.MethodID != "api-key" {
			return nil, rpc.InvalidParams(fmt.Errorf("no auth method %q", p.MethodID))
		}
		a.mu.Lock()
		a.authed = true
		a.mu.Unlock()
		return json.RawMessage(`{}`), nil
	case "session/new":
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.requireAuth && !a.authed {
			return nil, rpc.NewError(-32000, "Authentication required", nil)
		}
		id := newUUID()
		a.sessions[id] = true
		return json.RawMessage(fmt.Sprintf(`{"sessionId":%q,`+
			`"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask","description":"Asks before it edits"},{"id":"code","name":"Code"}]},`+
			`"models":{"currentModelId":"small","availableModels":[{"modelId":"small","name":"Small model"},{"modelId":"large","name":"Large model","description":"Slower"}]},`+
			`"configOptions":[{"id":"effort","name":"Effort","category":"thought_level","type":"select","currentValue":"low","options":[{"value":"low","name":"Low"},{"value":"high","name":"High"}]}]}`, id)), nil
	case "session/prompt":
		return a.prompt(ctx, json.RawMessage(req.Params))
	case "session/cancel":
		return nil, nil
	}
	return nil, rpc.MethodNotFound(req.Method)
}

func (a *agent) initialize(ctx context.Context) (any, error) {
	// As claude-agent-acp and codex-acp do: the login status, in an
	// extension notification (no answer expected).
	status := rpc.Outbound{Kind: rpc.KindNotification, Method: "_auth/status_update", Params: json.RawMessage(`{"authStatus":{"kind":"none","label":"Not logged in"}}`)}
	if err := rpc.SenderFrom(ctx).Send(ctx, status, nil); err != nil {
		return nil, err
	}
	meta := ""
	if a.harn {
		// A Harn runtime asks its host what it offers before it answers.
		var caps json.RawMessage
		err := rpc.SenderFrom(ctx).Send(ctx, rpc.Outbound{Method: "host/capabilities", Params: json.RawMessage(`{}`)}, &caps)
		if err != nil && !errors.Is(err, rpc.ErrMethodNotFound) {
			return nil, err
		}
		meta = `,"_meta":{"harn":{"schemaCompatibility":"agentclientprotocol/agent-client-protocol schema v0.12.2",` +
			`"sessionUpdateExtensions":["artifact","progress"],"promptResultExtensionFields":["terminal"],` +
			`"hostCapabilityOperations":{"process":["list_shells"]}}}`
	}
	return json.RawMessage(`{"protocolVersion":1,` +
		`"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"embeddedContext":true},` +
		`"mcpCapabilities":{"http":true},"sessionCapabilities":{"list":{},"close":null}` + meta + `},` +
		`"authMethods":[{"id":"agent-login","name":"Log in","description":"Opens a browser"},` +
		`{"id":"api-key","name":"API key","type":"env_var","vars":[{"name":"TESTAGENT_API_KEY","label":"Key"},{"name":"TESTAGENT_ORG","optional":true,"secret":false}]},` +
		`{"id":"tui","name":"Terminal login","type":"terminal","args":["--login"]}],` +
		`"agentInfo":{"name":"testagent","version":"1.0.0"}}`), nil
}

func (a *agent) prompt(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, rpc.InvalidParams(err)
	}
	a.mu.Lock()
	known := a.sessions[p.SessionID]
	a.mu.Unlock()
	if !known {
		return nil, rpc.InvalidParams(fmt.Errorf("unknown session %q", p.SessionID))
	}
	var text []string
	for _, b := range p.Prompt {
		if b.Type == "text" {
			text = append(text, b.Text)
		}
	}
	lead := "You said:"
	if a.variant {
		lead = "You wrote:"
	}
	client := rpc.SenderFrom(ctx)
	for _, w := range strings.Fields(lead + " " + strings.Join(text, " ")) {
		update := map[string]any{
			"sessionId": p.SessionID,
			"update": map[string]any{
				"sessionUpdate": "agent_message_chunk",
				"content":       map[string]any{"type": "text", "text": w + " "},
				"_meta":         map[string]any{"sentAt": time.Now().UTC().Format(time.RFC3339Nano)},
			},
		}
		if err := client.Send(ctx, rpc.Outbound{Kind: rpc.KindNotification, Method: "session/update", Params: update}, nil); err != nil {
			return nil, err
		}
	}
	return json.RawMessage(`{"stopReason":"end_turn"}`), nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
