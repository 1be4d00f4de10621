// Package acpnegotiate is the client side of ACP's version choice: it asks an agent for the draft ACP v2
// (gen/acpv2) and falls back to ACP v1 (gen/acp) when the agent answers v1, on the same stream.
// servers/acprouter is the agent side. Experimental, as v2 itself is a draft.
//
//	c := &acpnegotiate.Client{
//		Init:   acpv2.InitializeRequest{Info: acpv2.Implementation{Name: "me", Version: "1.0"}},
//		V2:     v2Handlers, // *acpv2.ClientHandlers
//		V1Init: &acp.InitializeRequest{ClientCapabilities: &acp.ClientCapabilities{...}},
//		V1:     v1Handlers, // *acp.ClientHandlers
//	}
//	conn, err := c.Connect(ctx, transport)
//	if conn.Version == acpnegotiate.V2 { conn.AgentV2().SessionNew(...) } else { conn.AgentV1().SessionNew(...) }
//
// The client sends v2's initialize. The agent's answer decides:
//   - protocolVersion 2: the connection is v2;
//   - protocolVersion 1 (a v1 agent, or a router serving v1 alone): the connection is v1, when the client
//     allows v1 (V1Init set). The agent was initialized with the v2 params, which a v1 agent reads as a
//     client without fs or terminal; with Reinitialize the client then sends V1Init as a repeated
//     initialize (which v1 allows), so that the agent learns its v1 capabilities;
//   - error -32022 (Unsupported protocol version) whose data.supported lists 1: the client sends V1Init
//     (or, when it has no v1 params of its own, the router's downgrade of its v2 params) and goes on in v1;
//   - anything else ends the connection with an error matching ErrUnsupportedVersion, or the agent's
//     error.
//
// Until the answer is read, requests the agent sends wait for the choice (bounded by their context); then
// they go to the chosen version's handlers. Unless v1 was chosen, a request whose id is neither a string
// nor an integer (null, 1.5) is refused with -32600 under a null id, as the TypeScript SDK's v2 client
// connection does.
package acpnegotiate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/internal/acpversion"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The protocol versions a connection may end up with.
const (
	V1 = acpversion.V1
	V2 = acpversion.V2
)

// ErrUnsupportedVersion is matched by Connect's error when the agent answers with a version the client
// does not speak.
var ErrUnsupportedVersion = errors.New("acpnegotiate: the agent chose a protocol version the client does not speak")

// Client says what a client offers.
type Client struct {
	// Init is the v2 initialize params sent first; its ProtocolVersion is set to 2.
	Init acpv2.InitializeRequest
	// V2 serves the agent's requests on a v2 connection: an *acpv2.ClientHandlers, possibly wrapped. Nil
	// serves none.
	V2 rpc.Handler
	// V1Init, when set, lets the client fall back to v1, and is what it sends when it initializes v1
	// itself (after -32022, or with Reinitialize); its ProtocolVersion is set to 1. Nil: a v1 agent is
	// refused (ErrUnsupportedVersion).
	V1Init *acp.InitializeRequest
	// V1 serves the agent's requests on a v1 connection: an *acp.ClientHandlers, possibly wrapped.
	V1 rpc.Handler
	// Reinitialize sends V1Init again after an agent answered the v2 initialize with v1.
	Reinitialize bool
	// Options configures the connection; the cancel rules of ACP (the same in v1 and v2) are added. May be
	// nil.
	Options *rpc.Options
}

// Conn is a negotiated connection.
type Conn struct {
	*rpc.Conn
	// Version is the version in force, V1 or V2.
	Version int
	// InitV2 is the agent's answer on v2 (Version V2), InitV1 on v1 (Version V1).
	InitV2 *acpv2.InitializeResponse
	InitV1 *acp.InitializeResponse
}

// AgentV2 calls the agent on a v2 connection; nil on v1.
func (c *Conn) AgentV2() *acpv2.AgentPeer {
	if c.Version != V2 {
		return nil
	}
	return acpv2.NewAgentPeer(c.Conn)
}

// AgentV1 calls the agent on a v1 connection; nil on v2.
func (c *Conn) AgentV1() *acp.AgentPeer {
	if c.Version != V1 {
		return nil
	}
	return acp.NewAgentPeer(c.Conn)
}

