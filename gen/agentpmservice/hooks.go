package agentpmservice

// Hand-written beside the generated code: hooks registered by hook id.
//
// The Harness calls a hook service with the hook id as the method name and
// {hook, input} as the payload, so each hook id this version knows is a
// typed field of ServiceHandlers (BeforeModelRequest, BeforeToolCall, ...)
// taking that hook's input and returning its decision: continue, with a
// patch typed for that hook, or reject. Setting a field registers the hook;
// Hooks lists what is registered, for the handshake's hooks member. Hook ids
// this version does not know reach Fallback with their raw payload. The
// seed's invoke method carries the same payload; InvokeHooks answers it with
// the hook-id fields.

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Hooks returns the ids of the hooks h serves (the hook methods whose fields
// are set), in catalogue order: what a hook service's handshake result
// advertises in hooks. invoke and initialize are not hooks.
func (h *ServiceHandlers) Hooks() []HookID {
	hooks := []HookID{}
	for _, m := range h.Served() {
		if m.Qualifier == string(ServiceRoleHook) && m.Wire != MethodInitializeHook && m.Wire != MethodInvoke {
			hooks = append(hooks, HookID(m.Wire))
		}
	}
	return hooks
}

// InvokeHooks returns a handler for the invoke method that calls the hook-id
// field of h that p.Hook names, with the same payload, and returns its
// decision: set ServiceHandlers.Invoke to it to answer both spellings with
// one set of hooks. A hook id h does not serve (nor its Fallback) is answered
// with rpc.ErrMethodNotFound (unsupported_capability on the wire); input
// that does not fit the hook's input type with rpc.ErrInvalidParams.
func InvokeHooks(h *ServiceHandlers) func(context.Context, *HookInvocation) (*HookDecision, error) {
	return func(ctx context.Context, p *HookInvocation) (*HookDecision, error) {
		if p.Hook == "" || string(p.Hook) == MethodInvoke || string(p.Hook) == MethodInitializeHook {
			return nil, rpc.MethodNotFound(string(p.Hook))
		}
		params, err := json.Marshal(p, wire.Fidelity)
		if err != nil {
			return nil, rpc.InvalidParams(err)
		}
		res, err := h.Handle(ctx, &rpc.Request{Kind: rpc.KindRequest, Method: string(p.Hook), Qualifier: string(ServiceRoleHook), Params: params})
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(res, wire.Fidelity)
		if err != nil {
			return nil, fmt.Errorf("agentpmservice: hook %s: encode its decision: %w", p.Hook, err)
		}
		var d HookDecision
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("agentpmservice: hook %s answered %s, which is no hook decision: %w", p.Hook, rpc.Truncate(string(raw), rpc.MaxEcho), err)
		}
		return &d, nil
	}
}
