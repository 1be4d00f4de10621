package agentpmservice_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// policyHooks is a hook service on the generated fields: it rejects calls
// of one tool and lets the rest through, and adds a context section to
// every model request.
func policyHooks() *agentpmservice.ServiceHandlers {
	return &agentpmservice.ServiceHandlers{
		BeforeToolCall: func(_ context.Context, p *agentpmservice.BeforeToolCallHook) (*agentpmservice.BeforeToolCallDecision, error) {
			if p.Input.Tool == "@zack/rm-rf" {
				reason := "tool not allowed by policy"
				return &agentpmservice.BeforeToolCallDecision{Reject: &agentpmservice.HookReject{Reason: &reason}}, nil
			}
			return &agentpmservice.BeforeToolCallDecision{Continue: &agentpmservice.BeforeToolCallDecisionContinue{}}, nil
		},
		BeforeModelRequest: func(_ context.Context, p *agentpmservice.BeforeModelRequestHook) (*agentpmservice.BeforeModelRequestDecision, error) {
			return &agentpmservice.BeforeModelRequestDecision{Continue: &agentpmservice.BeforeModelRequestDecisionContinue{
				Patch: &agentpmservice.BeforeModelRequestPatch{ContextSections: []agentpmservice.ContextSection{{Title: "Policy", Content: "Run " + p.Input.RunID}}},
			}}, nil
		},
	}
}

// Hooks lists the hook ids whose fields are set, in catalogue order: what a
// hook service's handshake advertises.
func TestHooksAreTheSetFields(t *testing.T) {
	h := policyHooks()
	if got := h.Hooks(); !slices.Equal(got, []agentpmservice.HookID{agentpmservice.HookIDBeforeModelRequest, agentpmservice.HookIDBeforeToolCall}) {
		t.Fatalf("hooks: %v", got)
	}
	h.InitializeHook = func(context.Context, *agentpmservice.HookInitialize) (*agentpmservice.HookReadiness, error) {
		return nil, nil
	}
	h.Invoke = agentpmservice.InvokeHooks(h)
	h.Retrieve = func(context.Context, *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
		return nil, nil
	}
	if got := h.Hooks(); len(got) != 2 {
		t.Fatalf("initialize, invoke and other roles' methods are not hooks: %v", got)
	}
	if got := (&agentpmservice.ServiceHandlers{}).Hooks(); got == nil || len(got) != 0 {
		t.Fatalf("no hooks: %#v", got)
	}
}

// A hook is called by its id, over the wire, and answers with its own
// typed decision; invoke (the seed's spelling) reaches the same fields.
func TestHooksByID(t *testing.T) {
	ctx := context.Background()
	h := policyHooks()
	h.Invoke = agentpmservice.InvokeHooks(h)
	call := func(method string, payload string) (jsontext.Value, error) {
		res, err := h.Handle(ctx, &rpc.Request{Kind: rpc.KindRequest, Method: method, Qualifier: "hook", Params: jsontext.Value(payload)})
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
	h.Fallback = rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
		if req.Method != "after_future_step" {
			return nil, rpc.MethodNotFound(req.Method)
		}
		return jsontext.Value(`{"decision":"continue","patch":{"raw":true}}`), nil
	})
	for _, tc := range []struct {
		method, payload, want string
		err                   error
	}{
		// A hook id this version does not know reaches Fallback, raw.
		{"after_future_step", `{"hook":"after_future_step","input":{"x":1}}`, `{"decision":"continue","patch":{"raw":true}}`, nil},
		{"invoke", `{"hook":"after_future_step","input":{"x":1}}`, `{"decision":"continue","patch":{"raw":true}}`, nil},
		{"before_tool_call", `{"hook":"before_tool_call","input":{"phase_id":"p","tool":"@zack/rm-rf","arguments":{}}}`, `{"decision":"reject","reason":"tool not allowed by policy"}`, nil},
		{"before_tool_call", `{"hook":"before_tool_call","input":{"phase_id":"p","tool":"@zack/echo","arguments":{}}}`, `{"decision":"continue"}`, nil},
		{"invoke", `{"hook":"before_tool_call","input":{"phase_id":"p","tool":"@zack/rm-rf","arguments":{}}}`, `{"decision":"reject","reason":"tool not allowed by policy"}`, nil},
		{"invoke", `{"hook":"before_model_request","input":{"run_id":"r1","phase_execution_id":"e","phase":{"phase_id":"p","phase_objective":"o","completion":{}},"sections":[]}}`,
			`{"decision":"continue","patch":{"context_sections":[{"title":"Policy","content":"Run r1"}]}}`, nil},
		// A hook this service does not serve: a typed unsupported-capability error.
		{"before_memory_write", `{"hook":"before_memory_write","input":{}}`, "", rpc.ErrMethodNotFound},
		{"invoke", `{"hook":"before_memory_write","input":{}}`, "", rpc.ErrMethodNotFound},
		{"invoke", `{"hook":"invoke","input":{}}`, "", rpc.ErrMethodNotFound},
		// Input that does not fit the hook's input type.
		{"before_tool_call", `{"hook":"before_tool_call","input":{"tool":"x"}}`, "", rpc.ErrInvalidParams},
		{"invoke", `{"hook":"before_tool_call","input":{"tool":"x"}}`, "", rpc.ErrInvalidParams},
		{"before_tool_call", `{"hook":"before_model_request","input":{"phase_id":"p","tool":"x","arguments":1}}`, "", rpc.ErrInvalidParams},
	} {
		got, err := call(tc.method, tc.payload)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s %s: %v, want %v", tc.method, tc.payload, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s %s:\n got %s %v\nwant %s", tc.method, tc.payload, got, err, tc.want)
		}
	}
}

