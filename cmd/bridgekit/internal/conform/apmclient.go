package conform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// AgentPMHarnessClient plays AgentPM's Harness against a client (an SDK
// driving "agentpm harness --machine"). The client starts its Harness
// itself, so conform is what it starts (see ServeAgentPMHarnessClient):
// it writes the preflight event, answers initialize (requiring the host
// service model/default), every registration, preflight, cancel_run and
// shutdown, and runs the scenarios inside the client's first start_run,
// which it then ends with a terminal result.
var AgentPMHarnessClient = &Side{
	Name:   "agentpm-harness-client",
	Family: frames.AgentPMMachine,
	Doc:    "conform plays the Harness against a client that starts it (--agent: conform serves on its own stdin/stdout)",
	Scenarios: func(cfg *Config) []Scenario {
		return (&apmClient{}).scenarios()
	},
}

// requiredModel is the host service conform's initialize requires.
var requiredModel = hostService{Role: "model", RegistryID: "default"}

type apmClient struct {
	mu         sync.Mutex
	initialize *Received
	registers  []Received
	registered []hostService
	hooks      map[hostService][]string // the hook ids each hook registration listed
	start      *Received
	n          int
}

func (c *apmClient) scenarios() []Scenario {
	p := "agentpm-harness-client/"
	ss := []Scenario{
		{p + "initialize", "the client initializes first; its frame fits the machine protocol", c.checkInitialize},
		{p + "register-host-service", "registrations fit RegisterHostServiceRequest, and the required model/default is registered before start_run", c.checkRegistrations},
		{p + "start-run", "start_run fits StartRunRequest, with a string input", c.checkStart},
		{p + "events", "harness_event (known and unknown event types) and mcp_export_event get no answer", c.events},
	}
	for _, role := range append([]string{"model"}, ServiceRoles...) {
		ss = append(ss, Scenario{p + "host-service/" + role, "a host_service request to the client's " + role + " service is answered with the method's result type", c.hostService(role)})
	}
	ss = append(ss,
		Scenario{p + "host-service/unregistered", "a host_service request for a service the client did not register is answered with an error", c.unregistered},
		Scenario{p + "host-service/opaque-id", "a host_service id with quotes, non-ASCII text and 300 bytes is echoed exactly", c.opaqueID},
	)
	return ss
}

func (c *apmClient) checkInitialize(_ context.Context, t *T) {
	frameProblems(t, c.initialize, "initialize")
}

func (c *apmClient) checkRegistrations(_ context.Context, t *T) {
	for i := range c.registers {
		frameProblems(t, &c.registers[i], "register_host_service")
	}
	if !slices.Contains(c.registered, requiredModel) {
		t.Failf("register_host_service", 0, "rule", "model/default is required (initialize said so) and was not registered before start_run")
	}
	t.Note("%d registered", len(c.registered))
}

func (c *apmClient) checkStart(_ context.Context, t *T) {
	if !frameProblems(t, c.start, "start_run") {
		return
	}
	e, _ := parseEnv(c.start.Raw)
	var p struct {
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	if str(p.Input) == "" && string(p.Input) != `""` {
		t.Fail(Problem{Method: "start_run", Frame: c.start.Seq, Pointer: "/payload/input", Code: "rule", Message: fmt.Sprintf("input %s is not a string", orAbsent(p.Input))})
	}
}

func machineEvent(method string, payload any) Env {
	return Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "event", Method: method, Payload: payload}
}

func (c *apmClient) harnessEvent(seq int, eventType string, payload map[string]any) Env {
	return machineEvent("harness_event", map[string]any{"schema_version": 1, "event_id": fmt.Sprintf("evt-conform-%d", seq),
		"session_id": "sess-conform", "run_id": "run-conform", "session_sequence": seq, "run_sequence": seq,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "event_type": eventType, "payload": payload})
}

func (c *apmClient) events(ctx context.Context, t *T) {
	for _, e := range []Env{
		c.harnessEvent(1, "run_started", map[string]any{"payload_type": "lifecycle", "message": "Run started"}),
		c.harnessEvent(2, "phase_started", map[string]any{"payload_type": "phase", "phase_id": "main"}),
		c.harnessEvent(3, "conform_future_event", map[string]any{"payload_type": "conform_future_payload", "x": 1}),
		machineEvent("mcp_export_event", map[string]any{"surface": "conform", "event": map[string]any{"schema_version": 1,
			"protocol": "agentpm-mcp-machine", "version": 1, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "event": "conform_future_event"}}),
	} {
		if !t.SendEnv(ctx, e) {
			return
		}
	}
	t.Settle(ctx, 100*time.Millisecond)
	for _, rec := range t.Received() {
		t.Fail(Problem{Method: rec.Frame.Method, Frame: rec.Seq, Code: "answered_notification", Message: "the client wrote a frame in answer to events: " + clip(string(rec.Raw))})
	}
}

