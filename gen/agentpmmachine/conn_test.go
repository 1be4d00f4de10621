package agentpmmachine_test

// Both sides of the machine protocol on the generated bindings, connected
// through the engine over pipes: the client's requests, the Harness's
// events and host_service calls, cancellation, and every documented error
// code.

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect returns the Harness's and the client's ends of one session,
// serving harness and client (either may be nil).
func connect(t *testing.T, harness *agentpmmachine.HarnessHandlers, client *agentpmmachine.ClientHandlers) (h, c *rpc.Conn) {
	t.Helper()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	var hh, ch rpc.Handler
	if harness != nil {
		hh = harness
	}
	if client != nil {
		ch = client
	}
	// Requests may run concurrently on the Harness's side, as they do in the
	// Harness (cancel_run is answered while start_run runs).
	h = rpc.NewConn(toHarness, fromHarness, agentpmmachine.NewCodec("host-", ""), hh, agentpmmachine.ConnOptions(&rpc.Options{MaxConcurrentRequests: 4}))
	c = rpc.NewConn(toClient, fromClient, agentpmmachine.NewCodec("c-", ""), ch, agentpmmachine.ConnOptions(nil))
	t.Cleanup(func() {
		c.Close()
		h.Close()
	})
	return h, c
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func fixture[T any](t *testing.T, name string, pick func([]byte) ([]byte, error)) *T {
	t.Helper()
	data, err := os.ReadFile(fixtureDir + name)
	if err != nil {
		missingShared(t, err)
	}
	if pick != nil {
		if data, err = pick(data); err != nil {
			t.Fatal(err)
		}
	}
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	out, err := json.Marshal(v, wire.Fidelity)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The role payloads are agentpm-service's on both transports: one set of
// role functions serves a process service (agentpm-service) and a host
// service (the machine protocol's host_service), and AgentPM's fixtures
// travel through both unchanged.
func TestFixturesOverBothTransports(t *testing.T) {
	ctx := timeout(t)
	retrieveReq := fixture[agentpmservice.RetrievePayload](t, "knowledge_runtime_request.json", nil)
	retrieveRes := fixture[agentpmservice.KnowledgeRuntimeResult](t, "knowledge_runtime_result.json", nil)
	embedReq := fixture[agentpmservice.EmbedPayload](t, "embedding_provider_request.json", nil)
	embedRes := fixture[agentpmservice.EmbedResult](t, "embedding_provider_result.json", nil)
	hookIn := fixture[agentpmservice.BeforeKnowledgeRequestInput](t, "knowledge_hooks.json", member("before_knowledge_request"))
	hookOut := fixture[agentpmservice.BeforeKnowledgeRequestDecision](t, "knowledge_hooks.json", member("before_knowledge_request_result"))

	// The role functions, written once; each checks what it receives.
	same := func(what string, got, want any) {
		if g, w := marshal(t, got), marshal(t, want); !sameJSON(t, g, w) {
			t.Errorf("%s arrived as %s, want %s", what, g, w)
		}
	}
	retrieve := func(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
		same("retrieve payload", p, retrieveReq)
		return retrieveRes, nil
	}
	embed := func(_ context.Context, p *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
		same("embed payload", p, embedReq)
		return embedRes, nil
	}
	hook := func(_ context.Context, p *agentpmservice.BeforeKnowledgeRequestHook) (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
		same("hook input", &p.Input, hookIn)
		return hookOut, nil
	}

	// agentpm-service: the Harness calls a process service.
	toService, fromHarness := io.Pipe()
	toHarness, fromService := io.Pipe()
	svc := agentpmservice.NewConn(toService, fromService, &agentpmservice.ServiceHandlers{Retrieve: retrieve, Embed: embed, BeforeKnowledgeRequest: hook}, nil)
	harness := rpc.NewConn(toHarness, fromHarness, agentpmservice.NewCodec("kb-", ""), nil, agentpmservice.ConnOptions(nil))
	defer svc.Close()
	defer harness.Close()
	process := agentpmservice.NewServicePeer(harness)

	// The machine protocol: the Harness calls the client's host services.
	h, _ := connect(t, nil, &agentpmmachine.ClientHandlers{
		KnowledgeRetrieve: func(ctx context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			if call.Role != "knowledge" || call.RegistryID != "kb" || call.Method != "retrieve" {
				t.Errorf("host_service call: %+v", call)
			}
			return retrieve(ctx, p)
		},
		EmbeddingEmbed: func(ctx context.Context, _ *agentpmmachine.HostServiceParams, p *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
			return embed(ctx, p)
		},
		HookBeforeKnowledgeRequest: func(ctx context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.BeforeKnowledgeRequestHook) (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
			if call.Method != string(agentpmservice.HookIDBeforeKnowledgeRequest) {
				t.Errorf("hook method: %q", call.Method)
			}
			return hook(ctx, p)
		},
	})
	host := agentpmmachine.NewClientPeer(h)

	for _, tr := range []struct {
		name     string
		retrieve func() (*agentpmservice.KnowledgeRuntimeResult, error)
		embed    func() (*agentpmservice.EmbedResult, error)
		hook     func() (*agentpmservice.BeforeKnowledgeRequestDecision, error)
	}{
		{"agentpm-service",
			func() (*agentpmservice.KnowledgeRuntimeResult, error) { return process.Retrieve(ctx, retrieveReq) },
			func() (*agentpmservice.EmbedResult, error) { return process.Embed(ctx, embedReq) },
			func() (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
				return process.BeforeKnowledgeRequest(ctx, &agentpmservice.BeforeKnowledgeRequestHook{Input: *hookIn})
			}},
		{"host_service",
			func() (*agentpmservice.KnowledgeRuntimeResult, error) {
				return host.KnowledgeRetrieve(ctx, &agentpmmachine.HostServiceParams{RegistryID: "kb"}, retrieveReq)
			},
			func() (*agentpmservice.EmbedResult, error) {
				return host.EmbeddingEmbed(ctx, &agentpmmachine.HostServiceParams{RegistryID: "docs-embedding"}, embedReq)
			},
			func() (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
				return host.HookBeforeKnowledgeRequest(ctx, &agentpmmachine.HostServiceParams{RegistryID: "policy"}, &agentpmservice.BeforeKnowledgeRequestHook{Input: *hookIn})
			}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			r, err := tr.retrieve()
			if err != nil || !sameJSON(t, marshal(t, r), marshal(t, retrieveRes)) {
				t.Errorf("retrieve: %v", err)
			}
			e, err := tr.embed()
			if v, cerr := agentpmservice.CheckEmbedding(embedReq, e); err != nil || cerr != nil || v[0] != 1 {
				t.Errorf("embed: %v %v", err, cerr)
			}
			d, err := tr.hook()
			if err != nil || d.Continue == nil || *d.Continue.Patch.Query != "Harness KnowledgeRuntime routing" {
				t.Errorf("hook: %+v %v", d, err)
			}
		})
	}
}

// A Run: the client initializes, registers a host service and starts a
// Run; while it runs the Harness calls the host service and streams events,
// every one of which the client has handled when start_run answers.
func TestRunSession(t *testing.T) {
	ctx := timeout(t)
	var hostPeer *agentpmmachine.ClientPeer
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	harness := &agentpmmachine.HarnessHandlers{
		Initialize: func(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.InitializeResult, error) {
			return &agentpmmachine.InitializeResult{Preflight: agentpmmachine.PreflightReport{Status: agentpmmachine.PreflightStatusReady, Diagnostics: []agentpmmachine.PreflightDiagnostic{}},
				MCPExports: []agentpmmachine.MCPExportSnapshot{}, RequiredHostServices: []agentpmmachine.HostServiceRegistration{{Role: agentpmservice.ServiceRoleApproval, RegistryID: "controller"}}}, nil
		},
		RegisterHostService: func(_ context.Context, p *agentpmmachine.RegisterHostServiceParams) (*agentpmmachine.RegisterHostServiceResult, error) {
			return &agentpmmachine.RegisterHostServiceResult{Service: agentpmmachine.HostServiceRegistration{Role: p.Role, RegistryID: *p.RegistryID}, Active: true}, nil
		},
		StartRun: func(ctx context.Context, p *agentpmmachine.StartRunParams) (*agentpmmachine.StartRunResult, error) {
			d, err := hostPeer.ApprovalRequestApproval(ctx, &agentpmmachine.HostServiceParams{RegistryID: "controller"},
				&agentpmservice.RequestApprovalPayload{Checkpoint: agentpmservice.LoopCheckpoint{ID: "ship", BeforePhase: "deploy", OnReject: "abort"}})
			if err != nil || d.Outcome() != agentpmservice.ApprovalDecisionValueApprove {
				return nil, &rpc.Error{Name: agentpmmachine.ErrRunFailed.Name, Message: "approval: " + err.Error()}
			}
			for i, typ := range []agentpmmachine.EventType{agentpmmachine.EventTypeRunStarted, agentpmmachine.EventTypeRunCompleted} {
				ev := &agentpmmachine.HarnessEvent{EventID: "evt-s-" + string(rune('1'+i)), SessionID: "s", SessionSequence: int64(i + 1), Timestamp: "2025-06-01T10:00:00Z", EventType: typ,
					Payload: agentpmmachine.EventPayload{Lifecycle: &agentpmmachine.EventPayloadLifecycle{Message: *p.Input}}}
				if err := hostPeer.HarnessEvent(ctx, ev); err != nil {
					return nil, err
				}
			}
			return &agentpmmachine.StartRunResult{Status: agentpmmachine.TerminalStatusEnded, Output: []byte(`"[redacted]"`)}, nil
		},
		Shutdown: func(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.ShutdownResult, error) {
			return &agentpmmachine.ShutdownResult{}, nil
		},
	}
	client := &agentpmmachine.ClientHandlers{
		HarnessEvent: func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
			note(string(ev.EventType) + ":" + ev.Payload.Lifecycle.Message)
			return nil
		},
		ApprovalRequestApproval: func(_ context.Context, call *agentpmmachine.HostServiceParams, p *agentpmservice.RequestApprovalPayload) (*agentpmservice.ApprovalDecision, error) {
			note("approval " + call.RegistryID + " " + p.Checkpoint.ID)
			approved := agentpmservice.ApprovalDecisionValueApproved
			return &agentpmservice.ApprovalDecision{Decision: &approved}, nil
		},
	}
	h, c := connect(t, harness, client)
	hostPeer = agentpmmachine.NewClientPeer(h)
	run := agentpmmachine.NewHarnessPeer(c)

	init, err := run.Initialize(ctx, &agentpmmachine.EmptyParams{})
	if err != nil || init.RequiredHostServices[0].RegistryID != "controller" {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	id := "controller"
	reg, err := run.RegisterHostService(ctx, &agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleApproval, RegistryID: &id})
	if err != nil || !reg.Active || reg.Service.RegistryID != "controller" {
		t.Fatalf("register_host_service: %+v %v", reg, err)
	}
	input := "Summarize the incident."
	res, err := run.StartRun(ctx, &agentpmmachine.StartRunParams{Input: &input})
	if err != nil || res.Status != agentpmmachine.TerminalStatusEnded || res.OutputContent() != agentpmmachine.ContentRedacted {
		t.Fatalf("start_run: %+v %v", res, err)
	}
	mu.Lock()
	got := seen
	mu.Unlock()
	want := []string{"approval controller ship", "run_started:" + input, "run_completed:" + input}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("the client saw %q before start_run answered, want %q", got, want)
	}
	if _, err := run.Shutdown(ctx, &agentpmmachine.EmptyParams{}); err != nil {
		t.Fatal(err)
	}
	// A method the Harness does not serve.
	if _, err := run.MemoryOperation(ctx, &agentpmmachine.MemoryOperationParams{Package: "p", Operation: "o"}); !errors.Is(err, agentpmmachine.ErrUnknownMethod) || !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unserved method: %v", err)
	}
}

