package acpunstable_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/gen/acpunstable"
)

// A client forks a session and names the fork with two of ACP's unstable
// methods, session/fork and session/set_title, which only this package
// generates: a program opts in to them by importing it instead of gen/acp.
// The agent advertises them under sessionCapabilities (fork) and
// sessionCapabilities.title, which a client checks before calling.
func Example() {
	ctx := context.Background()
	agent := &acpunstable.AgentHandlers{
		SessionFork: func(_ context.Context, p *acpunstable.ForkSessionRequest) (*acpunstable.ForkSessionResponse, error) {
			return &acpunstable.ForkSessionResponse{SessionID: p.SessionID + "-fork"}, nil
		},
		SessionSetTitle: func(_ context.Context, p *acpunstable.SetSessionTitleRequest) (*acpunstable.SetSessionTitleResponse, error) {
			fmt.Printf("agent: %s is now %q\n", p.SessionID, p.Title)
			return &acpunstable.SetSessionTitleResponse{}, nil
		},
	}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agentConn := acpunstable.NewConn(toAgentR, toClientW, agent, nil)
	clientConn := acpunstable.NewConn(toClientR, toAgentW, &acpunstable.ClientHandlers{}, nil)
	defer agentConn.Close()
	defer clientConn.Close()

	peer := acpunstable.NewAgentPeer(clientConn)
	fork, err := peer.SessionFork(ctx, &acpunstable.ForkSessionRequest{SessionID: "s1", Cwd: "/work"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("forked:", fork.SessionID)
	if _, err := peer.SessionSetTitle(ctx, &acpunstable.SetSessionTitleRequest{SessionID: fork.SessionID, Title: "try the other fix"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// forked: s1-fork
	// agent: s1-fork is now "try the other fix"
}
