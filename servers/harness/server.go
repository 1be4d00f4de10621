package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/internal/serve"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// DefaultHostServiceTimeout is how long a Run waits for a host service's
// answer unless its registration says otherwise: the Harness's default
// request_timeout_ms.
const DefaultHostServiceTimeout = 120 * time.Second

// DefaultMaxConcurrentRequests is how many client requests a session
// handles at once unless Options.Conn says otherwise: start_run runs for
// the whole Run, and the requests that arrive meanwhile (a second
// start_run, memory_operation, ...) must still be answered.
const DefaultMaxConcurrentRequests = 8

// Options configures a Server. The zero value serves a ready Harness that
// needs no host service and whose Runs fail (Run is nil).
type Options struct {
	// Preflight is the preflight report, computed "at start": written in
	// the startup preflight event and answered by initialize and preflight.
	// Its zero value is a ready report without diagnostics. A failed or
	// selection_required status makes Serve write nothing and return an
	// *ExitError, as the Harness exits before its first frame then.
	Preflight agentpmmachine.PreflightReport
	// Required lists the host services the configuration needs
	// (initialize's required_host_services): start_run answers
	// host_service_not_registered until each is registered.
	Required []agentpmmachine.HostServiceRegistration
	// Accept decides on a register_host_service request that names a
	// registry id and is not ready:false; an error refuses it with
	// host_registration_failed and the error's text. Nil accepts it.
	// (The Harness accepts what its configuration names as type "host",
	// SDK hook bindings and the approval controller: see Configured.)
	Accept func(*agentpmmachine.RegisterHostServiceParams) error
	// Run runs one Run (see RunFunc). Nil makes every Run fail.
	Run RunFunc
	// Input is the Harness's --input: the input of a start_run that has
	// none. Without it such a start_run makes the Harness exit (Serve
	// returns an *ExitError), as the Harness does.
	Input *string
	// MemoryOperation runs a memory_operation request at the active Run's
	// next yield point (Run.Yield, or a host-service call). Nil answers
	// memory_operation_not_declared.
	MemoryOperation func(ctx context.Context, r *Run, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error)
	// Content is the content policy (trace.content) applied to every frame
	// but host_service requests; "" is redacted.
	Content ContentPolicy
	// HostServiceTimeout is how long a Run waits for a host service whose
	// registration gives no request_timeout_ms (default
	// DefaultHostServiceTimeout).
	HostServiceTimeout time.Duration
	// Agent and LoopPackage name the agent and its loop in Run reports.
	Agent, LoopPackage agentpmmachine.PackageIdentity
	// Scopes are the --scope values, reported in each Run's
	// scope_summaries.
	Scopes map[string]string
	// StateDir, if set, receives each Run's report at
	// <StateDir>/runs/<run_id>/report.json.
	StateDir string
	// MCPExports are the MCP export surfaces initialize and preflight
	// report.
	MCPExports []agentpmmachine.MCPExportSnapshot
	// Conn configures the connection. MaxConcurrentRequests 0 means
	// DefaultMaxConcurrentRequests; OnFrameError is called after the
	// session's own handling (late responses answered with protocol_error).
	Conn rpc.Options
	// Now returns the time events and reports carry (default time.Now).
	Now func() time.Time
}

// RunFunc runs one Run: it streams events (Run.Emit), calls the client's
// host services (Run.HostService) and returns how the Run ended. ctx ends
// when the client cancels the Run (cancel_run) or the session ends; a Run
// that returns because of that ends cancelled, whatever it returns. An
// *rpc.Error is answered as it is (run_failed, ...), except the client's
// own error from a failed Run.HostService call: a host-service failure
// fails the Run, answered run_failed with the failure's text; an *ExitError ends
// the session at once without an answer, as a Harness process that exits
// does; any other error fails the Run (run_failed with the error's text).
type RunFunc func(ctx context.Context, r *Run) (*Outcome, error)

// Outcome is how a Run ended.
type Outcome struct {
	Status agentpmmachine.TerminalStatus `json:"status"`
	// Output is the Run's output (any JSON), nil for none. The content
	// policy applies to what the client is sent.
	Output jsontext.Value `json:"output,omitempty"`
}

// ExitError is a Harness process exiting: before its first frame (a
// preflight that failed) or in the middle of a session (a Run that asked
// for it). Serve returns it; Command exits with Code after writing
// Message to stderr.
type ExitError struct {
	Code    int
	Message string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("harness: exit status %d: %s", e.Code, e.Message)
}

