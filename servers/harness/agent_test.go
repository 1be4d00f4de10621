package harness_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/harness"
)

// turns scripts a model: each call returns the next turn; it records the
// requests.
type turns struct {
	mu       sync.Mutex
	next     []agentpmservice.ModelTurn
	requests []agentpmservice.ModelRequest
}

func (m *turns) generate(_ context.Context, _ *agentpmmachine.HostServiceParams, p *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, p.Request)
	if len(m.next) == 0 {
		return &agentpmservice.ModelTurn{Actions: []agentpmservice.SemanticActionProposal{}}, nil
	}
	t := m.next[0]
	m.next = m.next[1:]
	return &t, nil
}

func propose(id string, a agentpmservice.SemanticAction) agentpmservice.ModelTurn {
	return agentpmservice.ModelTurn{Actions: []agentpmservice.SemanticActionProposal{{ID: id, Action: a}}}
}

func complete(output string) agentpmservice.ModelTurn {
	return propose("done", agentpmservice.SemanticAction{PhaseCompletion: &agentpmservice.SemanticActionPhaseCompletion{Outcome: wire.Null[string](), Output: jsontext.Value(output)}})
}

// agentSession runs one Run of AgentLoop(a) with the client's handlers,
// after registering regs.
func agentSession(t *testing.T, a harness.Agent, client *agentpmmachine.ClientHandlers, regs ...*agentpmmachine.RegisterHostServiceParams) (*agentpmmachine.StartRunResult, []*agentpmmachine.HarnessEvent, error) {
	t.Helper()
	ctx := timeout(t)
	var mu sync.Mutex
	var events []*agentpmmachine.HarnessEvent
	client.HarnessEvent = func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		return nil
	}
	ss := serve(t, harness.New(&harness.Options{Run: harness.AgentLoop(a), Content: harness.ContentFull, Scopes: map[string]string{"tenant": "acme"}}), client, &rpc.Options{MaxConcurrentRequests: 2})
	if _, err := ss.peer.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	for _, r := range regs {
		if _, err := ss.peer.RegisterHostService(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ss.peer.StartRun(ctx, input("What changed in ingest?"))
	mu.Lock()
	defer mu.Unlock()
	return res, events, err
}

func reg(role agentpmservice.ServiceRole, id string, hooks ...agentpmservice.HookID) *agentpmmachine.RegisterHostServiceParams {
	return &agentpmmachine.RegisterHostServiceParams{Role: role, RegistryID: &id, Hooks: hooks}
}

func types(evs []*agentpmmachine.HarnessEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.EventType))
	}
	return out
}