// Cancelling start_run's context sends cancel_run, which the Harness's
// engine applies to the running start_run at once and answers.
func TestCancelRunCancelsStartRun(t *testing.T) {
	ctx := timeout(t)
	started, cancelled := make(chan struct{}), make(chan error, 1)
	answered := make(chan struct{}, 1)
	h, c := connect(t, &agentpmmachine.HarnessHandlers{
		StartRun: func(ctx context.Context, _ *agentpmmachine.StartRunParams) (*agentpmmachine.StartRunResult, error) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return &agentpmmachine.StartRunResult{Status: agentpmmachine.TerminalStatusCancelled}, nil
		},
		CancelRun: func(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.CancelRunResult, error) {
			answered <- struct{}{}
			return &agentpmmachine.CancelRunResult{}, nil
		},
	}, nil)
	_ = h
	runCtx, cancelRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := agentpmmachine.NewHarnessPeer(c).StartRun(runCtx, &agentpmmachine.StartRunParams{})
		done <- err
	}()
	<-started
	cancelRun()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("StartRun after its context ended: %v", err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the Harness's start_run context: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("cancel_run did not reach the running start_run")
	}
	select {
	case <-answered:
	case <-ctx.Done():
		t.Fatal("cancel_run was not handled")
	}
}

// Every error code the catalogue documents crosses the wire as itself: an
// error frame with that code matches its Err* value and no other.
func TestErrorCodesCrossTheWire(t *testing.T) {
	ctx := timeout(t)
	var code *rpc.Error
	_, c := connect(t, &agentpmmachine.HarnessHandlers{
		MemoryOperation: func(context.Context, *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
			return nil, &rpc.Error{Name: code.Name, Message: "from the Harness"}
		},
	}, nil)
	peer := agentpmmachine.NewHarnessPeer(c)
	if len(agentpmmachine.ErrorCodes) < 25 {
		t.Fatalf("only %d documented codes", len(agentpmmachine.ErrorCodes))
	}
	for _, code = range agentpmmachine.ErrorCodes {
		_, err := peer.MemoryOperation(ctx, &agentpmmachine.MemoryOperationParams{Package: "p", Operation: "o"})
		var e *rpc.Error
		if !errors.As(err, &e) || e.Name != code.Name || e.Message != "from the Harness" || e.Retryable != nil {
			t.Fatalf("%s: %v", code.Name, err)
		}
		for _, other := range agentpmmachine.ErrorCodes {
			if errors.Is(err, other) != (other == code) {
				t.Fatalf("%s: errors.Is(err, Err for %s) = %v", code.Name, other.Name, errors.Is(err, other))
			}
		}
	}
}