// Registration is a host service the client registered.
type Registration struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	// Capabilities is the advertisement the client sent; nil for none.
	Capabilities jsontext.Value
	// Hooks are the hook ids a hook service serves.
	Hooks []agentpmservice.HookID
	// Timeout is how long a Run waits for each call (request_timeout_ms,
	// else Options.HostServiceTimeout).
	Timeout time.Duration
}

// Server serves the Harness side of agentpm harness --machine: any number
// of sessions, one per Serve call, each enforcing the session rules.
type Server struct {
	opts Options
}

// New returns a Server with a copy of opts (nil for the zero Options).
func New(opts *Options) *Server {
	s := &Server{}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	if o.Preflight.Status == "" {
		o.Preflight.Status = agentpmmachine.PreflightStatusReady
	}
	if o.Preflight.Diagnostics == nil {
		o.Preflight.Diagnostics = []agentpmmachine.PreflightDiagnostic{}
	}
	if o.HostServiceTimeout <= 0 {
		o.HostServiceTimeout = DefaultHostServiceTimeout
	}
	if o.Conn.MaxConcurrentRequests == 0 {
		o.Conn.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Agent.Name == "" {
		o.Agent = agentpmmachine.PackageIdentity{Name: "@bridgekit/fake-agent", Version: "0.1.0"}
	}
	if o.LoopPackage.Name == "" {
		o.LoopPackage = agentpmmachine.PackageIdentity{Name: "@bridgekit/fake-loop", Version: "0.1.0"}
	}
	if o.MCPExports == nil {
		o.MCPExports = []agentpmmachine.MCPExportSnapshot{}
	}
	return s
}

// Configured returns an Options.Accept function with the Harness's own
// rule: a registration is accepted when configured lists its role and
// registry id (type "host" implementations), when it is a hook service
// with a non-empty hooks list (SDK hook bindings), or when it is the
// approval controller (role approval, registry id controller).
func Configured(configured []agentpmmachine.HostServiceRegistration) func(*agentpmmachine.RegisterHostServiceParams) error {
	return func(p *agentpmmachine.RegisterHostServiceParams) error {
		r, _ := p.Registration()
		for _, c := range configured {
			if c.Role == r.Role && c.RegistryID == r.RegistryID {
				return nil
			}
		}
		switch {
		case r.Role == agentpmservice.ServiceRoleHook && len(p.Hooks) > 0:
			return nil
		case r.Role == agentpmservice.ServiceRoleApproval && r.RegistryID == "controller":
			return nil
		}
		return fmt.Errorf("host service `%s` with registry ID `%s` is not configured", r.Role, r.RegistryID)
	}
}

// Serve runs one session on r (the client's requests) and w (the Harness's
// frames): it writes the startup preflight event, then serves requests
// until the client ends its input, shutdown is answered (the session ends
// once the answer is written), a Run asks to exit (an *ExitError) or ctx
// ends (ctx's error). The connection is closed before Serve returns; nil
// means the session ended normally. r is read by a goroutine of its own,
// which returns when a Read of r does.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if st := s.opts.Preflight.Status; st != agentpmmachine.PreflightStatusReady && st != agentpmmachine.PreflightStatusReadyWithWarnings {
		return &ExitError{Code: 1, Message: preflightFailure(&s.opts.Preflight)}
	}
	if err := s.opts.Content.Check(); err != nil {
		return err
	}
	// The connection reads through a pipe of its own, which shutdown
	// closes: the engine then answers what it has read and ends, whatever
	// r is (a Read blocked on a terminal or a pipe cannot be interrupted).
	pr, pw := io.Pipe()
	defer pr.Close()
	sess := &session{
		s:     s,
		id:    newID("sess"),
		r:     pr,
		w:     &lockedWriter{w: w},
		ready: make(chan struct{}),
		exit:  make(chan error, 1),
		regs:  map[regKey]*Registration{},
	}
	opts := s.opts.Conn
	user := opts.OnFrameError
	opts.OnFrameError = func(fe *rpc.FrameError) {
		sess.frameError(fe)
		if user != nil {
			user(fe)
		}
	}
	// Requests are answered in turn, as the Harness's main loop reads a
	// request, handles it and answers it before it reads the next; a Run
	// in progress gives up its turn (see handle).
	opts.Ordered = true
	sess.conn = rpc.NewConn(pr, sess.w, agentpmmachine.NewCodec("host-", ""), rpc.HandlerFunc(sess.handle), agentpmmachine.ConnOptions(&opts))
	defer sess.conn.Close()
	sess.peer = agentpmmachine.NewClientPeer(sess.conn)
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err)
		// Nobody is left to serve the Run's host services.
		sess.inputEnded()
	}()
	// The startup event is the first frame: requests wait for it.
	err := sess.notify(ctx, agentpmmachine.MethodPreflightEvent, rpc.ID{}, &agentpmmachine.PreflightEvent{Status: s.opts.Preflight.Status, Report: s.opts.Preflight})
	close(sess.ready)
	if err != nil {
		return fmt.Errorf("harness: startup preflight event: %w", err)
	}
	select {
	case <-sess.conn.Done():
		return serve.Ended(sess.conn.Err())
	case err := <-sess.exit:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// preflightFailure is the message of a Harness that exits because
// preflight did not pass.
func preflightFailure(rep *agentpmmachine.PreflightReport) string {
	msg := "preflight " + string(rep.Status)
	for _, d := range rep.Diagnostics {
		if d.Severity == agentpmmachine.DiagnosticSeverityFatal || rep.Status == agentpmmachine.PreflightStatusSelectionRequired {
			msg += "; " + d.Code + ": " + d.Message
		}
	}
	return msg
}

type regKey struct{ role, id string }

// session is one machine session.
type session struct {
	s    *Server
	id   string
	r    *io.PipeReader
	w    *lockedWriter
	conn *rpc.Conn
	peer *agentpmmachine.ClientPeer
	// ready is closed once the startup event is written; handlers wait
	// for it.
	ready chan struct{}
	exit  chan error
	seq   atomic.Int64 // session_sequence of the last event

	mu          sync.Mutex
	initialized bool
	shutdown    bool
	regs        map[regKey]*Registration
	order       []regKey
	run         *Run // the active Run
	ended       bool // the client's input has ended
	unclaimed   int  // Runs a cancel_run ended that it has not yet seen
	started     int64
	completed   int64
}

// handle serves every request, applying the content policy to results.
func (ss *session) handle(ctx context.Context, req *rpc.Request) (any, error) {
	select {
	case <-ss.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h := &agentpmmachine.HarnessHandlers{
		Initialize:          ss.initialize,
		RegisterHostService: ss.register,
		Preflight:           ss.preflight,
		StartRun:            ss.startRun,
		CancelRun:           ss.cancelRun,
		MemoryOperation:     ss.memoryOperation,
		Shutdown:            ss.shutdownReq,
		Fallback:            rpc.HandlerFunc(ss.unknown),
	}
	if req.Kind == rpc.KindNotification {
		// The Harness reads nothing but requests; an event from the client
		// is refused like any frame that is not one.
		ss.protocolError(req.ID, "machine input frames must use kind `request`")
		return nil, nil
	}
	if ss.active() {
		// The Harness's stdin reader answers requests during a Run at
		// once (or at the Run's yield points), not in turn.
		rpc.Release(ctx)
	}
	req, err := ss.params(req)
	if err != nil {
		return nil, err
	}
	res, err := h.Handle(ctx, req)
	if err != nil || res == nil {
		return res, err
	}
	return ss.redact(res)
}

// params decodes a request's payload as the Harness does, method by
// method, so that a payload it cannot decode is never answered with a
// generic invalid-params code, which the machine protocol does not have:
// initialize, preflight, cancel_run and shutdown ignore their payload;
// start_run takes payload.input only when it is a string (else it is
// missing, and the Harness exits); register_host_service fails with
// host_registration_failed, memory_operation with
// memory_operation_no_active_run when idle, else
// memory_operation_invalid_request. It returns the request to handle: req,
// or a copy with the payload the Harness would have seen.
func (ss *session) params(req *rpc.Request) (*rpc.Request, error) {
	var p any
	switch req.Method {
	case agentpmmachine.MethodInitialize, agentpmmachine.MethodPreflight, agentpmmachine.MethodCancelRun, agentpmmachine.MethodShutdown:
		p = &agentpmmachine.EmptyParams{}
	case agentpmmachine.MethodStartRun:
		p = &agentpmmachine.StartRunParams{}
	case agentpmmachine.MethodRegisterHostService:
		p = &agentpmmachine.RegisterHostServiceParams{}
	case agentpmmachine.MethodMemoryOperation:
		p = &agentpmmachine.MemoryOperationParams{}
	default:
		return req, nil
	}
	err := rpc.DecodeParams(req.Params, p)
	if err == nil {
		return req, nil
	}
	switch req.Method {
	case agentpmmachine.MethodRegisterHostService:
		if ss.active() {
			return nil, runActive(req.Method)
		}
		return nil, registrationFailed("invalid host service registration: %s", rpc.Truncate(err.Error(), rpc.MaxEcho))
	case agentpmmachine.MethodMemoryOperation:
		if !ss.active() {
			return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationNoActiveRun.Name, Message: "memory_operation needs an active Run"}
		}
		return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationInvalidRequest.Name, Message: "invalid memory_operation request: " + rpc.Truncate(err.Error(), rpc.MaxEcho)}
	}
	// The payload is ignored (start_run: its input is missing).
	cp := *req
	cp.Params = jsontext.Value("{}")
	return &cp, nil
}

