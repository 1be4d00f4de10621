package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Defaults of Options' durations.
const (
	// DefaultStopGrace is how long Close waits for the Harness to exit after
	// closing its stdin, and again after SIGTERM, before it kills it; and
	// then, at most, for event callbacks and host-service handlers still
	// running.
	DefaultStopGrace = 5 * time.Second
	// DefaultCancelGrace is how long StartRun waits for the Run's end after
	// its context ended and cancel_run was sent.
	DefaultCancelGrace = 10 * time.Second
)

// Options says how to start `agentpm harness --machine` and how the client
// behaves. The zero value starts $AGENTPM (or agentpm on PATH) with the
// agent and configuration of the current directory.
type Options struct {
	// Path is the agentpm binary; "" uses $AGENTPM, else agentpm on PATH.
	Path string
	// Agent is the agent selector (AgentPM's positional AGENT argument).
	Agent string
	// Config is the Harness configuration file (--config).
	Config string
	// StateDir is the state directory (--state-dir): Run reports and
	// traces go under it.
	StateDir string
	// Scopes are --scope KEY=VALUE values, passed in key order.
	Scopes map[string]string
	// Args are more arguments, written before --machine.
	Args []string
	// Dir is the working directory of the Harness ("" for this process's).
	Dir string
	// Env is the Harness's whole environment, NAME=value entries. Nil
	// gives it an allow-listed one: child.BaselineEnv (PATH, HOME, the
	// locale, ... as clients/service's providers get) and the variables
	// PassEnv names, taken from this process's environment; nothing else
	// of this process's environment (API keys included) reaches it.
	Env []string
	// PassEnv names the variables of this process's environment passed to
	// the Harness when Env is nil (the credentials its agents need).
	// Their values are masked wherever the client quotes the Harness.
	PassEnv []string
	// Stderr, if set, also receives what the Harness writes to stderr; the
	// client keeps the last StderrTail bytes (default DefaultStderrTail)
	// for its errors either way.
	Stderr     io.Writer
	StderrTail int

	// OnEvent receives the events that arrive outside a Run (those of a
	// Run go to StartRun's callback), the startup preflight event first.
	// It runs on the connection's event lane: the Harness's next frames
	// wait for it, so it must not block for long. Nil drops them.
	OnEvent func(Event)
	// StopGrace is Close's patience (default DefaultStopGrace): with the
	// Harness's exit, and with callbacks and handlers that do not return.
	StopGrace time.Duration
	// CancelGrace is how long StartRun waits for the Run to end after its
	// context ended (default DefaultCancelGrace).
	CancelGrace time.Duration
	// Logger receives diagnostics (nil discards them).
	Logger *slog.Logger
	// Conn configures the connection; MaxConcurrentRequests 0 means 4, so
	// that a slow host-service handler does not hold up another.
	Conn rpc.Options
}

// Client drives one `agentpm harness --machine` session: it starts the
// Harness (or speaks over given streams), reads its startup preflight
// event, sends its requests and serves the host services registered with
// it. Its methods are safe for concurrent use.
type Client struct {
	opts  Options
	log   *slog.Logger
	conn  *rpc.Conn
	peer  *agentpmmachine.HarnessPeer
	proc  *process // nil for Connect
	ready chan struct{}
	// redact masks what the Harness writes in every error and log line.
	redact *redact.Redactor

	mu        sync.Mutex
	preflight *agentpmmachine.PreflightEvent
	framed    bool // a frame has arrived
	services  map[serviceKey]*hostService
	sink      func(Event)        // the running Run's event callback
	running   bool               // a Run started by this client is active
	waiting   []*runClaim        // later StartRun calls in flight, oldest first
	runCtx    context.Context    // ends when that Run is cancelled or ends
	runEnd    context.CancelFunc // ends runCtx
	fatal     error              // a bad frame from the Harness
	fatalCh   chan struct{}      // closed once fatal is set
	closing   context.Context    // ends as soon as Close is called
	closeNow  context.CancelFunc // ends closing
	closeOnce sync.Once
	closeErr  error
}

