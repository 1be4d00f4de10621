package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The agent as a program: it serves a client over WebSocket and HTTP, asks permission for "write", and
// stops on its context.
func TestRemoteAgent(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	var stderr bytes.Buffer
	done := make(chan int)
	go func() { done <- run(ctx, []string{"-listen", "127.0.0.1:0"}, &stderr, func(a string) { addr <- a }) }()
	a := <-addr
	for _, url := range []string{"ws://" + a + "/acp", "http://" + a + "/acp"} {
		var text strings.Builder
		asked := 0
		agent, err := acpremote.DialAgent(ctx, url, &acp.ClientHandlers{
			SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
				text.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
				return nil
			},
			SessionRequestPermission: func(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
				asked++
				return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: "allow"}}}, nil
			},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
		s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("write these words")}})
		agent.Close()
		if err != nil || res.StopReason != acp.StopReasonEndTurn || asked != 1 || text.String() != "write these words " {
			t.Fatalf("%s: %v %v asked %d text %q", url, res, err, asked, text.String())
		}
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop")
	}
	if _, err := http.Get(fmt.Sprintf("http://%s/acp", a)); err == nil {
		t.Fatal("still serving after its context ended")
	}
}
