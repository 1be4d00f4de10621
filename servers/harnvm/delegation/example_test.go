package delegation_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/harnvm/delegation"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// reviewer is a Peer answering from fixed documents; a real one speaks
// JSON-RPC to the agent's A2A endpoint (see PlanParams, DispatchParams and
// RequestID).
type reviewer struct{ dispatches int }

func (r *reviewer) Capabilities(context.Context, *delegation.Request) (delegation.Capabilities, error) {
	return delegation.ParseCapabilities(jsontext.Value(`{"capabilities":{"externalAgent":{"schema":"harn.external_agent.v1",` +
		`"pre_dispatch_checkpoint":true,"budget_cap":true,"idempotency":true,"reviewable_handoff":true,"dispatch":true}}}`))
}

func (r *reviewer) Plan(context.Context, *delegation.Request) (jsontext.Value, error) {
	return jsontext.Value(`{"checkpoint_id":"cp-7","plan":"Update two call sites and the changelog."}`), nil
}

func (r *reviewer) Dispatch(context.Context, *delegation.Request, *delegation.Checkpoint) (jsontext.Value, error) {
	r.dispatches++
	return jsontext.Value(`{"handoff":{"summary":"done"},"budget_used":{"usd":4.2}}`), nil
}

// The guard shows the checkpoint before any dispatch, dispatches once after
// approval, reports usage above the cap, and replays a repeat.
func Example() {
	ctx := context.Background()
	peer := &reviewer{}
	g := delegation.New(peer, nil)
	req := delegation.Request{Target: "https://agents.example/reviewer", Task: "Rename the config flag",
		Budget: delegation.Budget{MaxUSD: wire.Some(3.0)}, IdempotencyKey: "rename-flag-1"}

	env, _ := g.Delegate(ctx, req)
	fmt.Println(env.Status, env.Checkpoint.Plan)

	req.Checkpoint.Approved = true
	env, _ = g.Delegate(ctx, req)
	fmt.Println(env.Status, "-", env.Error)

	env, _ = g.Delegate(ctx, req)
	fmt.Println(env.Status, "dispatches:", peer.dispatches)

	_, err := g.Delegate(ctx, delegation.Request{Target: "x", Task: "y", IdempotencyKey: "z"})
	doc, _ := json.Marshal(err)
	fmt.Println(errors.Is(err, delegation.ErrInvalidRequest), string(doc))
	// Output:
	// checkpoint_required Update two call sites and the changelog.
	// budget_exceeded - external agent reported usage over the approved budget cap
	// replayed dispatches: 1
	// true {"error":"external_agent_error","kind":"invalid_request","category":"invalid_request","message":"external_agent_delegate: budget must include at least one positive cap"}
}
