package acpremote_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	srvremote "github.com/bridgekit/bridgekit/servers/acpremote"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agentHandlers streams n chunks, asking permission half way.
func agentHandlers(n int) *acp.AgentHandlers {
	return &acp.AgentHandlers{
		Initialize: func(ctx context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(ctx context.Context, p *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "s1"}, nil
		},
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			client := acp.ClientPeerFrom(ctx)
			for i := 0; i < n; i++ {
				if i == n/2 {
					res, err := client.SessionRequestPermission(ctx, &acp.RequestPermissionRequest{SessionID: p.SessionID,
						ToolCall: acp.ToolCallUpdate{ToolCallID: "call_1"},
						Options:  []acp.PermissionOption{{OptionID: "ok", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}}})
					if err != nil {
						return nil, err
					}
					if res.Outcome.Selected == nil {
						return &acp.PromptResponse{StopReason: acp.StopReasonRefusal}, nil
					}
				}
				if err := client.SessionUpdate(ctx, acp.AgentText(p.SessionID, fmt.Sprintf("chunk %d;", i))); err != nil {
					return nil, err
				}
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
}

// The typed peer over each transport: a whole turn with streamed updates and a permission request.
func TestDialAgent(t *testing.T) {
	for _, scheme := range []string{"ws", "http"} {
		t.Run(scheme, func(t *testing.T) {
			srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return agentHandlers(20) },
				&srvremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 4}})
			hs := httptest.NewServer(srv)
			defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
			var mu sync.Mutex
			var text strings.Builder
			asked := 0
			ctx := context.Background()
			agent, err := acpremote.DialAgent(ctx, scheme+strings.TrimPrefix(hs.URL, "http"), &acp.ClientHandlers{
				SessionUpdate: func(ctx context.Context, n *acp.SessionNotification) error {
					mu.Lock()
					defer mu.Unlock()
					text.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
					return nil
				},
				SessionRequestPermission: func(ctx context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
					asked++
					return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: "ok"}}}, nil
				},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			if _, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
				t.Fatal(err)
			}
			s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("go")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != acp.StopReasonEndTurn || asked != 1 {
				t.Fatalf("stop reason %s, %d permission requests", res.StopReason, asked)
			}
			var want strings.Builder
			for i := 0; i < 20; i++ {
				fmt.Fprintf(&want, "chunk %d;", i)
			}
			mu.Lock()
			got := text.String()
			mu.Unlock()
			if got != want.String() {
				t.Fatalf("updates %q", got)
			}
		})
	}
}
