// Package host serves the host side of Harn's stdio bridge: the methods a
// Harn runtime sends to the program that embeds it.
//
// A host is a harn.HostHandlers with the fields of the methods and host/call
// operations it serves set. The server answers everything else with
// rpc.ErrMethodNotFound and, unless the handlers answer host/capabilities
// themselves, answers it from exactly the operations that are set.
// shells.Provider registers a complete shell-discovery host.
//
//	p, _ := shells.New(shells.Config{})
//	var h harn.HostHandlers
//	p.Register(&h)
//	err := host.New(&h, nil).Serve(ctx, os.Stdin, os.Stdout)
//
// The runtime's stream carries ACP too: a connection is
// harn.NewBridgeConn, with both protocols' cancel rules, and serves the ACP
// client methods of Options.Client (session/update,
// session/request_permission, fs/*, terminal/*) beside the bridge's, so the
// host can also call the runtime as its ACP client (acp.NewAgentPeer on the
// connection Connect or ServeCommandConn hands out).
//
// # The runtime's environment
//
// A runtime that ServeCommand starts gets nothing of the host's
// environment that the host does not pass it on purpose: unless cmd.Env
// is set, it gets internal/child's baseline (PATH, HOME, the temporary
// folder, the locale and the time zone, as set here) and the variables
// Options.PassEnv names, taken from this process's environment, and no
// other (no API key, token or password of the host's). A host passes
// there what its policy allows (examples/host: the policy's agent.env and
// -pass-env), and tells servers/host/auth which credentials the agent
// will see (auth.Options.LookupEnv) and which it withholds
// (auth.Options.Withheld), so that a method is chosen only when the
// agent can use it and a missing key is reported as withheld.
// Server.Environ returns that environment.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/internal/serve"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// DefaultMaxConcurrentRequests is how many bridge requests a Server handles at
// once unless Options.Conn says otherwise: enough that a slow request (a
// permission prompt waiting for a person) does not hold up the others.
const DefaultMaxConcurrentRequests = 8

// Defaults of Options' grace periods.
const (
	DefaultStopGrace  = 5 * time.Second
	DefaultDrainGrace = time.Second
	DefaultExitGrace  = child.ExitGrace
)

// Options configures a Server. The zero value is ready to use.
type Options struct {
	// Conn configures the connection (frame and queue limits, concurrency,
	// logger, and Middleware wrapping every method served, for example
	// runtime/middleware's Logging and Recover). MaxConcurrentRequests 0
	// means DefaultMaxConcurrentRequests.
	// The cancel rules and preempted methods of ACP and the bridge are
	// added to it (harn.BridgeConnOptions).
	Conn rpc.Options
	// Client serves the ACP client methods on the same connection
	// (harn.HostHandler); nil serves none of them: they are answered
	// rpc.ErrMethodNotFound, unless the bridge handlers' Fallback serves
	// them.
	Client *acp.ClientHandlers
	// Capabilities are advertised by host/capabilities in addition to the
	// operations whose fields are set (for operations served through the
	// generic HostCall field).
	Capabilities map[string][]string
	// Operations are custom host/call operations with typed arguments and
	// results (see Op), served before the HostCall field and advertised
	// by host/capabilities. New panics on a malformed or repeated name.
	Operations []Operation
	// StopGrace is how long ServeCommand waits for the child to exit after
	// SIGTERM before it kills it (default DefaultStopGrace).
	StopGrace time.Duration
	// DrainGrace is how long ServeCommand keeps reading the child's output
	// after the child exited, while a process it started still holds the
	// pipe open (default DefaultDrainGrace).
	DrainGrace time.Duration
	// ExitGrace is how long ServeCommand lets the child exit on its own
	// once the connection has ended (its input closed, by the function
	// given to ServeCommandConn or by the child closing its output) before
	// it sends the child's process group SIGTERM, then SIGKILL after
	// StopGrace (default DefaultExitGrace). The ACP agents of today exit
	// by themselves at the end of their input, some after seconds of
	// shutting down (codex-acp takes about 2 s): a shorter grace cuts
	// their shutdown, and their last frames, short.
	ExitGrace time.Duration
	// PassEnv names the variables of this process's environment that a
	// child started by ServeCommand gets beside the baseline, when
	// cmd.Env is nil (see the package documentation; Environ). Their
	// values are masked in the connection's diagnostics.
	PassEnv []string
	// Tap, when set, wraps the runtime's output and input as
	// ServeCommand reads and writes them, before anything else sees them
	// (to record the traffic, for example): the connection reads the r and
	// writes the w it returns.
	Tap func(r io.Reader, w io.Writer) (io.Reader, io.Writer)
	// InputEnded, when set, is called once, in a goroutine of its own,
	// when the input of a connection made by Connect or Serve ends or
	// fails. Serve answers every request it has read before it returns,
	// so a request that can stay pending for ever (a
	// terminal/wait_for_exit whose command never exits) would hold it:
	// InputEnded is where a host ends such requests, for example by
	// closing its terminal.Manager a moment later, which answers the
	// waits.
	InputEnded func()
}

