// Package acprouter serves ACP v1 (gen/acp) and the draft ACP v2 (gen/acpv2) on one stream, choosing at
// initialize, as the official TypeScript SDK 2.4.0's AgentProtocolRouter does
// (../shared/reference/remote/transports.md §5). Experimental, as v2 itself is a draft.
//
//	a := &acprouter.Agent{V1: v1Handlers, V2: v2Handlers}
//	conn, err := a.Serve(ctx, ndjson.NewTransport(os.Stdin, os.Stdout, nil))
//	if err != nil { ... }
//	<-conn.Done()
//
// Until a valid initialize arrives, the router answers on its own and leaves the stream open, so that the
// client may send initialize again:
//
//	message before initialize                              answer
//	a line that is not JSON                                -32700, id null
//	a batch (a JSON array)                                 -32600 "Invalid request: JSON-RPC batches are not supported", id null
//	a notification, a response                             none (ignored)
//	another object that is no request                      -32600, id null
//	a request other than initialize                        -32600, its id
//	params not an object, protocolVersion not 0…65535      -32602, its id
//	a version the agent does not serve                     -32022 "Unsupported protocol version", data {requested, supported}
//	v2 chosen, id neither a string nor an integer          -32600, id null
//	params that do not decode for the chosen version       -32602, its id
//	a frame over the transport's size limit                -32600, its id if its head shows one (*)
//	a frame over Options.MaxFrame or Options.MaxObjects    -32600, as above, the frame unread
//
// (*) The TypeScript SDK ends the stream on an over-long line; the router answers it and goes on, as
// bridgekit's engine does after initialize.
//
// The version: an agent serving v1 alone speaks v1 whatever was requested (the client then decides, as
// v1's negotiation says); otherwise v2 for a request of 2 or more, and v1 for 1. The initialize handed to
// the chosen handlers has its params rewritten for that version (internal/acpversion.RewriteInitialize):
// protocolVersion set to the chosen one, malformed optional members dropped, a v2 request downgraded to
// v1's shape for a v1 agent; null members and empty arrays removed. Members the schema does not name are
// kept, where the TypeScript router drops them. The connection then belongs to that version for good.
// On v2, as the TypeScript SDK's v2 connection does: a request whose id is neither a string nor an
// integer (null, 1.5) is refused with -32600 under a null id, before any handler or Options.Screen sees
// it; a repeated initialize is accepted only before any other request and for version 2 or later;
// other requests are refused with -32600 until an initialize has completed and while a repeat is in
// progress (never held for it), and notifications sent during a repeat wait for it.
//
// clients/acpnegotiate is the client side: it asks for v2 and falls back to v1.
package acprouter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/internal/acpversion"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The protocol versions an Agent may choose.
const (
	V1 = acpversion.V1
	V2 = acpversion.V2
)

// ErrNoInitialize is matched by Serve's error when the stream ends before a valid initialize.
var ErrNoInitialize = errors.New("acprouter: the stream ended before initialize")

// ErrNoVersion is Serve's error for an Agent with neither V1 nor V2.
var ErrNoVersion = errors.New("acprouter: no protocol version configured")

// Agent serves the versions whose handlers are set.
type Agent struct {
	// V1 serves an ACP v1 connection: an *acp.AgentHandlers, possibly wrapped in middleware. Nil: v1 is
	// not served.
	V1 rpc.Handler
	// V2 serves a draft ACP v2 connection: an *acpv2.AgentHandlers, possibly wrapped. Nil: v2 is not
	// served.
	V2 rpc.Handler
	// Options configures the routed connection (limits, concurrency, logger, middleware); the chosen
	// version's cancel rules are added to it. May be nil.
	Options *rpc.Options
}

// Conn is a routed connection.
type Conn struct {
	*rpc.Conn
	// Version is the version chosen, V1 or V2.
	Version int
	// Requested is the protocolVersion the client's initialize asked for.
	Requested int
}

// Serve reads t until a valid initialize, answering what comes before it as the package doc says, and
// returns the connection of the chosen version, which has the initialize to handle first. ctx bounds the
// wait for initialize only: when it ends first, Serve closes t and returns its error. When the stream
// ends or fails first, Serve closes t and returns an error (matching ErrNoInitialize at the end of input).
// The routed connection closes t when it is closed.
func (a *Agent) Serve(ctx context.Context, t frame.Transport) (*Conn, error) {
	cfg := acpversion.Config{V1: a.V1 != nil, V2: a.V2 != nil}
	if !cfg.V1 && !cfg.V2 {
		t.Close()
		return nil, ErrNoVersion
	}
	// Some transports (a pipe's reader) only stop reading when closed.
	stop := context.AfterFunc(ctx, func() { t.Close() })
	fail := func(err error) (*Conn, error) {
		stop()
		t.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	// The routed connection's bounds hold before initialize too: a frame over them is refused unread.
	maxFrame, maxObjects := frame.DefaultMaxFrame, rpc.DefaultMaxObjects
	if o := a.Options; o != nil {
		if o.MaxFrame > 0 {
			maxFrame = o.MaxFrame
		}
		if o.MaxObjects != 0 {
			maxObjects = o.MaxObjects
		}
	}
	for {
		f, err := t.Read(ctx)
		var d acpversion.Decision
		if tl, ok := errors.AsType[*frame.TooLargeError](err); ok {
			d = cfg.DecideTooLarge(tl.Head, tl.Limit)
		} else if err == nil && len(f) > maxFrame {
			d = cfg.DecideTooLarge(f[:min(len(f), frame.HeadSize)], maxFrame)
		} else if err == nil && rpc.OverObjects(f, maxObjects) {
			d = cfg.DecideRefused(f[:min(len(f), frame.HeadSize)], "message has more than "+strconv.Itoa(maxObjects)+" JSON objects and arrays")
		} else if errors.Is(err, io.EOF) {
			return fail(fmt.Errorf("%w: %w", ErrNoInitialize, err))
		} else if err != nil {
			return fail(fmt.Errorf("acprouter: reading before initialize: %w", err))
		} else {
			d = cfg.Decide(f)
		}
		if d.Reply != nil {
			if err := t.Write(ctx, d.Reply); err != nil {
				return fail(fmt.Errorf("acprouter: answering before initialize: %w", err))
			}
			continue
		}
		if d.Version == 0 {
			continue
		}
		if !stop() { // ctx ended: t is closed
			return fail(nil)
		}
		rt := &replay{Transport: t, first: d.Initialize}
		var opts rpc.Options
		if a.Options != nil {
			opts = *a.Options
		}
		if len(d.Initialize) > maxFrame {
			// The rewrite may lengthen a frame that was within the bound (a downgrade adds v1's
			// capabilities): the connection must not refuse what the router let in.
			opts.MaxFrame = len(d.Initialize)
		}
		var c *rpc.Conn
		if d.Version == V1 {
			c = acp.NewTransportConn(rt, a.V1, &opts)
		} else {
			opts.Screen = screenV2IDs(opts.Screen)
			c = acpv2.NewTransportConn(rt, newV2Gate(a.V2), &opts)
		}
		return &Conn{Conn: c, Version: d.Version, Requested: d.Requested}, nil
	}
}

// replay is the routed connection's transport: the rewritten initialize first, then t's frames.
type replay struct {
	frame.Transport
	first []byte // read by the connection's one reader only
}

func (r *replay) Read(ctx context.Context) ([]byte, error) {
	if f := r.first; f != nil {
		r.first = nil
		return f, nil
	}
	return r.Transport.Read(ctx)
}
