package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Run is one active Run, handed to the RunFunc: its identity and input,
// its report, and what a Run does with the client: events, host-service
// calls, yield points for memory_operation.
type Run struct {
	// ID is the Run id (run-<hex>-<hex>).
	ID string
	// Input is start_run's input.
	Input string
	// Params are start_run's params as they arrived (with members this
	// version does not name in Extra).
	Params *agentpmmachine.StartRunParams
	// Report is the Run's report. The server fills in its identity,
	// timing, status, output and usage; a RunFunc may add summaries.
	Report *agentpmmachine.RunReport

	ss        *session
	seq       atomic.Int64
	cancelled atomic.Bool
	stop      context.CancelFunc // ends the RunFunc's context
	usageMu   sync.Mutex

	memMu    sync.Mutex
	mem      *memOp // the memory_operation pending or running
	memEnded bool
}

// memOp is a queued memory_operation.
type memOp struct {
	p       *agentpmmachine.MemoryOperationParams
	started bool
	done    chan memResult
}

type memResult struct {
	res *agentpmmachine.MemoryOperationResult
	err error
}

func newRun(ss *session, p *agentpmmachine.StartRunParams, input string) *Run {
	o := &ss.s.opts
	r := &Run{ID: newID("run"), Input: input, Params: p, ss: ss}
	zero := int64(0)
	r.Report = &agentpmmachine.RunReport{
		SessionID:           ss.id,
		RunID:               r.ID,
		Agent:               o.Agent,
		LoopPackage:         o.LoopPackage,
		StartedAt:           timestamp(o.Now()),
		PreflightStatus:     o.Preflight.Status,
		Diagnostics:         o.Preflight.Diagnostics,
		RuntimeSources:      agentpmmachine.RunReportRuntimeSources{},
		ScopeSummaries:      []agentpmmachine.ScopeSummary{},
		PhaseSummaries:      []agentpmmachine.PhaseSummary{},
		CheckpointSummaries: []agentpmmachine.CheckpointSummary{},
		ActionSummaries:     []agentpmmachine.ActionSummary{},
		ToolSummaries:       []agentpmmachine.OperationSummary{},
		MCPSummaries:        []agentpmmachine.OperationSummary{},
		KnowledgeSummaries:  []agentpmmachine.OperationSummary{},
		MemorySummaries:     []agentpmmachine.OperationSummary{},
		Usage:               agentpmservice.RunUsage{ModelCalls: &zero, KnowledgeRequests: new(int64), MemoryRequests: new(int64), EmbeddingRequests: new(int64)},
		ApprovalSummary:     agentpmmachine.OutcomeCounts{},
		CancellationSummary: agentpmmachine.OutcomeCounts{},
	}
	if o.StateDir != "" {
		dir, source := o.StateDir, "cli"
		r.Report.Runtime.StateDir, r.Report.Runtime.StateDirSource = &dir, &source
	}
	for _, name := range sortedScopes(o.Scopes) {
		v, _ := json.Marshal(o.Scopes[name])
		r.Report.ScopeSummaries = append(r.Report.ScopeSummaries, agentpmmachine.ScopeSummary{Name: name, ValueAvailable: true, Value: v})
	}
	return r
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// SessionID is the id of the session the Run belongs to.
func (r *Run) SessionID() string { return r.ss.id }

// Registrations lists the host services registered in the session, in
// registration order.
func (r *Run) Registrations() []Registration { return r.ss.registrations() }

// Registration returns the registered host service for role and
// registryID.
func (r *Run) Registration(role agentpmservice.ServiceRole, registryID string) (Registration, bool) {
	return r.ss.registration(role, registryID)
}

// Emit streams a harness_event of type typ with payload.
func (r *Run) Emit(ctx context.Context, typ agentpmmachine.EventType, payload agentpmmachine.EventPayload) error {
	return r.EmitEvent(ctx, &agentpmmachine.HarnessEvent{EventType: typ, Payload: payload})
}

// EmitEvent streams ev as a harness_event, after filling in what the
// Harness writes itself when ev leaves it empty: event_id, session_id,
// run_id, session_sequence, run_sequence and timestamp. The frame carries
// ev's correlation_id as its id; the content policy applies.
func (r *Run) EmitEvent(ctx context.Context, ev *agentpmmachine.HarnessEvent) error {
	ss := r.ss
	n := ss.seq.Add(1)
	if ev.SessionID == "" {
		ev.SessionID = ss.id
	}
	if ev.EventID == "" {
		ev.EventID = "evt-" + ev.SessionID + "-" + strconv.FormatInt(n, 10)
	}
	if ev.SessionSequence == 0 {
		ev.SessionSequence = n
	}
	if ev.RunID == nil {
		ev.RunID = &r.ID
	}
	if ev.RunSequence == nil {
		rs := r.seq.Add(1)
		ev.RunSequence = &rs
	}
	if ev.Timestamp == "" {
		ev.Timestamp = timestamp(ss.s.opts.Now())
	}
	var id rpc.ID
	if ev.CorrelationID != nil {
		id = rpc.StringID(*ev.CorrelationID)
	}
	return ss.notify(ctx, agentpmmachine.MethodHarnessEvent, id, ev)
}

// MCPExportEvent relays a line of a managed MCP export surface.
func (r *Run) MCPExportEvent(ctx context.Context, ev *agentpmmachine.MCPExportEvent) error {
	return r.ss.notify(ctx, agentpmmachine.MethodMCPExportEvent, rpc.ID{}, ev)
}

// Call sends the client a request of any method and decodes its answer
// into result (unless nil): for simulators that test how a client treats
// requests it does not know.
func (r *Run) Call(ctx context.Context, method string, params, result any) error {
	return r.ss.conn.Send(ctx, rpc.Outbound{Method: method, Params: params}, result)
}

// WriteLine writes line (a newline is added when it lacks one) to the
// client as it is, between frames: for simulators that test how a client
// treats malformed or foreign frames.
func (r *Run) WriteLine(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line[:len(line):len(line)], '\n')
	}
	return r.ss.w.writeLine(line)
}

