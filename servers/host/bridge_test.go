package host_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
)

// A Server's connection is the runtime's whole stream: it serves the ACP
// client methods of Options.Client beside the bridge's, the host calls the
// runtime as its ACP client on it, and both protocols' cancel and preempt
// rules hold: session/cancel ends the runtime's session/prompt handler,
// and session/inject is answered while that prompt is still running.
func TestServerSpeaksACPAndTheBridgeOnOneConnection(t *testing.T) {
	updates := make(chan *acp.SessionNotification, 4)
	srv := host.New(generic(), &host.Options{Client: &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			updates <- n
			return nil
		},
	}})
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	conn := srv.Connect(hostIn, hostOut)

	promptStarted, promptEnded := make(chan struct{}), make(chan error, 1)
	var c *harnvm.Client
	agent := &acp.AgentHandlers{
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			// The agent streams an update through the host's ACP client
			// side, then works until the host cancels.
			if err := c.ACP.SessionUpdate(ctx, &acp.SessionNotification{SessionID: p.SessionID, Update: acp.SessionUpdate{
				AgentMessageChunk: &acp.ContentChunk{Content: acp.ContentBlock{Text: &acp.TextContent{Text: "working"}}}}}); err != nil {
				return nil, err
			}
			close(promptStarted)
			<-ctx.Done()
			promptEnded <- ctx.Err()
			return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		},
	}
	bridge := &harn.VMHandlers{SessionInject: func(_ context.Context, p *harn.SessionInjectParams) (*harn.SessionInjectResult, error) {
		return &harn.SessionInjectResult{MessageID: "msg_inj_1"}, nil
	}}
	c = harnvm.New(vmIn, vmOut, harn.VMHandler(bridge, agent), nil)
	defer func() {
		c.Close()
		conn.Close()
		vmOut.Close()
		hostOut.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The bridge still works on the connection.
	if ok, err := c.Supports(ctx, "process", "list_shells"); err != nil || ok {
		t.Fatalf("host/capabilities: %v %v", ok, err)
	}

	result := make(chan *acp.PromptResponse, 1)
	go func() {
		res, err := acp.NewAgentPeer(conn).SessionPrompt(ctx, &acp.PromptRequest{SessionID: "s1",
			Prompt: []acp.ContentBlock{{Text: &acp.TextContent{Text: "go"}}}})
		if err != nil {
			t.Errorf("session/prompt: %v", err)
		}
		result <- res
	}()
	select {
	case <-promptStarted:
	case <-ctx.Done():
		t.Fatal("the prompt did not start")
	}
	if n := <-updates; n.Update.AgentMessageChunk == nil || n.SessionID != "s1" {
		t.Fatalf("update %+v", n)
	}
	// A bridge control method is answered while the prompt runs.
	inj, err := harn.NewVMPeer(conn).SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s1", Mode: harn.InjectModeSteer,
		Content: harn.InjectContent{String: new("and hurry")}})
	if err != nil || inj.MessageID != "msg_inj_1" {
		t.Fatalf("session/inject during the prompt: %+v %v", inj, err)
	}
	// ACP's cancel rule ends the prompt's handler.
	if err := acp.NewAgentPeer(conn).SessionCancel(ctx, &acp.CancelNotification{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := <-promptEnded; !errors.Is(err, context.Canceled) {
		t.Fatalf("prompt context: %v", err)
	}
	if res := <-result; res == nil || res.StopReason != acp.StopReasonCancelled {
		t.Fatalf("prompt result %+v", res)
	}

	// An ACP client method the host does not serve is -32601.
	if _, err := c.ACP.FsReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: "s1", Path: "/etc/hostname"}); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unserved fs/read_text_file: %v", err)
	}
}
