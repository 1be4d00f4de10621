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