// ErrNotRegistered is matched by the error of a host-service call for a
// role and registry id the client has not registered.
var ErrNotRegistered = errors.New("host service not registered")

// HostServiceError is a host-service call that failed: the client's error
// frame (Err is then an *rpc.Error matching its code), a timeout (Timeout
// is then set) or an answer that does not decode.
type HostServiceError struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	Method     string
	// Timeout is the registered timeout when the call ran out of it.
	Timeout time.Duration
	Err     error
}

func (e *HostServiceError) Error() string {
	what := fmt.Sprintf("host service %s/%s %s", e.Role, e.RegistryID, e.Method)
	if e.Timeout > 0 {
		return fmt.Sprintf("%s timed out after %d ms", what, e.Timeout.Milliseconds())
	}
	return what + ": " + e.Err.Error()
}

func (e *HostServiceError) Unwrap() error { return e.Err }

// HostService calls the client's host service for role and registryID:
// method with payload, decoding the answer into result (unless nil). The
// call is a yield point (a queued memory_operation runs first) and waits
// at most the registration's timeout. A failure streams service_unhealthy
// and service_failed events and returns a *HostServiceError; a call for a
// service that is not registered matches ErrNotRegistered; when ctx ends
// (the Run is cancelled) the call fails with ctx's error.
func (r *Run) HostService(ctx context.Context, role agentpmservice.ServiceRole, registryID, method string, payload, result any) error {
	reg, ok := r.Registration(role, registryID)
	if !ok {
		return fmt.Errorf("host service `%s` with registry ID `%s`: %w", role, registryID, ErrNotRegistered)
	}
	r.Yield(ctx)
	raw, err := json.Marshal(payload, wire.Fidelity)
	if err != nil {
		return fmt.Errorf("harness: host service %s/%s %s: encode payload: %w", role, registryID, method, err)
	}
	r.count(role)
	tctx, cancel := context.WithTimeout(ctx, reg.Timeout)
	defer cancel()
	ans, err := r.ss.peer.HostService(tctx, &agentpmmachine.HostServiceParams{Role: string(role), RegistryID: registryID, Method: method, Payload: raw})
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("host service %s/%s %s: run cancellation requested: %w", role, registryID, method, ctx.Err())
	case err != nil && tctx.Err() != nil:
		err = &HostServiceError{Role: role, RegistryID: registryID, Method: method, Timeout: reg.Timeout, Err: tctx.Err()}
	case err != nil:
		err = &HostServiceError{Role: role, RegistryID: registryID, Method: method, Err: err}
	case result != nil:
		if derr := json.Unmarshal(ans, result); derr != nil {
			err = &HostServiceError{Role: role, RegistryID: registryID, Method: method, Err: fmt.Errorf("invalid host %s response: %w", role, derr)}
		}
	}
	if err != nil {
		r.serviceFailed(ctx, role, registryID, err)
	}
	return err
}