// Start starts the Harness (see Command) and waits, at most until ctx
// ends, for its startup preflight event. A Harness that exits first is
// reported with an *ExitError matching ErrNoFrame, its stderr included.
func Start(ctx context.Context, o *Options) (*Client, error) {
	if o == nil {
		o = &Options{}
	}
	cmd, err := Command(o)
	if err != nil {
		return nil, err
	}
	p, stdout, err := start(cmd, o)
	if err != nil {
		return nil, err
	}
	c := newClient(stdout, p.stdin, o)
	c.proc = p
	go c.watch()
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Connect speaks the machine protocol over r (the Harness's frames) and w
// (its stdin), for a Harness this process did not start (in the same
// process, or on another transport), and waits, at most until ctx ends,
// for the startup preflight event. Close closes r and w.
func Connect(ctx context.Context, r io.Reader, w io.Writer, o *Options) (*Client, error) {
	if o == nil {
		o = &Options{}
	}
	c := newClient(r, w, o)
	go c.watch()
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func newClient(r io.Reader, w io.Writer, o *Options) *Client {
	c := &Client{opts: *o, ready: make(chan struct{}), services: map[serviceKey]*hostService{}, fatalCh: make(chan struct{})}
	c.closing, c.closeNow = context.WithCancel(context.Background())
	if c.opts.StopGrace <= 0 {
		c.opts.StopGrace = DefaultStopGrace
	}
	if c.opts.CancelGrace <= 0 {
		c.opts.CancelGrace = DefaultCancelGrace
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	env := c.opts.Env
	if env == nil {
		env = child.Environ(c.opts.PassEnv, nil)
	}
	c.redact = child.Redactor(env, c.opts.PassEnv, nil)
	c.log = child.Logger(c.log, c.redact)
	copts := c.opts.Conn
	if copts.MaxConcurrentRequests == 0 {
		copts.MaxConcurrentRequests = 4
	}
	if copts.Logger == nil {
		copts.Logger = c.opts.Logger
	}
	copts.Logger = child.Logger(copts.Logger, c.redact)
	// Bad frames, oversized lines included, are never answered (an error
	// frame would be unsolicited, and can stall the Harness's next
	// host-service calls) and end the session as they are read: nothing
	// the Harness writes after one is taken, so that a call pending then
	// fails with it whatever follows.
	screen, onBad := copts.Screen, copts.OnBadFrame
	copts.Screen = func(m *rpc.Message) *rpc.FrameError {
		c.sawFrame()
		if screen != nil {
			return screen(m)
		}
		return nil
	}
	copts.OnBadFrame = func(fe *rpc.FrameError, line []byte) bool {
		if onBad != nil {
			onBad(fe, line)
		}
		fe.Reply = nil
		c.violation(fe, snippet(line))
		return true
	}
	c.conn = rpc.NewConn(r, w, agentpmmachine.NewCodec("c-", ""), c.handler(), agentpmmachine.ConnOptions(&copts))
	c.peer = agentpmmachine.NewHarnessPeer(c.conn)
	return c
}

func snippet(line []byte) string { return rpc.Truncate(string(line[:min(len(line), 200)]), 120) }

// violation records the first bad frame; watch then ends the session.
func (c *Client) violation(fe *rpc.FrameError, line string) {
	cp := *fe
	cp.Snippet = c.redact.String(cp.Snippet)
	if cp.Err != nil {
		cp.Err = child.MaskError(c.redact, cp.Err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.framed = true
	if c.fatal != nil {
		return
	}
	c.fatal = &BadFrameError{Frame: &cp, Line: c.redact.String(line)}
	close(c.fatalCh)
}

// badFrame returns the bad frame that ended the session, or nil.
func (c *Client) badFrame() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal
}

func (c *Client) sawFrame() {
	c.mu.Lock()
	c.framed = true
	c.mu.Unlock()
}

// watch ends the session when the Harness writes a bad frame, and closes
// the connection when the process has exited but something it started
// keeps its stdout open.
func (c *Client) watch() {
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
	}
	select {
	case <-c.fatalCh:
		c.log.Error("harness: bad frame; ending the session", "err", c.fatal)
		c.conn.Close()
		if c.proc != nil {
			c.proc.stop(c.opts.StopGrace)
		}
	case <-exited:
		select {
		case <-c.conn.Done():
		case <-time.After(time.Second):
			c.conn.Close()
		}
	case <-c.conn.Done():
	}
}

// waitReady waits for the startup preflight event.
func (c *Client) waitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-c.conn.Done():
		return c.ended("startup", c.conn.Err())
	case <-ctx.Done():
		err := fmt.Errorf("harness: waiting for the startup preflight event: %w", ctx.Err())
		if c.proc != nil {
			if s := c.proc.stderr.String(); s != "" {
				err = fmt.Errorf("%w; stderr so far: %s", err, s)
			}
		}
		return err
	}
}

// ended explains why the connection ended: a bad frame, the process's
// exit (waiting a moment for it), or the connection's own error.
func (c *Client) ended(op string, err error) error {
	c.mu.Lock()
	fatal, framed := c.fatal, c.framed
	c.mu.Unlock()
	if fatal != nil {
		return fmt.Errorf("harness: %s: %w", op, fatal)
	}
	if c.proc != nil {
		select {
		case <-c.proc.exited:
		case <-time.After(c.opts.StopGrace):
		}
		if c.proc.done() {
			if e := c.proc.exitError(!framed); e != nil {
				return fmt.Errorf("harness: %s: %w", op, e)
			}
		}
	}
	if !framed {
		return fmt.Errorf("harness: %s: %w: %w", op, ErrNoFrame, err)
	}
	return fmt.Errorf("harness: %s: %w", op, err)
}

// callErr wraps a request's error, explaining a connection that ended,
// with the Harness's secrets masked in its text.
func (c *Client) callErr(method string, err error) error {
	return child.MaskError(c.redact, c.callErr1(method, err))
}

func (c *Client) callErr1(method string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpc.ErrClosed) {
		return c.ended(method, err)
	}
	if _, ok := errors.AsType[*rpc.FrameError](err); ok {
		// A bad answer failed the call: it ended the session.
		if fatal := c.badFrame(); fatal != nil {
			return fmt.Errorf("harness: %s: %w", method, fatal)
		}
	}
	return fmt.Errorf("harness: %s: %w", method, err)
}

// handler serves what the Harness sends: events and host_service.
func (c *Client) handler() rpc.Handler {
	h := &agentpmmachine.ClientHandlers{
		PreflightEvent: func(_ context.Context, ev *agentpmmachine.PreflightEvent) error {
			c.mu.Lock()
			first := c.preflight == nil
			if first {
				c.preflight = ev
			}
			c.mu.Unlock()
			// Delivered before Start returns: OnEvent has seen the startup
			// preflight by the time the caller holds the Client.
			c.deliver(Event{Preflight: ev})
			if first {
				close(c.ready)
			}
			return nil
		},
		HarnessEvent: func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
			c.deliver(Event{Harness: ev})
			return nil
		},
		MCPExportEvent: func(_ context.Context, ev *agentpmmachine.MCPExportEvent) error {
			c.deliver(Event{MCPExport: ev})
			return nil
		},
	}
	return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		if req.Method == agentpmmachine.MethodHostService && req.Kind == rpc.KindRequest {
			return c.serveHostService(ctx, req)
		}
		return h.Handle(ctx, req)
	})
}

