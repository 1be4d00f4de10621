package host_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
	"github.com/bridgekit/bridgekit/servers/host/shells"
)

// interopAgentDir holds an ACP agent written with the official TypeScript ACP
// SDK (see its README). CI installs its node_modules with npm ci.
var interopAgentDir = peers.Dir()

// updateHandlingTime is how long the test's handler spends on each
// session/update notification.
const updateHandlingTime = 20 * time.Millisecond

// upstreamShellSchema is Harn's own shell-discovery schema, from shared/.
const upstreamShellSchema = "../../../shared/fixtures/harn/upstream/spec/schemas/host-shell-discovery.schema.json"

// TestInteropTypeScriptACPAgent runs an independent ACP peer, an agent built
// with @agentclientprotocol/sdk, as a child process. This test is its ACP
// client and, like the program embedding Harn, its host: while the agent
// handles session/prompt it streams session/update notifications and calls
// host/capabilities and host/call, served by host.Server over a real
// shells.Provider, then reports what it received in the prompt's result.
func TestInteropTypeScriptACPAgent(t *testing.T) {
	// Locally the test skips without Node; in CI (CI set, as .ci/run runs)
	// a missing peer is a failure, so the test cannot pass by not running.
	node := peers.Node(t)
	schemas := compileShellSchemas(t)
	cwd, err := filepath.Abs(interopAgentDir)
	if err != nil {
		t.Fatal(err)
	}

	provider, err := shells.New(shells.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var h harn.HostHandlers
	provider.Register(&h)
	srv := host.New(&h, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cmd := exec.CommandContext(ctx, node, "agent.mjs")
	cmd.Dir = interopAgentDir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer // written by exec's copier; read only after Wait
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// The handler records what the agent sends and otherwise serves the
	// bridge exactly as host.Server does on its own connections.
	var (
		mu      sync.Mutex
		updates []string // text of each agent_message_chunk, in handling order
		inbound []string // "method id" of each request from the agent
	)
	handler := rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		if req.Method == "session/update" {
			var n struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate string `json:"sessionUpdate"`
					Content       struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			if err := json.Unmarshal(req.Params, &n); err != nil {
				t.Errorf("session/update params: %v: %s", err, req.Params)
			}
			time.Sleep(updateHandlingTime) // so that a missing barrier shows
			mu.Lock()
			updates = append(updates, n.Update.SessionUpdate+":"+n.Update.Content.Text)
			mu.Unlock()
			return nil, nil
		}
		if req.Kind == rpc.KindRequest {
			mu.Lock()
			inbound = append(inbound, req.Method+" "+req.ID.String())
			mu.Unlock()
		}
		return srv.Handle(ctx, req)
	})
	conn := jsonrpc.NewConn(stdout, stdin, handler, &rpc.Options{MaxConcurrentRequests: host.DefaultMaxConcurrentRequests})

	// However the test ends: close the child's stdin, which ends the agent,
	// wait for it to close stdout, then reap it. No goroutine outlives this.
	defer func() {
		stdin.Close()
		select {
		case <-conn.Done():
		case <-ctx.Done():
			t.Errorf("agent did not exit after its stdin was closed: %v", ctx.Err())
		}
		conn.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("agent exit: %v", err)
		}
		if t.Failed() {
			t.Logf("agent stderr:\n%s", stderr.Bytes())
		}
	}()

	// initialize: the SDK rejects anything else until it has answered this.
	var initRes struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if err := conn.Call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{},
	}, &initRes); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if initRes.ProtocolVersion != 1 {
		t.Fatalf("initialize: protocolVersion %d, want 1", initRes.ProtocolVersion)
	}

	var newRes struct {
		SessionID string `json:"sessionId"`
	}
	if err := conn.Call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &newRes); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	if newRes.SessionID == "" {
		t.Fatal("session/new: empty sessionId")
	}

	// One prompt turn; it returns the session/update notifications handled
	// by the time Call returned. The response barrier of jsonrpc.Conn is what
	// guarantees they all are, so look without waiting.
	type interopReport struct {
		Capabilities    jsontext.Value `json:"capabilities"`
		Shells          jsontext.Value `json:"shells"`
		Invocation      jsontext.Value `json:"invocation"`
		ErrorCode       jsontext.Value `json:"errorCode"`
		PromptRequestID jsontext.Value `json:"promptRequestId"`
	}
	prompt := func(text string) (interopReport, []string) {
		t.Helper()
		var res struct {
			StopReason string `json:"stopReason"`
			Meta       struct {
				Interop interopReport `json:"interop"`
			} `json:"_meta"`
		}
		mu.Lock()
		before := len(updates)
		mu.Unlock()
		err := conn.Call(ctx, "session/prompt", map[string]any{
			"sessionId": newRes.SessionID,
			"prompt":    []any{map[string]any{"type": "text", "text": text}},
		}, &res)
		mu.Lock()
		handled := slices.Clone(updates[before:])
		mu.Unlock()
		if err != nil {
			t.Fatalf("session/prompt %q: %v", text, err)
		}
		if res.StopReason != "end_turn" {
			t.Errorf("session/prompt %q: stopReason %q, want end_turn", text, res.StopReason)
		}
		return res.Meta.Interop, handled
	}
	wantUpdates := []string{"agent_message_chunk:one", "agent_message_chunk:two", "agent_message_chunk:three"}

	// The Harn-like turn: updates, then bridge requests, then the answer.
	res, handled := prompt("run the interop turn")
	if !slices.Equal(handled, wantUpdates) {
		t.Errorf("session/update handled before session/prompt returned: %q, want %q", handled, wantUpdates)
	}
	mu.Lock()
	gotInbound := slices.Clone(inbound)
	mu.Unlock()
	// The SDK numbers its requests from 0 and resolved each of them, so our
	// replies echoed those ids.
	wantInbound := []string{"host/capabilities 0", "host/call 1", "host/call 2", "host/call 3"}
	if !slices.Equal(gotInbound, wantInbound) {
		t.Errorf("requests from the agent: %q, want %q", gotInbound, wantInbound)
	}
	// Our outbound ids count from 1: initialize, session/new, session/prompt.
	if got := string(res.PromptRequestID); got != "3" {
		t.Errorf("agent saw session/prompt id %s, want 3", got)
	}

	// host/capabilities: the four process operations, as a list.
	var caps map[string][]string
	if err := json.Unmarshal(res.Capabilities, &caps); err != nil {
		t.Fatalf("capabilities %s: %v", res.Capabilities, err)
	}
	gotOps := slices.Sorted(slices.Values(caps["process"]))
	wantOps := []string{"get_default_shell", "list_shells", "set_default_shell", "shell_invocation"}
	if !slices.Equal(gotOps, wantOps) {
		t.Errorf("capabilities %s: process ops %q, want %q", res.Capabilities, gotOps, wantOps)
	}

	// process.list_shells: valid by Harn's upstream schema.
	validateUpstream(t, schemas["list_shells_response"], "list_shells", res.Shells)
	var list harn.ListShellsResponse
	if err := json.Unmarshal(res.Shells, &list); err != nil {
		t.Fatalf("list_shells %s: %v", res.Shells, err)
	}
	if len(list.Shells) == 0 {
		t.Errorf("list_shells lists no shell: %s", res.Shells)
	}

	// process.shell_invocation: an argv that really runs the command.
	validateUpstream(t, schemas["shell_invocation_response"], "shell_invocation", res.Invocation)
	var inv struct {
		Program         string   `json:"program"`
		Args            []string `json:"args"`
		CommandArgIndex int      `json:"command_arg_index"`
	}
	if err := json.Unmarshal(res.Invocation, &inv); err != nil {
		t.Fatalf("shell_invocation %s: %v", res.Invocation, err)
	}
	if inv.CommandArgIndex < 0 || inv.CommandArgIndex >= len(inv.Args) || inv.Args[inv.CommandArgIndex] != "printf interop" {
		t.Errorf("shell_invocation %s: command not at command_arg_index", res.Invocation)
	}
	out, err := exec.CommandContext(ctx, inv.Program, inv.Args...).Output()
	if err != nil || string(out) != "interop" {
		t.Errorf("running %s %q: output %q, err %v; want %q", inv.Program, inv.Args, out, err, "interop")
	}

	// process.exec is not served: -32601, delivered to the SDK as a RequestError.
	var code int64
	if err := json.Unmarshal(res.ErrorCode, &code); err != nil || code != rpc.CodeMethodNotFound {
		t.Errorf("process.exec error code %s (%v), want %d", res.ErrorCode, err, rpc.CodeMethodNotFound)
	}

	// A turn of updates alone, answered at once. In the turn above the bridge
	// round trips already ordered the updates' handling before the answer;
	// here only the response barrier does, against a handler that takes its
	// time over each update.
	res, handled = prompt("updates only")
	if !slices.Equal(handled, wantUpdates) {
		t.Errorf("updates-only turn: session/update handled before session/prompt returned: %q, want %q", handled, wantUpdates)
	}
	if got := string(res.PromptRequestID); got != "4" {
		t.Errorf("agent saw the second session/prompt id %s, want 4", got)
	}
	mu.Lock()
	extra := len(inbound) - len(wantInbound)
	mu.Unlock()
	if extra != 0 {
		t.Errorf("updates-only turn: %d bridge requests, want none", extra)
	}
}

func compileShellSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, def := range []string{"list_shells_response", "shell_invocation_response"} {
		s, err := c.Compile(upstreamShellSchema + "#/$defs/" + def)
		if err != nil {
			t.Fatalf("compile upstream schema: %v", err)
		}
		out[def] = s
	}
	return out
}

func validateUpstream(t *testing.T, s *jsonschema.Schema, what string, raw jsontext.Value) {
	t.Helper()
	if len(raw) == 0 {
		t.Errorf("%s: missing from the agent's report", what)
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err == nil {
		err = s.Validate(v)
	}
	if err != nil {
		t.Errorf("%s does not validate against Harn's schema: %v\n%s", what, err, raw)
	}
}
