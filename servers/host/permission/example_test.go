package permission_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A host serves session/request_permission with a Gate. Here the policy
// allows reads and fails on everything else: the failure becomes a deny,
// never an error reply and never a grant.
func ExampleGate() {
	policy := func(_ context.Context, req *acp.RequestPermissionRequest) (permission.Decision, error) {
		if kind, ok := req.ToolCall.Kind.Get(); ok && kind == acp.ToolKindRead {
			return permission.Decision{Allow: true}, nil
		}
		return permission.Decision{}, errors.New("no rule for this tool")
	}
	gate := permission.New(policy, &permission.Options{
		Timeout: time.Minute,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		// The runtime advertised Harn's extensions (agentCapabilities._meta.harn):
		// a denial says why in Harn's root "reason" member.
		HarnPeer: func() bool { return true },
	})
	_ = &acp.ClientHandlers{SessionRequestPermission: gate.Handle}

	for _, kind := range []acp.ToolKind{acp.ToolKindRead, acp.ToolKindEdit} {
		req := &acp.RequestPermissionRequest{
			SessionID: "session_123",
			ToolCall:  acp.ToolCallUpdate{ToolCallID: "call_1", Kind: wire.Some(kind)},
			Options: []acp.PermissionOption{
				{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
		}
		resp, _ := gate.Handle(context.Background(), req)
		doc, _ := json.Marshal(resp)
		fmt.Printf("%s: %s granted=%v\n", kind, doc, permission.Granted(resp))
	}
	// Output:
	// read: {"outcome":{"outcome":"selected","optionId":"allow"}} granted=true
	// edit: {"outcome":{"outcome":"selected","optionId":"reject"},"reason":"host permission handler failed"} granted=false
}

// A runtime reads its host's answer with Check: only "allow" grants, and a
// failed call denies.
func ExampleCheck() {
	for _, doc := range []string{
		`{"outcome":{"outcome":"selected","optionId":"allow"}}`,
		`{"outcome":{"outcome":"selected","optionId":"allow_once"}}`,
		`{"outcome":{"outcome":"cancelled"}}`,
	} {
		var resp acp.RequestPermissionResponse
		_ = json.Unmarshal([]byte(doc), &resp)
		err := permission.Check(&resp, nil)
		fmt.Printf("%v cancelled=%v\n", err, errors.Is(err, permission.ErrCancelled))
	}
	// Output:
	// <nil> cancelled=false
	// permission denied: option "allow_once" selected cancelled=false
	// permission denied: outcome cancelled cancelled=true
}

// A host decides permission requests with a Policy (the rules of its
// policy file) and a Tracker fed with every session/update, so that a
// request that omits what its tool_call said (claude-code-acp sends no
// kind) is decided on the whole call.
func ExamplePolicy() {
	var rules []permission.Rule
	_ = json.Unmarshal([]byte(`[
		{"id": "no-secrets", "paths": ["secrets/**"], "decision": "deny"},
		{"id": "edits", "kinds": ["edit"], "paths": ["src/**"], "decision": "allow"},
		{"id": "tests", "kinds": ["execute"], "commands": ["go test **"], "decision": "allow"}
	]`), &rules)
	policy := &permission.Policy{Rules: rules, Resolve: permission.Workspace("/work/space")}
	if err := policy.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	tracker := permission.NewTracker(nil)
	gate := permission.New(policy.DecideFunc(tracker), &permission.Options{HarnPeer: func() bool { return true }})
	_ = &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			tracker.Observe(n)
			return nil
		},
		SessionRequestPermission: gate.Handle,
	}

	tracker.Observe(&acp.SessionNotification{SessionID: "s", Update: acp.SessionUpdate{ToolCall: &acp.ToolCall{
		ToolCallID: "call_1", Title: "Write", Kind: wire.Some(acp.ToolKindEdit), Locations: wire.Some([]acp.ToolCallLocation{{Path: "/work/space/src/main.go"}}),
	}}})
	options := []acp.PermissionOption{
		{OptionID: "allow_always", Name: "Always allow", Kind: acp.PermissionOptionKindAllowAlways},
		{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}
	for _, raw := range []string{
		`{"file_path": "/work/space/src/main.go"}`,
		`{"file_path": "/work/space/src/main.go", "backup": {"to": "secrets/copy"}}`,
	} {
		req := &acp.RequestPermissionRequest{SessionID: "s", Options: options,
			ToolCall: acp.ToolCallUpdate{ToolCallID: "call_1", RawInput: jsontext.Value(raw)}}
		resp, _ := gate.Handle(context.Background(), req)
		doc, _ := json.Marshal(resp)
		fmt.Println(string(doc))
	}
	// Output:
	// {"outcome":{"outcome":"selected","optionId":"allow"}}
	// {"outcome":{"outcome":"selected","optionId":"reject"},"reason":"rule no-secrets"}
}
