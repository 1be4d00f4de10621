package middleware_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/bridgekit/bridgekit/runtime/middleware"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Recover turns a handler's panic into a -32603 answer; Logging records
// every request (here on stdout for the example: a real program logs to
// stderr or a file, never to the protocol's stdout).
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" || a.Key == "stack" {
				return slog.Attr{} // vary from run to run
			}
			return a
		},
	}))
	h := rpc.Chain(rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		panic("a bug")
	}), middleware.Logging(logger, nil), middleware.Recover(slog.New(slog.DiscardHandler)))
	_, err := h.Handle(context.Background(), &rpc.Request{Kind: rpc.KindRequest, Method: "session/prompt"})
	fmt.Println(err)
	// Output:
	// level=WARN msg="rpc: served" kind=request method=session/prompt code=-32603 err="rpc error -32603: internal error: handler panicked"
	// rpc error -32603: internal error: handler panicked
}
