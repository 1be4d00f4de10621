package acprouter

import (
	"context"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/internal/acpversion"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// v2Gate holds a v2 connection to the initialization rules of the TypeScript SDK's v2 agent connection:
// requests other than initialize are refused with -32600 until an initialize has completed and while
// one (a repeat) is in progress; notifications before the first initialization are ignored, and those
// during a repeat wait for it; a repeated initialize is refused after any other request, while another
// is in progress, or when it asks for a version below 2, and its params are rewritten for v2 as the
// router's first one was.
type v2Gate struct {
	next rpc.Handler

	mu          sync.Mutex
	routed      bool // the router's initialize (rewritten already) has been taken
	initialized bool
	running     chan struct{} // closed when the initialize in progress ends; nil when none is
	otherSeen   bool          // a request other than initialize was let through after initialization
}

func newV2Gate(next rpc.Handler) *v2Gate { return &v2Gate{next: next} }

func invalidRequest(data string) *rpc.Error {
	return rpc.NewError(acpversion.CodeInvalidRequest, "Invalid request", data)
}

// screenV2IDs refuses, before anything else sees it, a request whose id ACP v2 does not allow (neither
// a string nor an integer: null, a fraction), answering it under a null id as the TypeScript SDK's v2
// connection does; then it applies next, the program's own Screen, if any.
func screenV2IDs(next func(*rpc.Message) *rpc.FrameError) func(*rpc.Message) *rpc.FrameError {
	return func(m *rpc.Message) *rpc.FrameError {
		if m.Kind == rpc.KindRequest && !acpversion.V2RequestID(m.ID) {
			e := rpc.NewError(acpversion.CodeInvalidRequest, acpversion.V2RequestIDMessage, nil)
			return &rpc.FrameError{Kind: rpc.FrameInvalid, Err: e, Reply: e}
		}
		if next != nil {
			return next(m)
		}
		return nil
	}
}

func (g *v2Gate) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.Method == acpv2.MethodInitialize && req.Kind == rpc.KindRequest {
		return g.initialize(ctx, req)
	}
	if req.Kind != rpc.KindRequest {
		if req.Method == acpv2.MethodCancelRequest { // the connection applied it already
			return nil, nil
		}
		for {
			g.mu.Lock()
			initialized, running := g.initialized, g.running
			g.mu.Unlock()
			switch {
			case !initialized:
				return nil, nil
			case running == nil:
				return g.next.Handle(ctx, req)
			}
			select {
			case <-running:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	g.mu.Lock()
	ready := g.initialized && g.running == nil
	if ready {
		g.otherSeen = true
	}
	g.mu.Unlock()
	if !ready {
		// Not waited for: the spec requires refusing them until initialize completes.
		return nil, invalidRequest("ACP v2 connection must be initialized before '" + req.Method + "'")
	}
	return g.next.Handle(ctx, req)
}

func (g *v2Gate) initialize(ctx context.Context, req *rpc.Request) (any, error) {
	g.mu.Lock()
	switch {
	case g.running != nil:
		g.mu.Unlock()
		return nil, invalidRequest("ACP v2 initialize is already in progress")
	case g.initialized && g.otherSeen:
		g.mu.Unlock()
		return nil, invalidRequest("ACP v2 initialize must not be repeated after other requests")
	}
	again, initialized := g.routed, g.initialized
	g.routed = true
	done := make(chan struct{})
	g.running = done
	g.mu.Unlock()

	ok := false
	defer func() {
		g.mu.Lock()
		g.running = nil
		g.initialized = g.initialized || ok
		g.mu.Unlock()
		close(done)
	}()
	if again {
		// The router's initialize was rewritten by the router; a later one (a repeat, or a retry after
		// a failed first) is checked and rewritten here.
		requested, err := requestedVersion(req.Params)
		if err != nil {
			return nil, err
		}
		switch {
		case requested < acpversion.V2 && initialized:
			return nil, rpc.NewError(acpversion.CodeInvalidRequest, "Invalid request: a repeated initialize must request protocol version 2 or later", nil)
		case requested < acpversion.V2:
			return nil, rpc.NewError(acpversion.CodeUnsupportedProtocolVersion, "Unsupported protocol version", struct {
				Requested int   `json:"requested"`
				Supported []int `json:"supported"`
			}{requested, []int{acpversion.V2}})
		}
		params, err := acpversion.RewriteInitialize(req.Params, requested, acpversion.V2)
		if err != nil {
			return nil, rpc.NewError(acpversion.CodeInvalidParams, "Invalid params", "invalid initialize params: "+err.Error())
		}
		r := *req
		r.Params = params
		req = &r
	}
	res, err := g.next.Handle(ctx, req)
	ok = err == nil
	return res, err
}

// requestedVersion reads an initialize's protocolVersion, refusing it as the router does.
func requestedVersion(params jsontext.Value) (int, error) {
	v := rpc.Member(params, "protocolVersion")
	if n, err := strconv.ParseFloat(string(v), 64); err == nil && v.Kind() == '0' && n >= 0 && n <= acpversion.MaxVersion && n == float64(int(n)) {
		return int(n), nil
	}
	return 0, rpc.NewError(acpversion.CodeInvalidParams, "Invalid params", "initialize.protocolVersion must be a valid ACP protocol version")
}
