// Package service consumes AgentPM process providers from Go: it starts a
// provider of one role (model, embedding, hook, knowledge, memory or
// approval) as a child process, performs the agentpm-service v1 handshake,
// checks what the provider reports, and calls its methods with timeouts,
// restarting it when it dies. It does what the Harness does with a
// configured `type: "process"` implementation, so a Go program can use the
// same providers, and providers can be tested the way the Harness will
// drive them.
//
//	c, err := service.Start(ctx, service.Config{
//		Role:       agentpmservice.ServiceRoleKnowledge,
//		RegistryID: "kb",
//		Command:    []string{"knowledge-provider", "-root", "docs"},
//		Initialize: &agentpmservice.KnowledgeInitialize{Packages: snapshots},
//	})
//	if errors.Is(err, service.ErrUnavailable) { ... } // preflight: a typed reason
//	defer c.Close()
//	res, err := c.Retrieve(ctx, &agentpmservice.RetrievePayload{Request: ...})
//
// The Client embeds the generated agentpmservice.ServicePeer, so every
// method of its role is a typed method; a method of another role is
// refused without a round trip (unsupported_capability).
//
// # Preflight
//
// Start returns a working client or an *UnavailableError whose Reason says
// why the provider cannot be used: it could not start, exited, timed out,
// answered in another protocol or version, reported another role or
// registry id, said ready false, or does not advertise what its role needs
// (an embedding space; a knowledge mode; the memory descriptor and every
// routed package attested ready; the configured hooks; approval not
// refused). Knowledge packages the provider does not attest are listed by
// Preflight and refused locally, while the others are served.
//
// # The handshake carries no secrets
//
// The provider's environment is BaselineEnv plus the names listed in
// Config.Env (taken from this process's environment) plus Config.SetEnv:
// nothing else of this process's environment reaches it. The handshake
// payload is the role data given in Config.Initialize and, when set,
// Config.Session (session id and workspace). Before it is sent, its string
// values are checked against the values of this process's environment
// variables, and of Config.SetEnv's, whose names look secret (TOKEN,
// SECRET, PASSWORD, API_KEY, CREDENTIAL, DATABASE_URL, WEBHOOK, ...:
// redact.EnvName): a payload that would carry one is not sent, and the
// provider is unavailable (ReasonUnsafeMetadata). Pass secrets to a
// provider through Config.Env instead.
//
// What the provider writes is quoted with secrets masked (runtime/redact):
// the tail of its stderr, its error messages, bad frames and everything
// logged about it mask the values of Config.Env's and Config.SetEnv's
// variables, those of its environment whose names look secret, and token
// shapes. The provider runs in a process group of its own, and whatever
// it started is killed with it.
//
// # Calls, deaths and restarts
//
// Calls are sent one at a time, as the Harness sends them: the Client is
// safe for concurrent use, and a call waits for the one before it to be
// answered or to fail. Each call runs under Config.RequestTimeout (or its
// context's deadline, if sooner), its wait included, and Close fails
// waiting calls with ErrClosed. A call that times out fails with a
// *TimeoutError. A provider that has not read the whole request when the
// call's context ends (its input stays full) is killed, since a request
// cut short would corrupt its input, and restarted like one that died. The reply that arrives later, even while the next call
// waits for its own, is dropped and reported (Stats.LateReplies,
// Config.OnFrameError), never delivered to another call: no request id is
// used twice (ids continue across restarts, numbered as the Harness
// numbers them, <role>-<registry id>-<n>), and the client tracks the one
// request it has outstanding, so that only a line whose id cannot be read
// is taken for that request's answer.
//
// A provider that dies while a call waits for its answer fails it at once
// with an *ExitError carrying its exit status and the tail of its stderr;
// failed calls are never replayed. The client then restarts the provider,
// up to Config.Restart.MaxAttempts times over its life, waiting
// Restart.Backoff (doubling up to Restart.MaxBackoff) before each attempt;
// calls made meanwhile wait for it (within their timeout). The Harness also
// restarts a provider after a timeout or an error frame; Config.RestartOnTimeout
// and Config.RestartOnError do the same here. A restarted provider that
// fails to start or to pass its handshake spends an attempt too. Once the
// budget is spent, every call fails with an *UnavailableError: the client
// never falls back to another runtime. Config.OnLifecycle sees the Harness's lifecycle statuses
// (service_starting, service_handshaking, service_ready, service_unhealthy,
// service_restarting, service_failed, service_stopped).
//
// Frames the provider writes are checked as the Harness checks them: a
// reply in another protocol or version, with another role in its service
// member, or malformed, fails the call it answers (a line whose id cannot be
// read fails the pending call); frames are never answered; events are
// ignored, except one that carries the pending request's id, which fails
// that call as it fails the Harness's. Diagnostics go to Config.Logger.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Defaults of Config, the Harness's where it has them.
const (
	DefaultStartupTimeout = 15 * time.Second
	DefaultRequestTimeout = 120 * time.Second
	DefaultMaxAttempts    = 1
	DefaultBackoff        = 250 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultStopGrace      = 2 * time.Second
	DefaultStderrTail     = 8 << 10
)