// redact encodes v and applies the content policy.
func (ss *session) redact(v any) (jsontext.Value, error) {
	raw, err := json.Marshal(v, wire.Fidelity)
	if err != nil {
		return nil, err
	}
	return Redact(raw, ss.s.opts.Content)
}

// notify writes an event after applying the content policy.
func (ss *session) notify(ctx context.Context, method string, id rpc.ID, params any) error {
	raw, err := ss.redact(params)
	if err != nil {
		return err
	}
	return ss.conn.Send(ctx, rpc.Outbound{Kind: rpc.KindNotification, Method: method, Params: raw, ID: id}, nil)
}

// frameError answers a late or unsolicited response as the Harness does.
func (ss *session) frameError(fe *rpc.FrameError) {
	if fe.Kind != rpc.FrameUnknownResponse || fe.ID.IsZero() {
		return
	}
	ss.protocolError(fe.ID, "unexpected machine frame for id "+rpc.Truncate(fe.ID.String(), rpc.MaxEcho)+": no host service request is waiting for it")
}

// protocolError writes a protocol_error frame under id (none when it is
// zero) for a frame the engine does not answer itself.
func (ss *session) protocolError(id rpc.ID, msg string) {
	var b []byte
	b = append(b, `{"protocol":"agentpm-harness-machine","version":1,"kind":"error",`...)
	if !id.IsZero() {
		b = append(b, `"id":`...)
		b = append(b, id.String()...)
		b = append(b, ',')
	}
	b = append(b, `"payload":null,"error":{"code":"protocol_error","message":`...)
	b, _ = jsontext.AppendQuote(b, msg)
	b = append(b, "}}\n"...)
	_ = ss.w.writeLine(b)
}