// ok:false results are typed errors that compare with the package's codes.
func TestResultErrors(t *testing.T) {
	f := func(code string) *agentpmservice.MemoryRuntimeFailure {
		return &agentpmservice.MemoryRuntimeFailure{Code: code, Message: "m"}
	}
	for _, tc := range []struct {
		err  error
		want *rpc.Error
	}{
		{(&agentpmservice.MemoryReadResult{Error: f("not_found")}).Err(), agentpmservice.ErrNotFound},
		{(&agentpmservice.MemoryWriteResult{Error: f("constraint_violation")}).Err(), agentpmservice.ErrConstraintViolation},
		{(&agentpmservice.MemoryCountResult{Error: f("unsupported_capability")}).Err(), agentpmservice.ErrUnsupportedCapability},
		{(&agentpmservice.MemoryStateResult{Error: f("conflict")}).Err(), agentpmservice.ErrConflict},
		{(&agentpmservice.MemoryStoreStateResult{Error: f("capacity_exceeded")}).Err(), agentpmservice.ErrCapacityExceeded},
		{(&agentpmservice.CommitLifecycleResult{Error: f("commit_failed")}).Err(), agentpmservice.ErrCommitFailed},
		{(&agentpmservice.MemoryReadResult{}).Err(), agentpmservice.ErrMalformedMemoryRuntimeResponse},
		{(&agentpmservice.KnowledgeRuntimeResult{}).Err(), agentpmservice.ErrKnowledgeRuntimeFailed},
		{(&agentpmservice.KnowledgeRuntimeResult{Error: &agentpmservice.KnowledgeRuntimeFailure{Code: "missing_query", Message: "m"}}).Err(), agentpmservice.ErrMissingQuery},
	} {
		if !errors.Is(tc.err, tc.want) || errors.Is(tc.err, agentpmservice.ErrServiceError) {
			t.Errorf("%v is not %s", tc.err, tc.want.Name)
		}
	}
	if (&agentpmservice.MemoryWriteResult{Ok: true}).Err() != nil || (&agentpmservice.KnowledgeRuntimeResult{Ok: true}).Err() != nil {
		t.Fatal("ok results have no error")
	}
	yes := true
	err := (&agentpmservice.KnowledgeRuntimeResult{Error: &agentpmservice.KnowledgeRuntimeFailure{Code: "knowledge_unavailable", Message: "m", Retryable: &yes}}).Err()
	var e *rpc.Error
	if !errors.As(err, &e) || e.Retryable == nil || !*e.Retryable {
		t.Fatalf("retryable is kept: %v", err)
	}
}

// CheckEmbedding applies the Harness's checks; its failures are
// malformed_embedding_response.
func TestCheckEmbedding(t *testing.T) {
	p := &agentpmservice.EmbedPayload{Provider: "p", Model: "m", Dimensions: 2, Normalized: true, Text: "t"}
	for _, tc := range []struct {
		res  agentpmservice.EmbedResult
		want string // "" for ok
	}{
		{agentpmservice.EmbedResult{Numbers: []float64{0.6, 0.8}}, ""},
		{agentpmservice.EmbedResult{Object: &agentpmservice.EmbedResultObject{Values: &agentpmservice.EmbedValues{Values: []float64{1, 0}}}}, ""},
		{agentpmservice.EmbedResult{Numbers: []float64{1}}, "1 numbers, want 2"},
		{agentpmservice.EmbedResult{Numbers: []float64{1, math.NaN()}}, "not finite"},
		{agentpmservice.EmbedResult{Numbers: []float64{1, math.Inf(1)}}, "not finite"},
		{agentpmservice.EmbedResult{Numbers: []float64{1, 1}}, "not normalized"},
		{agentpmservice.EmbedResult{}, "0 numbers"},
	} {
		v, err := agentpmservice.CheckEmbedding(p, &tc.res)
		switch {
		case tc.want == "" && (err != nil || len(v) != 2):
			t.Errorf("%+v: %v", tc.res, err)
		case tc.want != "" && (!errors.Is(err, agentpmservice.ErrMalformedEmbeddingResponse) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.res, err, tc.want)
		}
	}
	p.Normalized = false
	if _, err := agentpmservice.CheckEmbedding(p, &agentpmservice.EmbedResult{Numbers: []float64{3, 4}}); err != nil {
		t.Fatalf("not normalized is fine when not asked: %v", err)
	}
}

func TestApprovalOutcome(t *testing.T) {
	for in, want := range map[string]agentpmservice.ApprovalDecisionValue{
		`{}`: "pending", `{"decision":"pending"}`: "pending", `{"decision":"approve"}`: "approve", `{"decision":"approved"}`: "approve",
		`{"decision":"deny"}`: "deny", `{"decision":"denied"}`: "deny",
	} {
		var d agentpmservice.ApprovalDecision
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Outcome() != want {
			t.Errorf("%s: %v %v", in, d.Outcome(), err)
		}
	}
	var d agentpmservice.ApprovalDecision
	if err := json.Unmarshal([]byte(`{"decision":"maybe"}`), &d); err == nil {
		t.Fatal("another decision is an approval failure")
	}
}
