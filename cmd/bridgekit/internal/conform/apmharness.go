package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/runtime/envelope"
)

// AgentPMHarness is conform as a client of AgentPM's Harness machine
// protocol (agentpm harness --machine): it reads the startup preflight
// event, initializes, registers the host services the Harness requires,
// starts Runs and answers the Harness's host_service requests itself,
// cancels a Run, asks for a memory operation, and sends the bad frames
// the protocol's gates must refuse.
var AgentPMHarness = &Side{
	Name:   "agentpm-harness",
	Family: frames.AgentPMMachine,
	Doc:    "conform plays the Harness client against agentpm harness --machine",
	Scenarios: func(cfg *Config) []Scenario {
		return (&apmHarness{}).scenarios()
	},
	// host_service requests are answered by the scenario running a Run
	// (which may hold one back on purpose); none outside.
	Respond: func(Received) []byte { return nil },
}

type apmHarness struct {
	n        int
	required []hostService
	// registered is what register_host_service accepted.
	registered []hostService
	peer       *Peer // the implementation initialize was sent to
}

type hostService struct {
	Role       string `json:"role"`
	RegistryID string `json:"registry_id"`
}

func (h *apmHarness) scenarios() []Scenario {
	p := "agentpm-harness/"
	return []Scenario{
		{p + "preflight-event", "the first frame is the preflight event, without an id", h.preflightEvent},
		{p + "start-run/not-initialized", "start_run before initialize is refused with not_initialized", h.notInitialized},
		{p + "initialize", "initialize answers the session, the preflight report and the required host services", h.initialize},
		{p + "start-run/not-registered", "start_run before the required host services are registered is refused", h.notRegistered},
		{p + "register-host-service", "each required host service is registered", h.register},
		{p + "register-host-service/unconfigured", "a host service the Harness does not configure is refused with host_registration_failed", h.registerUnconfigured},
		{p + "preflight", "preflight answers the preflight report", h.preflight},
		{p + "memory-operation/idle", "memory_operation without an active Run is refused with memory_operation_no_active_run", h.memoryIdle},
		{p + "start-run", "a Run streams events, calls host services conform answers, and ends with its terminal result", h.startRun},
		{p + "memory-operation", "memory_operation during a Run is answered with its result or a memory_operation error", h.memoryDuringRun},
		{p + "start-run/busy-and-cancel", "start_run during a Run is session_busy; cancel_run is accepted and ends the Run", h.busyAndCancel},
		{p + "unknown-method", "an unknown method is refused with unknown_method, its id echoed", h.unknownMethod},
		{p + "wrong-protocol", "a request of another protocol is refused with protocol_error", h.wrongProtocol},
		{p + "wrong-version", "a request of version 2 is refused with protocol_error", h.wrongVersion},
		{p + "not-a-request", "a response nobody asked for and a request without a method are refused with protocol_error", h.notARequest},
		{p + "bad-json", "lines that are not JSON get malformed_json errors without an id, and the Harness goes on", h.badJSON},
		{p + "numeric-id", "a request with a numeric id is refused with malformed_json", h.numericID},
		{p + "opaque-id", "ids with quotes, slashes, non-ASCII text and 300 bytes are echoed byte for byte", h.opaqueID},
		{p + "large-line", "a 1 MiB request line is read whole and answered", h.largeLine},
		{p + "duplicate-id", "two requests with the same id are each answered once", h.duplicateID},
		{p + "end-of-input", "at the end of its input the Harness answers what it read and exits 0", h.endOfInput},
		{p + "shutdown", "shutdown is answered with shutdown: true and the Harness exits 0", h.shutdown},
	}
}

func (h *apmHarness) nextID() string {
	h.n++
	return fmt.Sprintf("conform-%d", h.n)
}

func (h *apmHarness) req(method string, payload any) Env {
	if payload == nil {
		payload = map[string]any{}
	}
	return Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, Kind: "request", ID: h.nextID(), Method: method, Payload: payload}
}

// call sends a request and waits for its answer, checking the gates.
func (h *apmHarness) call(ctx context.Context, t *T, e Env) *EnvReply {
	r := t.CallEnv(ctx, e)
	if r != nil {
		t.checkEnvGates(r, envelope.Machine, "")
	}
	return r
}

