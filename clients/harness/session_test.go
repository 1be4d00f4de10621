package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// recorder collects a Run's events.
type recorder struct {
	mu     sync.Mutex
	events []harness.Event
}

func (r *recorder) add(ev harness.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// snapshot returns the events so far: tests check a copy, so that a
// failed check never leaves the recorder locked for a late delivery.
func (r *recorder) snapshot() []harness.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if ev.Harness != nil {
			out = append(out, string(ev.Harness.EventType))
		}
	}
	return out
}

// model is a deterministic model service: its first turn asks the
// runbooks for the Run input, its second completes the phase with what
// they said.
type model struct {
	mu      sync.Mutex
	calls   int
	onFirst func() // runs inside the first call
}

func (m *model) generate(ctx context.Context, p *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
	m.mu.Lock()
	m.calls++
	first := m.calls == 1
	m.mu.Unlock()
	if first && m.onFirst != nil {
		m.onFirst()
	}
	for _, t := range p.Request.OrderedTurns {
		if t.Kind != agentpmservice.ModelTurnKindSemanticActionResult {
			continue
		}
		raw, _ := t.Extra.Get("result")
		var res agentpmservice.KnowledgeRuntimeResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, err
		}
		var lines []string
		for _, r := range res.Results {
			lines = append(lines, *r.Text)
		}
		out, _ := json.Marshal(map[string]any{"summary": strings.Join(lines, " "), "results": len(res.Results)})
		return &agentpmservice.ModelTurn{
			AssistantContent: wire.Some("Here is the summary."),
			Actions: []agentpmservice.SemanticActionProposal{{ID: "act-2", Action: agentpmservice.SemanticAction{
				PhaseCompletion: &agentpmservice.SemanticActionPhaseCompletion{Outcome: wire.Some("done"), Output: out}}}},
		}, nil
	}
	q := p.Request.RunInput
	return &agentpmservice.ModelTurn{Actions: []agentpmservice.SemanticActionProposal{{ID: "act-1", Action: agentpmservice.SemanticAction{
		KnowledgeRequest: &agentpmservice.SemanticActionKnowledgeRequest{Package: "@acme/runbooks", Query: &q}}}}}, nil
}

// runbooks is a knowledge service that records the requests it gets.
type runbooks struct {
	mu      sync.Mutex
	queries []string
}

func (k *runbooks) retrieve(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
	k.mu.Lock()
	k.queries = append(k.queries, *p.Request.Query)
	k.mu.Unlock()
	text := "Restart the ingest worker, then drain the queue."
	title := "Ingest runbook"
	return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: p.Request.Package, Version: p.Request.Version, Mode: p.Request.Mode, Query: p.Request.Query,
		Results:   []agentpmservice.KnowledgeRetrievalResult{{Rank: 1, Score: 0.9, ChunkID: "c1", SourceID: "ingest", SourceTitle: &title, Text: &text}},
		Citations: []agentpmservice.KnowledgeCitation{{ChunkID: "c1", SourceID: "ingest", Title: &title}}}, nil
}

const sessionScript = `{
  "required_host_services": [{"role": "model", "registry_id": "default"}, {"role": "knowledge", "registry_id": "runbooks"}],
  "agent": {"knowledge": {"@acme/runbooks": {"registry_id": "runbooks", "version": "1.2.0"}}},
  "runs": [
    {"input": "wait for cancel", "steps": [
      {"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}},
      {"wait_cancel": true}
    ]}
  ]
}`

