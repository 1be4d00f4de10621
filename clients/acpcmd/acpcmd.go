// Package acpcmd starts an ACP peer as a child process and speaks ACP over
// its stdin and stdout: one call gives the connection, the typed peer and
// the process's lifecycle, as harnvm.Start does for a Harn host.
//
// A client starts its agent:
//
//	agent, err := acpcmd.StartAgent(ctx, exec.Command("my-agent"), &acp.ClientHandlers{
//		SessionUpdate: func(ctx context.Context, n *acp.SessionNotification) error { ... },
//	}, nil)
//	if err != nil { ... }
//	defer agent.Close()
//	init, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
//
// and, less often, an agent starts a client (StartClient). The child leads
// a process group of its own: Close ends its input, and after
// Options.StopGrace sends SIGTERM to the group, and after another
// StopGrace SIGKILL, so that nothing it started outlives it. Its stderr is
// copied to Options.Stderr and its end kept for errors (ExitError,
// Process.Stderr), redacted by runtime/redact.
//
// Handlers reach their own peer through their context
// (acp.AgentPeerFrom(ctx) in a client's handler, acp.ClientPeerFrom(ctx) in
// an agent's), which is set before the first message is read.
package acpcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Defaults of Options.
const (
	DefaultStopGrace  = 5 * time.Second
	DefaultStderrTail = 8 << 10
)

// Options configures a started peer. The zero value is ready to use.
type Options struct {
	// Conn configures the connection (limits, concurrency, logger,
	// middleware); ACP's cancel rules are added to it.
	Conn rpc.Options
	// Stderr gets a copy of the child's stderr; nil keeps only its end.
	Stderr io.Writer
	// StderrTail is how many bytes of the child's stderr are kept for
	// errors (default DefaultStderrTail).
	StderrTail int
	// StopGrace is how long Close waits for the child to exit after its
	// input ends, and again after SIGTERM, before it kills it (default
	// DefaultStopGrace).
	StopGrace time.Duration
	// Redactor masks what is quoted of the child's stderr; nil masks token
	// shapes only.
	Redactor *redact.Redactor
}

// Process is a started peer's connection and process.
type Process struct {
	conn    *rpc.Conn
	proc    *child.Process
	opts    Options
	unwatch func() bool
}

// Agent is an agent started as a child: its typed peer (the methods an
// agent serves: Initialize, SessionNew, SessionPrompt, SessionCancel, ...)
// and its process.
type Agent struct {
	*acp.AgentPeer
	*Process
}

// Client is an ACP client started as a child by an agent: its typed peer
// (session/update, session/request_permission, fs/*, terminal/*) and its
// process.
type Client struct {
	*acp.ClientPeer
	*Process
}

// StartAgent starts cmd, an ACP agent, and serves h (the client's side: what
// the agent may call; nil serves nothing) on its stdio. cmd.Stdin,
// cmd.Stdout and cmd.Stderr must be unset. ctx bounds the agent's life, as
// with exec.CommandContext: when it ends the connection is closed and the
// agent stopped as Close stops it. It returns once the process has started;
// the caller then initializes the session (agent.Initialize).
func StartAgent(ctx context.Context, cmd *exec.Cmd, h *acp.ClientHandlers, opts *Options) (*Agent, error) {
	var handler rpc.Handler
	if h != nil {
		handler = h
	}
	p, err := start(ctx, cmd, handler, opts)
	if err != nil {
		return nil, err
	}
	return &Agent{AgentPeer: acp.NewAgentPeer(p.conn), Process: p}, nil
}

// StartClient starts cmd, an ACP client, and serves h (the agent's side)
// on its stdio, as StartAgent does for an agent.
func StartClient(ctx context.Context, cmd *exec.Cmd, h *acp.AgentHandlers, opts *Options) (*Client, error) {
	var handler rpc.Handler
	if h != nil {
		handler = h
	}
	p, err := start(ctx, cmd, handler, opts)
	if err != nil {
		return nil, err
	}
	return &Client{ClientPeer: acp.NewClientPeer(p.conn), Process: p}, nil
}

func start(ctx context.Context, cmd *exec.Cmd, h rpc.Handler, opts *Options) (*Process, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("acpcmd: the command's Stdin, Stdout and Stderr must be unset (Options.Stderr gets a copy of its stderr)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &Process{}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.StopGrace <= 0 {
		p.opts.StopGrace = DefaultStopGrace
	}
	if p.opts.StderrTail <= 0 {
		p.opts.StderrTail = DefaultStderrTail
	}
	proc, err := child.Spawn(cmd, child.Spec{Group: true, StderrTail: p.opts.StderrTail, Stderr: p.opts.Stderr, WaitDelay: p.opts.StopGrace})
	if err != nil {
		return nil, fmt.Errorf("acpcmd: start %s: %w", cmd.Path, err)
	}
	p.proc = proc
	p.conn = acp.NewConn(proc.Stdout, proc.Stdin, h, &p.opts.Conn)
	p.unwatch = context.AfterFunc(ctx, func() { p.stop() })
	return p, nil
}

// Conn is the connection to the child.
func (p *Process) Conn() *rpc.Conn { return p.conn }

// Pid is the process id of the child's process group leader: the child
// itself, or on Linux its supervisor (internal/child), which exits as the
// child does.
func (p *Process) Pid() int { return p.proc.Cmd.Process.Pid }

// Exited is closed once the child has exited.
func (p *Process) Exited() <-chan struct{} { return p.proc.Exited() }

// Stderr is the end of what the child wrote on stderr, redacted.
func (p *Process) Stderr() string { return p.opts.Redactor.String(p.proc.Stderr()) }

// Wait waits for the child to exit by itself (or ctx to end, returning its
// error) and returns how it ended: nil for a clean exit, else an
// *ExitError with the end of its stderr. The connection stays open until
// Close, so that what the child wrote last is still read.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.proc.Exited():
		return p.exitError()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the connection (calls in flight fail with rpc.ErrClosed),
// which ends the child's input, and stops the child: after StopGrace
// SIGTERM to its process group, after another SIGKILL; whatever is left of
// the group once it has exited is killed. It returns once the child has
// exited: nil when it exited cleanly, else an *ExitError. It is safe to call
// more than once.
func (p *Process) Close() error {
	p.unwatch()
	p.stop()
	return p.exitError()
}

func (p *Process) stop() {
	_ = p.conn.Close()
	p.proc.Stop(p.opts.StopGrace)
}

func (p *Process) exitError() error {
	err := p.proc.Err()
	if err == nil {
		return nil
	}
	return &ExitError{Path: p.proc.Cmd.Path, Stderr: p.Stderr(), Err: err}
}

// ExitError reports a child that did not exit cleanly.
type ExitError struct {
	Path string
	// Stderr is the end of the child's stderr, redacted.
	Stderr string
	Err    error // the *exec.ExitError, or why Wait failed
}

func (e *ExitError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("acpcmd: %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("acpcmd: %s: %v; stderr: %s", e.Path, e.Err, e.Stderr)
}

func (e *ExitError) Unwrap() error { return e.Err }