// Config configures a Client. Role, RegistryID and Command are required.
type Config struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	// Command is the provider's program and arguments, run directly (no
	// shell); a program name without a slash is looked up in PATH.
	Command []string
	// Dir is the provider's working directory (default: this process's).
	Dir string
	// Env names the variables of this process's environment passed to the
	// provider beside BaselineEnv (the only way a secret should reach it).
	Env []string
	// SetEnv are NAME=value entries added to the provider's environment.
	SetEnv []string
	// Initialize is the handshake's role data: a
	// *agentpmservice.<Role>Initialize of the client's role (its
	// RegistryID is set from RegistryID; role and protocol_version are
	// written by the type). Nil sends the role's payload with no data
	// (empty packages, spaces or hooks).
	Initialize any
	// Session, when set, is sent in the handshake as its session member.
	Session *Session
	// StartupTimeout bounds each handshake (default 15s); RequestTimeout
	// each call, its wait for the call before it included (default 120s;
	// approvals may need longer).
	StartupTimeout, RequestTimeout time.Duration
	// Restart is the restart policy for a provider that dies.
	Restart Restart
	// RestartOnTimeout makes a call that times out kill the provider, which
	// is then restarted like one that died (the Harness restarts a provider
	// after any failed request). By default a timed-out provider is kept,
	// and its late reply dropped; the provider serves one request at a time,
	// so the next call then waits behind the work it is still doing.
	RestartOnTimeout bool
	// RestartOnError makes an error frame from the provider kill it, to be
	// restarted like one that died, as AgentPM's Harness treats every
	// failed request. By default the error is returned (an *rpc.Error with
	// the provider's code, message and retryable flag) and the provider
	// kept.
	RestartOnError bool
	// StopGrace is how long Close waits for the provider to exit after its
	// stdin is closed before it kills it (default 2s).
	StopGrace time.Duration
	// StderrTail is how many bytes of the provider's stderr are kept for
	// errors (default 8 KiB); Stderr, when set, also receives all of it.
	StderrTail int
	Stderr     io.Writer
	// Logger receives diagnostics (default: discard).
	Logger *slog.Logger
	// OnLifecycle, if set, is called with every lifecycle change, from the
	// client's goroutines; it must not block for long.
	OnLifecycle func(Lifecycle)
	// OnFrameError, if set, receives every line of the provider that is
	// rejected or dropped, late replies included (see rpc.Options).
	OnFrameError func(*rpc.FrameError)
	// Conn configures the connections (frame and queue limits). Its Screen
	// and OnBadFrame run after the client's own gates; NextID is the
	// client's (ids go on across restarts).
	Conn rpc.Options
}

