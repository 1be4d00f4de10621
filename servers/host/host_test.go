package host_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/internal/testio"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
	"github.com/go-json-experiment/json/jsontext"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }

// pair serves h and returns a VM-side client for it.
func pair(t *testing.T, h *harn.HostHandlers, opts *host.Options) *harnvm.Client {
	t.Helper()
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- host.New(h, opts).Serve(context.Background(), hostIn, hostOut) }()
	c := harnvm.New(vmIn, vmOut, nil, nil)
	t.Cleanup(func() {
		c.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

// generic serves every operation through the generic HostCall field.
func generic() *harn.HostHandlers {
	return &harn.HostHandlers{HostCall: func(ctx context.Context, p *harn.HostCallParams) (jsontext.Value, error) {
		return jsontext.Value(`{"echo":` + string(p.Args) + `}`), nil
	}}
}

func TestFallbackHandlerAndExtraCapabilities(t *testing.T) {
	c := pair(t, generic(), &host.Options{Capabilities: map[string][]string{"project": {"mcp_config"}}})
	ctx := context.Background()
	ok, err := c.Supports(ctx, "project", "mcp_config")
	if err != nil || !ok {
		t.Fatalf("extra capability: %v %v", ok, err)
	}
	if ok, _ := c.Supports(ctx, "process", "list_shells"); ok {
		t.Fatal("a fallback handler advertises nothing by itself")
	}
	var res jsontext.Value
	if err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "project.mcp_config", Args: jsontext.Value(`[1]`)}, &res); err != nil || string(res) != `{"echo":[1]}` {
		t.Fatalf("fallback: %s %v", res, err)
	}
}

func ownCaps() *harn.HostHandlers {
	return &harn.HostHandlers{HostCapabilities: func(context.Context, *harn.HostCapabilitiesParams) (harn.HostCapabilities, error) {
		return harn.HostCapabilities{"custom": {List: []string{"op"}}}, nil
	}}
}

func TestHostCapabilitiesHandlerWins(t *testing.T) {
	c := pair(t, ownCaps(), nil)
	caps, err := c.HostCapabilities(context.Background(), nil)
	if err != nil || len(caps) != 1 || caps["custom"].List[0] != "op" {
		t.Fatalf("%v %v", caps, err)
	}
}

func TestInvalidParamsAndUnknownMethod(t *testing.T) {
	c := pair(t, generic(), nil)
	ctx := context.Background()
	err := c.Conn().Call(ctx, harn.MethodHostCall, map[string]any{"args": 1}, nil)
	if !errors.Is(err, rpc.ErrInvalidParams) {
		t.Fatalf("missing name: %v", err)
	}
	err = c.Conn().Call(ctx, "skills/list", nil, nil)
	if !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unknown method: %v", err)
	}
}

func TestServeEndsWithContext(t *testing.T) {
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	defer vmOut.Close()
	defer vmIn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- host.New(generic(), nil).Serve(ctx, hostIn, hostOut) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve ignored its context")
	}
}

func TestServeCommandKillsChildOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := host.New(generic(), nil).ServeCommand(ctx, exec.Command("sleep", "30"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("ServeCommand: %v after %v", err, time.Since(start))
	}
}

// A grandchild that inherited a stderr exec copies (not a file) does not
// hold ServeCommand once the child has exited.
func TestServeCommandGrandchildHoldingStderr(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & exit 0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := host.New(generic(), &host.Options{StopGrace: 200 * time.Millisecond, DrainGrace: 200 * time.Millisecond}).ServeCommand(context.Background(), cmd)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("ServeCommand returned after %v (%v)", took, err)
	}
}

func TestServeCommandReturnsChildExit(t *testing.T) {
	err := host.New(generic(), nil).ServeCommand(context.Background(), exec.Command("sh", "-c", "exit 3"))
	var exit *host.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || exit.Status() != 3 {
		t.Fatalf("got %v", err)
	}
}

// A request pending when the input ends holds Serve, which answers every
// request it read; InputEnded (called once) is where the host ends it.
func TestInputEndedReleasesPendingRequests(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	h := &harn.HostHandlers{HostCall: func(ctx context.Context, p *harn.HostCallParams) (jsontext.Value, error) {
		select {
		case <-release:
			return jsontext.Value(`"released"`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	srv := host.New(h, &host.Options{InputEnded: func() {
		if calls.Add(1) == 1 {
			close(release)
		}
	}})
	in := strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"host/call","params":{"name":"wait.forever","args":{}}}` + "\n")
	var out testio.Buffer
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), in, &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request pending at the end of input held Serve")
	}
	if got := out.String(); !strings.Contains(got, `"id":7`) || !strings.Contains(got, `"result":"released"`) {
		t.Fatalf("reply: %q", got)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("InputEnded called %d times", n)
	}
}