func (h *apmHarness) expectError(ctx context.Context, t *T, e Env, codes ...string) *EnvReply {
	r := h.call(ctx, t, e)
	if r != nil && t.ExpectEnvError(r, false, codes...) {
		t.Note("%s", r.ErrorCode())
	}
	t.Tolerate(frames.ProblemUnmatchedID)
	return r
}

// ensure makes sure the current implementation was initialized and its
// required host services registered: a restarted one is set up again.
func (h *apmHarness) ensure(ctx context.Context, t *T) bool {
	if h.peer == t.peer {
		return true
	}
	r := h.call(ctx, t, h.req("initialize", nil))
	body, ok := t.ExpectEnvResult(r, "response")
	if !ok {
		return false
	}
	h.readRequired(body)
	h.peer, h.registered = t.peer, nil
	for _, s := range h.required {
		if _, ok := t.ExpectEnvResult(h.call(ctx, t, h.req("register_host_service", registration(s))), "response"); !ok {
			return false
		}
		h.registered = append(h.registered, s)
	}
	return true
}

func (h *apmHarness) readRequired(body json.RawMessage) {
	var p struct {
		Required []hostService `json:"required_host_services"`
	}
	_ = json.Unmarshal(body, &p)
	h.required = p.Required
}

// registration is conform's register_host_service payload for s, with
// the capabilities the role's validator wants.
func registration(s hostService) map[string]any {
	p := map[string]any{"role": s.Role, "registry_id": s.RegistryID, "ready": true}
	switch s.Role {
	case "model":
		p["capabilities"] = map[string]any{"semantic_actions": true, "structured_output": true}
	case "hook":
		p["hooks"] = hookIDs
	case "approval":
		p["capabilities"] = map[string]any{"request_approval": true, "cancellation": false}
	case "embedding":
		p["capabilities"] = map[string]any{"embedding_spaces": []any{map[string]any{"provider": "conform", "model": "conform", "dimensions": 8, "normalized": true}}}
	case "knowledge":
		p["capabilities"] = map[string]any{"modes": []string{"context_document", "vector_query"}, "features": []string{}}
	case "memory":
		d := map[string]any{"space_models": []string{"document"}, "retrieval_modes": []string{"key"}, "retention_actions": []string{},
			"constraints": []string{}, "capacity": false, "durable_trigger_state": false, "atomic_batches": false}
		caps := map[string]any{"descriptor": d, "packages": []any{}}
		for k, v := range d {
			caps[k] = v
		}
		p["capabilities"] = caps
	}
	return p
}

func (h *apmHarness) preflightEvent(ctx context.Context, t *T) {
	rec, ok := t.WaitFor(ctx, func(Received) bool { return true })
	if !ok {
		t.Failf("preflight", 0, "no_answer", "no frame at startup: %s", t.why(ctx))
		return
	}
	e, ok := parseEnv(rec.Raw)
	if !ok {
		t.Failf("preflight", rec.Seq, "malformed", "the first frame is not a JSON object")
		return
	}
	r := &EnvReply{Received: rec, Env: e, Method: "preflight", Kind: str(e.Kind)}
	t.checkEnvGates(r, envelope.Machine, "")
	if r.Kind != "event" || str(e.Method) != "preflight" {
		t.Fail(Problem{Method: str(e.Method), Frame: rec.Seq, Pointer: "/method", Code: "rule",
			Message: fmt.Sprintf("the first frame is a %q of method %s, want the preflight event", r.Kind, orAbsent(e.Method))})
		return
	}
	if e.ID != nil {
		t.Fail(Problem{Method: "preflight", Frame: rec.Seq, Pointer: "/id", Code: "rule", Message: fmt.Sprintf("the preflight event has id %s, want none", clip(string(e.ID)))})
	}
	var p struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	t.Note("%s", p.Status)
}

func (h *apmHarness) notInitialized(ctx context.Context, t *T) {
	if h.peer == t.peer {
		t.NotImplemented("the Harness was initialized already")
		return
	}
	h.expectError(ctx, t, h.req("start_run", map[string]any{"input": "conform"}), agentpmmachine.ErrNotInitialized.Name)
}

