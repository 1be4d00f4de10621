package harn_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestLegacyReader(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{
			"a pre-#905 extension update: every vendor field at the root",
			`{"sessionId":"s","update":{"sessionUpdate":"worker_update","workerId":"w","status":"running","terminal":false,"x":1}}`,
			`{"sessionId":"s","update":{"sessionUpdate":"worker_update","_meta":{"harn":{"workerId":"w","status":"running","terminal":false}},"x":1}}`,
		},
		{
			"a pre-#904 tool call beside a current _meta.harn and another vendor's _meta key",
			`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"read","_meta":{"other":true,"harn":{"parsing":false}},"executor":{"kind":"mcp_server","serverName":"linear"}}}`,
			`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"read","_meta":{"other":true,"harn":{"parsing":false,"executor":{"kind":"mcp_server","serverName":"linear"}}}}}`,
		},
		{
			"pre-#905 content fields at the root of a text block, _meta null",
			`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","visible_text":"hi","_meta":null}}}`,
			`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","_meta":{"harn":{"visible_text":"hi"}}}}}`,
		},
		{
			"the same value in both places is one field",
			`{"sessionId":"s","update":{"sessionUpdate":"skill_activated","skillName":"rust","_meta":{"harn":{"skillName":"rust"}}}}`,
			`{"sessionId":"s","update":{"sessionUpdate":"skill_activated","_meta":{"harn":{"skillName":"rust"}}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(tc.in), new(acp.SessionNotification), harn.ContractHarn.Options()); !errors.Is(err, wire.ErrForbiddenMember) {
				t.Fatalf("Harn's contract must reject the legacy shape: %v", err)
			}
			up, err := harn.UpgradeSessionUpdate([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, up, []byte(tc.want)) {
				t.Fatalf("upgraded to %s", up)
			}
			n, err := harn.ReadLegacySessionUpdate([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(n, wire.Fidelity)
			if !sameJSON(t, out, []byte(tc.want)) {
				t.Fatalf("read as %s", out)
			}
		})
	}
	// A current document comes back as it is, byte for byte.
	cur := []byte(`{"sessionId":"s", "update":{"sessionUpdate":"plan","entries":[]}}`)
	if up, err := harn.UpgradeSessionUpdate(cur); err != nil || !bytes.Equal(up, cur) {
		t.Fatalf("current document: %s %v", up, err)
	}
	for in, want := range map[string]error{
		`{"sessionId":"s","update":{"sessionUpdate":"skill_activated","skillName":"a","_meta":{"harn":{"skillName":"b"}}}}`: harn.ErrLegacyConflict,
		`{"sessionId":"s","update":{"sessionUpdate":"skill_activated","skillName":"a","_meta":[]}}`:                         nil,
		`{"sessionId":"s","update":{"sessionUpdate":"plan"}}`:                                                               wire.ErrMissingMember,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","durationMs":-1}}`:                  wire.ErrConstraint,
		`[]`: wire.ErrWrongKind,
	} {
		_, err := harn.ReadLegacySessionUpdate([]byte(in))
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", in, err, want)
		}
	}
}

func TestAcceptLegacyMiddleware(t *testing.T) {
	updates := make(chan acp.SessionUpdate, 1)
	client := &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
		updates <- n.Update
		return nil
	}}
	legacy := jsontext.Value(`{"sessionId":"s","update":{"sessionUpdate":"progress","phase":"llm","message":"warming up"}}`)
	ctx := context.Background()

	// Opted in: the legacy update reaches the handler in the current shape.
	_, vmConn := pair(t, harn.AcceptLegacy(harn.HostHandler(nil, client)), harn.VMHandler(nil, nil))
	if err := vmConn.Notify(ctx, acp.MethodSessionUpdate, legacy); err != nil {
		t.Fatal(err)
	}
	u, err := harn.UpdateOf(<-updates)
	if err != nil || u.Progress == nil || u.Progress.Meta.Harn.Phase != "llm" || u.Progress.Meta.Harn.Message != "warming up" {
		t.Fatalf("upgraded update: %+v %v", u.Progress, err)
	}

	// By default it is rejected (invalid params, logged), never delivered.
	_, vmConn = pair(t, harn.HostHandler(nil, client), harn.VMHandler(nil, nil))
	if err := vmConn.Notify(ctx, acp.MethodSessionUpdate, legacy); err != nil {
		t.Fatal(err)
	}
	if err := vmConn.Notify(ctx, acp.MethodSessionUpdate, jsontext.Value(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-updates:
		if u.Plan == nil {
			t.Fatalf("the legacy update reached the handler: %+v", u)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the current update after it was not delivered")
	}
}