// Restart is a restart policy.
type Restart struct {
	// MaxAttempts is how many restarts the client makes over its life
	// (default 1, the Harness's; negative: none).
	MaxAttempts int
	// Backoff is the wait before the first restart (default 250ms); each
	// further attempt waits twice as long, up to MaxBackoff (default 5s).
	Backoff, MaxBackoff time.Duration
}

// Session is the session and workspace metadata of a handshake: opaque
// labels, safe to show the provider.
type Session struct {
	ID        string `json:"id,omitzero"`
	Workspace string `json:"workspace,omitzero"`
}

// Lifecycle is a change in the provider's life, named as the Harness's
// service lifecycle events are.
type Lifecycle struct {
	Status     string // service_starting, service_handshaking, ...
	Role       agentpmservice.ServiceRole
	RegistryID string
	// Attempt counts restarts (0 for the first start).
	Attempt int
	Message string
	// Err is the failure behind service_unhealthy and service_failed.
	Err error
}

// The lifecycle statuses.
const (
	StatusStarting    = "service_starting"
	StatusHandshaking = "service_handshaking"
	StatusReady       = "service_ready"
	StatusUnhealthy   = "service_unhealthy"
	StatusRestarting  = "service_restarting"
	StatusFailed      = "service_failed"
	StatusStopped     = "service_stopped"
)

// Stats counts what happened to a client.
type Stats struct {
	// Restarts counts restart attempts made.
	Restarts int
	// LateReplies counts replies dropped because no call waited for them
	// any more (a request that timed out).
	LateReplies int64
}

// Client is a started provider of one role.
type Client struct {
	*agentpmservice.ServicePeer
	cfg     Config
	log     *slog.Logger
	payload jsontext.Value // the handshake's
	late    atomic.Int64
	redact  *redact.Redactor // masks what the provider writes, in errors and logs

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slot   chan struct{} // one request in flight, as the Harness sends them

	mu        sync.Mutex
	cur       *proc         // nil while restarting, failed or closed
	changed   chan struct{} // closed and replaced when cur or failure change
	failure   error         // why calls fail: *UnavailableError or ErrClosed
	attempts  int
	lastID    uint64 // the last request id number of the previous processes
	preflight Preflight
}

// Preflight is what the handshake found.
type Preflight struct {
	Role       agentpmservice.ServiceRole
	RegistryID string
	// Readiness is the provider's handshake result as it was sent.
	Readiness jsontext.Value
	// Unavailable lists the knowledge packages of the handshake that the
	// provider did not attest ready; requests for them are refused.
	Unavailable []*UnavailableError
}

// Start starts the provider, performs the handshake and checks it. It
// returns an *UnavailableError (errors.Is(err, ErrUnavailable)) when the
// provider cannot be used, after stopping it, and an error matching
// ErrConfig for a Config it cannot use.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.defaults()
	c := &Client{cfg: cfg, changed: make(chan struct{}), slot: make(chan struct{}, 1)}
	c.redact = child.Redactor(environ(&c.cfg), c.cfg.Env, c.cfg.SetEnv)
	c.log = child.Logger(cfg.Logger, c.redact)
	c.ServicePeer = agentpmservice.NewServicePeer(c)
	var err error
	if c.payload, err = c.handshakePayload(); err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.unsafeMetadata(); err != nil {
		c.cancel()
		return nil, err
	}
	if err := c.launch(ctx); err != nil {
		c.cancel()
		c.wg.Wait()
		c.emit(Lifecycle{Status: StatusFailed, Message: err.Error(), Err: err})
		return nil, err
	}
	return c, nil
}