func (h *apmHarness) initialize(ctx context.Context, t *T) {
	r := h.call(ctx, t, h.req("initialize", nil))
	body, ok := t.ExpectEnvResult(r, "response")
	if !ok {
		return
	}
	var p struct {
		Session struct {
			Protocol string          `json:"protocol"`
			Version  json.RawMessage `json:"version"`
		} `json:"session"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Session.Protocol != envelope.Machine.Name || string(p.Session.Version) != "1" {
		t.Fail(Problem{Method: "initialize", Frame: r.Seq, Pointer: "/payload/session", Code: "rule",
			Message: fmt.Sprintf("session %q version %s, want %q version 1", p.Session.Protocol, orAbsent(p.Session.Version), envelope.Machine.Name)})
	}
	h.readRequired(body)
	h.peer, h.registered = t.peer, nil
	t.Note("%d required host services", len(h.required))
}

func (h *apmHarness) notRegistered(ctx context.Context, t *T) {
	if h.peer != t.peer {
		t.NotImplemented("the Harness was restarted")
		return
	}
	if len(h.required) == 0 {
		t.NotImplemented("the Harness requires no host service")
		return
	}
	h.expectError(ctx, t, h.req("start_run", map[string]any{"input": "conform"}), agentpmmachine.ErrHostServiceNotRegistered.Name)
}

func (h *apmHarness) register(ctx context.Context, t *T) {
	if h.peer != t.peer && !h.ensure(ctx, t) {
		return
	}
	if len(h.required) == 0 {
		t.NotImplemented("the Harness requires no host service")
		return
	}
	for _, s := range h.required {
		r := h.call(ctx, t, h.req("register_host_service", registration(s)))
		body, ok := t.ExpectEnvResult(r, "response")
		if !ok {
			return
		}
		var p struct {
			Registered bool        `json:"registered"`
			Service    hostService `json:"service"`
		}
		_ = json.Unmarshal(body, &p)
		if !p.Registered || p.Service != s {
			t.Fail(Problem{Method: "register_host_service", Frame: r.Seq, Pointer: "/payload", Code: "rule",
				Message: fmt.Sprintf("registered %v for %s/%s, want true and the service echoed", p.Registered, p.Service.Role, p.Service.RegistryID)})
			continue
		}
		h.registered = append(h.registered, s)
	}
	t.Note("%d registered", len(h.registered))
}

func (h *apmHarness) registerUnconfigured(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	s := hostService{Role: "knowledge", RegistryID: "conform-unconfigured-" + randomHex()}
	h.expectError(ctx, t, h.req("register_host_service", registration(s)), agentpmmachine.ErrHostRegistrationFailed.Name)
}

func (h *apmHarness) preflight(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	body, ok := t.ExpectEnvResult(h.call(ctx, t, h.req("preflight", nil)), "response")
	if !ok {
		return
	}
	var p struct {
		Report struct {
			Status string `json:"status"`
		} `json:"report"`
	}
	_ = json.Unmarshal(body, &p)
	t.Note("%s", p.Report.Status)
}

func (h *apmHarness) memoryIdle(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	h.expectError(ctx, t, h.req("memory_operation", map[string]any{"package": "@conform/memory", "operation": "compact"}),
		agentpmmachine.ErrMemoryOperationNoActiveRun.Name)
}

// runDriver follows one Run: it answers the Harness's host_service
// requests (unless told to hold them) and returns the start_run answer.
type runDriver struct {
	h      *apmHarness
	t      *T
	seen   map[int64]bool
	hosts  int
	events int
	held   []Received
	hold   bool
}

// next waits for the next frame the driver has not looked at that is a
// host_service request or the answer to id; events are counted on the
// way. It returns the answer (nil when a host request came, or none).
func (d *runDriver) next(ctx context.Context, id []byte) (*EnvReply, bool) {
	rec, ok := d.t.WaitFor(ctx, func(rec Received) bool {
		if d.seen[rec.Seq] {
			return false
		}
		e, ok := parseEnv(rec.Raw)
		if !ok {
			return false
		}
		k := str(e.Kind)
		if k == "event" {
			d.seen[rec.Seq] = true
			if str(e.Method) == "harness_event" {
				d.events++
			}
			return false
		}
		return k == "request" && str(e.Method) == "host_service" || string(e.ID) == string(id)
	})
	if !ok {
		return nil, false
	}
	d.seen[rec.Seq] = true
	e, _ := parseEnv(rec.Raw)
	if str(e.Kind) == "request" && string(e.ID) != string(id) {
		d.hosts++
		if d.hold {
			d.held = append(d.held, rec)
		} else {
			d.answer(ctx, rec)
		}
		return nil, true
	}
	return &EnvReply{Received: rec, Env: e, Method: "start_run", Kind: str(e.Kind)}, true
}

// wait runs the driver until the answer to id arrives.
func (d *runDriver) wait(ctx context.Context, id []byte) *EnvReply {
	for {
		r, ok := d.next(ctx, id)
		if !ok {
			d.t.Failf("start_run", 0, "no_answer", "no answer to start_run %s: %s", id, d.t.why(ctx))
			return nil
		}
		if r != nil {
			return r
		}
	}
}

// answer answers a host_service request with a valid result of its
// role's method.
func (d *runDriver) answer(ctx context.Context, rec Received) {
	e, _ := parseEnv(rec.Raw)
	var p struct {
		Role       string          `json:"role"`
		RegistryID string          `json:"registry_id"`
		Method     string          `json:"method"`
		Payload    json.RawMessage `json:"payload"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	var id any = json.RawMessage(e.ID)
	reply := Env{Protocol: envelope.Machine.Name, Version: envelope.Machine.Version, ID: id}
	if !slices.Contains(d.h.registered, hostService{p.Role, p.RegistryID}) {
		d.t.Fail(Problem{Method: "host_service", Frame: rec.Seq, Pointer: "/payload/registry_id", Code: "rule",
			Message: fmt.Sprintf("a host_service request for %s/%s, which conform did not register", p.Role, p.RegistryID)})
		reply.Kind, reply.Payload = "error", json.RawMessage("null")
		reply.Error = &EnvError{Code: agentpmmachine.ErrHostServiceNotRegistered.Name, Message: "conform registered no such host service"}
	} else {
		reply.Kind, reply.Payload = "response", hostAnswer(p.Role, p.Method, p.Payload)
	}
	d.t.SendEnv(ctx, reply)
}

// hostAnswer is a valid answer of role's method.
func hostAnswer(role, method string, payload json.RawMessage) any {
	switch role {
	case "model":
		return map[string]any{"assistant_content": nil, "finish_reason": "stop", "actions": []any{map[string]any{"id": "conform-action-1",
			"action": map[string]any{"type": "phase_completion", "outcome": "done", "output": "answered by bridgekit conform"}}}}
	case "embedding":
		var p struct {
			Dimensions int `json:"dimensions"`
		}
		_ = json.Unmarshal(payload, &p)
		v := make([]float64, max(p.Dimensions, 1))
		v[0] = 1
		return v
	case "knowledge":
		var p struct {
			Request map[string]any `json:"request"`
		}
		_ = json.Unmarshal(payload, &p)
		return map[string]any{"ok": false, "package": p.Request["package"], "version": p.Request["version"], "mode": p.Request["mode"],
			"error": map[string]any{"code": "knowledge_unavailable", "message": "bridgekit conform serves no knowledge", "retryable": false}}
	case "memory":
		var p struct {
			Request map[string]any `json:"request"`
		}
		_ = json.Unmarshal(payload, &p)
		return map[string]any{"ok": false, "package": p.Request["package"], "package_version": p.Request["package_version"], "space": p.Request["space"],
			"mode": p.Request["mode"], "operation": p.Request["operation"],
			"error": map[string]any{"code": "unsupported_capability", "message": "bridgekit conform keeps no memory"}}
	case "hook":
		return map[string]any{"decision": "continue"}
	case "approval":
		return map[string]any{"decision": "approve"}
	}
	return map[string]any{}
}

// startRun sends start_run and returns its id and a driver.
func (h *apmHarness) startRun(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	e := h.req("start_run", map[string]any{"input": "conform run"})
	if !t.SendEnv(ctx, e) {
		return
	}
	d := &runDriver{h: h, t: t, seen: map[int64]bool{}}
	id, _ := json.Marshal(e.ID)
	r := d.wait(ctx, id)
	body, ok := t.ExpectEnvResult(r, "response")
	if !ok {
		return
	}
	var p struct {
		Status string `json:"status"`
		Report struct {
			RunID          string `json:"run_id"`
			TerminalStatus string `json:"terminal_status"`
		} `json:"report"`
	}
	_ = json.Unmarshal(body, &p)
	if d.events == 0 {
		t.Failf("start_run", r.Seq, "rule", "the Run ended without a harness_event")
	}
	if p.Report.RunID == "" || p.Report.TerminalStatus != "" && p.Report.TerminalStatus != p.Status {
		t.Fail(Problem{Method: "start_run", Frame: r.Seq, Pointer: "/payload/report", Code: "rule",
			Message: fmt.Sprintf("report run_id %q, terminal_status %q for status %q", p.Report.RunID, p.Report.TerminalStatus, p.Status)})
	}
	t.Note("%s after %d events, %d host_service calls", p.Status, d.events, d.hosts)
}

// holdRun starts a Run and waits for its first host_service request,
// which it holds back; false (and not implemented) when the Run ends
// first.
func (h *apmHarness) holdRun(ctx context.Context, t *T) (*runDriver, []byte, bool) {
	if !h.ensure(ctx, t) {
		return nil, nil, false
	}
	e := h.req("start_run", map[string]any{"input": "conform held run"})
	if !t.SendEnv(ctx, e) {
		return nil, nil, false
	}
	d := &runDriver{h: h, t: t, seen: map[int64]bool{}, hold: true}
	id, _ := json.Marshal(e.ID)
	for len(d.held) == 0 {
		r, ok := d.next(ctx, id)
		if !ok {
			t.Failf("start_run", 0, "no_answer", "no answer to start_run %s: %s", id, t.why(ctx))
			return nil, nil, false
		}
		if r != nil {
			t.NotImplemented("the Run ended before it called a host service conform could hold")
			return nil, nil, false
		}
	}
	return d, id, true
}

func (h *apmHarness) busyAndCancel(ctx context.Context, t *T) {
	d, id, ok := h.holdRun(ctx, t)
	if !ok {
		return
	}
	h.expectError(ctx, t, h.req("start_run", map[string]any{"input": "conform second run"}), agentpmmachine.ErrSessionBusy.Name)
	r := h.call(ctx, t, h.req("cancel_run", nil))
	body, ok := t.ExpectEnvResult(r, "response")
	if !ok {
		return
	}
	var c struct {
		Status   string `json:"status"`
		Accepted bool   `json:"accepted"`
	}
	_ = json.Unmarshal(body, &c)
	if c.Status != "cancelled" || !c.Accepted {
		t.Fail(Problem{Method: "cancel_run", Frame: r.Seq, Pointer: "/payload", Code: "rule", Message: fmt.Sprintf("status %q accepted %v, want \"cancelled\" and true", c.Status, c.Accepted)})
	}
	// The held request is never answered: cancellation fails the wait.
	end := d.wait(ctx, id)
	if end == nil {
		return
	}
	if end.IsError() {
		t.ExpectEnvError(end, false, agentpmmachine.ErrRunFailed.Name)
		t.Note("run_failed")
		return
	}
	body, ok = t.ExpectEnvResult(end, "response")
	if !ok {
		return
	}
	var p struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Status != "cancelled" {
		t.Fail(Problem{Method: "start_run", Frame: end.Seq, Pointer: "/payload/status", Code: "rule", Message: fmt.Sprintf("a cancelled Run ended %q, want \"cancelled\" (or run_failed)", p.Status)})
	}
	t.Note("cancelled")
}

// memoryQueueWait is how long a held host_service request stays held
// for a memory_operation answer.
const memoryQueueWait = 250 * time.Millisecond

func (h *apmHarness) memoryDuringRun(ctx context.Context, t *T) {
	d, id, ok := h.holdRun(ctx, t)
	if !ok {
		return
	}
	m := h.req("memory_operation", map[string]any{"package": "@conform/memory", "operation": "compact"})
	if !t.SendEnv(ctx, m) {
		return
	}
	// The Harness services a queued memory_operation at its next yield
	// point or host-service wait: AgentPM's answers it during the held
	// wait; one that waits for a yield point (examples/fakeharness) has
	// had a moment to queue it when the Run goes on.
	mid, _ := json.Marshal(m.ID)
	wctx, cancel := context.WithTimeout(ctx, memoryQueueWait)
	t.WaitFor(wctx, func(rec Received) bool {
		g, ok := parseEnv(rec.Raw)
		return ok && string(g.ID) == string(mid) && str(g.Kind) != "event"
	})
	cancel()
	d.hold = false
	for _, rec := range d.held {
		d.answer(ctx, rec)
	}
	if end := d.wait(ctx, id); end == nil {
		return
	}
	r := t.AwaitEnv(ctx, "memory_operation", mid)
	if r == nil {
		return
	}
	t.checkEnvGates(r, envelope.Machine, "")
	if r.IsError() {
		if code := r.ErrorCode(); strings.HasPrefix(code, "memory_operation_") && code != agentpmmachine.ErrMemoryOperationNoActiveRun.Name {
			t.Note("%s", code)
			return
		}
		t.ExpectEnvError(r, false, "memory_operation_*")
		return
	}
	body, ok := t.ExpectEnvResult(r, "response")
	if !ok {
		return
	}
	var p struct {
		Package   string          `json:"package"`
		Operation string          `json:"operation"`
		Count     json.RawMessage `json:"count"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Package != "@conform/memory" || p.Operation != "compact" {
		t.Fail(Problem{Method: "memory_operation", Frame: r.Seq, Pointer: "/payload", Code: "rule",
			Message: fmt.Sprintf("package %q operation %q, want the request's @conform/memory and compact", p.Package, p.Operation)})
	}
	t.Note("count %s", orAbsent(p.Count))
}

func (h *apmHarness) unknownMethod(ctx context.Context, t *T) {
	if h.ensure(ctx, t) {
		h.expectError(ctx, t, h.req("conform_no_such_method", nil), agentpmmachine.ErrUnknownMethod.Name)
	}
}

func (h *apmHarness) wrongProtocol(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	e := h.req("preflight", nil)
	e.Protocol = envelope.Service.Name
	h.expectError(ctx, t, e, agentpmmachine.ErrProtocolError.Name)
}

func (h *apmHarness) wrongVersion(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	e := h.req("preflight", nil)
	e.Version = 2
	h.expectError(ctx, t, e, agentpmmachine.ErrProtocolError.Name)
}

func (h *apmHarness) notARequest(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	e := h.req("", nil)
	e.Kind, e.Payload = "response", map[string]any{}
	h.expectError(ctx, t, e, agentpmmachine.ErrProtocolError.Name)
	h.expectError(ctx, t, h.req("", nil), agentpmmachine.ErrProtocolError.Name)
}

// alive checks the Harness still answers (any answer).
func (h *apmHarness) alive(ctx context.Context, t *T) bool {
	e := h.req("conform_probe", nil)
	e.ID = probeIDPrefix + e.ID.(string)
	return t.CallEnv(ctx, e) != nil
}

// refusalsWithoutID checks every frame received but the probe's answer
// is an error of code without an id (or with one of the ids the broken
// lines did carry, for a Harness that reads that far).
func (h *apmHarness) refusalsWithoutID(t *T, method, code string, carried ...string) int {
	n := 0
	for _, rec := range t.Received() {
		e, ok := parseEnv(rec.Raw)
		if !ok || strings.HasPrefix(str(e.ID), probeIDPrefix) || str(e.Kind) == "event" {
			continue
		}
		n++
		r := &EnvReply{Received: rec, Env: e, Method: method, Kind: str(e.Kind)}
		t.ExpectEnvError(r, false, code)
		if e.ID != nil && string(e.ID) != "null" && !slices.Contains(carried, str(e.ID)) {
			t.Fail(Problem{Method: method, Frame: rec.Seq, Pointer: "/id", Code: "id", Message: fmt.Sprintf("the refusal of an unreadable line has id %s", clip(string(e.ID)))})
		}
	}
	return n
}

func (h *apmHarness) badJSON(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemUnmatchedID)
	for _, line := range [][]byte{[]byte(`{not json`), []byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"conform-cut","method":"preflight","payload":{`),
		{'{', '"', 0xff, 0xfe, '"', ':', '1', '}'}} {
		if !t.SendRaw(ctx, "", line) {
			return
		}
	}
	if h.alive(ctx, t) {
		h.refusalsWithoutID(t, "", agentpmmachine.ErrMalformedJSON.Name, "conform-cut")
	}
}

func (h *apmHarness) numericID(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemUnmatchedID)
	e := h.req("preflight", nil)
	e.ID = 7
	if !t.SendEnv(ctx, e) || !h.alive(ctx, t) {
		return
	}
	if h.refusalsWithoutID(t, "preflight", agentpmmachine.ErrMalformedJSON.Name) == 0 {
		t.Failf("preflight", 0, "no_answer", "a request with the numeric id 7 got no malformed_json error")
	}
}