// runClaim is a StartRun call: the Run it started, or the one it may start.
type runClaim struct {
	onEvent func(Event)
	owner   bool // its Run is the running one; guarded by Client.mu
}

// ownLocked makes cl's Run the running one. c.mu is held.
func (c *Client) ownLocked(cl *runClaim) {
	cl.owner = true
	c.running, c.sink = true, cl.onEvent
	c.runCtx, c.runEnd = context.WithCancel(context.Background())
}

// owns reports whether cl's Run is the running one.
func (c *Client) owns(cl *runClaim) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.owner
}

// endClaim ends StartRun call cl. When its Run was the running one, the
// oldest call still in flight takes over: its start_run may reach a
// Harness that is no longer busy and start a Run of its own.
func (c *Client) endClaim(cl *runClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !cl.owner {
		if i := slices.Index(c.waiting, cl); i >= 0 {
			c.waiting = slices.Delete(c.waiting, i, i+1)
		}
		return
	}
	cl.owner = false
	c.runEnd()
	c.running, c.sink, c.runCtx, c.runEnd = false, nil, nil, nil
	if len(c.waiting) > 0 {
		next := c.waiting[0]
		c.waiting = slices.Delete(c.waiting, 0, 1)
		c.ownLocked(next)
	}
}

// deliver hands an event to the running Run's callback, or to OnEvent.
func (c *Client) deliver(ev Event) {
	c.mu.Lock()
	sink := c.sink
	c.mu.Unlock()
	if sink == nil {
		sink = c.opts.OnEvent
	}
	if sink != nil {
		sink(ev)
	}
}

// StartupPreflight returns the preflight event the Harness wrote first.
func (c *Client) StartupPreflight() *agentpmmachine.PreflightEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.preflight
}

// Conn is the underlying connection.
func (c *Client) Conn() *rpc.Conn { return c.conn }

// Done is closed once the session has ended.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Err says why the session ended (nil while it runs): a bad frame, the
// process's exit, or the connection's error.
func (c *Client) Err() error {
	select {
	case <-c.conn.Done():
		return c.ended("session", c.conn.Err())
	default:
		return nil
	}
}