// serviceFailed streams the events the Harness writes when a host service
// fails.
func (r *Run) serviceFailed(ctx context.Context, role agentpmservice.ServiceRole, registryID string, err error) {
	msg := err.Error()
	for _, typ := range []agentpmmachine.EventType{agentpmmachine.EventTypeServiceUnhealthy, agentpmmachine.EventTypeServiceFailed} {
		status := "unhealthy"
		if typ == agentpmmachine.EventTypeServiceFailed {
			status = "failed"
		}
		_ = r.Emit(ctx, typ, agentpmmachine.EventPayload{Service: &agentpmmachine.EventPayloadService{
			Service: string(role), Status: status,
			Fields: &agentpmmachine.ServiceEventFields{RegistryID: &registryID, Message: &msg},
		}})
	}
}

// count adds a host-service call to the Run's usage.
func (r *Run) count(role agentpmservice.ServiceRole) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	u := &r.Report.Usage
	var p **int64
	switch role {
	case agentpmservice.ServiceRoleModel:
		p = &u.ModelCalls
	case agentpmservice.ServiceRoleKnowledge:
		p = &u.KnowledgeRequests
	case agentpmservice.ServiceRoleMemory:
		p = &u.MemoryRequests
	case agentpmservice.ServiceRoleEmbedding:
		p = &u.EmbeddingRequests
	default:
		return
	}
	if *p == nil {
		*p = new(int64)
	}
	**p++
}

// Cancelled reports whether the client has cancelled the Run.
func (r *Run) Cancelled() bool { return r.cancelled.Load() }

// Yield is a yield point: a queued memory_operation runs now.
func (r *Run) Yield(ctx context.Context) {
	r.memMu.Lock()
	op := r.mem
	if op == nil || op.started {
		r.memMu.Unlock()
		return
	}
	op.started = true
	r.memMu.Unlock()
	var res memResult
	switch o := &r.ss.s.opts; {
	case r.Cancelled() || ctx.Err() != nil:
		res.err = errMemoryCancelled()
	case o.MemoryOperation == nil:
		res.err = &rpc.Error{Name: agentpmmachine.ErrMemoryOperationNotDeclared.Name, Message: fmt.Sprintf("memory package `%s` declares no operation `%s`", op.p.Package, op.p.Operation)}
	default:
		res.res, res.err = o.MemoryOperation(ctx, r, op.p)
		if res.err != nil && !errors.As(res.err, new(*rpc.Error)) {
			res.err = &rpc.Error{Name: agentpmmachine.ErrMemoryOperationFailed.Name, Message: res.err.Error()}
		}
	}
	r.memMu.Lock()
	r.mem = nil
	r.memMu.Unlock()
	op.done <- res
}

// queueMemory queues a memory_operation for the Run's next yield point and
// waits for its outcome.
func (r *Run) queueMemory(ctx context.Context, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
	if p.Package == "" || p.Operation == "" {
		return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationInvalidRequest.Name, Message: "memory_operation needs a package and an operation"}
	}
	r.memMu.Lock()
	switch {
	case r.memEnded:
		r.memMu.Unlock()
		return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationNoActiveRun.Name, Message: "memory_operation needs an active Run"}
	case r.mem != nil:
		r.memMu.Unlock()
		return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationBusy.Name, Message: "another memory_operation is pending in this Session"}
	}
	op := &memOp{p: p, done: make(chan memResult, 1)}
	r.mem = op
	r.memMu.Unlock()
	select {
	case res := <-op.done:
		return res.res, res.err
	case <-ctx.Done():
		// Nobody waits for it any more: unless it has started, it does not
		// run, and it does not keep the next one busy.
		r.memMu.Lock()
		if r.mem == op && !op.started {
			r.mem = nil
		}
		r.memMu.Unlock()
		return nil, ctx.Err()
	}
}

// failQueued ends a memory_operation that is queued and has not started
// with err; a running one finishes.
func (r *Run) failQueued(err error, end bool) {
	r.memMu.Lock()
	op := r.mem
	if end {
		r.memEnded = true
	}
	if op == nil || op.started {
		r.memMu.Unlock()
		return
	}
	r.mem = nil
	r.memMu.Unlock()
	op.done <- memResult{err: err}
}