func (h *apmHarness) opaqueID(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	for _, id := range []string{`conform "quoted" \ back/slash`, "conform-é-✓-" + strings.Repeat("x", 300)} {
		e := h.req("conform_no_such_method", nil)
		e.ID = id
		want, _ := json.Marshal(id)
		if !t.SendEnv(ctx, e) {
			return
		}
		if r := t.AwaitEnv(ctx, "conform_no_such_method", want); r == nil {
			return
		}
	}
}

func (h *apmHarness) largeLine(ctx context.Context, t *T) {
	if h.ensure(ctx, t) {
		h.expectError(ctx, t, h.req("conform_no_such_method", map[string]any{"padding": strings.Repeat("x", 1<<20)}), agentpmmachine.ErrUnknownMethod.Name)
	}
}

func (h *apmHarness) duplicateID(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	t.Tolerate(frames.ProblemDuplicateID)
	t.Tolerate(frames.ProblemUnmatchedID)
	e := h.req("conform_no_such_method", nil)
	if !t.SendEnv(ctx, e) || !t.SendEnv(ctx, e) {
		return
	}
	id, _ := json.Marshal(e.ID)
	count := func() (n int) {
		for _, rec := range t.Received() {
			if g, ok := parseEnv(rec.Raw); ok && string(g.ID) == string(id) && str(g.Kind) != "event" {
				n++
			}
		}
		return n
	}
	if _, ok := t.WaitFor(ctx, func(Received) bool { return count() >= 2 }); !ok {
		t.Failf("conform_no_such_method", 0, "no_answer", "%d answers with id %s to the two requests, want 2: %s", count(), id, t.why(ctx))
		return
	}
	t.Settle(ctx, 50*time.Millisecond)
	if n := count(); n != 2 {
		t.Failf("conform_no_such_method", 0, "duplicate_answer", "%d answers with id %s to two requests", n, id)
	}
}