// hostPayload is a valid host_service payload of role's first method
// (for a hook, of the first hook id the registration listed).
func hostPayload(role string, hooks []string) (string, any) {
	switch role {
	case "model":
		sel := map[string]any{"provider": "default", "model": "conform", "options": map[string]any{}}
		return "generate", map[string]any{"selection": sel, "request": map[string]any{"runtime": map[string]any{}, "model": sel,
			"prompt": map[string]any{"sections": []any{map[string]any{"number": 1, "title": "CONSUMER / RUN CONTEXT", "content": "conform", "mutable": true}},
				"action_aliases": []any{}, "completion": hookPhase["completion"], "diagnostics": []any{}},
			"run_id": "run-conform", "phase_execution_id": "conform-phase-1", "phase_id": "conform", "phase_objective": "answer",
			"run_input": "conform", "prior_phase_results": []any{}, "transcript": []any{}, "effective_phase": map[string]any{}, "repair_feedback": nil}}
	case "hook":
		hook := "before_tool_call"
		if len(hooks) > 0 && hookInputs[hooks[0]] != nil {
			hook = hooks[0]
		}
		return hook, map[string]any{"hook": hook, "input": hookInputs[hook]}
	}
	call := serviceCalls[role][0]
	return call.method, call.payload(&apmService{role: role})
}

func (c *apmClient) nextID(s hostService) string {
	c.n++
	return fmt.Sprintf("host-%s-%s-%d", s.Role, s.RegistryID, c.n)
}

func (c *apmClient) hostService(role string) func(context.Context, *T) {
	return func(ctx context.Context, t *T) {
		var svc *hostService
		for _, s := range c.registered {
			if s.Role == role {
				svc = &s
				break
			}
		}
		if svc == nil {
			t.NotImplemented("the client registered no " + role + " service")
			return
		}
		method, payload := hostPayload(role, c.hooks[*svc])
		r := t.CallEnv(ctx, Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "request", ID: c.nextID(*svc),
			Method: "host_service", Payload: map[string]any{"role": svc.Role, "registry_id": svc.RegistryID, "method": method, "payload": payload}})
		if r == nil {
			return
		}
		r.Method = "host_service " + role + "/" + method
		t.checkEnvGates(r, envelope.Machine, "")
		body, ok := t.ExpectEnvResult(r, "response")
		if !ok {
			return
		}
		if m := frames.Lookup(frames.AgentPMService, method, role); m != nil && m.Result != nil {
			if p, bad := frames.CheckType(frames.AgentPMService, m.Result, body, "/payload"); bad {
				t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: p.Pointer, Code: p.Code, Message: p.Message})
			}
		}
	}
}

func (c *apmClient) unregistered(ctx context.Context, t *T) {
	s := hostService{Role: "knowledge", RegistryID: "conform-unregistered"}
	method, payload := hostPayload("knowledge", nil)
	r := t.CallEnv(ctx, Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "request", ID: c.nextID(s),
		Method: "host_service", Payload: map[string]any{"role": s.Role, "registry_id": s.RegistryID, "method": method, "payload": payload}})
	if r == nil {
		return
	}
	t.checkEnvGates(r, envelope.Machine, "")
	if !r.IsError() {
		t.Fail(Problem{Method: "host_service", Frame: r.Seq, Pointer: "/kind", Code: "expected_error", Message: fmt.Sprintf("kind %q for a service the client never registered, want an error", r.Kind)})
		return
	}
	t.Note("%s", r.ErrorCode())
}

func (c *apmClient) opaqueID(ctx context.Context, t *T) {
	if !slices.Contains(c.registered, requiredModel) {
		t.NotImplemented("the client registered no model/default service")
		return
	}
	id := `host-conform "quoted"-é-✓-` + strings.Repeat("x", 300)
	method, payload := hostPayload("model", nil)
	want, _ := json.Marshal(id)
	e := Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "request", ID: id,
		Method: "host_service", Payload: map[string]any{"role": "model", "registry_id": "default", "method": method, "payload": payload}}
	if !t.SendEnv(ctx, e) {
		return
	}
	rec, ok := t.WaitFor(ctx, func(rec Received) bool {
		g, ok := parseEnv(rec.Raw)
		return ok && str(g.ID) == id
	})
	if !ok {
		t.Failf("host_service", 0, "id", "no answer whose id is %s exactly: %s", clip(string(want)), t.why(ctx))
		return
	}
	if g, _ := parseEnv(rec.Raw); string(g.ID) != string(want) {
		t.Note("id re-encoded as %s", clip(string(g.ID)))
	}
}

// ErrNoStartRun is returned by ServeAgentPMHarnessClient when the client
// ended the session without a start_run.
var ErrNoStartRun = errors.New("the client sent no start_run")

