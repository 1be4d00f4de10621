package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Operation is a custom host/call operation with typed arguments and
// result, for the operations the catalogue does not type (those it types
// have fields of their own in harn.HostHandlers). Make one with Op and give
// it to Options.Operations.
type Operation struct {
	// Name is the operation's host/call name, "capability.op" (for example
	// "project.deploy_status"); host/capabilities advertises op under
	// capability.
	Name string
	call func(context.Context, *harn.HostCallParams) (jsontext.Value, error)
}

// Op returns the operation name served by f. The call's args are decoded
// into an A (a JSON object or array, as the runtime sends it); args that
// do not decode are answered -32602 naming the operation; f's result is
// the call's result. The host/call params themselves (session id, _meta)
// are f's third argument.
func Op[A, R any](name string, f func(ctx context.Context, args *A, call *harn.HostCallParams) (R, error)) Operation {
	return Operation{Name: name, call: func(ctx context.Context, p *harn.HostCallParams) (jsontext.Value, error) {
		var args A
		if len(p.Args) > 0 && string(p.Args) != "null" {
			if err := json.Unmarshal(p.Args, &args); err != nil {
				return nil, rpc.InvalidParams(fmt.Errorf("host/call %s: args: %w", rpc.Truncate(name, rpc.MaxEcho), err))
			}
		}
		res, err := f(ctx, &args, p)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("host/call %s: cannot encode the result: %w", name, err)
		}
		return jsontext.Value(b), nil
	}}
}

// withOperations serves ops through h's generic HostCall field: an
// operation of ops by its name, any other as h.HostCall did (or
// unsupported), and adds them to the advertised capabilities.
func withOperations(h *harn.HostHandlers, ops []Operation, caps map[string][]string) (map[string][]string, error) {
	byName := make(map[string]Operation, len(ops))
	out := make(map[string][]string, len(caps)+len(ops))
	for c, list := range caps {
		out[c] = append([]string(nil), list...)
	}
	for _, op := range ops {
		capability, name, ok := strings.Cut(op.Name, ".")
		if !ok || capability == "" || name == "" || op.call == nil {
			return nil, fmt.Errorf("host: operation %q: want capability.op, made by host.Op", op.Name)
		}
		if _, dup := byName[op.Name]; dup {
			return nil, fmt.Errorf("host: operation %q given twice", op.Name)
		}
		byName[op.Name] = op
		out[capability] = append(out[capability], name)
	}
	next := h.HostCall
	h.HostCall = func(ctx context.Context, p *harn.HostCallParams) (jsontext.Value, error) {
		if op, ok := byName[p.Name]; ok {
			return op.call(ctx, p)
		}
		if next != nil {
			return next(ctx, p)
		}
		return nil, rpc.UnsupportedOperation(harn.MethodHostCall, p.Name)
	}
	return out, nil
}