// Server serves one set of handlers on any number of connections.
type Server struct {
	h       harn.HostHandlers
	handler rpc.Handler // h and Options.Client on one stream
	opts    Options
}

// New returns a Server for a copy of h. If h.HostCapabilities is nil the
// server answers host/capabilities itself (see Capabilities).
func New(h *harn.HostHandlers, opts *Options) *Server {
	s := &Server{h: *h}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Conn.MaxConcurrentRequests == 0 {
		s.opts.Conn.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if s.opts.StopGrace <= 0 {
		s.opts.StopGrace = DefaultStopGrace
	}
	if s.opts.DrainGrace <= 0 {
		s.opts.DrainGrace = DefaultDrainGrace
	}
	if s.opts.ExitGrace <= 0 {
		s.opts.ExitGrace = DefaultExitGrace
	}
	if len(s.opts.Operations) > 0 {
		caps, err := withOperations(&s.h, s.opts.Operations, s.opts.Capabilities)
		if err != nil {
			panic(err)
		}
		s.opts.Capabilities = caps
	}
	if s.h.HostCapabilities == nil {
		s.h.HostCapabilities = func(context.Context, *harn.HostCapabilitiesParams) (harn.HostCapabilities, error) {
			return s.Capabilities(), nil
		}
	}
	s.handler = harn.HostHandler(&s.h, s.opts.Client)
	return s
}

// Handle serves one inbound request or notification of either catalogue;
// it implements rpc.Handler.
func (s *Server) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	return s.handler.Handle(ctx, req)
}

// Capabilities is the host/capabilities answer: every operation whose field
// is set, grouped by capability, plus Options.Capabilities.
func (s *Server) Capabilities() harn.HostCapabilities {
	ops := map[string][]string{}
	for _, op := range s.h.Operations() {
		if op.Capability != "" {
			ops[op.Capability] = append(ops[op.Capability], op.Op)
		}
	}
	for c, list := range s.opts.Capabilities {
		for _, op := range list {
			if !slices.Contains(ops[c], op) {
				ops[c] = append(ops[c], op)
			}
		}
	}
	caps := make(harn.HostCapabilities, len(ops))
	for c, list := range ops {
		caps[c] = harn.CapabilityOps{List: list}
	}
	return caps
}

// Connect starts serving on r and w and returns the connection at once, so
// the host can also call the runtime (harn.NewVMPeer(conn), and
// acp.NewAgentPeer(conn) as its ACP client) while it serves.
func (s *Server) Connect(r io.Reader, w io.Writer) *rpc.Conn {
	if s.opts.InputEnded != nil {
		r = &endReader{r: r, at: s.opts.InputEnded}
	}
	return harn.NewBridgeConn(r, w, s.handler, &s.opts.Conn)
}