func (cfg *Config) check() error {
	if _, ok := handshakeTypes[cfg.Role]; !ok {
		return fmt.Errorf("%w: unknown role %q", ErrConfig, cfg.Role)
	}
	if cfg.RegistryID == "" || len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return fmt.Errorf("%w: Role, RegistryID and Command are required", ErrConfig)
	}
	if in, _ := cfg.Initialize.(*agentpmservice.ModelInitialize); cfg.Role == agentpmservice.ServiceRoleModel && (in == nil || in.Model == "") {
		return fmt.Errorf("%w: a model provider's Initialize must name the configured model", ErrConfig)
	}
	return nil
}

func (cfg *Config) defaults() {
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	switch {
	case cfg.Restart.MaxAttempts == 0:
		cfg.Restart.MaxAttempts = DefaultMaxAttempts
	case cfg.Restart.MaxAttempts < 0:
		cfg.Restart.MaxAttempts = 0
	}
	if cfg.Restart.Backoff <= 0 {
		cfg.Restart.Backoff = DefaultBackoff
	}
	if cfg.Restart.MaxBackoff <= 0 {
		cfg.Restart.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = DefaultStderrTail
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
}

// idPrefix is the prefix of request ids: <role>-<registry id>-.
func (cfg *Config) idPrefix() string {
	prefix := string(cfg.Role) + "-" + cfg.RegistryID + "-"
	if q, err := jsontext.AppendQuote(nil, prefix); err != nil || string(q) != `"`+prefix+`"` {
		return string(cfg.Role) + "-" // a registry id that needs escaping stays out of the ids
	}
	return prefix
}

// emit reports a lifecycle change.
func (c *Client) emit(l Lifecycle) {
	l.Role, l.RegistryID = c.cfg.Role, c.cfg.RegistryID
	c.log.Debug("service: lifecycle", "status", l.Status, "role", l.Role, "registry_id", l.RegistryID, "attempt", l.Attempt, "message", l.Message)
	if c.cfg.OnLifecycle != nil {
		c.cfg.OnLifecycle(l)
	}
}

// launch starts a provider process and performs its handshake; on success
// the process is the client's live provider. On failure the process is
// stopped and the error is an *UnavailableError, or ErrClosed when the
// client was closed meanwhile.
func (c *Client) launch(ctx context.Context) error {
	c.mu.Lock()
	gen, base := c.attempts, c.lastID
	c.mu.Unlock()
	c.emit(Lifecycle{Status: StatusStarting, Attempt: gen})
	p, err := c.spawn(gen, base)
	if err != nil {
		return c.unavailable(ReasonStart, fmt.Sprintf("start %s: %v", c.cfg.Command[0], err), err)
	}
	c.wg.Go(func() { c.watch(p) })
	c.emit(Lifecycle{Status: StatusHandshaking, Attempt: gen})
	pf, err := c.handshake(ctx, p)
	if err == nil {
		// Reported before the provider is published, so that no call
		// is answered by it before its readiness is reported.
		c.emit(Lifecycle{Status: StatusReady, Attempt: gen})
	}
	c.mu.Lock()
	c.lastID = max(c.lastID, p.ids.last.Load())
	switch {
	case err != nil:
	case c.failure == ErrClosed:
		err = ErrClosed
	case p.dead:
		// It died between its answer and now: watch has seen it go.
		err = c.unavailable(ReasonExited, "the provider exited right after its handshake", nil)
	default:
		c.cur, c.preflight = p, *pf
		close(c.changed)
		c.changed = make(chan struct{})
	}
	c.mu.Unlock()
	if err != nil {
		p.kill()
		<-p.exited
		if u, ok := errors.AsType[*UnavailableError](err); ok && u.Reason == ReasonExited {
			u.Stderr = p.stderr.String()
		}
	}
	return err
}

// unavailable builds the client's *UnavailableError.
// Detail, which may quote the provider, is masked.
func (c *Client) unavailable(reason Reason, detail string, err error) *UnavailableError {
	return &UnavailableError{Role: c.cfg.Role, RegistryID: c.cfg.RegistryID, Reason: reason, Detail: c.redact.String(detail), Err: err}
}

// Preflight returns what the last handshake found.
func (c *Client) Preflight() Preflight {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.preflight
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Restarts: c.attempts, LateReplies: c.late.Load()}
}