// Connect starts a connection on t and initializes it as the package doc says. ctx bounds the
// initialization; the connection outlives it. On an error the connection is closed (and t with it).
func (c *Client) Connect(ctx context.Context, t frame.Transport) (*Conn, error) {
	sw := &switchHandler{chosen: make(chan struct{})}
	var o rpc.Options
	if c.Options != nil {
		o = *c.Options
	}
	// v2's request ids (strings and integers) hold until v1 is chosen.
	o.Screen = acpversion.ScreenV2RequestIDs(func() bool { return !sw.v1.Load() }, o.Screen)
	opts := rpc.WithOptions(acp.ConnOptions(&o), nil, nil, acpv2.MethodNames)
	conn := rpc.NewTransportConn(t, acp.NewCodec(), sw, opts)
	out, err := c.negotiate(ctx, conn, sw)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return out, nil
}

func (c *Client) negotiate(ctx context.Context, conn *rpc.Conn, sw *switchHandler) (*Conn, error) {
	init := c.Init
	init.ProtocolVersion = V2
	var raw jsontext.Value
	err := conn.Call(ctx, acpv2.MethodInitialize, &init, &raw)
	var rerr *rpc.Error
	switch {
	case errors.As(err, &rerr) && rerr.Code == acpversion.CodeUnsupportedProtocolVersion && c.V1Init != nil && supports(rerr.Data, V1):
		return c.initV1(ctx, conn, sw, &init)
	case err != nil:
		return nil, fmt.Errorf("acpnegotiate: initialize: %w", err)
	}
	version := rpc.Member(raw, "protocolVersion")
	switch n, err := strconv.ParseFloat(string(version), 64); {
	case err != nil || version.Kind() != '0':
	case n == V2:
		var res acpv2.InitializeResponse
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("acpnegotiate: the agent's v2 initialize answer: %w", err)
		}
		sw.choose(V2, c.V2)
		return &Conn{Conn: conn, Version: V2, InitV2: &res}, nil
	case n == V1:
		if c.V1Init == nil {
			break
		}
		if c.Reinitialize {
			return c.initV1(ctx, conn, sw, nil)
		}
		var res acp.InitializeResponse
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("acpnegotiate: the agent's v1 initialize answer: %w", err)
		}
		sw.choose(V1, c.V1)
		return &Conn{Conn: conn, Version: V1, InitV1: &res}, nil
	}
	return nil, fmt.Errorf("%w: protocolVersion %s", ErrUnsupportedVersion, rpc.Truncate(string(version), 32))
}

// initV1 initializes the connection as v1: with V1Init, or, when it is empty and v2 is given, with the
// router's downgrade of the v2 params.
func (c *Client) initV1(ctx context.Context, conn *rpc.Conn, sw *switchHandler, v2 *acpv2.InitializeRequest) (*Conn, error) {
	var params any
	v1 := *c.V1Init
	v1.ProtocolVersion = V1
	params = &v1
	if v2 != nil && isZero(c.V1Init) {
		b, err := json.Marshal(v2)
		if err != nil {
			return nil, err
		}
		down, err := acpversion.DowngradeInitialize(b)
		if err != nil {
			return nil, err
		}
		params = down
	}
	var res acp.InitializeResponse
	if err := conn.Call(ctx, acp.MethodInitialize, params, &res); err != nil {
		return nil, fmt.Errorf("acpnegotiate: v1 initialize: %w", err)
	}
	if res.ProtocolVersion != V1 {
		return nil, fmt.Errorf("%w: protocolVersion %d after a v1 initialize", ErrUnsupportedVersion, res.ProtocolVersion)
	}
	sw.choose(V1, c.V1)
	return &Conn{Conn: conn, Version: V1, InitV1: &res}, nil
}

// isZero reports whether p carries nothing but a protocol version.
func isZero(p *acp.InitializeRequest) bool {
	return p.ClientCapabilities == nil && p.ClientInfo.IsAbsent() && p.Meta.IsAbsent() && len(p.Extra) == 0
}

// supports reports whether the data of a -32022 error lists version v.
func supports(data jsontext.Value, v int) bool {
	var d struct {
		Supported []int `json:"supported"`
	}
	return json.Unmarshal(data, &d) == nil && slices.Contains(d.Supported, v)
}

// switchHandler passes the agent's messages to the chosen version's handler, holding them until the
// choice is made.
type switchHandler struct {
	v1     atomic.Bool // v1 was chosen
	once   sync.Once
	chosen chan struct{}
	h      rpc.Handler // set before chosen closes
}

func (s *switchHandler) choose(version int, h rpc.Handler) {
	s.once.Do(func() {
		s.v1.Store(version == V1)
		s.h = h
		close(s.chosen)
	})
}

func (s *switchHandler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	select {
	case <-s.chosen:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.h == nil {
		return nil, rpc.MethodNotFound(req.Method)
	}
	return s.h.Handle(ctx, req)
}
