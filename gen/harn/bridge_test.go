package harn_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// pair connects a host and a runtime over in-memory pipes, each speaking the
// whole stream (ACP and the bridge).
func pair(t *testing.T, host, vm rpc.Handler) (hostConn, vmConn *rpc.Conn) {
	t.Helper()
	toHostR, toHostW := io.Pipe()
	toVMR, toVMW := io.Pipe()
	hostConn = harn.NewBridgeConn(toHostR, toVMW, host, nil)
	vmConn = harn.NewBridgeConn(toVMR, toHostW, vm, nil)
	t.Cleanup(func() {
		hostConn.Close()
		vmConn.Close()
	})
	return hostConn, vmConn
}

// Harn's bridge and ACP share one stream, so no wire name may belong to both
// catalogues in one direction as the same kind of message: the composed
// handlers route by name, and by kind for the names both have.
func TestWireNamesDisjointFromACP(t *testing.T) {
	acpSide := map[string]string{"vm": "agent", "host": "client"}
	kinds := func(k string) []string {
		if k == "request_or_notification" {
			return []string{"request", "notification"}
		}
		return []string{k}
	}
	shared := 0
	for _, m := range harn.Methods {
		for _, a := range acp.Methods {
			if a.Wire != m.Wire || a.To != acpSide[m.To] {
				continue
			}
			shared++
			for _, k := range kinds(m.Kind) {
				if slices.Contains(kinds(a.Kind), k) {
					t.Errorf("%s is both a bridge method and an ACP method to the %s, as a %s", m.Wire, m.To, k)
				}
			}
		}
	}
	if shared != 2 {
		t.Errorf("%d names shared with ACP, want 2 (session/cancel, terminal/output)", shared)
	}
}

