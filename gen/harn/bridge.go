package harn

import (
	"context"
	"io"
	"slices"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// The bridge shares its stream with ACP: a host serves this package's
// HostHandlers and ACP's ClientHandlers on one connection, a runtime
// VMHandlers and ACP's AgentHandlers. A wire name of one catalogue is
// never the other's in one direction with the same kind (a test keeps it
// so), so a method is routed by its name and, for the two names both
// catalogues have, by whether it is a request or a notification: Harn's
// session/cancel request (ACP's is a notification) and terminal/output
// notification (ACP's is a request) are the bridge's.

// methodsTo lists the wire names of this catalogue that side serves, with
// the kinds of message each is served as and whether ACP's side acpSide
// serves the name too.
func methodsTo(side, acpSide string) map[string]kinds {
	out := map[string]kinds{}
	for _, m := range Methods {
		if m.To != side {
			continue
		}
		k := out[m.Wire]
		k.shared = k.shared || slices.ContainsFunc(acp.Methods, func(a wire.MethodInfo) bool { return a.Wire == m.Wire && a.To == acpSide })
		switch m.Kind {
		case "request":
			k.request = true
		case "notification":
			k.notification = true
		default: // request_or_notification
			k.request, k.notification = true, true
		}
		out[m.Wire] = k
	}
	return out
}

// kinds says whether a method is served as a request, a notification or
// both, and whether ACP has the name too (in the same direction).
type kinds struct{ request, notification, shared bool }

// bridge reports whether a message of this name and kind is the bridge's:
// always unless ACP has the name too, else when the kind is the bridge's.
// A bridge method sent as the wrong kind stays the bridge's, which
// answers it as such.
func (k kinds) bridge(kind rpc.Kind) bool {
	switch {
	case !k.shared:
		return true
	case kind == rpc.KindNotification:
		return k.notification
	}
	return k.request
}

var (
	hostMethods = methodsTo("host", "client")
	vmMethods   = methodsTo("vm", "agent")
)

// router sends a method of this catalogue to bridge and everything else to
// acp; both fall back to the same handler.
type router struct {
	names  map[string]kinds
	bridge rpc.Handler
	acp    rpc.Handler
}

func (r *router) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if k, ok := r.names[req.Method]; ok && k.bridge(req.Kind) {
		return r.bridge.Handle(ctx, req)
	}
	return r.acp.Handle(ctx, req)
}

// HostHandler returns the rpc.Handler of a Harn host: the bridge methods of
// bridge (host/call and its operations, host/capabilities, skills/*,
// _harn/agentEvent, ...) and ACP's client methods of client (session/update,
// session/request_permission, fs/*, terminal/*), on one connection. A method
// whose field is unset in the struct it belongs to goes to the fallback:
// bridge.Fallback if set, else client.Fallback, else it is answered with
// rpc.ErrMethodNotFound (an unknown host/call operation with
// rpc.UnsupportedOperation), so what is unset is never served. Either struct
// may be nil; both are copied, so later changes to them do not apply.
func HostHandler(bridge *HostHandlers, client *acp.ClientHandlers) rpc.Handler {
	b, c := value(bridge), value(client)
	b.Fallback, c.Fallback = either(b.Fallback, c.Fallback), either(b.Fallback, c.Fallback)
	return &router{names: hostMethods, bridge: &b, acp: &c}
}

// VMHandler returns the rpc.Handler of a Harn runtime (or of a broker or
// test standing in for one): the Harn extension methods of bridge
// (session/inject, session/remind, session/attach, skills/update, ...) and
// ACP's agent methods of agent (initialize, session/new, session/prompt,
// session/cancel, ...), on one connection, with the fallback rules of
// HostHandler.
func VMHandler(bridge *VMHandlers, agent *acp.AgentHandlers) rpc.Handler {
	b, a := value(bridge), value(agent)
	b.Fallback, a.Fallback = either(b.Fallback, a.Fallback), either(b.Fallback, a.Fallback)
	return &router{names: vmMethods, bridge: &b, acp: &a}
}

// value copies *p, or returns the zero value for nil.
func value[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// either is a, or b when a is nil.
func either(a, b rpc.Handler) rpc.Handler {
	if a != nil {
		return a
	}
	return b
}

// BridgeConnOptions returns a copy of opts (which may be nil) with the cancel
// rules, preempted methods and method names of both protocols on the
// stream: ACP's (session/cancel of a session's prompt, $/cancel_request) and
// the bridge's (its control-lane methods: session/inject, the live-session
// methods, session/cancel_tool_call, session/set_budget), and Harn's
// contract (ContractHarn) as the decode options of params and results:
// the members Harn moved under _meta.harn (a tool call's root error,
// durationMs, executor, ...; a text block's visible_text) are rejected at
// their old place, inbound requests with -32602 and notifications reported
// to Options.OnFrameError, where a plain ACP connection keeps them in Extra.
// DecodeOptions already set in opts come first, joined with the contract's.
func BridgeConnOptions(opts *rpc.Options) *rpc.Options {
	o := ConnOptions(acp.ConnOptions(opts))
	if o.DecodeOptions == nil {
		o.DecodeOptions = ContractHarn.Options()
	} else {
		o.DecodeOptions = json.JoinOptions(o.DecodeOptions, ContractHarn.Options())
	}
	return o
}

// NewBridgeConn starts a connection speaking the whole stream between a Harn
// runtime and its host on r and w: ACP and the bridge, with BridgeConnOptions.
// h is typically HostHandler(...) on a host and VMHandler(...) on a runtime;
// call the other side with acp.NewAgentPeer(conn) and NewVMPeer(conn) (from a
// host) or acp.NewClientPeer(conn) and NewHostPeer(conn) (from a runtime).
func NewBridgeConn(r io.Reader, w io.Writer, h rpc.Handler, opts *rpc.Options) *rpc.Conn {
	return rpc.NewConn(r, w, NewCodec(), h, BridgeConnOptions(opts))
}

// NewBridgeTransportConn is NewBridgeConn over the frame transport t (a
// WebSocket, an HTTP stream, frame.Pipe): the connection reads and writes
// whole frames through t, which does the framing, and closes t on Close.
func NewBridgeTransportConn(t frame.Transport, h rpc.Handler, opts *rpc.Options) *rpc.Conn {
	return rpc.NewTransportConn(t, NewCodec(), h, BridgeConnOptions(opts))
}