// The loop: a model turn asks Knowledge (through the hooks), another
// writes and reads Memory, one proposes an action the Harness lacks (the
// model is told in its next request), the last completes the phase.
func TestAgentLoop(t *testing.T) {
	q := "ingest changes"
	top := int64(3)
	recordID := "note-1"
	m := &turns{next: []agentpmservice.ModelTurn{
		propose("k1", agentpmservice.SemanticAction{KnowledgeRequest: &agentpmservice.SemanticActionKnowledgeRequest{Package: "@acme/docs", Query: &q, TopK: &top}}),
		propose("w1", agentpmservice.SemanticAction{MemoryWrite: &agentpmservice.SemanticActionMemoryWrite{Package: "@acme/mem", Space: "notes",
			Operation: agentpmservice.MemoryWriteOperationUpsert, RecordType: "note", RecordID: &recordID, Content: jsontext.Value(`{"text":"ingest moved"}`)}}),
		propose("r1", agentpmservice.SemanticAction{MemoryRead: &agentpmservice.SemanticActionMemoryRead{Package: "@acme/mem", Space: "notes", Mode: agentpmservice.MemoryReadModeKey, RecordID: &recordID}}),
		propose("t1", agentpmservice.SemanticAction{AgentPmTool: &agentpmservice.SemanticActionAgentPmTool{Tool: "@acme/deploy", Arguments: jsontext.Value(`{}`)}}),
		complete(`{"answer":"ingest moved"}`),
	}}
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	client := &agentpmmachine.ClientHandlers{
		ModelGenerate: m.generate,
		HookBeforeKnowledgeRequest: func(_ context.Context, call *agentpmmachine.HostServiceParams, h *agentpmservice.BeforeKnowledgeRequestHook) (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
			note("hook " + call.RegistryID + " " + *h.Input.Request.Query)
			patched := *h.Input.Request.Query + " (last 7 days)"
			return &agentpmservice.BeforeKnowledgeRequestDecision{Continue: &agentpmservice.BeforeKnowledgeRequestDecisionContinue{Patch: &agentpmservice.BeforeKnowledgeRequestPatch{Query: &patched}}}, nil
		},
		KnowledgeRetrieve: func(_ context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			r := p.Request
			note("retrieve " + call.RegistryID + " " + r.Package + "@" + r.Version + " " + string(r.Mode) + " " + *r.Query)
			text := "Ingest moved to the new queue."
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: r.Package, Version: r.Version, Mode: r.Mode, Query: r.Query,
				Results: []agentpmservice.KnowledgeRetrievalResult{{Rank: 1, Score: 1, ChunkID: "c", SourceID: "s", Text: &text}}}, nil
		},
		MemoryWrite: func(_ context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.MemoryWritePayload) (*agentpmservice.MemoryWriteResult, error) {
			r := p.Request
			note("write " + call.RegistryID + " " + r.Space + " " + string(r.SpaceModel) + " " + r.Scope["tenant"] + " " + string(r.Content))
			op := r.Operation
			return &agentpmservice.MemoryWriteResult{Ok: true, Package: r.Package, PackageVersion: r.PackageVersion, Space: r.Space, Operation: &op, RecordID: wire.Some(*r.RecordID)}, nil
		},
		MemoryRead: func(_ context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.MemoryReadPayload) (*agentpmservice.MemoryReadResult, error) {
			r := p.Request
			note("read " + call.RegistryID + " " + string(r.Mode) + " " + *r.RecordID)
			return &agentpmservice.MemoryReadResult{Ok: true, Package: r.Package, PackageVersion: r.PackageVersion, Space: r.Space, Records: []agentpmservice.StoredMemoryRecord{}}, nil
		},
	}
	a := harness.Agent{Knowledge: map[string]harness.Package{"@acme/docs": {RegistryID: "docs", Version: "2.1.0"}}, Memory: map[string]harness.Package{"@acme/mem": {RegistryID: "mem"}}}
	res, events, err := agentSession(t, a, client, reg(agentpmservice.ServiceRoleModel, "default"), reg(agentpmservice.ServiceRoleKnowledge, "docs"),
		reg(agentpmservice.ServiceRoleMemory, "mem"), reg(agentpmservice.ServiceRoleHook, "policy", agentpmservice.HookIDBeforeKnowledgeRequest))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentpmmachine.TerminalStatusEnded || string(res.Output) != `{"answer":"ingest moved"}` {
		t.Fatalf("Run: %+v", res)
	}
	want := []string{
		"hook policy ingest changes",
		"retrieve docs @acme/docs@2.1.0 vector_query ingest changes (last 7 days)",
		`write mem notes collection acme {"text":"ingest moved"}`,
		"read mem key note-1",
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("host services saw\n%q\nwant\n%q", seen, want)
	}
	// Each request carries the conversation so far: the rejected tool
	// call comes back as repair feedback.
	last := m.requests[len(m.requests)-1]
	var kinds []string
	for _, turn := range last.OrderedTurns {
		kinds = append(kinds, string(turn.Kind))
	}
	if len(m.requests) != 5 || !slices.Equal(kinds, []string{"user_input", "semantic_action_call", "semantic_action_result", "semantic_action_call", "semantic_action_result",
		"semantic_action_call", "semantic_action_result", "semantic_action_call", "repair_feedback"}) || last.RunInput != "What changed in ingest?" || last.RunID != res.Report.RunID {
		t.Fatalf("last request: %d requests, turns %v", len(m.requests), kinds)
	}
	got := types(events)
	for _, w := range []string{"run_started", "phase_started", "model_request_started", "hook_started", "hook_completed", "knowledge_request_started", "knowledge_retrieved",
		"memory_write_started", "memory_write_completed", "memory_read_started", "memory_read_completed", "semantic_action_rejected", "phase_result_ready", "run_completed"} {
		if !slices.Contains(got, w) {
			t.Errorf("no %s in %v", w, got)
		}
	}
	rep := res.Report
	if *rep.Usage.ModelCalls != 5 || *rep.Usage.KnowledgeRequests != 1 || *rep.Usage.MemoryRequests != 2 || len(rep.PhaseSummaries) != 1 || len(rep.KnowledgeSummaries) != 1 || len(rep.MemorySummaries) != 2 {
		t.Fatalf("report %+v", rep)
	}
}

