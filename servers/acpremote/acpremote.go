// Package acpremote serves an ACP agent written with bridgekit (acp.AgentHandlers) across the network,
// in process: each remote connection gets its own handlers and connection, behind runtime/remote's
// Server (WebSocket and Streamable HTTP on one endpoint, resumable sessions, authentication, bounds).
//
//	srv := acpremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return newAgent() }, nil)
//	defer srv.Close()
//	http.Handle("/acp", srv)
//
// To put an agent program (any stdio ACP agent or Harn runtime) behind the same endpoint, use
// `bridgekit serve -- AGENT ARGS...`.
package acpremote

import (
	"context"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Options configures a Server. The zero value is ready to use.
type Options struct {
	// Conn configures each connection (limits, concurrency, logger, middleware); ACP's cancel rules are
	// added to it. An agent whose prompts run long should set MaxConcurrentRequests above 1, so that a
	// session/cancel or a second session is not held up behind a prompt.
	Conn rpc.Options
	// Server configures the endpoint: authentication, origins, bounds, the event log.
	Server remote.Options
}

// NewServer returns an http.Handler serving newAgent's handlers to each remote connection. Close it to
// end every connection.
func NewServer(newAgent func(info remote.ConnInfo) *acp.AgentHandlers, opts *Options) *remote.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	backend := remote.InProcess(func(ctx context.Context, info remote.ConnInfo, t frame.Transport) error {
		var h rpc.Handler
		if ah := newAgent(info); ah != nil {
			h = ah
		}
		conn := acp.NewTransportConn(t, h, &o.Conn)
		context.AfterFunc(ctx, func() { conn.Close() })
		return nil
	})
	return remote.NewServer(backend, &o.Server)
}
