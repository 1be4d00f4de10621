package harn_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// A plain ACP agent's tool_call_update with a root error (which Harn's
// contract forbids, since Harn moved it under _meta.harn) is an extra
// member like any other on a plain ACP connection: the update is delivered
// with error kept in Extra and re-encodes byte for byte. The same holds
// for session/request_permission's toolCall and a text block's
// visible_text.
func TestPlainConnectionKeepsHarnForbiddenMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	updates := make(chan *acp.SessionNotification, 2)
	perms := make(chan *acp.RequestPermissionRequest, 1)
	client := &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			updates <- n
			return nil
		},
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			perms <- p
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		},
	}
	frameErrs := make(chan *rpc.FrameError, 4)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := acp.NewConn(inR, outW, client, &rpc.Options{OnFrameError: func(fe *rpc.FrameError) { frameErrs <- fe }})
	defer conn.Close()
	replies := bufio.NewReader(outR)

	toolUpdate := `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed","error":"boom","durationMs":3}}`
	chunk := `{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","visible_text":"hi"}}}`
	for _, params := range []string{toolUpdate, chunk} {
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"session/update","params":`+params+"}\n"); err != nil {
			t.Fatal(err)
		}
		var n *acp.SessionNotification
		select {
		case n = <-updates:
		case fe := <-frameErrs:
			t.Fatalf("update refused: %v", fe.Err)
		case <-ctx.Done():
			t.Fatal("update not delivered")
		}
		out, err := json.Marshal(n, wire.Fidelity)
		if err != nil || string(out) != params {
			t.Errorf("re-encoded as %s (%v), want %s", out, err, params)
		}
		if u := n.Update.ToolCallUpdate; u != nil {
			if v, ok := u.Extra.Get("error"); !ok || string(v) != `"boom"` {
				t.Errorf("error not kept in Extra: %+v", u.Extra)
			}
		} else if c := n.Update.AgentMessageChunk; c == nil || c.Content.Text == nil {
			t.Errorf("not a text chunk: %+v", n.Update)
		} else if _, ok := c.Content.Text.Extra.Get("visible_text"); !ok {
			t.Errorf("visible_text not kept in Extra: %+v", c.Content.Text.Extra)
		}
	}

	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t1","error":{"code":1}},"options":[]}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-perms:
		if v, ok := p.ToolCall.Extra.Get("error"); !ok || string(v) != `{"code":1}` {
			t.Errorf("toolCall.error not kept: %+v", p.ToolCall.Extra)
		}
	case <-ctx.Done():
		t.Fatal("permission request not delivered")
	}
	line, err := replies.ReadString('\n')
	if err != nil || !bytes.Contains([]byte(line), []byte(`"result"`)) {
		t.Fatalf("reply %q (%v)", line, err)
	}
	inW.Close()
	if err := conn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// ContractHarn's table is what harn.json's overlays forbid in ACP's types
// under Harn's contract (gen/acp knows nothing of it), and a decode applies
// it only when given its options:
// under it every listed member of every listed type is rejected with
// ErrForbiddenMember naming the type and member, at its JSON pointer (that
// of the object, for a member the union replays after its tag);
// without it the member is kept.
func TestContractHarn(t *testing.T) {
	if harn.ContractHarn.Name() != "harn" || !slices.Contains(harn.Contracts, harn.ContractHarn) {
		t.Fatalf("contracts: %v", harn.Contracts)
	}
	rules := harn.ContractHarn.Rules()
	types := map[string]bool{}
	for _, r := range rules {
		types[r.Type] = true
	}
	for _, want := range []string{"ToolCall", "ToolCallUpdate", "TextContent"} {
		if !types[want] {
			t.Errorf("no rule for %s: %+v", want, rules)
		}
	}
	for _, m := range []string{"error", "data", "durationMs", "executor"} {
		if !slices.Contains(harn.ContractHarn.Forbidden("ToolCallUpdate"), m) || !slices.Contains(harn.ContractHarn.Forbidden("ToolCall"), m) {
			t.Errorf("%s is not forbidden on tool calls", m)
		}
	}
	docs := map[string]func(member string) string{
		"ToolCall": func(m string) string {
			return `{"sessionId":"s","update":{"toolCallId":"t","title":"x",` + jsonName(m) + `:1,"sessionUpdate":"tool_call"}}`
		},
		"ToolCallUpdate": func(m string) string {
			return `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t",` + jsonName(m) + `:1}}`
		},
		"TextContent": func(m string) string {
			// The content comes before the tag: the union replays it, and
			// the contract goes with the replay.
			return `{"sessionId":"s","update":{"content":{"text":"x",` + jsonName(m) + `:1,"type":"text"},"sessionUpdate":"agent_thought_chunk"}}`
		},
	}
	for _, r := range rules {
		doc, ok := docs[r.Type]
		if !ok {
			t.Errorf("no document for %s", r.Type)
			continue
		}
		for _, m := range r.Members {
			in := doc(m)
			var n acp.SessionNotification
			err := json.Unmarshal([]byte(in), &n, harn.ContractHarn.Options())
			var de *wire.DecodeError
			var se *json.SemanticError
			if !errors.Is(err, wire.ErrForbiddenMember) || !errors.As(err, &de) || de.Type != r.Type || de.Member != m || !errors.As(err, &se) || !strings.HasPrefix(string(se.JSONPointer), "/update") {
				t.Errorf("%s under the contract: %v", in, err)
			}
			n = acp.SessionNotification{}
			if err := json.Unmarshal([]byte(in), &n); err != nil {
				t.Errorf("%s plain: %v", in, err)
			}
		}
	}
	// Encoding writes Extra back either way.
	u := acp.ToolCallUpdate{ToolCallID: "t", Extra: wire.Extras{{Name: "error", Value: jsontext.Value(`"x"`)}}}
	if out, err := json.Marshal(u); err != nil || string(out) != `{"toolCallId":"t","error":"x"}` {
		t.Errorf("encoded %s, %v", out, err)
	}
}

