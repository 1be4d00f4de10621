package delegation_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/externalagent"
	"github.com/bridgekit/bridgekit/servers/harnvm/delegation"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestParseCapabilities(t *testing.T) {
	full := delegation.Capabilities{Schema: delegation.Schema, PreDispatchCheckpoint: true, BudgetCap: true, Idempotency: true,
		ReviewableHandoff: true, Dispatch: true, Operations: []string{delegation.MethodPlan, delegation.MethodDispatch}}
	for _, card := range []string{
		`{"name":"a","capabilities":{"externalAgent":` + seedAdvert + `}}`,
		`{"capabilities":{"_meta":{"harn":{"externalAgent":` + seedAdvert + `}}}}`,
		`{"_meta":{"harn":{"externalAgent":` + seedAdvert + `}}}`,
		`{"_meta":{"harn":{"external_agent":` + seedAdvert + `}}}`,
		`{"capabilities":{"external_agent":` + seedAdvert + `}}`,
	} {
		c, err := delegation.ParseCapabilities(jsontext.Value(card))
		if err != nil || !equalCaps(c, full) || len(c.Missing()) != 0 {
			t.Errorf("%s: %+v %v", card, c, err)
		}
	}
	// camelCase aliases; operations imply checkpoint and dispatch.
	c, _ := delegation.ParseCapabilities(jsontext.Value(`{"capabilities":{"externalAgent":{"budgetCap":true,"idempotency_key":true,` +
		`"reviewableHandoff":true,"methods":["_harn/externalAgent.plan","_harn/externalAgent.dispatch"]}}}`))
	if !c.BudgetCap || !c.Idempotency || !c.ReviewableHandoff || !c.PreDispatchCheckpoint || !c.Dispatch || c.Schema != "" {
		t.Errorf("aliases: %+v", c)
	}
	c, _ = delegation.ParseCapabilities(jsontext.Value(`{"capabilities":{"externalAgent":{"budget_cap":"yes","dispatch":1,"operations":"_harn/externalAgent.dispatch"}}}`))
	if c.BudgetCap || !c.Dispatch || !slices.Equal(c.Missing(), []string{"budget_cap", "idempotency", "reviewable_handoff"}) {
		t.Errorf("non-bool flags: %+v missing %v", c, c.Missing())
	}
	c, err := delegation.ParseCapabilities(jsontext.Value(`{"name":"plain A2A agent","capabilities":{"streaming":true}}`))
	if err != nil || !slices.Equal(c.Missing(), []string{"dispatch", "budget_cap", "idempotency", "reviewable_handoff"}) {
		t.Errorf("no advertisement: %+v %v", c, err)
	}
	if _, err := delegation.ParseCapabilities(jsontext.Value(`[]`)); err == nil {
		t.Error("array card accepted")
	}
}

func equalCaps(a, b delegation.Capabilities) bool {
	return a.Schema == b.Schema && a.PreDispatchCheckpoint == b.PreDispatchCheckpoint && a.BudgetCap == b.BudgetCap &&
		a.Idempotency == b.Idempotency && a.ReviewableHandoff == b.ReviewableHandoff && a.Dispatch == b.Dispatch && slices.Equal(a.Operations, b.Operations)
}

func TestParseCheckpoint(t *testing.T) {
	req := request("k")
	cp, err := delegation.ParseCheckpoint(jsontext.Value(`{"id":"c9","summary":" Summarised plan ","scope":["src/a.go"],"evidence":[1,2]}`), &req)
	if err != nil || cp.ID != "c9" || cp.Plan != "Summarised plan" || !slices.Equal(cp.ExpectedScope, []string{"src/a.go"}) ||
		len(cp.EvidenceRefs) != 2 || cp.Source != delegation.SourceRemote || func() bool { v, _ := cp.Budget.MaxUSD.Get(); return v != 2 }() {
		t.Fatalf("aliases at the root: %+v %v", cp, err)
	}
	cp, _ = delegation.ParseCheckpoint(jsontext.Value(`{"checkpoint":{"plan":"p","expected_scope":[]}}`), &req)
	if !strings.HasPrefix(cp.ID, "external_checkpoint_") || !slices.Equal(cp.ExpectedScope, req.ExpectedScope) || cp.Metadata != nil {
		t.Fatalf("defaults: %+v", cp)
	}
	for _, none := range []string{`{}`, `{"plan":""}`, `{"checkpoint":{"summary":" "}}`, `{"plan":7}`} {
		if cp, err := delegation.ParseCheckpoint(jsontext.Value(none), &req); cp != nil || err != nil {
			t.Errorf("%s: %+v %v", none, cp, err)
		}
	}
	b, _ := json.Marshal(cp)
	var m map[string]jsontext.Value
	_ = json.Unmarshal(b, &m)
	if string(m["_type"]) != `"external_agent_checkpoint"` || string(m["schema"]) != `"harn.external_agent.v1"` ||
		string(m["source"]) != `"remote"` || string(m["budget"]) != `{"max_usd":2,"max_tokens":1000}` || string(m["metadata"]) != `{}` {
		t.Errorf("checkpoint JSON %s", b)
	}
}