// The two names both catalogues have are routed by kind: Harn's
// session/cancel request reaches VMHandlers.SessionCancelRequest, ACP's
// notification AgentHandlers.SessionCancel; Harn's terminal/output
// notification reaches HostHandlers.TerminalOutputNotification, ACP's
// request ClientHandlers.TerminalOutput. The request form cancels the
// session's running session/prompt, as the notification does.
func TestSharedNamesRoutedByKind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	notified, outputs := make(chan string, 1), make(chan string, 1)
	prompting := make(chan struct{})
	vm := harn.VMHandler(&harn.VMHandlers{
		SessionCancelRequest: func(_ context.Context, p *acp.CancelNotification) (*harn.SessionCancelResult, error) {
			sid := p.SessionID
			return &harn.SessionCancelResult{SessionID: &sid, Status: harn.SessionCancelResultStatusCancelled}, nil
		},
	}, &acp.AgentHandlers{
		SessionCancel: func(_ context.Context, p *acp.CancelNotification) error {
			notified <- string(p.SessionID)
			return nil
		},
		SessionPrompt: func(ctx context.Context, _ *acp.PromptRequest) (*acp.PromptResponse, error) {
			close(prompting)
			<-ctx.Done()
			return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		},
	})
	host := harn.HostHandler(&harn.HostHandlers{
		TerminalOutputNotification: func(_ context.Context, p jsontext.Value) error {
			outputs <- string(p)
			return nil
		},
	}, &acp.ClientHandlers{
		TerminalOutput: func(context.Context, *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
			return &acp.TerminalOutputResponse{Output: "out", Truncated: false}, nil
		},
	})
	hostConn, vmConn := pair(t, host, vm)

	var wg sync.WaitGroup
	var prompt *acp.PromptResponse
	var promptErr error
	wg.Go(func() {
		prompt, promptErr = acp.NewAgentPeer(hostConn).SessionPrompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{}})
	})
	<-prompting
	res, err := harn.NewVMPeer(hostConn).SessionCancelRequest(ctx, &acp.CancelNotification{SessionID: "s1"})
	if err != nil || res.Status != harn.SessionCancelResultStatusCancelled || *res.SessionID != "s1" {
		t.Fatalf("session/cancel request: %+v %v", res, err)
	}
	wg.Wait()
	if promptErr != nil || prompt.StopReason != acp.StopReasonCancelled {
		t.Fatalf("the request form did not cancel the prompt: %+v %v", prompt, promptErr)
	}
	if err := acp.NewAgentPeer(hostConn).SessionCancel(ctx, &acp.CancelNotification{SessionID: "s2"}); err != nil {
		t.Fatal(err)
	}
	if got := <-notified; got != "s2" {
		t.Fatalf("session/cancel notification reached %q", got)
	}

	out, err := acp.NewClientPeer(vmConn).TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: "t"})
	if err != nil || out.Output != "out" {
		t.Fatalf("terminal/output request: %+v %v", out, err)
	}
	if err := harn.NewHostPeer(vmConn).TerminalOutputNotification(ctx, jsontext.Value(`{"terminalId":"t","chunk":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-outputs; got != `{"terminalId":"t","chunk":"x"}` {
		t.Fatalf("terminal/output notification: %s", got)
	}
}

func TestHostAndVMServeBothProtocolsOnOneConnection(t *testing.T) {
	ctx := context.Background()
	updates := make(chan acp.SessionUpdate, 4)
	events := make(chan harn.AgentEvent, 1)
	fallback := make(chan string, 2)
	host := harn.HostHandler(&harn.HostHandlers{
		SkillsList: func(context.Context, *harn.NoArgs) (*harn.SkillsListResult, error) {
			return &harn.SkillsListResult{List: []harn.SkillManifestRef{{ID: new("deploy")}}}, nil
		},
		AgentEvent: func(_ context.Context, e *harn.AgentEvent) error {
			events <- *e
			return nil
		},
		Fallback: rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			fallback <- req.Method
			return "handled by the fallback", nil
		}),
	}, &acp.ClientHandlers{
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: p.Options[0].OptionID}}}, nil
		},
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			updates <- n.Update
			return nil
		},
	})
	injected := make(chan string, 1)
	vm := harn.VMHandler(&harn.VMHandlers{
		SessionInject: func(_ context.Context, p *harn.SessionInjectParams) (*harn.SessionInjectResult, error) {
			injected <- *p.Content.String
			return &harn.SessionInjectResult{MessageID: "msg_inj_1"}, nil
		},
	}, &acp.AgentHandlers{
		Initialize: func(_ context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: p.ProtocolVersion}, nil
		},
	})
	hostConn, vmConn := pair(t, host, vm)

	// The runtime calls the host: a bridge method and an ACP client method.
	skills, err := harn.NewHostPeer(vmConn).SkillsList(ctx, &harn.NoArgs{})
	if err != nil || len(skills.List) != 1 || *skills.List[0].ID != "deploy" {
		t.Fatalf("skills/list: %+v %v", skills, err)
	}
	perm, err := acp.NewClientPeer(vmConn).SessionRequestPermission(ctx, &acp.RequestPermissionRequest{
		SessionID: "s", Options: []acp.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
		ToolCall: acp.ToolCallUpdate{ToolCallID: "t"},
	})
	if err != nil || perm.Outcome.Selected == nil || perm.Outcome.Selected.OptionID != "allow" {
		t.Fatalf("session/request_permission: %+v %v", perm, err)
	}
	// Notifications of both reach their typed fields: a Harn session/update
	// variant through ACP's handler (in Unknown, which UpdateOf types), an
	// agent event through the bridge's.
	if err := vmConn.Notify(ctx, acp.MethodSessionUpdate, jsontext.Value(`{"sessionId":"s","update":{"sessionUpdate":"worker_update","_meta":{"harn":{"workerId":"w1","status":"completed","terminal":true}}}}`)); err != nil {
		t.Fatal(err)
	}
	if u, err := harn.UpdateOf(<-updates); err != nil || u.WorkerUpdate == nil || u.WorkerUpdate.Meta == nil || *u.WorkerUpdate.Meta.Harn.WorkerID != "w1" {
		t.Fatalf("worker_update: %+v %v", u, err)
	}
	if err := harn.NewHostPeer(vmConn).AgentEvent(ctx, &harn.AgentEvent{SessionID: "s", TurnStart: &harn.AgentEventTurnStart{Iteration: new(int64(3))}}); err != nil {
		t.Fatal(err)
	}
	if e := <-events; e.TurnStart == nil || *e.TurnStart.Iteration != 3 || e.Tag() != "turn_start" {
		t.Fatalf("agent event: %+v", e)
	}

	// Unserved methods of either protocol go to the fallback; without one,
	// they are -32601 (an unknown host/call operation names itself).
	var raw jsontext.Value
	if err := vmConn.Call(ctx, "_vendor/ext", nil, &raw); err != nil || string(raw) != `"handled by the fallback"` || <-fallback != "_vendor/ext" {
		t.Fatalf("extension method: %s %v", raw, err)
	}
	if err := vmConn.Call(ctx, acp.MethodFsReadTextFile, map[string]any{"sessionId": "s", "path": "/x"}, &raw); err != nil || <-fallback != acp.MethodFsReadTextFile {
		t.Fatalf("an unserved ACP method goes to the same fallback: %v", err)
	}

	// The host calls the runtime: a bridge method and an ACP agent method.
	res, err := harn.NewVMPeer(hostConn).SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s", Mode: harn.InjectModeSteer, Content: harn.InjectContent{String: new("look again")}})
	if err != nil || res.MessageID != "msg_inj_1" || <-injected != "look again" {
		t.Fatalf("session/inject: %+v %v", res, err)
	}
	init, err := acp.NewAgentPeer(hostConn).Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
	if err != nil || init.ProtocolVersion != 1 {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	// What the runtime does not serve is -32601, from either catalogue.
	if _, err := harn.NewVMPeer(hostConn).SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "c"}); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unserved bridge method: %v", err)
	}
	if _, err := acp.NewAgentPeer(hostConn).SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}}); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unserved ACP method: %v", err)
	}
	// A retired method has no field anywhere: -32601.
	if err := hostConn.Call(ctx, harn.MethodToolPreUse, map[string]any{}, &raw); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("retired method: %v", err)
	}
}

func TestUnknownOperationWithoutFallback(t *testing.T) {
	host := harn.HostHandler(&harn.HostHandlers{
		ProcessListShells: func(context.Context, *harn.HostCallParams, *harn.NoArgs) (*harn.ListShellsResponse, error) {
			return &harn.ListShellsResponse{Shells: []harn.Shell{}}, nil
		},
	}, nil)
	_, vmConn := pair(t, host, harn.VMHandler(nil, nil))
	ctx := context.Background()
	if _, err := harn.NewHostPeer(vmConn).ProcessListShells(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	fp := "sha256:" + strings.Repeat("0", 64)
	_, err := harn.NewHostPeer(vmConn).HypothesisAttestEvent(ctx, nil, &harn.HypothesisAttestArgs{
		AuthorityKind: harn.HypothesisAttestArgsAuthorityKindNativeApproval, EventFingerprint: fp, PlanFingerprint: fp,
		HypothesisID: "h", OperationReceiptID: "r",
	})
	var rerr *rpc.Error
	if !errors.Is(err, rpc.ErrMethodNotFound) || !errors.As(err, &rerr) || rerr.Message != "host/call: unsupported operation hypothesis.attest_event" {
		t.Fatalf("an unserved operation names itself: %v", err)
	}
}

// The bridge's control-lane methods are handled while a prompt runs: with
// one request at a time (the engine's default), session/attach still answers
// while session/prompt waits for it.
func TestControlLaneDuringPrompt(t *testing.T) {
	attached := make(chan struct{})
	vm := harn.VMHandler(&harn.VMHandlers{
		SessionAttach: func(_ context.Context, p *harn.SessionAttachParams) (*harn.LiveSessionChange, error) {
			close(attached)
			return &harn.LiveSessionChange{Clients: []harn.LiveClient{}}, nil
		},
	}, &acp.AgentHandlers{
		SessionPrompt: func(ctx context.Context, _ *acp.PromptRequest) (*acp.PromptResponse, error) {
			select {
			case <-attached:
				return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return nil, errors.New("session/attach was not handled during the prompt")
			}
		},
	})
	hostConn, _ := pair(t, harn.HostHandler(nil, nil), vm)
	ctx := context.Background()
	var wg sync.WaitGroup
	var promptErr error
	wg.Go(func() {
		_, promptErr = acp.NewAgentPeer(hostConn).SessionPrompt(ctx, &acp.PromptRequest{SessionID: "s", Prompt: []acp.ContentBlock{}})
	})
	if _, err := harn.NewVMPeer(hostConn).SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "portal"}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if promptErr != nil {
		t.Fatal(promptErr)
	}
}

func TestBridgeConnOptions(t *testing.T) {
	o := harn.BridgeConnOptions(&rpc.Options{Preempt: []string{"mine"}})
	for _, p := range append(slices.Clone(harn.PreemptMethods), "mine") {
		if !slices.Contains(o.Preempt, p) {
			t.Errorf("preempted methods lack %s: %v", p, o.Preempt)
		}
	}
	if !slices.ContainsFunc(o.Cancels, func(c rpc.CancelRule) bool { return c.Method == acp.MethodSessionCancel }) {
		t.Errorf("ACP's cancel rules are missing: %+v", o.Cancels)
	}
	for _, m := range []string{harn.MethodHostCall, acp.MethodSessionPrompt} {
		if !slices.Contains(o.Methods, m) {
			t.Errorf("method names lack %s", m)
		}
	}
	if o.DecodeOptions == nil {
		t.Fatal("no decode options")
	}
	err := rpc.DecodeParams(jsontext.Value(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","executor":"harn"}}`), new(acp.SessionNotification), o.DecodeOptions)
	if !errors.Is(err, rpc.ErrInvalidParams) || !errors.Is(err, wire.ErrForbiddenMember) {
		t.Errorf("Harn's contract is not applied: %v", err)
	}
}
