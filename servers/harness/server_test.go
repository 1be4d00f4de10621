package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// session serves one session of s over pipes and returns the client's
// end: a peer for its requests and the connection; client serves what the
// Harness sends (nil for nothing). served receives Serve's error.
type session struct {
	peer   *agentpmmachine.HarnessPeer
	conn   *rpc.Conn
	served chan error
	input  io.Closer // the client's end of the Harness's input
}

func serve(t *testing.T, s *harness.Server, client *agentpmmachine.ClientHandlers, opts *rpc.Options) *session {
	t.Helper()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	ss := &session{served: make(chan error, 1), input: fromClient}
	go func() {
		err := s.Serve(context.Background(), toHarness, fromHarness)
		fromHarness.Close()
		ss.served <- err
	}()
	var h rpc.Handler
	if client != nil {
		h = client
	}
	ss.conn = rpc.NewConn(toClient, fromClient, agentpmmachine.NewCodec("c-", ""), h, agentpmmachine.ConnOptions(opts))
	ss.peer = agentpmmachine.NewHarnessPeer(ss.conn)
	t.Cleanup(func() {
		ss.conn.Close()
		toHarness.Close()
		select {
		case <-ss.served:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return ss
}

func input(s string) *agentpmmachine.StartRunParams { return &agentpmmachine.StartRunParams{Input: &s} }

func empty() *agentpmmachine.EmptyParams { return &agentpmmachine.EmptyParams{} }

func code(t *testing.T, err error, want *rpc.Error, msg string) {
	t.Helper()
	if !errors.Is(err, want) || (msg != "" && !strings.Contains(err.Error(), msg)) {
		t.Fatalf("error %v, want %s (%q)", err, want.Name, msg)
	}
}

// The startup preflight event is the session's first frame, without id.
func TestStartupEventFirst(t *testing.T) {
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- harness.New(nil).Serve(context.Background(), toHarness, fromHarness) }()
	line, err := bufio.NewReader(toClient).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"preflight","payload":{"status":"ready","report":{"status":"ready","diagnostics":[]}}}` + "\n"
	if line != want {
		t.Fatalf("first frame %s", line)
	}
	fromClient.Close() // end of input ends the session
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	toClient.Close()
}

// A preflight that fails ends the Harness before any frame.
func TestFailedPreflightWritesNothing(t *testing.T) {
	var out bytes.Buffer
	s := harness.New(&harness.Options{Preflight: agentpmmachine.PreflightReport{Status: agentpmmachine.PreflightStatusFailed,
		Diagnostics: []agentpmmachine.PreflightDiagnostic{{Severity: agentpmmachine.DiagnosticSeverityFatal, Code: "bad_config", Message: "no loop package"}}}})
	err := s.Serve(context.Background(), strings.NewReader(""), &out)
	var exit *harness.ExitError
	if !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(exit.Message, "bad_config: no loop package") || out.Len() != 0 {
		t.Fatalf("Serve: %v, wrote %q", err, out.String())
	}
}

// The session rules, one by one.
func TestSessionRules(t *testing.T) {
	ctx := timeout(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var runCtxErr error
	s := harness.New(&harness.Options{
		Required: []agentpmmachine.HostServiceRegistration{{Role: agentpmservice.ServiceRoleModel, RegistryID: "default"}},
		Accept:   harness.Configured([]agentpmmachine.HostServiceRegistration{{Role: agentpmservice.ServiceRoleModel, RegistryID: "default"}}),
		Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
			if r.Input == "block" {
				close(entered)
				select {
				case <-release:
				case <-ctx.Done():
					runCtxErr = ctx.Err()
					return nil, ctx.Err()
				}
			}
			return &harness.Outcome{Status: agentpmmachine.TerminalStatusEnded, Output: jsontext.Value(`"done: ` + r.Input + `"`)}, nil
		},
	})
	ss := serve(t, s, nil, nil)
	p := ss.peer
	_, err := p.StartRun(ctx, input("x"))
	code(t, err, agentpmmachine.ErrNotInitialized, "initialize must complete before start_run")
	init, err := p.Initialize(ctx, empty())
	if err != nil || len(init.RequiredHostServices) != 1 || init.Preflight.Status != agentpmmachine.PreflightStatusReady {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	_, err = p.StartRun(ctx, input("x"))
	code(t, err, agentpmmachine.ErrHostServiceNotRegistered, `missing required host service registrations: [HostServiceRegistration { role: "model", registry_id: "default" }]`)

	id, other, f := "default", "other", false
	for _, tc := range []struct {
		p   *agentpmmachine.RegisterHostServiceParams
		msg string
	}{
		{&agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleModel}, "needs a registry_id"},
		{&agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleModel, RegistryID: &id, Ready: &f}, "ready:false"},
		{&agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleModel, RegistryID: &other}, "host service `model` with registry ID `other` is not configured"},
		{&agentpmmachine.RegisterHostServiceParams{Role: "oracle", RegistryID: &id}, "unknown host service role"},
		{&agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleHook, RegistryID: &id, Hooks: []agentpmservice.HookID{"before_lunch"}}, "unknown hook id"},
	} {
		_, err := p.RegisterHostService(ctx, tc.p)
		code(t, err, agentpmmachine.ErrHostRegistrationFailed, tc.msg)
	}
	// Unconfigured, but an SDK hook binding and the approval controller.
	for _, reg := range []*agentpmmachine.RegisterHostServiceParams{
		{Role: agentpmservice.ServiceRoleHook, ID: &other, Hooks: []agentpmservice.HookID{agentpmservice.HookIDBeforeToolCall}},
		{Role: agentpmservice.ServiceRoleApproval, RegistryID: ptr("controller")},
		{Role: agentpmservice.ServiceRoleModel, RegistryID: &id},
	} {
		res, err := p.RegisterHostService(ctx, reg)
		if err != nil || !res.Active || res.Reason != nil {
			t.Fatalf("register %+v: %+v %v", reg, res, err)
		}
	}

	// A Run, and what is refused while it runs.
	first := make(chan error, 1)
	var firstRes *agentpmmachine.StartRunResult
	go func() {
		var err error
		firstRes, err = p.StartRun(ctx, input("block"))
		first <- err
	}()
	<-entered
	_, err = p.StartRun(ctx, input("second"))
	code(t, err, agentpmmachine.ErrSessionBusy, "a Harness Run is already active in this Session")
	_, err = p.Initialize(ctx, empty())
	code(t, err, agentpmmachine.ErrRunActive, "machine request `initialize` is unavailable while a Run is active")
	_, err = p.RegisterHostService(ctx, &agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleModel, RegistryID: &id})
	code(t, err, agentpmmachine.ErrRunActive, "register_host_service")
	_, err = p.Preflight(ctx, empty())
	code(t, err, agentpmmachine.ErrRunActive, "preflight control is unavailable while a Run is active")
	_, err = p.Shutdown(ctx, empty())
	code(t, err, agentpmmachine.ErrRunActive, "shutdown")
	err = ss.conn.Call(ctx, "bogus", nil, nil)
	code(t, err, agentpmmachine.ErrRunActive, "machine request `bogus`")
	close(release)
	if err := <-first; err != nil || firstRes.Status != agentpmmachine.TerminalStatusEnded || string(firstRes.Output) != `"[redacted]"` ||
		string(firstRes.Report.TerminalOutput) != `"done: block"` || runCtxErr != nil {
		t.Fatalf("the first Run: %+v %v (ctx %v)", firstRes, err, runCtxErr)
	}

	// Idle again.
	err = ss.conn.Call(ctx, "bogus", nil, nil)
	code(t, err, agentpmmachine.ErrUnknownMethod, "unknown machine method `bogus`")
	if !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unknown method: %v", err)
	}
	cr, err := p.CancelRun(ctx, empty())
	if err != nil || cr.Note == nil {
		t.Fatalf("cancel_run while idle: %+v %v", cr, err)
	}
	res, err := p.StartRun(ctx, input("again"))
	if err != nil || res.Status != agentpmmachine.TerminalStatusEnded {
		t.Fatalf("a Run after cancel_run while idle: %+v %v", res, err)
	}
	if _, err := p.Shutdown(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ss.served:
		ss.served <- err
		if err != nil {
			t.Fatalf("Serve after shutdown: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the session did not end after shutdown")
	}
}

func ptr[T any](v T) *T { return &v }

// cancel_run is answered at once while the Run runs, ends the Run's
// context and its host-service waits; the Run ends cancelled.
func TestCancelRun(t *testing.T) {
	ctx := timeout(t)
	inCall, release := make(chan struct{}), make(chan struct{})
	var hsErr error
	s := harness.New(&harness.Options{
		Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
			hsErr = r.HostService(ctx, agentpmservice.ServiceRoleModel, "default", "generate", map[string]any{}, nil)
			return nil, hsErr
		},
	})
	var events []string
	var mu sync.Mutex
	ss := serve(t, s, &agentpmmachine.ClientHandlers{
		HostService: func(ctx context.Context, _ *agentpmmachine.HostServiceParams) (jsontext.Value, error) {
			close(inCall)
			<-release // a handler that answers after the Harness stopped waiting
			return nil, errors.New("too late")
		},
		HarnessEvent: func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
			mu.Lock()
			events = append(events, string(ev.EventType))
			mu.Unlock()
			return nil
		},
	}, &rpc.Options{MaxConcurrentRequests: 2}) // the blocked handler must not hold up the events
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	p := ss.peer
	if _, err := p.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RegisterHostService(ctx, &agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleModel, RegistryID: ptr("default")}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *agentpmmachine.StartRunResult, 1)
	go func() {
		res, err := p.StartRun(ctx, input("x"))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-inCall
	cr, err := p.CancelRun(ctx, empty())
	if err != nil || cr.Note != nil {
		t.Fatalf("cancel_run: %+v %v", cr, err)
	}
	free()
	res := <-done
	if res == nil || res.Status != agentpmmachine.TerminalStatusCancelled || res.Report.CancellationSummary["completed"] != 1 {
		t.Fatalf("cancelled Run: %+v", res)
	}
	if !errors.Is(hsErr, context.Canceled) {
		t.Fatalf("the host-service wait: %v", hsErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(events); n < 2 || events[n-2] != "cancellation_completed" || events[n-1] != "run_cancelled" {
		t.Fatalf("events %v", events)
	}
}

// A host service that does not answer in its registered time fails the
// call (service_unhealthy, service_failed); its late answer is rejected
// with a protocol_error frame.
func TestHostServiceTimeoutAndLateAnswer(t *testing.T) {
	ctx := timeout(t)
	var callErr error
	s := harness.New(&harness.Options{
		Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
			callErr = r.HostService(ctx, agentpmservice.ServiceRoleKnowledge, "kb", "retrieve", map[string]any{}, nil)
			return &harness.Outcome{Status: agentpmmachine.TerminalStatusEnded}, nil
		},
	})
	late := make(chan *rpc.FrameError, 4)
	var events []string
	var mu sync.Mutex
	ss := serve(t, s, &agentpmmachine.ClientHandlers{
		HostService: func(context.Context, *agentpmmachine.HostServiceParams) (jsontext.Value, error) {
			time.Sleep(300 * time.Millisecond)
			return jsontext.Value(`{"ok":true}`), nil
		},
		HarnessEvent: func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
			mu.Lock()
			events = append(events, string(ev.EventType)+"/"+ev.Payload.Tag())
			mu.Unlock()
			return nil
		},
	}, &rpc.Options{OnFrameError: func(fe *rpc.FrameError) { late <- fe }})
	p := ss.peer
	if _, err := p.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	ms := int64(100)
	if _, err := p.RegisterHostService(ctx, &agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: ptr("kb"), RequestTimeoutMS: &ms}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.StartRun(ctx, input("x")); err != nil {
		t.Fatal(err)
	}
	var hse *harness.HostServiceError
	if !errors.As(callErr, &hse) || hse.Timeout != 100*time.Millisecond || !strings.Contains(callErr.Error(), "timed out after 100 ms") {
		t.Fatalf("call: %v", callErr)
	}
	mu.Lock()
	got := strings.Join(events, " ")
	mu.Unlock()
	if !strings.Contains(got, "service_unhealthy/service service_failed/service") {
		t.Fatalf("events %s", got)
	}
	select {
	case fe := <-late:
		if fe.Kind != rpc.FrameUnknownResponse || fe.ID.String() != `"host-1"` {
			t.Fatalf("frame error %+v", fe)
		}
	case <-ctx.Done():
		t.Fatal("the late answer was not rejected")
	}
}

// memory_operation: queued for the Run's next yield point, one at a time;
// refused without a Run; failed when the Run is cancelled or ends first.
func TestMemoryOperations(t *testing.T) {
	ctx := timeout(t)
	step := make(chan string)
	s := harness.New(&harness.Options{
		Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
			for {
				select {
				case what := <-step:
					switch what {
					case "yield":
						r.Yield(ctx)
					case "end":
						return &harness.Outcome{}, nil
					}
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				step <- "ok"
			}
		},
		MemoryOperation: func(_ context.Context, r *harness.Run, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
			if p.Operation == "explode" {
				return nil, errors.New("disk full")
			}
			return &agentpmmachine.MemoryOperationResult{Package: p.Package, PackageVersion: "1.0.0", Operation: p.Operation, Identity: p.Package + "/operations/" + p.Operation, Count: int64(len(r.Input))}, nil
		},
	})
	ss := serve(t, s, nil, nil)
	p := ss.peer
	op := func(name string) (*agentpmmachine.MemoryOperationResult, error) {
		return p.MemoryOperation(ctx, &agentpmmachine.MemoryOperationParams{Package: "@acme/mem", Operation: name})
	}
	_, err := op("compact")
	code(t, err, agentpmmachine.ErrMemoryOperationNoActiveRun, "")
	if _, err := p.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *agentpmmachine.MemoryOperationResult
		err error
	}
	startRun := func(in string) chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := p.StartRun(ctx, input(in))
			ch <- err
		}()
		return ch
	}
	queue := func(name string) chan answer {
		ch := make(chan answer, 1)
		go func() {
			res, err := op(name)
			ch <- answer{res, err}
		}()
		return ch
	}
	settle := func() { time.Sleep(100 * time.Millisecond) }

	run := startRun("four")
	settle()
	a := queue("compact")
	settle()
	_, err = op("compact")
	code(t, err, agentpmmachine.ErrMemoryOperationBusy, "")
	_, err = p.MemoryOperation(ctx, &agentpmmachine.MemoryOperationParams{Package: "@acme/mem"})
	code(t, err, agentpmmachine.ErrMemoryOperationInvalidRequest, "")
	step <- "yield"
	<-step
	if got := <-a; got.err != nil || got.res.Count != 4 {
		t.Fatalf("queued operation: %+v %v", got.res, got.err)
	}
	b := queue("explode")
	settle()
	step <- "yield"
	<-step
	code(t, (<-b).err, agentpmmachine.ErrMemoryOperationFailed, "disk full")
	c := queue("compact")
	settle()
	step <- "end"
	code(t, (<-c).err, agentpmmachine.ErrMemoryOperationRunEnded, "")
	if err := <-run; err != nil {
		t.Fatal(err)
	}

	run = startRun("again")
	settle()
	d := queue("compact")
	settle()
	if _, err := p.CancelRun(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	code(t, (<-d).err, agentpmmachine.ErrMemoryOperationCancelled, "")
	if err := <-run; err != nil {
		t.Fatal(err)
	}
}

// A start_run without input makes the Harness exit, as AgentPM's does;
// with --input (Options.Input) it runs.
func TestMissingInput(t *testing.T) {
	ctx := timeout(t)
	ran := ""
	s := harness.New(&harness.Options{Run: func(_ context.Context, r *harness.Run) (*harness.Outcome, error) {
		ran = r.Input
		return &harness.Outcome{}, nil
	}})
	ss := serve(t, s, nil, nil)
	if _, err := ss.peer.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	_, err := ss.peer.StartRun(ctx, &agentpmmachine.StartRunParams{})
	exitedOnStartRun(t, ss, err)

	fallback := "from --input"
	s = harness.New(&harness.Options{Input: &fallback, Run: func(_ context.Context, r *harness.Run) (*harness.Outcome, error) {
		ran = r.Input
		return &harness.Outcome{}, nil
	}})
	ss = serve(t, s, nil, nil)
	if _, err := ss.peer.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.peer.StartRun(ctx, &agentpmmachine.StartRunParams{}); err != nil || ran != fallback {
		t.Fatalf("start_run with --input: %v (input %q)", err, ran)
	}
}

// The client ending its input cancels the active Run: nobody is left to
// serve its host services.
func TestEndOfInputCancelsTheRun(t *testing.T) {
	ctx := timeout(t)
	entered := make(chan struct{})
	var runErr error
	s := harness.New(&harness.Options{Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
		close(entered)
		<-ctx.Done()
		runErr = ctx.Err()
		return nil, ctx.Err()
	}})
	ss := serve(t, s, nil, nil)
	if _, err := ss.peer.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	go ss.peer.StartRun(ctx, input("x"))
	<-entered
	ss.input.Close()
	select {
	case err := <-ss.served:
		ss.served <- err
		if err != nil || !errors.Is(runErr, context.Canceled) {
			t.Fatalf("Serve %v, Run %v", err, runErr)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return")
	}
}

// Redact, by policy: content keys at any depth, secrets always.
func TestRedact(t *testing.T) {
	in := `{"status":"ended","output":{"text":"hi"},"report":{"terminal_output":{"summary":"s","text":"t"},"runtime":{"api_key":"k","session_token":"x"}},"items":[{"query":"q","n":1}],"Authorization":"Bearer z"}`
	for _, tc := range []struct {
		p    harness.ContentPolicy
		want string
	}{
		{"", `{"status":"ended","output":"[redacted]","report":{"terminal_output":{"summary":"s","text":"[redacted]"},"runtime":{"api_key":"[secret redacted]","session_token":"[secret redacted]"}},"items":[{"query":"[redacted]","n":1}],"Authorization":"[secret redacted]"}`},
		{harness.ContentNone, `{"status":"ended","report":{"terminal_output":{"summary":"s"},"runtime":{"api_key":"[secret redacted]","session_token":"[secret redacted]"}},"items":[{"n":1}],"Authorization":"[secret redacted]"}`},
		{harness.ContentFull, `{"status":"ended","output":{"text":"hi"},"report":{"terminal_output":{"summary":"s","text":"t"},"runtime":{"api_key":"[secret redacted]","session_token":"[secret redacted]"}},"items":[{"query":"q","n":1}],"Authorization":"[secret redacted]"}`},
	} {
		got, err := harness.Redact(jsontext.Value(in), tc.p)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q:\n got %s %v\nwant %s", tc.p, got, err, tc.want)
		}
		again, _ := harness.Redact(got, tc.p)
		if string(again) != string(got) {
			t.Errorf("%q: not idempotent: %s", tc.p, again)
		}
	}
	if v, err := harness.Redact(jsontext.Value(`"plain"`), harness.ContentNone); err != nil || string(v) != `"plain"` {
		t.Errorf("scalar: %s %v", v, err)
	}
	if _, err := harness.Redact(jsontext.Value(`{}`), "some"); err == nil {
		t.Error("unknown policy accepted")
	}
	if _, err := harness.Redact(jsontext.Value(`{"a":`), harness.ContentRedacted); err == nil {
		t.Error("bad JSON accepted")
	}
}

// Events get the Harness's envelope: ids, sequences, timestamps, the
// correlation id as the frame id, and the content policy.
func TestEventEnvelope(t *testing.T) {
	ctx := timeout(t)
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	s := harness.New(&harness.Options{Now: func() time.Time { return now }, Content: harness.ContentNone,
		Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
			corr := "act-1"
			content, _ := json.Marshal("the prompt")
			err := r.EmitEvent(ctx, &agentpmmachine.HarnessEvent{EventType: agentpmmachine.EventTypePromptPrepared, CorrelationID: &corr,
				Payload: agentpmmachine.EventPayload{Content: &agentpmmachine.EventPayloadContent{Label: "prompt", Content: content}}})
			return &harness.Outcome{Status: agentpmmachine.TerminalStatusHandedOff}, err
		}})
	var evs []*agentpmmachine.HarnessEvent
	var ids []string
	var mu sync.Mutex
	ss := serve(t, s, &agentpmmachine.ClientHandlers{Fallback: rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
		var ev agentpmmachine.HarnessEvent
		if err := json.Unmarshal(req.Params, &ev); err != nil {
			return nil, err
		}
		mu.Lock()
		evs = append(evs, &ev)
		ids = append(ids, req.ID.String())
		mu.Unlock()
		return nil, nil
	})}, nil)
	if _, err := ss.peer.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	res, err := ss.peer.StartRun(ctx, input("x"))
	if err != nil || res.Status != agentpmmachine.TerminalStatusHandedOff {
		t.Fatal(res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 3 || evs[1].EventType != agentpmmachine.EventTypePromptPrepared || evs[2].EventType != agentpmmachine.EventTypeRunCompleted {
		t.Fatalf("events %+v", evs)
	}
	for i, ev := range evs {
		if ev.SessionSequence != int64(i+1) || *ev.RunSequence != int64(i+1) || *ev.RunID != res.Report.RunID || ev.SessionID != res.Report.SessionID ||
			ev.EventID != ev.SessionID+"-"+string(rune('1'+i)) && ev.EventID != "evt-"+ev.SessionID+"-"+string(rune('1'+i)) || ev.Timestamp != "2025-06-01T10:00:00.000000Z" {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	if ids[1] != `"act-1"` || ids[0] != "" {
		t.Errorf("frame ids %q", ids)
	}
	if evs[1].Payload.Content.Content != nil {
		t.Errorf("content under policy none: %s", evs[1].Payload.Content.Content)
	}
}

// A payload the Harness cannot decode is answered as AgentPM's Harness
// answers it, method by method, never with a code the machine protocol
// does not have: initialize, preflight, cancel_run and shutdown ignore
// their payload; register_host_service fails host_registration_failed;
// memory_operation fails memory_operation_no_active_run when idle, else
// memory_operation_invalid_request; a start_run whose input is not a
// string has no input (the Harness exits, unless it has --input).
func TestUndecodablePayloads(t *testing.T) {
	ctx := timeout(t)
	started := make(chan string, 1)
	runFn := func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
		started <- r.Input
		<-ctx.Done()
		return nil, ctx.Err()
	}
	fallback := "from --input"
	ss := serve(t, harness.New(&harness.Options{Input: &fallback, Run: runFn}), nil, nil)
	call := func(method, payload string) error {
		var res jsontext.Value
		return ss.conn.Call(ctx, method, jsontext.Value(payload), &res)
	}
	for _, payload := range []string{`5`, `"x"`, `[1]`, `null`, `{"extra":true}`} {
		for _, m := range []string{agentpmmachine.MethodInitialize, agentpmmachine.MethodPreflight, agentpmmachine.MethodCancelRun} {
			if err := call(m, payload); err != nil {
				t.Fatalf("%s %s: %v", m, payload, err)
			}
		}
	}
	for _, payload := range []string{`5`, `{"role":7,"registry_id":"x"}`, `{"role":"model","registry_id":"x","hooks":"all"}`} {
		code(t, call(agentpmmachine.MethodRegisterHostService, payload), agentpmmachine.ErrHostRegistrationFailed, "")
	}
	for _, payload := range []string{`5`, `{"package":7}`} {
		code(t, call(agentpmmachine.MethodMemoryOperation, payload), agentpmmachine.ErrMemoryOperationNoActiveRun, "")
	}

	// start_run's input is not a string: the --input is used.
	run := make(chan error, 1)
	go func() { run <- call(agentpmmachine.MethodStartRun, `{"input":5}`) }()
	if in := <-started; in != fallback {
		t.Fatalf("Run input %q", in)
	}
	for _, payload := range []string{`5`, `{"package":7}`} {
		code(t, call(agentpmmachine.MethodMemoryOperation, payload), agentpmmachine.ErrMemoryOperationInvalidRequest, "")
	}
	code(t, call(agentpmmachine.MethodRegisterHostService, `5`), agentpmmachine.ErrRunActive, "")
	if err := call(agentpmmachine.MethodCancelRun, `5`); err != nil {
		t.Fatal(err)
	}
	<-run
	if err := call(agentpmmachine.MethodShutdown, `5`); err != nil {
		t.Fatal(err)
	}

	// Without --input, the Harness exits.
	ss = serve(t, harness.New(&harness.Options{Run: runFn}), nil, nil)
	if _, err := ss.peer.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	var res jsontext.Value
	exitedOnStartRun(t, ss, ss.conn.Call(ctx, agentpmmachine.MethodStartRun, jsontext.Value(`{"input":["a"]}`), &res))
}

// exitedOnStartRun checks that the Harness exited (status 1) on a
// start_run without input, failing it.
func exitedOnStartRun(t *testing.T, ss *session, err error) {
	t.Helper()
	if !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("start_run without input: %v", err)
	}
	serr := <-ss.served
	ss.served <- serr
	var exit *harness.ExitError
	if !errors.As(serr, &exit) || exit.Code != 1 {
		t.Fatalf("Serve: %v", serr)
	}
}

// A request over the line limit is refused under its own id, so that the
// client's call fails at once; an event over it is not answered.
func TestOversizedRequestRefusedUnderItsID(t *testing.T) {
	lines, fromClient, done := rawSession(t, &harness.Options{Conn: rpc.Options{MaxFrame: 4096}})
	go func() {
		big := strings.Repeat("a", 8192)
		fromClient.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"ev-1","method":"note","payload":{"x":"` + big + `"}}` + "\n"))
		fromClient.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"big-1","method":"start_run","payload":{"input":"` + big + `"}}` + "\n"))
		fromClient.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"after","method":"shutdown","payload":{}}` + "\n"))
	}()
	first, err := lines.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first, `"kind":"error","id":"big-1"`) || !strings.Contains(first, `"code":"protocol_error"`) {
		t.Fatalf("oversized request answered %s", first)
	}
	second, err := lines.ReadString('\n')
	if err != nil || !strings.Contains(second, `"id":"after"`) {
		t.Fatalf("next frame %q %v", second, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// An event from the client is refused as the Harness refuses any input
// frame that is not a request: a protocol_error frame, under the event's
// id when it has one.
func TestClientEventRefused(t *testing.T) {
	lines, fromClient, done := rawSession(t, nil)
	go func() {
		fromClient.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"ev-1","method":"note","payload":{}}` + "\n"))
		fromClient.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"note","payload":{}}` + "\n"))
		fromClient.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"bye","method":"shutdown","payload":{}}` + "\n"))
	}()
	want := []string{
		`{"protocol":"agentpm-harness-machine","version":1,"kind":"error","id":"ev-1","payload":null,"error":{"code":"protocol_error","message":"machine input frames must use kind ` + "`request`" + `"}}`,
		`{"protocol":"agentpm-harness-machine","version":1,"kind":"error","payload":null,"error":{"code":"protocol_error","message":"machine input frames must use kind ` + "`request`" + `"}}`,
		`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"bye","payload":{"shutdown":true}}`,
	}
	for _, w := range want {
		line, err := lines.ReadString('\n')
		if err != nil || strings.TrimSuffix(line, "\n") != w {
			t.Fatalf("frame %q %v, want %s", line, err, w)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// rawSession serves a session of a Server with opts over pipes, for a
// client played line by line: it returns the Harness's frames after the
// startup event, the client's end of the Harness's input and Serve's
// error.
func rawSession(t *testing.T, opts *harness.Options) (*bufio.Reader, *io.PipeWriter, <-chan error) {
	t.Helper()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	done := make(chan error, 1)
	ctx := timeout(t)
	go func() {
		done <- harness.New(opts).Serve(ctx, toHarness, fromHarness)
		fromHarness.Close()
	}()
	// Serve's reader returns with its Read.
	t.Cleanup(func() { fromClient.Close(); toClient.Close() })
	lines := bufio.NewReader(toClient)
	if _, err := lines.ReadString('\n'); err != nil { // the startup event
		t.Fatal(err)
	}
	return lines, fromClient, done
}

// A host-service failure bubbles up as the Run's failure: start_run is
// answered run_failed (machine.md), never with the client's own code,
// which is kept in the message; a Run's own *rpc.Error is answered as it is.
func TestHostServiceFailureIsRunFailed(t *testing.T) {
	ctx := timeout(t)
	own := &rpc.Error{Name: agentpmmachine.ErrPreflightNotReady.Name, Message: "the Run's own code"}
	s := harness.New(&harness.Options{
		Run: func(ctx context.Context, r *harness.Run) (*harness.Outcome, error) {
			if r.Input == "own" {
				return nil, fmt.Errorf("wrapped: %w", own)
			}
			err := r.HostService(ctx, agentpmservice.ServiceRoleKnowledge, "kb", "retrieve", map[string]any{}, nil)
			return nil, fmt.Errorf("retrieving: %w", err)
		},
	})
	ss := serve(t, s, &agentpmmachine.ClientHandlers{
		HostService: func(context.Context, *agentpmmachine.HostServiceParams) (jsontext.Value, error) {
			return nil, &rpc.Error{Name: agentpmmachine.ErrHostServiceCallbackFailed.Name, Message: "the index is gone"}
		},
	}, nil)
	p := ss.peer
	if _, err := p.Initialize(ctx, empty()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RegisterHostService(ctx, &agentpmmachine.RegisterHostServiceParams{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: ptr("kb")}); err != nil {
		t.Fatal(err)
	}
	_, err := p.StartRun(ctx, input("x"))
	code(t, err, agentpmmachine.ErrRunFailed, "the index is gone")
	if errors.Is(err, agentpmmachine.ErrHostServiceCallbackFailed) {
		t.Fatalf("start_run answered with the client's code: %v", err)
	}
	_, err = p.StartRun(ctx, input("own"))
	code(t, err, agentpmmachine.ErrPreflightNotReady, "the Run's own code")
}