// endReader starts at, once, when r returns an error (io.EOF included).
type endReader struct {
	r    io.Reader
	at   func()
	once sync.Once
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { go e.at() })
	}
	return n, err
}

// Serve serves on r and w until the peer ends its input, returning nil once
// every request read has been answered, or until ctx ends, returning
// ctx's error at once. A failed write (a closed stdout, a full disk) ends
// it with that error. The connection is closed before Serve returns.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	return serve.Until(ctx, s.Connect(r, w))
}

// ServeCommand starts cmd (typically `harn serve acp`) and serves the bridge
// over its stdin and stdout, the usual topology in which the host starts
// the runtime. The child's stderr goes to cmd.Stderr, or this process's
// stderr when that is nil; cmd.Stdin and cmd.Stdout must be nil.
//
// The child runs in a process group of its own (a terminal's Ctrl-C reaches
// only this process) and, on Linux, under a supervisor (internal/child)
// that ends everything the child started when this process ends, even by
// SIGKILL: with user namespaces (CurrentContainment's "pidns") in a PID
// namespace of its own whose init dies with this process, which nothing
// the child does can stop; cmd.Process is then the supervisor, which
// leads the group and exits as the child did. Every signal goes to the
// whole group, and once the child has exited whatever is left of it (a
// background process, the real agent behind an npm wrapper) is killed:
// nothing ServeCommand started outlives it. The child's environment is
// cmd.Env, or when that is nil Environ (see the package documentation):
// nothing of this process's environment but the baseline and
// Options.PassEnv. The connection's diagnostics mask the values of the
// child's secret-looking variables, of those PassEnv passes, and token
// shapes (runtime/redact); the containment in force is logged at the
// start (Info).
//
// It returns when the child exits: nil after a clean exit, else an
// *ExitError; and a *CutFrameError (joined with the *ExitError, if any)
// when the child's output ended in the middle of a frame. What the child wrote before exiting is still read and
// answered, for up to Options.DrainGrace when something the child started
// keeps the pipe open. Once the connection ends (its input closed, or its
// output ended) the child gets Options.ExitGrace to exit, then its group
// SIGTERM and, after Options.StopGrace, SIGKILL; an exit caused so by our
// own signal is a clean end (nil), not the child's failure. When ctx ends
// the group gets SIGTERM and, after StopGrace, SIGKILL; once the child is
// gone ServeCommand returns ctx's error, wrapping the child's *ExitError if
// it did not exit cleanly.
func (s *Server) ServeCommand(ctx context.Context, cmd *exec.Cmd) error {
	return s.ServeCommandConn(ctx, cmd, nil)
}

