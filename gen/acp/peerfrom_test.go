package acp_test

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// An agent's handler calls its client through acp.ClientPeerFrom(ctx). The
// prompt is already waiting in the pipe when NewConn starts, so the handler
// may run before NewConn returns: a peer built from NewConn's result and
// stored for the handlers (the obvious first try) is a data race that
// -race reports; the context's peer is not.
func TestClientPeerFromBeforeNewConnReturns(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	defer outR.Close()
	if _, err := inW.WriteString(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	h := &acp.AgentHandlers{
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			client := acp.ClientPeerFrom(ctx)
			if client == nil {
				t.Error("ClientPeerFrom(handler context) = nil")
				return nil, context.Canceled
			}
			chunk := &acp.SessionNotification{SessionID: p.SessionID, Update: acp.SessionUpdate{
				AgentMessageChunk: &acp.ContentChunk{Content: acp.ContentBlock{Text: &acp.TextContent{Text: "hi"}}},
			}}
			if err := client.SessionUpdate(ctx, chunk); err != nil {
				return nil, err
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
	conn := acp.NewConn(inR, outW, h, nil)
	defer conn.Close()
	if acp.ClientPeerFrom(context.Background()) != nil {
		t.Fatal("ClientPeerFrom(a context that is no handler's) is not nil")
	}
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for _, want := range []string{`"method":"session/update"`, `"id":1,"result":{"stopReason":"end_turn"}`} {
		select {
		case l := <-lines:
			if !strings.Contains(l, want) {
				t.Fatalf("agent wrote %s, want %s", l, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no frame with %s", want)
		}
	}
}
