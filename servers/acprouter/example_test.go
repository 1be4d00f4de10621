package acprouter_test

import (
	"context"
	"fmt"

	"github.com/bridgekit/bridgekit/clients/acpnegotiate"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/servers/acprouter"
)

// connect serves agent on one end of an in-memory transport (on stdio, it would be
// ndjson.NewTransport(os.Stdin, os.Stdout, nil)) and connects a client asking for v2 on the other.
func connect(ctx context.Context, agent *acprouter.Agent) {
	agentEnd, clientEnd := frame.Pipe()
	served := make(chan *acprouter.Conn, 1)
	go func() {
		conn, err := agent.Serve(ctx, agentEnd)
		if err != nil {
			fmt.Println("serve:", err)
		}
		served <- conn
	}()
	client := &acpnegotiate.Client{
		Init:   acpv2.InitializeRequest{Info: acpv2.Implementation{Name: "my-client", Version: "1.0"}},
		V1Init: &acp.InitializeRequest{ClientCapabilities: &acp.ClientCapabilities{}},
	}
	conn, err := client.Connect(ctx, clientEnd)
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer conn.Close()
	agentConn := <-served
	defer agentConn.Close()
	fmt.Printf("the client asked for v2 and speaks v%d; the agent speaks v%d\n", conn.Version, agentConn.Version)
}

func v1Handlers() *acp.AgentHandlers {
	return &acp.AgentHandlers{Initialize: func(_ context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
		return &acp.InitializeResponse{ProtocolVersion: p.ProtocolVersion}, nil
	}}
}

func v2Handlers() *acpv2.AgentHandlers {
	return &acpv2.AgentHandlers{Initialize: func(_ context.Context, p *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
		return &acpv2.InitializeResponse{ProtocolVersion: p.ProtocolVersion, Info: acpv2.Implementation{Name: "my-agent", Version: "1.0"}}, nil
	}}
}

// An agent serving v1 and v2 on one stream speaks v2 to a client that asks for it.
func Example() {
	connect(context.Background(), &acprouter.Agent{V1: v1Handlers(), V2: v2Handlers()})
	// Output: the client asked for v2 and speaks v2; the agent speaks v2
}

// An agent serving v1 alone answers v1, and the client falls back to it.
func Example_fallback() {
	connect(context.Background(), &acprouter.Agent{V1: v1Handlers()})
	// Output: the client asked for v2 and speaks v1; the agent speaks v1
}