// lockedBuffer collects what a connection writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// harness_event frames carry the event's correlation_id as their id, and
// none without one.
func TestHarnessEventFrameID(t *testing.T) {
	ctx := timeout(t)
	in, _ := io.Pipe()
	var out lockedBuffer
	h := rpc.NewConn(in, &out, agentpmmachine.NewCodec("host-", ""), nil, agentpmmachine.ConnOptions(nil))
	corr := "act-1"
	ev := agentpmmachine.HarnessEvent{EventID: "evt-s-1", SessionID: "s", SessionSequence: 1, Timestamp: "2025-06-01T10:00:00Z",
		EventType: agentpmmachine.EventTypeToolInvoked, CorrelationID: &corr, Payload: agentpmmachine.EventPayload{Empty: &agentpmmachine.EventPayloadEmpty{}}}
	peer := agentpmmachine.NewClientPeer(h)
	if err := peer.HarnessEvent(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	ev.CorrelationID = nil
	if err := peer.HarnessEvent(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	h.Close()
	want := `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"act-1","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-1","session_id":"s","session_sequence":1,"timestamp":"2025-06-01T10:00:00Z","event_type":"tool_invoked","correlation_id":"act-1","payload":{"payload_type":"empty"}}}` + "\n" +
		`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","payload":{"schema_version":1,"event_id":"evt-s-1","session_id":"s","session_sequence":1,"timestamp":"2025-06-01T10:00:00Z","event_type":"tool_invoked","payload":{"payload_type":"empty"}}}` + "\n"
	if got := out.String(); got != want {
		t.Fatalf("frames:\n%s\nwant:\n%s", got, want)
	}
}