func runActive(method string) error {
	return &rpc.Error{Name: agentpmmachine.ErrRunActive.Name, Message: fmt.Sprintf("machine request `%s` is unavailable while a Run is active", rpc.Truncate(method, rpc.MaxEcho))}
}

// active reports whether a Run is active.
func (ss *session) active() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.run != nil
}

func (ss *session) unknown(_ context.Context, req *rpc.Request) (any, error) {
	if ss.active() {
		return nil, runActive(req.Method)
	}
	return nil, &rpc.Error{Name: agentpmmachine.ErrUnknownMethod.Name, Code: rpc.CodeMethodNotFound, Message: fmt.Sprintf("unknown machine method `%s`", rpc.Truncate(req.Method, rpc.MaxEcho))}
}

func (ss *session) initialize(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.InitializeResult, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.run != nil {
		return nil, runActive(agentpmmachine.MethodInitialize)
	}
	ss.initialized = true
	o := &ss.s.opts
	required := o.Required
	if required == nil {
		required = []agentpmmachine.HostServiceRegistration{}
	}
	return &agentpmmachine.InitializeResult{Preflight: o.Preflight, MCPExports: o.MCPExports, RequiredHostServices: required}, nil
}

func (ss *session) preflight(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.PreflightResult, error) {
	if ss.active() {
		return nil, &rpc.Error{Name: agentpmmachine.ErrRunActive.Name, Message: "preflight control is unavailable while a Run is active"}
	}
	return &agentpmmachine.PreflightResult{Report: ss.s.opts.Preflight, MCPExports: ss.s.opts.MCPExports}, nil
}

