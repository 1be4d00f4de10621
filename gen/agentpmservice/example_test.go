package agentpmservice_test

import (
	"context"
	"fmt"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
)

// A hook service registers its hooks by setting the fields named after the
// hook ids; each gets that hook's input and answers continue (with a patch
// typed for the hook) or reject. Hooks lists what it registered, for the
// handshake; InvokeHooks answers the seed's invoke spelling with the same
// fields.
func ExampleServiceHandlers_Hooks() {
	h := &agentpmservice.ServiceHandlers{
		BeforeToolCall: func(_ context.Context, p *agentpmservice.BeforeToolCallHook) (*agentpmservice.BeforeToolCallDecision, error) {
			if p.Input.Tool == "@zack/rm-rf" {
				reason := "tool not allowed by policy"
				return &agentpmservice.BeforeToolCallDecision{Reject: &agentpmservice.HookReject{Reason: &reason}}, nil
			}
			return &agentpmservice.BeforeToolCallDecision{Continue: &agentpmservice.BeforeToolCallDecisionContinue{}}, nil
		},
	}
	h.InitializeHook = func(_ context.Context, p *agentpmservice.HookInitialize) (*agentpmservice.HookReadiness, error) {
		ready := true
		return &agentpmservice.HookReadiness{RegistryID: &p.RegistryID, Ready: &ready, Hooks: h.Hooks()}, nil
	}
	h.Invoke = agentpmservice.InvokeHooks(h)

	ready, _ := h.InitializeHook(context.Background(), &agentpmservice.HookInitialize{RegistryID: "policy", Hooks: []agentpmservice.HookID{"before_tool_call"}})
	fmt.Println("hooks:", ready.Hooks)
	d, _ := h.Invoke(context.Background(), &agentpmservice.HookInvocation{Hook: "before_tool_call", Input: []byte(`{"phase_id":"p","tool":"@zack/rm-rf","arguments":{}}`)})
	fmt.Println(d.Tag(), *d.Reject.Reason)
	// Output:
	// hooks: [before_tool_call]
	// reject tool not allowed by policy
}