// ServeCommandConn is ServeCommand that also hands the live connection to
// use, for example to send the runtime requests of its own. use runs in its
// own goroutine; ServeCommandConn waits for it before returning, after the
// connection is closed. Closing the connection (conn.Close) ends the
// child's input, so the child is stopped as described at ServeCommand.
func (s *Server) ServeCommandConn(ctx context.Context, cmd *exec.Cmd, use func(*rpc.Conn)) error {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return errors.New("host: ServeCommand needs cmd.Stdin and cmd.Stdout unset")
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if cmd.WaitDelay == 0 {
		// A grandchild that inherited a stderr copied by exec must not hold
		// Wait (and so the end of ServeCommand) past the graces.
		cmd.WaitDelay = s.opts.StopGrace + s.opts.DrainGrace
	}
	passed := s.opts.PassEnv
	if cmd.Env == nil {
		cmd.Env = s.Environ()
	} else {
		passed = nil // the caller's environment, which it chose whole
	}
	// child.Start's pipes are pollable, so a read deadline can bound the
	// wait for a grandchild that keeps the pipe open.
	toChild, fromChild, err := child.Start(cmd)
	if err != nil {
		return fmt.Errorf("host: start %s: %w", cmd.Path, err)
	}
	defer child.Reap(cmd.Process)
	copts := s.opts.Conn
	copts.Logger = child.Logger(copts.Logger, child.Redactor(cmd.Env, passed, nil))
	if copts.Logger != nil {
		c := CurrentContainment()
		copts.Logger.Info("containment", "means", c.Means, "detail", c.String())
	}
	defer fromChild.Close()
	defer toChild.Close()
	var in io.Reader = fromChild
	var out io.Writer = toChild
	if s.opts.Tap != nil {
		in, out = s.opts.Tap(fromChild, toChild)
	}
	output := &tailReader{r: in}
	conn := harn.NewBridgeConn(output, &closer{out, toChild}, s.handler, &copts)
	var wg sync.WaitGroup
	if use != nil {
		wg.Go(func() { use(conn) })
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	stopping, ended := ctx.Done(), conn.Done()
	var term, kill <-chan time.Time
	var waitErr error
	stoppedIdle := false // stopped by us after the connection ended
	for waiting := true; waiting; {
		select {
		case <-stopping:
			stopping, ended, term = nil, nil, nil
			stoppedIdle = false
			child.Terminate(cmd.Process)
			kill = time.After(s.opts.StopGrace)
		case <-ended:
			// Its input is closed or its output ended: it can no longer
			// be served. One that ignores its end of input is stopped.
			ended = nil
			term = time.After(s.opts.ExitGrace)
		case <-term:
			term = nil
			stoppedIdle = true
			child.Terminate(cmd.Process)
			kill = time.After(s.opts.StopGrace)
		case <-kill:
			child.Kill(cmd.Process)
		case waitErr = <-exited:
			waiting = false
		}
	}
	// The child is gone: answer what it left in the pipe, then end.
	_ = fromChild.SetReadDeadline(time.Now().Add(s.opts.DrainGrace))
	select {
	case <-conn.Done():
	case <-time.After(s.opts.DrainGrace + time.Second):
	}
	conn.Close()
	child.Reap(cmd.Process)
	wg.Wait()
	err = exitError(cmd, waitErr)
	if stoppedIdle && child.ByUs(cmd.ProcessState) {
		err = nil // our own signal ended it, as we asked
	}
	if cut := output.cut.Load(); cut != nil {
		err = errors.Join(err, cut) // a frame lost: never silently
	}
	switch {
	case ctx.Err() == nil:
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return ctx.Err()
}

// Environ is the environment a child started by ServeCommand gets when
// its cmd.Env is nil: the baseline (child.BaselineEnv: PATH, HOME, the
// temporary folder, the locale, the time zone) and Options.PassEnv, each
// taken from this process's environment where it is set; nothing else.
func (s *Server) Environ() []string { return child.Environ(s.opts.PassEnv, nil) }

// ExitError reports a child that did not exit cleanly.
type ExitError struct {
	Path string
	// Code is the exit status, or -1 when a signal killed the child.
	Code int
	// Signal is the signal that killed the child, if one did.
	Signal syscall.Signal
	Err    error // the *exec.ExitError
}

func (e *ExitError) Error() string {
	if e.Code < 0 {
		return fmt.Sprintf("%s killed by signal %d (%v)", e.Path, int(e.Signal), e.Signal)
	}
	return fmt.Sprintf("%s exited with status %d", e.Path, e.Code)
}

func (e *ExitError) Unwrap() error { return e.Err }

// Status is the conventional exit status for a host that reports the
// child's end as its own: the child's status, or 128 plus the signal's
// number when a signal killed it.
func (e *ExitError) Status() int {
	if e.Code < 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}

func exitError(cmd *exec.Cmd, err error) error {
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok {
		return err
	}
	out := &ExitError{Path: cmd.Path, Code: ee.ExitCode(), Err: ee}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Code, out.Signal = -1, ws.Signal()
	}
	return out
}