// PID returns the process id of the live provider, or 0 while there is
// none (restarting, failed or closed).
func (c *Client) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return 0
	}
	return c.cur.cmd.Process.Pid
}

// Role returns the provider's role.
func (c *Client) Role() agentpmservice.ServiceRole { return c.cfg.Role }

// Send implements rpc.Sender for the embedded ServicePeer: it sends m to
// the current provider under the request timeout and turns the ways a call
// can fail into this package's typed errors (see the package doc). The
// provider's own error frames are returned as *rpc.Error, matching the
// agentpmservice Err* codes.
//
// The text of every error it returns has the provider's secrets masked
// (see the package doc); errors.Is and errors.As see the same chain.
func (c *Client) Send(ctx context.Context, m rpc.Outbound, result any) error {
	return child.MaskError(c.redact, c.send(ctx, m, result))
}

func (c *Client) send(ctx context.Context, m rpc.Outbound, result any) error {
	if m.Qualifier != string(c.cfg.Role) {
		return &rpc.Error{Code: rpc.CodeMethodNotFound, Name: agentpmservice.ErrUnsupportedCapability.Name,
			Message: fmt.Sprintf("unsupported capability: %s is a method of the %s role; this client's provider serves %s", m.Method, m.Qualifier, c.cfg.Role)}
	}
	if m.Method == agentpmservice.MethodInitializeModel {
		return fmt.Errorf("%w: the client performs the handshake itself (see Preflight)", ErrConfig)
	}
	if err := c.packageUnavailable(m.Params); err != nil {
		return err
	}
	timeout := &TimeoutError{Role: c.cfg.Role, RegistryID: c.cfg.RegistryID, Method: m.Method, After: c.cfg.RequestTimeout}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.cfg.RequestTimeout, timeout)
	defer cancel()
	p, err := c.current(callCtx)
	if err != nil {
		return c.ctxErr(ctx, callCtx, err)
	}
	defer c.release()
	killed, err := p.send(callCtx, m, result)
	if killed {
		c.log.Warn("service: killed a provider that did not take a request before its context ended", "role", c.cfg.Role, "registry_id", c.cfg.RegistryID, "method", m.Method)
	}
	switch {
	case err == nil:
		return nil
	case c.ctx.Err() != nil:
		return fmt.Errorf("%w: %s: %w", ErrClosed, m.Method, err)
	case callCtx.Err() != nil:
		if errors.Is(context.Cause(callCtx), ErrTimeout) && c.cfg.RestartOnTimeout && !killed {
			c.log.Warn("service: killing a provider that did not answer in time", "role", c.cfg.Role, "registry_id", c.cfg.RegistryID, "method", m.Method)
			p.kill()
			<-p.exited // so that the next call waits for the restart
		}
		if killed && ctx.Err() != nil {
			return fmt.Errorf("%s: %w (the provider had not taken the request and was killed)", m.Method, ctx.Err())
		}
		return c.ctxErr(ctx, callCtx, err)
	case errors.Is(err, rpc.ErrClosed):
		return c.exitError(p, m.Method, err)
	case c.cfg.RestartOnError && errors.As(err, new(*rpc.Error)):
		c.log.Warn("service: killing a provider that failed a request", "role", c.cfg.Role, "registry_id", c.cfg.RegistryID, "method", m.Method, "err", err)
		p.kill()
		<-p.exited // so that the next call waits for the restart
	}
	return err
}

// ctxErr is the error of a call whose context ended: the timeout, or the
// caller's own context's error.
func (c *Client) ctxErr(ctx, callCtx context.Context, err error) error {
	if ctx.Err() == nil {
		if te, ok := context.Cause(callCtx).(*TimeoutError); ok {
			return te
		}
	}
	return err
}

