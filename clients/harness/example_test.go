package harness_test

import (
	"context"
	"fmt"
	"io"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/wire"
	sim "github.com/bridgekit/bridgekit/servers/harness"
)

// A session with a knowledge and a model host service. The Harness here
// is servers/harness's simulator in this process (harness.Connect); with
// AgentPM installed, harness.Start(ctx, &harness.Options{Agent: ...})
// starts `agentpm harness --machine` instead.
func Example() {
	ctx := context.Background()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	go func() {
		_ = sim.New(&sim.Options{Run: sim.AgentLoop(sim.Agent{})}).Serve(ctx, toHarness, fromHarness)
		fromHarness.Close()
	}()

	c, err := harness.Connect(ctx, toClient, fromClient, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("preflight:", c.StartupPreflight().Status)
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	docs := &agentpmservice.ServiceHandlers{Retrieve: func(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
		text := "Restart the worker, then drain the queue."
		r := p.Request
		return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: r.Package, Version: r.Version, Mode: r.Mode, Query: r.Query,
			Results: []agentpmservice.KnowledgeRetrievalResult{{Rank: 1, Score: 0.8, ChunkID: "c1", SourceID: "runbook", Text: &text}}}, nil
	}}
	model := &agentpmservice.ServiceHandlers{Generate: func(_ context.Context, p *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
		if n := len(p.Request.OrderedTurns); n > 1 { // the retrieval's result is in
			return &agentpmservice.ModelTurn{Actions: []agentpmservice.SemanticActionProposal{{ID: "done", Action: agentpmservice.SemanticAction{
				PhaseCompletion: &agentpmservice.SemanticActionPhaseCompletion{Outcome: wire.Null[string](), Output: []byte(`"restart, then drain"`)}}}}}, nil
		}
		q := p.Request.RunInput
		return &agentpmservice.ModelTurn{Actions: []agentpmservice.SemanticActionProposal{{ID: "look", Action: agentpmservice.SemanticAction{
			KnowledgeRequest: &agentpmservice.SemanticActionKnowledgeRequest{Package: "@acme/runbooks", Query: &q}}}}}, nil
	}}
	for _, s := range []harness.HostService{
		{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "runbooks", Handlers: docs},
		{Role: agentpmservice.ServiceRoleModel, RegistryID: "default", Handlers: model},
	} {
		if _, err := c.RegisterHostService(ctx, s); err != nil {
			fmt.Println(err)
			return
		}
	}
	res, err := c.StartRun(ctx, "The queue is stuck", func(ev harness.Event) {
		switch ev.Harness.EventType {
		case agentpmmachine.EventTypeKnowledgeRetrieved, agentpmmachine.EventTypeRunCompleted:
			fmt.Println("event:", ev.Harness.EventType)
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The default content policy redacts the output: it is said to be
	// redacted, never returned as output.
	fmt.Println("run:", res.Status, res.OutputContent, res.Output == nil)
	fmt.Println("shutdown:", c.Shutdown(ctx))
	// Output:
	// preflight: ready
	// event: knowledge_retrieved
	// event: run_completed
	// run: ended redacted true
	// shutdown: <nil>
}