func (h *apmHarness) endOfInput(ctx context.Context, t *T) {
	if !h.ensure(ctx, t) {
		return
	}
	e := h.req("preflight", nil)
	if !t.SendEnv(ctx, e) {
		return
	}
	t.ExpectExit()
	t.peer.closeInput()
	id, _ := json.Marshal(e.ID)
	if t.AwaitEnv(ctx, "preflight", id) == nil {
		return
	}
	h.expectExit(t)
}

func (h *apmHarness) expectExit(t *T) {
	grace := t.Config().Grace
	if !t.peer.waitExit(grace) {
		t.Failf("", 0, "no_exit", "still running %v after the end of its input", grace)
		return
	}
	if code := t.peer.exitCode(); code != 0 {
		t.Failf("", 0, "exit_status", "exited with status %d, want 0: %s", code, t.peer.exitDescription())
	}
}

func (h *apmHarness) shutdown(ctx context.Context, t *T) {
	t.ExpectExit()
	r := h.call(ctx, t, h.req("shutdown", nil))
	body, ok := t.ExpectEnvResult(r, "response")
	if !ok {
		return
	}
	var p struct {
		Shutdown bool `json:"shutdown"`
	}
	_ = json.Unmarshal(body, &p)
	if !p.Shutdown {
		t.Fail(Problem{Method: "shutdown", Frame: r.Seq, Pointer: "/payload/shutdown", Code: "rule", Message: "shutdown is not true"})
	}
	h.expectExit(t)
}
