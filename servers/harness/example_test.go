package harness_test

import (
	"context"
	"fmt"
	"io"

	client "github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/harness"
)

// A simulated Harness in this process, driven by clients/harness: the Run
// is the Harness's agent loop, calling the client's model service.
func Example() {
	ctx := context.Background()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	srv := harness.New(&harness.Options{
		Required: []agentpmmachine.HostServiceRegistration{{Role: agentpmservice.ServiceRoleModel, RegistryID: "default"}},
		Run:      harness.AgentLoop(harness.Agent{}),
		Content:  harness.ContentFull,
	})
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(ctx, toHarness, fromHarness)
		fromHarness.Close()
	}()

	c, err := client.Connect(ctx, toClient, fromClient, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.RegisterHostService(ctx, client.HostService{Role: agentpmservice.ServiceRoleModel, RegistryID: "default",
		Handlers: &agentpmservice.ServiceHandlers{Generate: func(_ context.Context, p *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
			out := []byte(`"Hello, ` + p.Request.RunInput + `"`)
			return &agentpmservice.ModelTurn{Actions: []agentpmservice.SemanticActionProposal{{ID: "a1", Action: agentpmservice.SemanticAction{
				PhaseCompletion: &agentpmservice.SemanticActionPhaseCompletion{Outcome: wire.Null[string](), Output: out}}}}}, nil
		}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.StartRun(ctx, "world", func(ev client.Event) {
		if ev.Harness != nil && ev.Harness.Payload.Terminal != nil {
			fmt.Println("event", ev.Harness.EventType)
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, string(res.Output))
	fmt.Println(c.Shutdown(ctx), <-served)
	// Output:
	// event run_completed
	// ended "Hello, world"
	// <nil> <nil>
}
