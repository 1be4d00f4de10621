package prompt_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/prompt"
)

// A prompt run against an agent on the other end of a pair of pipes (in a
// host, the connection servers/host's ServeCommandConn hands over, to a
// child): initialize, session/new, session/prompt, and how it ended.
func ExampleRun_Run() {
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	agent := acp.NewConn(agentIn, agentOut, &acp.AgentHandlers{
		Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1, AgentInfo: wire.Some(acp.Implementation{Name: "echo-agent", Version: "1.0"})}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "s-1"}, nil
		},
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}, nil)
	defer agent.Close()
	conn := acp.NewConn(clientIn, clientOut, &acp.ClientHandlers{}, nil)
	defer conn.Close()

	run := prompt.New(prompt.Options{
		Text: "say hello", Cwd: "/work",
		Status: func(format string, args ...any) { fmt.Printf(format+"\n", args...) },
	})
	o := run.Run(context.Background(), conn)
	fmt.Println(o.Kind == prompt.Completed, o.Summary)
	// Output:
	// agent echo-agent 1.0 (a plain ACP agent)
	// session s-1 in /work
	// true completed: end_turn (a plain ACP agent, which reports no Harn terminal outcome)
}