// The whole session against the fake Harness over real pipes: the startup
// preflight event, initialize, host services registered, a Run with
// streamed events and host-service calls, a second start_run answered
// session_busy while the first completes unharmed, cancel_run, shutdown.
func TestSession(t *testing.T) {
	ctx := timeout(t, 60*time.Second)
	stateDir := t.TempDir()
	var session recorder
	c := start(t, sessionScript, &harness.Options{
		Agent:    "@acme/triage@2.0.0",
		StateDir: stateDir,
		Scopes:   map[string]string{"tenant": "acme", "project": "ingest"},
		OnEvent:  session.add,
	})

	// The startup preflight event came first, to OnEvent as well.
	if pf := c.StartupPreflight(); pf == nil || pf.Status != agentpmmachine.PreflightStatusReady {
		t.Fatalf("startup preflight: %+v", pf)
	}
	if before := session.snapshot(); len(before) != 1 || before[0].Preflight == nil {
		t.Fatalf("events before initialize: %+v", before)
	}

	// start_run before initialize.
	if _, err := c.StartRun(ctx, "too early", nil); !errors.Is(err, agentpmmachine.ErrNotInitialized) {
		t.Fatalf("start_run before initialize: %v", err)
	}
	init, err := c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(init.RequiredHostServices) != 2 || len(c.Unregistered(init.RequiredHostServices)) != 2 {
		t.Fatalf("required host services: %+v", init.RequiredHostServices)
	}
	// start_run before the required host services are registered.
	if _, err := c.StartRun(ctx, "too early", nil); !errors.Is(err, agentpmmachine.ErrHostServiceNotRegistered) || !strings.Contains(err.Error(), `role: "model"`) {
		t.Fatalf("start_run without host services: %v", err)
	}

	busy := make(chan error, 1)
	m := &model{}
	m.onFirst = func() {
		// A second start_run while this Run waits for its model: answered
		// at once, and the Run goes on.
		_, err := c.StartRun(ctx, "a second Run", nil)
		busy <- err
	}
	kb := &runbooks{}
	policy := &agentpmservice.ServiceHandlers{
		BeforeKnowledgeRequest: func(_ context.Context, h *agentpmservice.BeforeKnowledgeRequestHook) (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
			q := "runbook: " + *h.Input.Request.Query
			return &agentpmservice.BeforeKnowledgeRequestDecision{Continue: &agentpmservice.BeforeKnowledgeRequestDecisionContinue{
				Patch: &agentpmservice.BeforeKnowledgeRequestPatch{Query: &q}}}, nil
		},
	}
	for _, s := range []harness.HostService{
		{Role: agentpmservice.ServiceRoleModel, RegistryID: "default", Handlers: &agentpmservice.ServiceHandlers{Generate: m.generate}},
		{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "runbooks", Handlers: &agentpmservice.ServiceHandlers{Retrieve: kb.retrieve},
			Capabilities: map[string]any{"modes": []string{"vector_query"}}},
		{Role: agentpmservice.ServiceRoleHook, RegistryID: "policy", Handlers: policy},
	} {
		res, err := c.RegisterHostService(ctx, s)
		if err != nil || !res.Active || res.Service.RegistryID != s.RegistryID {
			t.Fatalf("register %s/%s: %+v %v", s.Role, s.RegistryID, res, err)
		}
	}
	if missing := c.Unregistered(init.RequiredHostServices); len(missing) != 0 {
		t.Fatalf("still unregistered: %+v", missing)
	}

	var run recorder
	res, err := c.StartRun(ctx, "The ingest queue is stuck", run.add)
	if err != nil {
		t.Fatalf("start_run: %v", err)
	}
	if err := <-busy; !errors.Is(err, agentpmmachine.ErrSessionBusy) {
		t.Fatalf("second start_run during the Run: %v", err)
	}
	// The first Run completed unharmed.
	if res.Status != agentpmmachine.TerminalStatusEnded || res.Report.TerminalStatus != agentpmmachine.TerminalStatusEnded {
		t.Fatalf("Run: %+v", res)
	}
	// The content policy (redacted by default) hid the output: it is
	// reported as redacted, never as output.
	if res.Output != nil || res.OutputContent != agentpmmachine.ContentRedacted || string(res.Raw.Output) != `"[redacted]"` {
		t.Fatalf("output %s (%v), raw %s", res.Output, res.OutputContent, res.Raw.Output)
	}
	// report.terminal_output is no content key; its nested ones are.
	if !strings.Contains(string(res.Report.TerminalOutput), `"summary":"Restart the ingest worker`) {
		t.Fatalf("terminal_output: %s", res.Report.TerminalOutput)
	}
	if kb.queries[0] != "runbook: The ingest queue is stuck" {
		t.Fatalf("the hook's patch did not reach the knowledge service: %q", kb.queries)
	}
	if m.calls != 2 || *res.Report.Usage.ModelCalls != 2 || *res.Report.Usage.KnowledgeRequests != 1 {
		t.Fatalf("model calls %d, usage %+v", m.calls, res.Report.Usage)
	}
	if res.Report.Agent.Name != "@acme/triage" || res.Report.Agent.Version != "2.0.0" || len(res.Report.ScopeSummaries) != 2 || res.Report.ScopeSummaries[0].Name != "project" {
		t.Fatalf("report agent %+v scopes %+v", res.Report.Agent, res.Report.ScopeSummaries)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "runs", res.Report.RunID, "report.json")); err != nil {
		t.Fatalf("report file: %v", err)
	}
	// Every event of the Run reached the callback before StartRun returned,
	// in order, none of them OnEvent.
	types := run.types()
	for _, want := range []string{"run_started", "phase_started", "model_request_started", "semantic_action_proposed", "hook_completed",
		"knowledge_request_started", "knowledge_retrieved", "model_request_completed", "phase_result_ready", "run_completed"} {
		if !slices.Contains(types, want) {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	if types[0] != "run_started" || types[len(types)-1] != "run_completed" {
		t.Errorf("events %v", types)
	}
	var sessionSeq int64
	for _, ev := range run.snapshot() {
		h := ev.Harness
		if h == nil || h.RunID == nil || *h.RunID != res.Report.RunID || h.SessionSequence <= sessionSeq {
			t.Fatalf("event %+v", ev)
		}
		sessionSeq = h.SessionSequence
		// Content never comes back as output under the redacted policy.
		if v, c := ev.Content(); v != nil || c == agentpmmachine.ContentPresent {
			t.Errorf("%s carries content %s", h.EventType, v)
		}
		if h.EventType == agentpmmachine.EventTypeModelRequestCompleted && h.Payload.Content != nil {
			if _, c := ev.Content(); c != agentpmmachine.ContentRedacted {
				t.Errorf("assistant content: %v", c)
			}
		}
	}
	if n := len(session.snapshot()); n != 1 {
		t.Errorf("OnEvent got %d events, want only the startup event", n)
	}

	// cancel_run: cancelling StartRun's context sends it; the Run ends
	// cancelled and StartRun returns its result with ctx's error.
	runCtx, cancel := context.WithCancel(ctx)
	var cancelled recorder
	started := make(chan struct{})
	var once sync.Once
	res, err = c.StartRun(runCtx, "wait for cancel", func(ev harness.Event) {
		cancelled.add(ev)
		if ev.Harness != nil && ev.Harness.EventType == agentpmmachine.EventTypePhaseStarted {
			once.Do(func() { close(started); cancel() })
		}
	})
	if !errors.Is(err, context.Canceled) || res == nil || res.Status != agentpmmachine.TerminalStatusCancelled {
		t.Fatalf("cancelled Run: %+v %v", res, err)
	}
	if types := cancelled.types(); !slices.Contains(types, "cancellation_completed") || types[len(types)-1] != "run_cancelled" {
		t.Fatalf("cancelled Run events: %v", types)
	}
	// cancel_run while idle is answered too, and changes nothing.
	if cr, err := c.CancelRun(ctx); err != nil || cr.Note == nil {
		t.Fatalf("cancel_run while idle: %+v %v", cr, err)
	}
	if _, err := c.MemoryOperation(ctx, &agentpmmachine.MemoryOperationParams{Package: "@acme/mem", Operation: "compact"}); !errors.Is(err, agentpmmachine.ErrMemoryOperationNoActiveRun) {
		t.Fatalf("memory_operation while idle: %v", err)
	}
	if pf, err := c.Preflight(ctx); err != nil || pf.Report.Status != agentpmmachine.PreflightStatusReady {
		t.Fatalf("preflight: %+v %v", pf, err)
	}
	// shutdown: answered, then the Harness exits cleanly.
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the session did not end after shutdown")
	}
}