// Stderr returns the end of what the Harness has written to stderr ("" for
// a Harness this client did not start).
func (c *Client) Stderr() string {
	if c.proc == nil {
		return ""
	}
	return c.proc.stderr.String()
}

// Initialize sends initialize: it marks the session initialized (start_run
// needs it) and returns the preflight report, the MCP export surfaces and
// the host services the configuration needs.
func (c *Client) Initialize(ctx context.Context) (*agentpmmachine.InitializeResult, error) {
	res, err := c.peer.Initialize(ctx, &agentpmmachine.EmptyParams{})
	return res, c.callErr(agentpmmachine.MethodInitialize, err)
}

// Preflight sends preflight: the preflight report and the live MCP export
// surfaces.
func (c *Client) Preflight(ctx context.Context) (*agentpmmachine.PreflightResult, error) {
	res, err := c.peer.Preflight(ctx, &agentpmmachine.EmptyParams{})
	return res, c.callErr(agentpmmachine.MethodPreflight, err)
}

// MemoryOperation runs an externally triggered Memory lifecycle operation
// in the active Run (the Harness queues it until the Run's next yield
// point).
func (c *Client) MemoryOperation(ctx context.Context, p *agentpmmachine.MemoryOperationParams) (*agentpmmachine.MemoryOperationResult, error) {
	res, err := c.peer.MemoryOperation(ctx, p)
	return res, c.callErr(agentpmmachine.MethodMemoryOperation, err)
}

// CancelRun sends cancel_run, which the Harness answers at once in every
// state, and then ends the contexts of the host-service handlers running
// for the Run that was active when it was called (the Harness no longer
// waits for them). StartRun does this itself when its context ends.
//
// The handlers end only once cancel_run is answered (or ctx ends, or the
// call fails): a handler's failure answered before the Harness has read
// cancel_run would reach a Run that is not yet cancelled, and fail it
// (run_failed) instead of letting it end cancelled with its report.
func (c *Client) CancelRun(ctx context.Context) (*agentpmmachine.CancelRunResult, error) {
	c.mu.Lock()
	end := c.runEnd
	c.mu.Unlock()
	res, err := c.peer.CancelRun(ctx, &agentpmmachine.EmptyParams{})
	if end != nil {
		end()
	}
	return res, c.callErr(agentpmmachine.MethodCancelRun, err)
}

// StartRun starts a Run with input and blocks until it ends, passing its
// events to onEvent (which may be nil) as they arrive, every one of them
// before StartRun returns. onEvent runs on the connection's event lane:
// the Harness's next frames wait for it, so a slow callback slows the Run
// rather than piling events up.
//
// A ctx that has already ended starts no Run: StartRun returns its error
// without sending start_run. When ctx ends during the Run, StartRun sends
// cancel_run, ends the contexts of the host-service handlers still running
// for the Run once the Harness has answered it (see CancelRun), and waits
// up to Options.CancelGrace for the Run to end; it then returns ctx's
// error, with the Run's Result whenever the Harness reported one in time
// (cancelled or not). Close, from another goroutine, ends StartRun at
// once, grace or not, with an error matching rpc.ErrClosed (or ctx's
// error, when ctx had ended).
//
// Errors of the Harness match their codes: errors.Is(err,
// agentpmmachine.ErrSessionBusy) for a start_run while a Run is active
// (the active Run goes on untouched), ErrNotInitialized,
// ErrHostServiceNotRegistered, ErrRunFailed, ... A StartRun made while
// another runs is sent too; if that Run ends before the Harness reads
// it, it starts a Run of its own, whose events then go to its onEvent.
func (c *Client) StartRun(ctx context.Context, input string, onEvent func(Event)) (*Result, error) {
	return c.Run(ctx, &agentpmmachine.StartRunParams{Input: &input}, onEvent)
}