func TestParams(t *testing.T) {
	req := request("idem-1")
	req.Context = jsontext.Value(`{"repo":"x"}`)
	plan, err := json.Marshal(delegation.PlanParams(&req, "agent-7"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"harn.external_agent.v1","target_agent":"agent-7","task":"Fix the flaky test","budget":{"max_usd":2,"max_tokens":1000},` +
		`"idempotency_key":"idem-1","expected_scope":["tests/**"],"context":{"repo":"x"},"metadata":{}}`
	if string(plan) != want {
		t.Errorf("plan params\n%s\nwant\n%s", plan, want)
	}
	cp := &delegation.Checkpoint{ID: "cp-1", Source: delegation.SourceRemote, Plan: "p", Budget: req.Budget}
	disp, _ := json.Marshal(delegation.DispatchParams(&req, "agent-7", cp))
	var m map[string]jsontext.Value
	if err := json.Unmarshal(disp, &m); err != nil || !strings.Contains(string(m["checkpoint"]), `"checkpoint_id":"cp-1"`) || len(m) != 9 {
		t.Errorf("dispatch params %s", disp)
	}
	if id := delegation.RequestID("idem-1", delegation.MethodPlan); id != "idem-1.plan" {
		t.Error(id)
	}
	if id := delegation.RequestID("idem-1", delegation.MethodDispatch); id != "idem-1.dispatch" {
		t.Error(id)
	}
	if k1, k2 := delegation.NewIdempotencyKey(), delegation.NewIdempotencyKey(); k1 == k2 || k1 == "" {
		t.Error("NewIdempotencyKey")
	}
}

func TestEnvelopeJSON(t *testing.T) {
	p := goodPeer(t)
	req := request("k")
	req.Checkpoint.Approved = true
	req.Metadata = jsontext.Value(`{"ticket":"T-1"}`)
	env, _ := delegation.New(p, nil).Delegate(context.Background(), req)
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]jsontext.Value
	_ = json.Unmarshal(b, &m)
	for name, want := range map[string]string{
		"_type": `"external_agent_delegation"`, "schema": `"harn.external_agent.handoff.v1"`, "status": `"completed"`, "error": `null`,
		"budget_used": `{"usd":1.5,"tokens":900}`, "idempotency_key": `"k"`, "replayed": `false`, "replay_of": `null`,
		"handoff": `{"summary":"done"}`, "diff": `"--- a\n+++ b\n"`, "metadata": `{"ticket":"T-1"}`, "receipts": `["r1"]`,
	} {
		if string(m[name]) != want {
			t.Errorf("%s = %s, want %s", name, m[name], want)
		}
	}
}

// Every document the package writes is one gen/externalagent's decoders
// accept: the params of both methods, the checkpoint, the envelope in each
// status, and the thrown error.
func TestDocumentsFitTheSchema(t *testing.T) {
	ctx := context.Background()
	req := request("fit")
	check := func(name string, v any, into any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Errorf("%s %s: %v", name, b, err)
		}
	}
	g := delegation.New(goodPeer(t), nil)
	env, err := g.Delegate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	check("checkpoint_required envelope", env, new(externalagent.HandoffEnvelope))
	check("plan params", delegation.PlanParams(&req, "a"), new(externalagent.PlanParams))
	check("dispatch params", delegation.DispatchParams(&req, "a", env.Checkpoint), new(externalagent.DispatchParams))
	check("checkpoint", env.Checkpoint, new(externalagent.Checkpoint))
	req.Checkpoint.Approved = true
	for _, status := range []delegation.Status{delegation.StatusCompleted, delegation.StatusReplayed} {
		env, err := g.Delegate(ctx, req)
		if err != nil || env.Status != status {
			t.Fatalf("%s: %+v %v", status, env, err)
		}
		check(string(status)+" envelope", env, new(externalagent.HandoffEnvelope))
		check("capabilities", env.Capabilities, new(externalagent.Capability))
	}
	refused := &fakePeer{}
	env, err = delegation.New(refused, nil).Delegate(ctx, request("r"))
	if err != nil || env.Status != delegation.StatusRefused {
		t.Fatalf("refused: %+v %v", env, err)
	}
	check("refused envelope", env, new(externalagent.HandoffEnvelope))
	_, err = g.Delegate(ctx, delegation.Request{})
	check("error", err, new(externalagent.DelegationError))
}