// Under trace.content full the output arrives, and is returned as such.
func TestFullContent(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"content": "full", "required_host_services": [],
	  "runs": [{"steps": [{"emit": {"event_type": "prompt_prepared", "payload": {"payload_type": "content", "label": "prompt", "content": "hello"}}},
	                      {"end": {"status": "ended", "output": {"text": "all done"}}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	res, err := c.StartRun(ctx, "go", rec.add)
	if err != nil {
		t.Fatal(err)
	}
	if res.OutputContent != agentpmmachine.ContentPresent || string(res.Output) != `{"text":"all done"}` {
		t.Fatalf("output %s (%v)", res.Output, res.OutputContent)
	}
	if v, content := rec.snapshot()[1].Content(); content != agentpmmachine.ContentPresent || string(v) != `"hello"` {
		t.Fatalf("content event: %s %v", v, content)
	}
}

// Under trace.content none the output is left out, and said to be.
func TestNoContent(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"content": "none", "required_host_services": [], "runs": [{"steps": [{"end": {"status": "ended", "output": "secret plans"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.StartRun(ctx, "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != nil || res.OutputContent != agentpmmachine.ContentAbsent || res.Raw.Output != nil {
		t.Fatalf("output %s (%v)", res.Output, res.OutputContent)
	}
}

// A host-service handler that does not answer in time is answered
// host_service_callback_failed a little before the Harness would give up,
// even when it ignores its context.
func TestHostServiceHandlerTimeout(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [
	  {"host_service": {"role": "model", "registry_id": "slow", "method": "generate", "payload": `+generatePayload+`, "expect_error": "host_service_callback_failed"}},
	  {"end": {"status": "ended"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	_, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleModel, RegistryID: "slow", Timeout: 600 * time.Millisecond,
		Handlers: &agentpmservice.ServiceHandlers{Fallback: nil, Generate: func(context.Context, *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
			<-release // ignores its context
			return &agentpmservice.ModelTurn{}, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res, err := c.StartRun(ctx, "go", nil)
	if err != nil || res.Status != agentpmmachine.TerminalStatusEnded {
		// A Harness-side timeout would have failed the script's expectation.
		t.Fatalf("Run: %+v %v", res, err)
	}
	if d := time.Since(began); d < harness.HandlerTimeout(600*time.Millisecond) {
		t.Fatalf("answered after %v", d)
	}
}

// A handler's context ends when the Run it serves is cancelled.
func TestCancelEndsHostServiceHandlers(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, "", nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	entered, sawCancel := make(chan struct{}), make(chan error, 1)
	_, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleModel, RegistryID: "default",
		Handlers: &agentpmservice.ServiceHandlers{Generate: func(hctx context.Context, _ *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
			close(entered)
			<-hctx.Done()
			sawCancel <- hctx.Err()
			return nil, hctx.Err()
		}}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	go func() {
		<-entered
		cancel()
	}()
	res, err := c.StartRun(runCtx, "think hard", nil)
	if !errors.Is(err, context.Canceled) || res == nil || res.Status != agentpmmachine.TerminalStatusCancelled {
		t.Fatalf("Run: %+v %v", res, err)
	}
	if err := <-sawCancel; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context: %v", err)
	}
	// The session goes on.
	if _, err := c.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
}

// memory_operation during a Run waits for the Run's next yield point; a
// second one meanwhile is memory_operation_busy.
func TestMemoryOperationDuringRun(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [], "memory_operations": {"@acme/mem/compact": {"count": 3}},
	  "runs": [{"steps": [
	    {"host_service": {"role": "model", "registry_id": "default", "method": "generate", "payload": `+generatePayload+`}},
	    {"sleep_ms": 200},
	    {"yield": true},
	    {"end": {"status": "ended"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *agentpmmachine.MemoryOperationResult
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	op := &agentpmmachine.MemoryOperationParams{Package: "@acme/mem", Operation: "compact"}
	_, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleModel, RegistryID: "default",
		Handlers: &agentpmservice.ServiceHandlers{Generate: func(context.Context, *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
			go func() {
				res, err := c.MemoryOperation(ctx, op)
				first <- answer{res, err}
			}()
			time.Sleep(50 * time.Millisecond)
			go func() {
				res, err := c.MemoryOperation(ctx, op)
				second <- answer{res, err}
			}()
			return &agentpmservice.ModelTurn{}, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartRun(ctx, "go", nil); err != nil {
		t.Fatal(err)
	}
	a := <-first
	if a.err != nil || a.res.Count != 3 || a.res.Identity != "@acme/mem/operations/compact" {
		t.Fatalf("memory_operation: %+v %v", a.res, a.err)
	}
	if b := <-second; !errors.Is(b.err, agentpmmachine.ErrMemoryOperationBusy) {
		t.Fatalf("second memory_operation: %+v %v", b.res, b.err)
	}
}

// A registration the Harness refuses is a typed error, and leaves the
// previous one in place.
func TestRegistrationRefused(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [{"role": "model", "registry_id": "default"}],
	  "host_services": [{"role": "model", "registry_id": "default"}],
	  "runs": [{"steps": [{"host_service": {"role": "model", "registry_id": "default", "method": "generate", "payload": `+generatePayload+`, "as_output": true}}]}], "content": "full"}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	turn := func(text string) *agentpmservice.ServiceHandlers {
		return &agentpmservice.ServiceHandlers{Generate: func(context.Context, *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
			return &agentpmservice.ModelTurn{AssistantContent: wire.Some(text), Actions: []agentpmservice.SemanticActionProposal{}}, nil
		}}
	}
	if _, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleModel, RegistryID: "default", Handlers: turn("configured")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleModel, RegistryID: "other", Handlers: turn("other")})
	if !errors.Is(err, agentpmmachine.ErrHostRegistrationFailed) || !strings.Contains(err.Error(), "is not configured") {
		t.Fatalf("unconfigured registration: %v", err)
	}
	res, err := c.StartRun(ctx, "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out agentpmservice.ModelTurn
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	if v, _ := out.AssistantContent.Get(); v != "configured" {
		t.Fatalf("output %s", res.Output)
	}
}

// The requests of the Harness that the client does not serve get their
// typed answers: unknown_method, host_service_not_registered for a role
// and registry id not registered (or a method the service does not
// serve), host_service_bad_request for a malformed host_service request.
// The fake Harness checks each answer's code and fails the Run otherwise.
func TestUnservedRequests(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [
	  {"call": {"method": "bogus_method", "payload": {}, "expect_error": "unknown_method"}},
	  {"call": {"method": "host_service", "payload": {"role": "model", "registry_id": "nope", "method": "generate", "payload": {}}, "expect_error": "host_service_not_registered"}},
	  {"call": {"method": "host_service", "payload": {"role": "knowledge", "registry_id": "kb", "method": "generate", "payload": {}}, "expect_error": "host_service_not_registered"}},
	  {"call": {"method": "host_service", "payload": {"registry_id": "kb", "method": "retrieve"}, "expect_error": "host_service_bad_request"}},
	  {"call": {"method": "host_service", "payload": {"role": "knowledge", "registry_id": "kb", "method": "retrieve", "payload": {"request": 7}}, "expect_error": "host_service_bad_request"}},
	  {"end": {"status": "ended"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "kb",
		Handlers: &agentpmservice.ServiceHandlers{Retrieve: (&runbooks{}).retrieve}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.StartRun(ctx, "go", nil)
	if err != nil || res.Status != agentpmmachine.TerminalStatusEnded {
		t.Fatalf("Run: %+v %v", res, err)
	}
}

// A handler's error frames: a typed *rpc.Error keeps its code, any other
// error is host_service_callback_failed, and a panic does not take the
// client down.
func TestHandlerErrors(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [
	  {"host_service": {"role": "embedding", "registry_id": "e", "method": "embed", "payload": {"provider": "p", "model": "m", "dimensions": 2, "normalized": false, "text": "a"}, "expect_error": "host_service_callback_failed"}},
	  {"host_service": {"role": "embedding", "registry_id": "e", "method": "embed", "payload": {"provider": "p", "model": "m", "dimensions": 2, "normalized": false, "text": "panic"}, "expect_error": "host_service_callback_failed"}},
	  {"host_service": {"role": "embedding", "registry_id": "e", "method": "embed", "payload": {"provider": "p", "model": "m", "dimensions": 2, "normalized": false, "text": "ok"}, "as_output": true}}]}],
	  "content": "full"}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.RegisterHostService(ctx, harness.HostService{Role: agentpmservice.ServiceRoleEmbedding, RegistryID: "e",
		Handlers: &agentpmservice.ServiceHandlers{Embed: func(_ context.Context, p *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
			switch p.Text {
			case "panic":
				panic("boom")
			case "ok":
				return &agentpmservice.EmbedResult{Numbers: []float64{0.5, 0.25}}, nil
			}
			return nil, errors.New("the embedding server is down")
		}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.StartRun(ctx, "go", nil)
	if err != nil || string(res.Output) != "[0.5,0.25]" {
		t.Fatalf("Run: %+v %v", res, err)
	}
}

// The Harness's error frames for a Run: run_failed with its message.
func TestRunFailed(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [{"fail": {"message": "the loop package is broken"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	_, err := c.StartRun(ctx, "go", rec.add)
	if !errors.Is(err, agentpmmachine.ErrRunFailed) || !strings.Contains(err.Error(), "the loop package is broken") {
		t.Fatalf("Run: %v", err)
	}
	if types := rec.types(); types[len(types)-1] != "run_failed" {
		t.Fatalf("events %v", types)
	}
}

// Every documented error code of the machine protocol reaches the caller
// as itself, through errors.Is.
func TestEveryErrorCodeIsTyped(t *testing.T) {
	ctx := timeout(t, 60*time.Second)
	var runs []string
	for _, code := range agentpmmachine.ErrorCodes {
		runs = append(runs, `{"input": "`+code.Name+`", "steps": [{"fail": {"code": "`+code.Name+`", "message": "scripted"}}]}`)
	}
	c := start(t, `{"required_host_services": [], "runs": [`+strings.Join(runs, ",")+`]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, code := range agentpmmachine.ErrorCodes {
		_, err := c.StartRun(ctx, code.Name, nil)
		for _, other := range agentpmmachine.ErrorCodes {
			if errors.Is(err, other) != (other == code) {
				t.Fatalf("%s: errors.Is(err, %s) = %v (err %v)", code.Name, other.Name, !(other == code), err)
			}
		}
	}
}

// The Harness dying in the middle of a Run fails the pending call at once,
// with its exit status and stderr.
func TestHarnessDiesDuringRun(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [
	  {"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}},
	  {"exit": {"code": 3, "stderr": "panic: the engine lost its state"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.StartRun(ctx, "go", nil)
	var exit *harness.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || exit.BeforeFrame || !strings.Contains(exit.Stderr, "the engine lost its state") || errors.Is(err, harness.ErrNoFrame) {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("session still up")
	}
	if err := c.Err(); !errors.As(err, &exit) {
		t.Fatalf("Err: %v", err)
	}
	if err := c.Close(); !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("Close: %v", err)
	}
}

// generatePayload is a model generate payload for scripted calls.
const generatePayload = `{"selection":{"provider":"host","model":"m","options":{}},"request":{"runtime":{},"model":null,"prompt":{"sections":[],"action_aliases":[],"completion":{},"diagnostics":[]},"run_id":"r","phase_execution_id":"p","phase_id":"main","phase_objective":"o","run_input":"go","prior_phase_results":[],"transcript":[],"effective_phase":{},"repair_feedback":null}}`

var _ = jsontext.Value(nil)

// StartRun with a context that has already ended starts no Run: it
// returns the context's error without sending start_run (a caller
// interrupted before its Run must not have the Harness start one).
func TestStartRunWithEndedContext(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	state := t.TempDir()
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [{"end": {"status": "ended"}}]}]}`, &harness.Options{StateDir: state})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	var rec recorder
	res, err := c.StartRun(ended, "go", rec.add)
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("StartRun: %+v %v", res, err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if types := rec.types(); len(types) > 0 {
		t.Errorf("events of a Run: %v", types)
	}
	if runs, _ := os.ReadDir(filepath.Join(state, "runs")); len(runs) > 0 {
		t.Errorf("the Harness ran %d Runs", len(runs))
	}
}
