package agentpmmachine_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Both sides of agentpm harness --machine on the generated bindings, over
// pipes: the client registers a knowledge host service and starts a Run;
// the Harness calls the host service and streams an event while the Run
// runs. A real client spawns agentpm and uses its stdin and stdout.
func Example() {
	ctx := context.Background()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()

	// The client: it serves its host services and takes the events.
	client := agentpmmachine.NewConn(toClient, fromClient, &agentpmmachine.ClientHandlers{
		KnowledgeRetrieve: func(_ context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			content := "Harness routes Knowledge through KnowledgeRuntime."
			fmt.Printf("host_service %s/%s for %s: %s\n", call.Role, call.Method, call.RegistryID, *p.Request.Query)
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: p.Request.Package, Version: p.Request.Version, Mode: p.Request.Mode, Content: &content}, nil
		},
		HarnessEvent: func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
			fmt.Println("event", ev.EventType, ev.Payload.Tag())
			return nil
		},
	}, nil)
	defer client.Close()

	// The Harness (what agentpm harness --machine does, in a few lines).
	var harness *rpc.Conn
	harness = agentpmmachine.NewConn(toHarness, fromHarness, &agentpmmachine.HarnessHandlers{
		RegisterHostService: func(_ context.Context, p *agentpmmachine.RegisterHostServiceParams) (*agentpmmachine.RegisterHostServiceResult, error) {
			return &agentpmmachine.RegisterHostServiceResult{Service: agentpmmachine.HostServiceRegistration{Role: p.Role, RegistryID: *p.RegistryID}, Active: true}, nil
		},
		StartRun: func(ctx context.Context, p *agentpmmachine.StartRunParams) (*agentpmmachine.StartRunResult, error) {
			host := agentpmmachine.NewClientPeer(harness)
			res, err := host.KnowledgeRetrieve(ctx, &agentpmmachine.HostServiceParams{RegistryID: "kb"}, &agentpmservice.RetrievePayload{
				Request: agentpmservice.KnowledgeRuntimeRequest{Package: "@zack/docs", Version: "1.2.3", Mode: agentpmservice.KnowledgeRequestModeContextDocument, Query: p.Input}})
			if err != nil {
				return nil, &rpc.Error{Name: agentpmmachine.ErrRunFailed.Name, Message: err.Error()}
			}
			err = host.HarnessEvent(ctx, &agentpmmachine.HarnessEvent{EventID: "evt-s-1", SessionID: "s", SessionSequence: 1,
				Timestamp: "2025-06-01T10:00:00Z", EventType: agentpmmachine.EventTypeRunCompleted,
				Payload: agentpmmachine.EventPayload{Terminal: &agentpmmachine.EventPayloadTerminal{Status: agentpmmachine.TerminalStatusEnded}}})
			return &agentpmmachine.StartRunResult{Status: agentpmmachine.TerminalStatusEnded, Output: []byte(`"` + *res.Content + `"`)}, err
		},
	}, nil)
	defer harness.Close()

	h := agentpmmachine.NewHarnessPeer(client)
	kb := "kb"
	if _, err := h.RegisterHostService(ctx, &agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: &kb}); err != nil {
		fmt.Println(err)
		return
	}
	input := "How does Harness route Knowledge?"
	res, err := h.StartRun(ctx, &agentpmmachine.StartRunParams{Input: &input})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run", res.Status, res.OutputContent(), string(res.Output))
	// Output:
	// host_service knowledge/retrieve for kb: How does Harness route Knowledge?
	// event run_completed terminal
	// run ended present "Harness routes Knowledge through KnowledgeRuntime."
}