func jsonName(m string) string {
	b, _ := jsontext.AppendQuote(nil, m)
	return string(b)
}

// FuzzContractHarn: a decode under Harn's contract accepts a subset of what
// a plain decode accepts, and decodes it to the same value; what it alone
// rejects is a member its table forbids for the type named, kept in that
// type's Extra by the plain decode, which re-encodes it.
func FuzzContractHarn(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","error":"boom"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","durationMs":1,"_meta":{"harn":{"durationMs":1}}}}`,
		`{"sessionId":"s","update":{"content":{"type":"text","text":"x","visible_delta":"y"},"sessionUpdate":"user_message_chunk"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain, under acp.SessionNotification
		perr := json.Unmarshal(data, &plain)
		uerr := json.Unmarshal(data, &under, harn.ContractHarn.Options())
		switch {
		case uerr == nil:
			if perr != nil {
				t.Fatalf("the contract accepts what a plain decode rejects: %v", perr)
			}
			a, _ := json.Marshal(plain, wire.Fidelity)
			b, _ := json.Marshal(under, wire.Fidelity)
			if !bytes.Equal(a, b) {
				t.Fatalf("decoded apart: %s and %s", a, b)
			}
		case perr == nil:
			var de *wire.DecodeError
			if !errors.Is(uerr, wire.ErrForbiddenMember) || !errors.As(uerr, &de) {
				t.Fatalf("the contract alone rejects, not for a forbidden member: %v", uerr)
			}
			if !slices.Contains(harn.ContractHarn.Forbidden(de.Type), de.Member) {
				// A member forbidden everywhere would fail the plain decode too.
				t.Fatalf("%s.%s is not in the contract's table", de.Type, de.Member)
			}
			if !bytes.Contains(mustMarshal(t, plain), []byte(jsonName(de.Member))) {
				t.Fatalf("the plain decode dropped %s", de.Member)
			}
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v, wire.Fidelity)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A root error on a tool_call_update is an extra member of a plain ACP
// agent's update, and refused under Harn's contract, which a Harn
// connection applies (harn.BridgeConnOptions sets rpc.Options.DecodeOptions).
func Example_contract() {
	params := []byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","error":"boom"}}`)

	var n acp.SessionNotification
	if err := json.Unmarshal(params, &n); err == nil {
		v, _ := n.Update.ToolCallUpdate.Extra.Get("error")
		fmt.Println("plain ACP: kept in Extra:", string(v))
	}

	err := rpc.DecodeParams(params, new(acp.SessionNotification), harn.ContractHarn.Options())
	var se *json.SemanticError
	fmt.Println("Harn:", errors.Is(err, rpc.ErrInvalidParams), errors.Is(err, wire.ErrForbiddenMember), errors.As(err, &se) && se.JSONPointer == "/update/error")
	fmt.Println("forbidden on ToolCallUpdate under Harn's contract:", harn.ContractHarn.Forbidden("ToolCallUpdate")[:3])
	// Output:
	// plain ACP: kept in Extra: "boom"
	// Harn: true true true
	// forbidden on ToolCallUpdate under Harn's contract: [audit changedPaths data]
}
