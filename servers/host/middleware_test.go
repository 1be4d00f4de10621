package host_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/middleware"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
)

// Options.Conn.Middleware wraps every method a host serves; a panicking
// operation is a -32603 answer and the host goes on serving.
func TestMiddleware(t *testing.T) {
	var mu sync.Mutex
	var out strings.Builder
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	}), nil))
	h := &harn.HostHandlers{HostCall: func(ctx context.Context, p *harn.HostCallParams) (jsontext.Value, error) {
		if p.Name == "project.boom" {
			panic("nil map")
		}
		return jsontext.Value(`{}`), nil
	}}
	c := pair(t, h, &host.Options{Conn: rpc.Options{Middleware: []rpc.Middleware{middleware.Logging(logger, nil), middleware.Recover(logger)}}})
	ctx := context.Background()
	var res jsontext.Value
	err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "project.boom", Args: jsontext.Value(`{}`)}, &res)
	if !errors.Is(err, rpc.ErrInternal) {
		t.Fatalf("a panicking operation answered %v, want -32603", err)
	}
	if err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "project.ok", Args: jsontext.Value(`{}`)}, &res); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"rpc: handler panicked", "nil map", "method=host/call", "level=WARN"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, out.String())
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
