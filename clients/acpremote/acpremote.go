// Package acpremote dials an ACP agent across the network and speaks ACP with it, over WebSocket
// (ws://, wss://) or Streamable HTTP (http://, https://): what acpcmd.StartAgent does for an agent
// started as a child process, for an agent behind a URL. Going from one to the other is one line:
//
//	agent, err := acpcmd.StartAgent(ctx, exec.Command("my-agent"), handlers, nil)
//	agent, err := acpremote.DialAgent(ctx, "ws://127.0.0.1:8765/acp", handlers, nil)
//
// and the rest (agent.Initialize, agent.SessionNew, agent.SessionPrompt, agent.Close) stays as it was.
//
// Over WebSocket a dropped socket is reconnected and the session resumed from the last frame received
// (runtime/remote): the calls in flight go on, and every session/update arrives once, in order. This
// package, and runtime/remote's WebSocket library with it, is compiled only into programs that import
// it: a program that starts its agents with acpcmd links none of it.
package acpremote

import (
	"context"
	"fmt"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Options configures a dialled agent. The zero value is ready to use.
type Options struct {
	// Conn configures the connection (limits, concurrency, logger, middleware); ACP's cancel rules are
	// added to it.
	Conn rpc.Options
	// Dial configures the transport: the token or headers sent, resumption, the HTTP client.
	Dial remote.DialOptions
}

// Agent is an agent across the network: its typed peer (Initialize, SessionNew, SessionPrompt,
// SessionCancel, ...) and the connection.
type Agent struct {
	*acp.AgentPeer
	conn *rpc.Conn
	t    remote.Transport
}

// DialAgent connects to the agent at url and serves h (the client's side: what the agent may call; nil
// serves nothing) on the connection. ctx bounds the dial only; Close ends the connection. It returns
// once the transport is open; the caller then initializes the session (agent.Initialize).
func DialAgent(ctx context.Context, url string, h *acp.ClientHandlers, opts *Options) (*Agent, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	t, err := remote.Dial(ctx, url, &o.Dial)
	if err != nil {
		return nil, fmt.Errorf("acpremote: %w", err)
	}
	var handler rpc.Handler
	if h != nil {
		handler = h
	}
	conn := acp.NewTransportConn(t, handler, &o.Conn)
	return &Agent{AgentPeer: acp.NewAgentPeer(conn), conn: conn, t: t}, nil
}

// Conn is the connection to the agent.
func (a *Agent) Conn() *rpc.Conn { return a.conn }

// ConnectionID is the server's Acp-Connection-Id for this connection ("" until known).
func (a *Agent) ConnectionID() string { return a.t.ConnectionID() }

// Wait waits for the connection to end (the server closed it, or it could not be resumed) or ctx to
// end, and returns why: nil for a clean end, else the connection's error (an *remote.ExpiredError when
// a session could not be resumed in full).
func (a *Agent) Wait(ctx context.Context) error {
	select {
	case <-a.conn.Done():
		return ended(a.conn.Err())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the connection (calls in flight fail with rpc.ErrClosed): the socket is closed, or over
// HTTP the connection deleted. It is safe to call more than once.
func (a *Agent) Close() error {
	a.conn.Close()
	return a.t.Close()
}