// Run is StartRun with start_run's whole params. A nil Input relies on
// the Harness's --input (without it the Harness exits).
func (c *Client) Run(ctx context.Context, p *agentpmmachine.StartRunParams, onEvent func(Event)) (*Result, error) {
	if ctx.Err() != nil {
		// Ended before the Run: start none (the request below is sent under
		// a context that does not end with ctx).
		return nil, fmt.Errorf("harness: start_run: %w", context.Cause(ctx))
	}
	// A second concurrent Run is sent too (the Harness answers it
	// session_busy), but the events stay with the first. If the first ends
	// before the Harness reads the second, the second is a Run of its own:
	// it takes the events over when the first ends (endClaim).
	claim := &runClaim{onEvent: onEvent}
	c.mu.Lock()
	if c.running {
		c.waiting = append(c.waiting, claim)
	} else {
		c.ownLocked(claim)
	}
	c.mu.Unlock()
	defer c.endClaim(claim)
	type answer struct {
		res *agentpmmachine.StartRunResult
		err error
	}
	// The request's own context ends only after CancelGrace, so that the
	// Run's end is still read after cancel_run.
	sendCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan answer, 1)
	go func() {
		res, err := c.peer.StartRun(sendCtx, p)
		done <- answer{res, err}
	}()
	result := func(a answer) (*Result, error) {
		if a.err != nil {
			return nil, c.callErr(agentpmmachine.MethodStartRun, a.err)
		}
		return newResult(a.res), nil
	}
	select {
	case a := <-done:
		return result(a)
	case <-c.closing.Done():
		return nil, errClosing(agentpmmachine.MethodStartRun)
	case <-ctx.Done():
	}
	cause := fmt.Errorf("harness: start_run: %w", context.Cause(ctx))
	// The grace ends early when the client is closed: Close fails the
	// pending call anyway, and a caller quitting must not wait it out.
	cctx, cancel := context.WithTimeout(c.closing, c.opts.CancelGrace)
	defer cancel()
	if c.owns(claim) {
		if _, err := c.CancelRun(cctx); err != nil {
			c.log.Warn("harness: cancel_run failed", "err", err)
		}
	}
	var a answer
	select {
	case a = <-done:
	case <-cctx.Done():
		// The grace is over, or the client is closing because the Harness
		// died: the call may have failed with the Harness's own error
		// meanwhile, which stop cannot replace.
		stop()
		if a = <-done; errors.Is(a.err, context.Canceled) {
			return nil, cause
		}
	}
	res, err := result(a)
	if err == nil {
		return res, cause
	}
	// The Harness's own failure (it died, it wrote a bad frame) is what
	// happened; the cancel only explains why we were waiting.
	return nil, fmt.Errorf("%w (while the Run was being cancelled: %w)", err, context.Cause(ctx))
}

// errClosing is the error of a call that Close ended.
func errClosing(method string) error {
	return fmt.Errorf("harness: %s: the client is closing: %w", method, rpc.ErrClosed)
}

// Shutdown sends shutdown, which the Harness answers before it exits, then
// waits (until ctx ends) for the process to exit and closes the client. It
// returns the Harness's error (run_active while a Run is active: cancel it
// first), or the process's exit error.
func (c *Client) Shutdown(ctx context.Context) error {
	if _, err := c.peer.Shutdown(ctx, &agentpmmachine.EmptyParams{}); err != nil {
		return c.callErr(agentpmmachine.MethodShutdown, err)
	}
	if c.proc != nil {
		select {
		case <-c.proc.exited:
		case <-ctx.Done():
		}
	} else {
		select {
		case <-c.conn.Done():
		case <-ctx.Done():
		}
	}
	return c.Close()
}

// Close ends the session: it closes the Harness's stdin (the Harness ends
// its session at end of input), waits Options.StopGrace for it to exit,
// then sends SIGTERM and, after StopGrace again, SIGKILL; then it closes
// the connection. Pending calls fail, a StartRun at once. It returns the
// process's exit error when it did not exit cleanly (nil once it was
// stopped by Close), or the bad frame that ended the session.
//
// Close waits at most StopGrace more for event callbacks (OnEvent,
// StartRun's onEvent) and host-service handlers still running: one that
// never returns (a callback blocked writing to a stdout nobody reads)
// cannot hold it. It then returns, logging a warning; those goroutines
// end when their callbacks return, and Done is closed only then. So
// Close returns within about three times StopGrace.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closeNow()
		if c.proc != nil {
			exitedBefore := c.proc.done()
			c.proc.stop(c.opts.StopGrace)
			if exitedBefore {
				c.mu.Lock()
				framed := c.framed
				c.mu.Unlock()
				if e := c.proc.exitError(!framed); e != nil {
					c.closeErr = e
				}
			}
		}
		c.closeConn()
		c.mu.Lock()
		if c.fatal != nil {
			c.closeErr = c.fatal
		}
		c.mu.Unlock()
	})
	return c.closeErr
}

// closeConn closes the connection, waiting at most StopGrace for the
// callbacks and handlers it waits for.
func (c *Client) closeConn() {
	closed := make(chan struct{})
	go func() {
		c.conn.Close()
		close(closed)
	}()
	t := time.NewTimer(c.opts.StopGrace)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		c.log.Warn("harness: Close gave up waiting for event callbacks or host-service handlers that did not return", "waited", c.opts.StopGrace)
	}
}
