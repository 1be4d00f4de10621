package acp_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// An agent and a client on one stream. The agent's prompt handler streams
// its answer to the client through acp.ClientPeerFrom(ctx), the peer of the
// connection handling the request, and asks the client's permission;
// the client serves session/update and session/request_permission.
//
// A connection handles one request at a time unless
// rpc.Options.MaxConcurrentRequests says otherwise: an agent whose prompts
// run long sets it, so that other requests are not held up behind one.
// session/cancel is applied as it arrives either way, ending the prompt
// handler's context.
func Example() {
	ctx := context.Background()
	agent := &acp.AgentHandlers{
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			client := acp.ClientPeerFrom(ctx)
			if err := client.SessionUpdate(ctx, acp.AgentText(p.SessionID, "You said: "+acp.PromptText(p.Prompt))); err != nil {
				return nil, err
			}
			ok, err := client.SessionRequestPermission(ctx, &acp.RequestPermissionRequest{
				SessionID: p.SessionID,
				ToolCall:  acp.ToolCallUpdate{ToolCallID: "t1"},
				Options:   []acp.PermissionOption{{OptionID: "yes", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
			})
			if err != nil || ok.Outcome.Selected == nil {
				return &acp.PromptResponse{StopReason: acp.StopReasonRefusal}, err
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
	client := &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			fmt.Println("agent:", n.Update.AgentMessageChunk.Content.Text.Text)
			return nil
		},
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			fmt.Println("permission asked for", p.ToolCall.ToolCallID)
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
				Selected: &acp.SelectedPermissionOutcome{OptionID: p.Options[0].OptionID},
			}}, nil
		},
	}

	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agentConn := acp.NewConn(toAgentR, toClientW, agent, &rpc.Options{MaxConcurrentRequests: 4})
	clientConn := acp.NewConn(toClientR, toAgentW, client, nil)
	defer agentConn.Close()
	defer clientConn.Close()

	res, err := acp.NewAgentPeer(clientConn).SessionPrompt(ctx, &acp.PromptRequest{
		SessionID: "s1", Prompt: []acp.ContentBlock{acp.TextBlock("hello")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stop reason:", res.StopReason)
	// Output:
	// agent: You said: hello
	// permission asked for t1
	// stop reason: end_turn
}
