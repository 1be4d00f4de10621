package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
)

type deployArgs struct {
	Env string `json:"env"`
}

type deployStatus struct {
	Env   string `json:"env"`
	Ready bool   `json:"ready"`
}

// A typed custom operation: args decoded into a Go type, the result
// encoded, the operation advertised, a bad args answered -32602 naming the
// operation, other operations still reaching HostCall.
func TestTypedOperation(t *testing.T) {
	status := host.Op("project.deploy_status", func(_ context.Context, a *deployArgs, call *harn.HostCallParams) (*deployStatus, error) {
		return &deployStatus{Env: a.Env, Ready: a.Env == "prod"}, nil
	})
	c := pair(t, generic(), &host.Options{Operations: []host.Operation{status}})
	ctx := context.Background()
	if ok, err := c.Supports(ctx, "project", "deploy_status"); err != nil || !ok {
		t.Fatalf("the operation is not advertised: %v %v", ok, err)
	}
	var res jsontext.Value
	if err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "project.deploy_status", Args: jsontext.Value(`{"env":"prod"}`)}, &res); err != nil || string(res) != `{"env":"prod","ready":true}` {
		t.Fatalf("typed operation: %s %v", res, err)
	}
	err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "project.deploy_status", Args: jsontext.Value(`{"env":3}`)}, &res)
	if !errors.Is(err, rpc.ErrInvalidParams) || !strings.Contains(err.Error(), "project.deploy_status") {
		t.Fatalf("bad args: %v", err)
	}
	if err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "other.op", Args: jsontext.Value(`[2]`)}, &res); err != nil || string(res) != `{"echo":[2]}` {
		t.Fatalf("another operation: %s %v", res, err)
	}
	// Without a HostCall field, an unknown operation is unsupported.
	c = pair(t, &harn.HostHandlers{}, &host.Options{Operations: []host.Operation{status}})
	if err := c.Conn().Call(ctx, harn.MethodHostCall, harn.HostCallParams{Name: "other.op", Args: jsontext.Value(`{}`)}, &res); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("an unknown operation: %v", err)
	}
}

func TestOperationNamesChecked(t *testing.T) {
	op := host.Op("nodot", func(context.Context, *struct{}, *harn.HostCallParams) (int, error) { return 1, nil })
	defer func() {
		if recover() == nil {
			t.Fatal("a name without capability.op was accepted")
		}
	}()
	host.New(&harn.HostHandlers{}, &host.Options{Operations: []host.Operation{op}})
}