// current waits for the client's one request slot and returns the live
// provider, waiting while it restarts (or while the end of one that died is
// being noticed). On success the caller must release the slot.
func (c *Client) current(ctx context.Context) (*proc, error) {
	select {
	case c.slot <- struct{}{}:
	case <-c.ctx.Done():
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the call before: %w", ctx.Err())
	}
	p, err := c.live(ctx)
	if err != nil {
		c.release()
	}
	return p, err
}

// release frees the request slot.
func (c *Client) release() { <-c.slot }

// live returns the live provider, waiting while it restarts.
func (c *Client) live(ctx context.Context) (*proc, error) {
	for {
		c.mu.Lock()
		p, failure, changed := c.cur, c.failure, c.changed
		c.mu.Unlock()
		switch {
		case failure != nil:
			return nil, failure
		case p != nil && !p.gone():
			return p, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the provider to restart: %w", ctx.Err())
		}
	}
}

// fail makes every call fail with failure (the provider is unavailable),
// waking waiting calls, unless the client is closed.
func (c *Client) fail(failure error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == ErrClosed {
		return
	}
	c.cur, c.failure = nil, failure
	close(c.changed)
	c.changed = make(chan struct{})
}

// died handles the end of provider p: unless it was stopped on purpose, the
// client restarts it within its budget, or fails.
func (c *Client) died(p *proc) {
	c.mu.Lock()
	p.dead = true
	current := c.cur == p
	if current {
		c.cur = nil
	}
	c.lastID = max(c.lastID, p.ids.last.Load())
	c.mu.Unlock()
	if !current || c.ctx.Err() != nil {
		return
	}
	why := &ExitError{Role: c.cfg.Role, RegistryID: c.cfg.RegistryID, State: p.state, Stderr: p.stderr.String()}
	c.emit(Lifecycle{Status: StatusUnhealthy, Attempt: p.gen, Message: why.Error(), Err: why})
	var last error = why
	for {
		c.mu.Lock()
		attempt := c.attempts + 1
		spent := attempt > c.cfg.Restart.MaxAttempts
		if !spent {
			c.attempts = attempt
		}
		c.mu.Unlock()
		if spent {
			u := c.unavailable(ReasonRestarts, fmt.Sprintf("the provider failed and its %d restart(s) are spent: %v", c.cfg.Restart.MaxAttempts, last), last)
			c.emit(Lifecycle{Status: StatusFailed, Attempt: attempt - 1, Message: u.Error(), Err: u})
			c.fail(u) // after the event: a call that sees the failure has seen it reported
			return
		}
		backoff := c.cfg.Restart.Backoff << min(attempt-1, 16)
		backoff = min(backoff, c.cfg.Restart.MaxBackoff)
		c.emit(Lifecycle{Status: StatusRestarting, Attempt: attempt, Message: fmt.Sprintf("restart %d of %d in %v", attempt, c.cfg.Restart.MaxAttempts, backoff)})
		select {
		case <-time.After(backoff):
		case <-c.ctx.Done():
			return
		}
		err := c.launch(c.ctx)
		if err == nil || c.ctx.Err() != nil {
			return
		}
		last = err
		c.emit(Lifecycle{Status: StatusUnhealthy, Attempt: attempt, Message: err.Error(), Err: err})
	}
}

// Close stops the provider: it closes its stdin and, after
// Config.StopGrace, kills it. Calls waiting fail with ErrClosed; so do
// later ones. Close waits for the client's goroutines and is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.failure == ErrClosed {
		c.mu.Unlock()
		return nil
	}
	p := c.cur
	c.cur, c.failure = nil, ErrClosed
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	c.cancel()
	if p != nil {
		p.stop(c.cfg.StopGrace)
	}
	c.wg.Wait()
	c.emit(Lifecycle{Status: StatusStopped})
	return nil
}