// errMemoryCancelled fails a memory_operation whose Run was cancelled
// before it ran.
func errMemoryCancelled() error {
	return &rpc.Error{Name: agentpmmachine.ErrMemoryOperationCancelled.Name, Message: "the Run was cancelled before the operation ran"}
}

// endMemory ends the queued memory_operation when the Run ends.
func (r *Run) endMemory() {
	r.failQueued(&rpc.Error{Name: agentpmmachine.ErrMemoryOperationRunEnded.Name, Message: "the Run ended before the operation ran"}, true)
}

// cancel marks the Run cancelled, ends its context and fails a queued
// memory_operation.
func (r *Run) cancel() {
	r.cancelled.Store(true)
	if r.stop != nil {
		r.stop()
	}
	r.failQueued(errMemoryCancelled(), false)
}

// execute runs the Run and builds start_run's answer.
func (r *Run) execute(ctx context.Context) (*agentpmmachine.StartRunResult, error) {
	ss := r.ss
	o := &ss.s.opts
	started := o.Now()
	_ = r.Emit(ctx, agentpmmachine.EventTypeRunStarted, lifecycle("Run started", map[string]any{"agent": o.Agent.Name}))
	var out *Outcome
	err := errors.New("this Harness has no Run configured")
	if o.Run != nil {
		out, err = o.Run(ctx, r)
	}
	if exit := (*ExitError)(nil); errors.As(err, &exit) {
		return nil, exit
	}
	// Terminal events are written even though ctx has ended.
	ectx := context.WithoutCancel(ctx)
	status := agentpmmachine.TerminalStatusEnded
	var output jsontext.Value
	switch {
	case r.Cancelled() || ctx.Err() != nil:
		status = agentpmmachine.TerminalStatusCancelled
		r.Report.CancellationSummary["completed"]++
		_ = r.Emit(ectx, agentpmmachine.EventTypeCancellationCompleted, lifecycle("Run cancellation completed", nil))
	case err != nil:
		status = agentpmmachine.TerminalStatusFailed
		r.Report.ErrorCount++
	case out != nil:
		if out.Status != "" {
			status = out.Status
		}
		output = out.Output
	}
	ended := o.Now()
	endedAt, ms := timestamp(ended), ended.Sub(started).Milliseconds()
	rep := r.Report
	rep.EndedAt, rep.DurationMS, rep.TerminalStatus, rep.TerminalOutput = &endedAt, &ms, status, output
	dur := ms
	rep.Usage.DurationMS = wire.Some(dur)
	_ = r.Emit(ectx, agentpmmachine.TerminalEventType(status), agentpmmachine.EventPayload{Terminal: &agentpmmachine.EventPayloadTerminal{Status: status, Output: output}})
	if werr := ss.writeReport(rep); werr != nil {
		err = errors.Join(err, fmt.Errorf("harness: writing the Run report: %w", werr))
	}
	if err != nil && status == agentpmmachine.TerminalStatusFailed {
		if e, ok := errors.AsType[*rpc.Error](err); ok && !fromClient(err, e) {
			return nil, e
		}
		return nil, &rpc.Error{Name: agentpmmachine.ErrRunFailed.Name, Message: err.Error()}
	}
	return &agentpmmachine.StartRunResult{Status: status, Output: output, Report: *rep}, nil
}

// fromClient reports whether e, the first *rpc.Error in err's chain, is a
// client's answer to a host-service call: a host-service failure bubbles
// up as the Run's failure (run_failed, with the client's code and message
// in its text), never as the client's own code.
func fromClient(err error, e *rpc.Error) bool {
	hse, ok := errors.AsType[*HostServiceError](err)
	if !ok {
		return false
	}
	inner, ok := errors.AsType[*rpc.Error](hse.Err)
	return ok && inner == e
}

// lifecycle returns a lifecycle payload; fields may be nil.
func lifecycle(msg string, fields any) agentpmmachine.EventPayload {
	l := &agentpmmachine.EventPayloadLifecycle{Message: msg}
	if fields != nil {
		l.Fields, _ = json.Marshal(fields, json.Deterministic(true))
	}
	return agentpmmachine.EventPayload{Lifecycle: l}
}
