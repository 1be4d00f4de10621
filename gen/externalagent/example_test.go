package externalagent_test

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/externalagent"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// An external agent serves Harn's plan request. An HTTP handler would
// decode the JSON-RPC request from the body and pass it to Handle.
func Example() {
	agent := &externalagent.AgentHandlers{
		Plan: func(_ context.Context, p *externalagent.PlanParams) (*externalagent.PlanResult, error) {
			plan := "Pin the clock, then rerun " + p.Task
			return &externalagent.PlanResult{CheckpointID: new("cp-1"), Plan: &plan}, nil
		},
	}
	res, err := agent.Handle(context.Background(), &rpc.Request{
		Kind:   rpc.KindRequest,
		Method: externalagent.MethodPlan,
		Params: jsontext.Value(`{"schema":"harn.external_agent.v1","task":"the flaky test","budget":{"max_usd":5},"idempotency_key":"deleg-1"}`),
	})
	fmt.Println(*res.(*externalagent.PlanResult).Plan, err)
	_, err = agent.Handle(context.Background(), &rpc.Request{Kind: rpc.KindRequest, Method: externalagent.MethodDispatch, Params: jsontext.Value(`{}`)})
	fmt.Println(err)
	// Output:
	// Pin the clock, then rerun the flaky test <nil>
	// rpc error -32601: method not found: _harn/externalAgent.dispatch
}