func registrationFailed(format string, args ...any) error {
	return &rpc.Error{Name: agentpmmachine.ErrHostRegistrationFailed.Name, Message: fmt.Sprintf(format, args...)}
}

func (ss *session) register(_ context.Context, p *agentpmmachine.RegisterHostServiceParams) (*agentpmmachine.RegisterHostServiceResult, error) {
	if ss.active() {
		return nil, runActive(agentpmmachine.MethodRegisterHostService)
	}
	r, ok := p.Registration()
	switch {
	case !ok || r.RegistryID == "":
		return nil, registrationFailed("host service `%s` registration needs a registry_id", r.Role)
	case !r.Role.Known():
		return nil, registrationFailed("unknown host service role `%s`", r.Role)
	case p.Ready != nil && !*p.Ready:
		return nil, registrationFailed("host service `%s` with registry ID `%s` reported ready:false", r.Role, r.RegistryID)
	case r.Role == agentpmservice.ServiceRoleHook:
		for _, h := range p.Hooks {
			if !h.Known() {
				return nil, registrationFailed("unknown hook id `%s`", h)
			}
		}
	}
	if accept := ss.s.opts.Accept; accept != nil {
		if err := accept(p); err != nil {
			return nil, registrationFailed("%s", err.Error())
		}
	}
	reg := &Registration{Role: r.Role, RegistryID: r.RegistryID, Capabilities: p.Capabilities, Hooks: p.Hooks, Timeout: ss.s.opts.HostServiceTimeout}
	if p.RequestTimeoutMS != nil && *p.RequestTimeoutMS > 0 {
		reg.Timeout = time.Duration(*p.RequestTimeoutMS) * time.Millisecond
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.run != nil {
		return nil, runActive(agentpmmachine.MethodRegisterHostService)
	}
	k := regKey{string(r.Role), r.RegistryID}
	if _, ok := ss.regs[k]; !ok {
		ss.order = append(ss.order, k)
	}
	ss.regs[k] = reg // registering again replaces the capabilities
	return &agentpmmachine.RegisterHostServiceResult{Service: r, Active: true}, nil
}

// registrations lists the registered host services in registration order.
func (ss *session) registrations() []Registration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]Registration, 0, len(ss.order))
	for _, k := range ss.order {
		out = append(out, *ss.regs[k])
	}
	return out
}

func (ss *session) registration(role agentpmservice.ServiceRole, id string) (Registration, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	r, ok := ss.regs[regKey{string(role), id}]
	if !ok {
		return Registration{}, false
	}
	return *r, true
}

func (ss *session) cancelRun(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.CancelRunResult, error) {
	// The engine has already ended the running start_run's context (the
	// protocol's cancel rule); this answers at once, in every state.
	ss.mu.Lock()
	run := ss.run
	claimed := run == nil && ss.unclaimed > 0
	if claimed {
		// The Run this cancel_run ended has already finished.
		ss.unclaimed--
	}
	ss.mu.Unlock()
	switch {
	case run != nil:
		run.cancel()
	case !claimed:
		note := "no Run is active"
		return &agentpmmachine.CancelRunResult{Note: &note}, nil
	}
	return &agentpmmachine.CancelRunResult{}, nil
}

func (ss *session) shutdownReq(context.Context, *agentpmmachine.EmptyParams) (*agentpmmachine.ShutdownResult, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.run != nil {
		return nil, runActive(agentpmmachine.MethodShutdown)
	}
	ss.shutdown = true
	// Ending the input makes the engine answer what it has read (this
	// request included), write every reply and finish.
	_ = ss.r.Close()
	return &agentpmmachine.ShutdownResult{}, nil
}