// A hook that rejects: the model gets a typed failure instead of results.
// A knowledge service that fails: the same, knowledge_runtime_failed.
func TestAgentLoopFailuresReachTheModel(t *testing.T) {
	q := "anything"
	for _, tc := range []struct {
		name   string
		hook   bool
		code   string
		events string
	}{
		{"hook rejects", true, "hook_rejected", "hook_rejected"},
		{"service fails", false, "knowledge_runtime_failed", "service_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &turns{next: []agentpmservice.ModelTurn{
				propose("k1", agentpmservice.SemanticAction{KnowledgeRequest: &agentpmservice.SemanticActionKnowledgeRequest{Package: "@acme/docs", Query: &q}}),
				complete(`"gave up"`),
			}}
			client := &agentpmmachine.ClientHandlers{
				ModelGenerate: m.generate,
				HookBeforeKnowledgeRequest: func(context.Context, *agentpmmachine.HostServiceParams, *agentpmservice.BeforeKnowledgeRequestHook) (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
					reason := "the docs are off limits"
					return &agentpmservice.BeforeKnowledgeRequestDecision{Reject: &agentpmservice.HookReject{Reason: &reason}}, nil
				},
				KnowledgeRetrieve: func(context.Context, *agentpmmachine.HostServiceParams, *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
					return nil, errors.New("index missing")
				},
			}
			regs := []*agentpmmachine.RegisterHostServiceParams{reg(agentpmservice.ServiceRoleModel, "default"), reg(agentpmservice.ServiceRoleKnowledge, "docs")}
			if tc.hook {
				regs = append(regs, reg(agentpmservice.ServiceRoleHook, "policy", agentpmservice.HookIDBeforeKnowledgeRequest))
			}
			res, events, err := agentSession(t, harness.Agent{}, client, regs...)
			if err != nil || res.Status != agentpmmachine.TerminalStatusEnded {
				t.Fatalf("Run: %+v %v", res, err)
			}
			raw, _ := m.requests[1].OrderedTurns[2].Extra.Get("result")
			var r agentpmservice.KnowledgeRuntimeResult
			if err := json.Unmarshal(raw, &r); err != nil || r.Ok || r.Error == nil || r.Error.Code != tc.code {
				t.Fatalf("the model saw %s", raw)
			}
			if !slices.Contains(types(events), tc.events) {
				t.Fatalf("events %v", types(events))
			}
		})
	}
}

// The approval checkpoint: approved goes on, denied aborts, pending cannot
// be kept by a machine session (run_failed).
func TestAgentLoopApproval(t *testing.T) {
	for _, tc := range []struct {
		decision agentpmservice.ApprovalDecisionValue
		status   agentpmmachine.TerminalStatus
		err      *rpc.Error
	}{
		{agentpmservice.ApprovalDecisionValueApproved, agentpmmachine.TerminalStatusEnded, nil},
		{agentpmservice.ApprovalDecisionValueDeny, agentpmmachine.TerminalStatusAborted, nil},
		{agentpmservice.ApprovalDecisionValuePending, "", agentpmmachine.ErrRunFailed},
	} {
		t.Run(string(tc.decision), func(t *testing.T) {
			m := &turns{next: []agentpmservice.ModelTurn{complete(`"shipped"`)}}
			var checkpoint string
			client := &agentpmmachine.ClientHandlers{
				ModelGenerate: m.generate,
				ApprovalRequestApproval: func(_ context.Context, _ *agentpmmachine.HostServiceParams, p *agentpmservice.RequestApprovalPayload) (*agentpmservice.ApprovalDecision, error) {
					checkpoint = p.Checkpoint.ID
					d := tc.decision
					return &agentpmservice.ApprovalDecision{Decision: &d}, nil
				},
			}
			a := harness.Agent{Checkpoint: &agentpmservice.LoopCheckpoint{ID: "ship", BeforePhase: "main", OnReject: "abort"}}
			res, events, err := agentSession(t, a, client, reg(agentpmservice.ServiceRoleModel, "default"), reg(agentpmservice.ServiceRoleApproval, "controller"))
			if tc.err != nil {
				code(t, err, tc.err, "cannot retain pending approval for checkpoint `ship`")
				return
			}
			if err != nil || res.Status != tc.status || checkpoint != "ship" {
				t.Fatalf("Run: %+v %v (checkpoint %q)", res, err, checkpoint)
			}
			if !slices.Contains(types(events), "approval_requested") {
				t.Fatalf("events %v", types(events))
			}
		})
	}
}

// A model that never completes reaches the turn limit; one that proposes
// nothing is asked again (repair feedback).
func TestAgentLoopLimit(t *testing.T) {
	m := &turns{}
	res, events, err := agentSession(t, harness.Agent{MaxTurns: 3}, &agentpmmachine.ClientHandlers{ModelGenerate: m.generate}, reg(agentpmservice.ServiceRoleModel, "default"))
	if err != nil || res.Status != agentpmmachine.TerminalStatusLimitReached || res.Report.RepairCount != 3 || len(m.requests) != 3 {
		t.Fatalf("Run: %+v %v", res, err)
	}
	if fb := m.requests[2].RepairFeedback; fb == nil || !strings.Contains(*fb, "propose a semantic action") {
		t.Fatalf("repair feedback %v", fb)
	}
	if got := types(events); !slices.Contains(got, "loop_limit_reached") || got[len(got)-1] != "run_limit_reached" {
		t.Fatalf("events %v", got)
	}
}

// Without a model service the Run fails.
func TestAgentLoopNeedsAModel(t *testing.T) {
	_, _, err := agentSession(t, harness.Agent{}, &agentpmmachine.ClientHandlers{})
	code(t, err, agentpmmachine.ErrRunFailed, "no model host service is registered")
}
