package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxConcurrentEnv, if set to a number, becomes the
// Options.MaxConcurrentRequests of every "bridgekit" connection (in the
// driver, its workers and their child peers), for trying other settings.
const MaxConcurrentEnv = "BRIDGEKIT_BENCH_MAX_CONCURRENT"

// BridgekitConcurrency is the Options.MaxConcurrentRequests of the
// "bridgekit" runtime. acp-go-sdk starts a goroutine per inbound request,
// so bridgekit is compared handling requests concurrently too; 16 is the
// most callers any scenario has in flight, so the bound never throttles.
// (servers/host, bridgekit's Harn host, runs 8 by default.)
const BridgekitConcurrency = 16

// Bridgekit returns the adapter for bridgekit's runtime/jsonrpc handling
// requests concurrently (BridgekitConcurrency, or MaxConcurrentEnv).
func Bridgekit() Runtime {
	n := BridgekitConcurrency
	if v, err := strconv.Atoi(os.Getenv(MaxConcurrentEnv)); err == nil {
		n = v
	}
	return bridgekitRT{key: "bridgekit", name: "bridgekit", opts: &rpc.Options{MaxConcurrentRequests: n, Cancels: cancelRules}}
}

// BridgekitSequential returns the adapter for bridgekit's runtime/jsonrpc
// with its default Options: requests handled one at a time in arrival
// order. The report shows it beside the round trips.
func BridgekitSequential() Runtime {
	return bridgekitRT{key: "bridgekit-seq", name: "bridgekit, one request at a time", opts: &rpc.Options{Cancels: cancelRules}}
}

// cancelRules is what gen/acp's connections apply: a request whose caller
// gives up is cancelled with $/cancel_request, as acp-go-sdk does, so that
// the handler's context ends. Every request then gets a context of its own.
var cancelRules = []rpc.CancelRule{{Method: "$/cancel_request", ByID: "requestId"}}

// BridgekitOptions describes the options Bridgekit uses.
func BridgekitOptions() string {
	if n, err := strconv.Atoi(os.Getenv(MaxConcurrentEnv)); err == nil {
		return fmt.Sprintf("Options{MaxConcurrentRequests: %d} (from %s) and ACP's $/cancel_request rule", n, MaxConcurrentEnv)
	}
	return fmt.Sprintf("Options{MaxConcurrentRequests: %d} and ACP's $/cancel_request rule: requests handled concurrently and cancellable by id, as acp-go-sdk does", BridgekitConcurrency)
}

// BridgekitWith returns the bridgekit adapter with the given options, for
// exploring configurations.
func BridgekitWith(opts *rpc.Options) Runtime {
	return bridgekitRT{key: "bridgekit", name: "bridgekit", opts: opts}
}

type bridgekitRT struct {
	key, name string
	opts      *rpc.Options
}

func (rt bridgekitRT) Name() string { return rt.name }
func (rt bridgekitRT) Key() string  { return rt.key }

func (rt bridgekitRT) Open(r io.Reader, w io.Writer, svc *Service) Conn {
	var h rpc.Handler
	if svc != nil {
		h = rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			res, err := serve(ctx, svc, req.Method, req.Params, decodeBridgekit)
			if errors.Is(err, errUnknownMethod) {
				return nil, rpc.MethodNotFound(req.Method)
			}
			return res, err
		})
	}
	return bridgekitConn{jsonrpc.NewConn(r, w, h, rt.opts)}
}

// decodeBridgekit is how a bridgekit handler decodes params.
func decodeBridgekit(raw jsontext.Value, v any) error { return rpc.DecodeParams(raw, v) }

type bridgekitConn struct{ c *rpc.Conn }

func (c bridgekitConn) Call(ctx context.Context, method string, params, result any) error {
	return c.c.Call(ctx, method, params, result)
}

func (c bridgekitConn) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, method, params)
}

func (c bridgekitConn) Done() <-chan struct{} { return c.c.Done() }
func (c bridgekitConn) Err() error            { return c.c.Err() }
func (c bridgekitConn) Close() error          { return c.c.Close() }