func (ss *session) startRun(ctx context.Context, p *agentpmmachine.StartRunParams) (*agentpmmachine.StartRunResult, error) {
	o := &ss.s.opts
	ss.mu.Lock()
	switch {
	case ss.run != nil:
		ss.mu.Unlock()
		return nil, &rpc.Error{Name: agentpmmachine.ErrSessionBusy.Name, Message: "a Harness Run is already active in this Session"}
	case !ss.initialized:
		ss.mu.Unlock()
		return nil, &rpc.Error{Name: agentpmmachine.ErrNotInitialized.Name, Message: "initialize must complete before start_run"}
	case o.Preflight.Status != agentpmmachine.PreflightStatusReady && o.Preflight.Status != agentpmmachine.PreflightStatusReadyWithWarnings:
		ss.mu.Unlock()
		return nil, &rpc.Error{Name: agentpmmachine.ErrPreflightNotReady.Name, Message: "preflight is " + string(o.Preflight.Status)}
	}
	var missing []string
	for _, r := range o.Required {
		if _, ok := ss.regs[regKey{string(r.Role), r.RegistryID}]; !ok {
			missing = append(missing, fmt.Sprintf("HostServiceRegistration { role: %q, registry_id: %q }", string(r.Role), r.RegistryID))
		}
	}
	if len(missing) > 0 {
		ss.mu.Unlock()
		return nil, &rpc.Error{Name: agentpmmachine.ErrHostServiceNotRegistered.Name, Message: "missing required host service registrations: [" + strings.Join(missing, ", ") + "]"}
	}
	input := p.Input
	if input == nil {
		input = o.Input
	}
	if input == nil {
		ss.mu.Unlock()
		// The Harness exits rather than answer a start_run without input.
		ss.exitNow(&ExitError{Code: 1, Message: "start_run requires a string payload.input (or --input)"})
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	run := newRun(ss, p, *input)
	run.stop = stop
	ss.run = run
	ss.started++
	if ss.ended {
		run.cancel()
	}
	ss.mu.Unlock()
	rpc.Release(ctx) // the Run is active: what arrives now is answered meanwhile

	res, err := run.execute(ctx)

	ss.mu.Lock()
	ss.run = nil
	if err == nil {
		ss.completed++
	}
	if ctx.Err() != nil && !run.Cancelled() {
		// Ended by the engine's cancel rule before its cancel_run was
		// handled: that cancel_run still reports a Run.
		ss.unclaimed++
	}
	ss.mu.Unlock()
	if ctx.Err() != nil {
		// Cancelled, possibly by the engine's cancel rule before cancel_run's
		// handler ran: a queued operation was cancelled, not outlived.
		run.failQueued(errMemoryCancelled(), false)
	}
	run.endMemory()
	var exit *ExitError
	if errors.As(err, &exit) {
		ss.exitNow(exit)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return res, err
}

// inputEnded cancels the active Run, and any that starts later, once the
// client's input has ended.
func (ss *session) inputEnded() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.ended = true
	if ss.run != nil {
		ss.run.cancel()
	}
}

// exitNow ends the session at once, without answering what is pending:
// nothing is written after it, whatever the handlers still return.
func (ss *session) exitNow(err error) {
	ss.w.stop()
	select {
	case ss.exit <- err:
	default:
	}
}

func (ss *session) memoryOperation(ctx context.Context, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
	ss.mu.Lock()
	run := ss.run
	ss.mu.Unlock()
	if run == nil {
		return nil, &rpc.Error{Name: agentpmmachine.ErrMemoryOperationNoActiveRun.Name, Message: "memory_operation needs an active Run"}
	}
	return run.queueMemory(ctx, p)
}

// writeReport writes a Run's report under the state directory.
func (ss *session) writeReport(rep *agentpmmachine.RunReport) error {
	dir := ss.s.opts.StateDir
	if dir == "" {
		return nil
	}
	raw, err := ss.redact(rep)
	if err != nil {
		return err
	}
	out, err := jsontext.AppendFormat(nil, raw, jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "runs", rep.RunID, "report.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

// lockedWriter serialises the connection's writes and raw lines, so that a
// raw line never lands inside a frame.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	shut atomic.Bool // the Harness is exiting: nothing more is written
}

// errExiting fails the writes of a Harness that is exiting.
var errExiting = errors.New("harness: exiting")

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut.Load() {
		return 0, errExiting
	}
	return l.w.Write(p)
}

// stop makes every later write fail, without waiting for the one in
// progress (which a stdout nobody reads can block).
func (l *lockedWriter) stop() { l.shut.Store(true) }

func (l *lockedWriter) writeLine(p []byte) error {
	_, err := l.Write(p)
	return err
}

// Close closes the underlying writer if it can be closed.
func (l *lockedWriter) Close() error {
	if c, ok := l.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// newID returns prefix-<time hex>-<random hex>, the shape of the Harness's
// session and Run ids.
func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%x-%s", prefix, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}

// sortedScopes returns the scope names in order.
func sortedScopes(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