// runReport is the RunReport of conform's Run, encoded by the generated
// type (so that it has every member the type requires).
func runReport(status agentpmmachine.TerminalStatus, began time.Time) json.RawMessage {
	r := agentpmmachine.RunReport{SessionID: "sess-conform", RunID: "run-conform",
		Agent:       agentpmmachine.PackageIdentity{Name: "@bridgekit/conform", Version: "1.0.0"},
		LoopPackage: agentpmmachine.PackageIdentity{Name: "@bridgekit/conform-loop", Version: "1.0.0"},
		StartedAt:   began.UTC().Format(time.RFC3339Nano), TerminalStatus: status, PreflightStatus: agentpmmachine.PreflightStatusReady}
	b, err := wire.Marshal(&r)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// ServeAgentPMHarnessClient serves a client that started conform as its
// Harness: in is what the client writes (our stdin), out what it reads
// (our stdout). It writes the preflight event, answers the session's
// requests, runs the agentpm-harness-client scenarios inside the first
// start_run, calls report with the results, ends the Run, and returns the
// results when the client ends its output or once shutdown is answered
// (the Harness exits then; the reader of in is left to the process's
// end).
func ServeAgentPMHarnessClient(ctx context.Context, cfg Config, in io.Reader, out io.Writer, report func([]Result)) ([]Result, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	c := &apmClient{}
	peer := streamPeer(out, in, frames.AgentPMMachine)
	var (
		results []Result
		runErr  error
		ran     bool
	)
	reply := func(id json.RawMessage, payload any) []byte {
		b, _ := json.Marshal(Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "response", ID: id, Payload: payload})
		return b
	}
	refuse := func(id json.RawMessage, code, msg string) []byte {
		b, _ := json.Marshal(Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "error", ID: id,
			Payload: json.RawMessage("null"), Error: &EnvError{Code: code, Message: msg}})
		return b
	}
	preflight := map[string]any{"status": "ready", "diagnostics": []any{}}
	// shut is closed by shutdown: the Harness answers it and exits.
	shut := make(chan struct{})
	var shutOnce sync.Once
	peer.respond = func(rec Received) []byte {
		e, ok := parseEnv(rec.Raw)
		if !ok || str(e.Kind) != "request" {
			return nil
		}
		id := e.ID
		c.mu.Lock()
		defer c.mu.Unlock()
		switch method := str(e.Method); method {
		case "initialize":
			c.initialize = &rec
			return reply(id, map[string]any{"session": map[string]any{"protocol": envelope.Machine.Name, "version": envelope.Machine.Version},
				"preflight": preflight, "mcp_exports": []any{}, "required_host_services": []any{requiredModel}})
		case "register_host_service":
			c.registers = append(c.registers, rec)
			var s hostService
			_ = json.Unmarshal(e.Payload, &s)
			if s.Role == "" || s.RegistryID == "" {
				return refuse(id, agentpmmachine.ErrHostRegistrationFailed.Name, "a registration names its role and registry_id")
			}
			if !slices.Contains(c.registered, s) {
				c.registered = append(c.registered, s)
			}
			var h struct {
				Hooks []string `json:"hooks"`
			}
			if json.Unmarshal(e.Payload, &h) == nil && len(h.Hooks) > 0 {
				if c.hooks == nil {
					c.hooks = map[hostService][]string{}
				}
				c.hooks[s] = h.Hooks
			}
			return reply(id, map[string]any{"registered": true, "service": s, "active": true, "reason": nil})
		case "preflight":
			return reply(id, map[string]any{"report": preflight, "mcp_exports": []any{}})
		case "cancel_run":
			return reply(id, map[string]any{"status": "cancelled", "accepted": true})
		case "memory_operation":
			return refuse(id, agentpmmachine.ErrMemoryOperationNoActiveRun.Name, "conform runs no memory operation")
		case "shutdown":
			shutOnce.Do(func() { close(shut) })
			return reply(id, map[string]any{"shutdown": true})
		case "start_run":
			if ran {
				return refuse(id, agentpmmachine.ErrRunFailed.Name, "conform runs one Run per session")
			}
			if c.initialize == nil {
				return refuse(id, agentpmmachine.ErrNotInitialized.Name, "initialize must complete before start_run")
			}
			ran = true
			c.start = &rec
			began := time.Now()
			c.mu.Unlock()
			results, runErr = runScenarios(ctx, peer, c.scenarios(), cfg, rec.Seq, nil)
			if report != nil {
				report(results)
			}
			c.mu.Lock()
			return reply(id, map[string]any{"status": "ended", "output": "ran the agentpm-harness-client scenarios", "report": runReport(agentpmmachine.TerminalStatusEnded, began)})
		default:
			return refuse(id, agentpmmachine.ErrUnknownMethod.Name, "conform's Harness has no method "+method)
		}
	}
	peer.startReading()
	if b, err := json.Marshal(machineEvent("preflight", map[string]any{"status": "ready", "report": preflight})); err == nil {
		wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		_ = peer.WriteLine(wctx, b)
		cancel()
	}
	select {
	case <-peer.readDone:
	case <-shut:
		// Once the answer is written: the reader is left blocked on the
		// client's input, which ends with the process.
	case <-ctx.Done():
	}
	peer.servers.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ran {
		return nil, ErrNoStartRun
	}
	return results, runErr
}
