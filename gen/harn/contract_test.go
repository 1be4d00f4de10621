package harn_test

import (
	"bufio"
	"context"
	"errors"
	"io"
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

// On a connection to a Harn runtime (NewBridgeConn), Harn's contract
// applies: a tool_call_update with a root error, which Harn moved under
// _meta.harn, is reported to OnFrameError as a notification whose params
// do not decode (typed: ErrInvalidParams wrapping wire.ErrForbiddenMember
// and the JSON pointer), and never reaches the handler; a
// session/request_permission whose toolCall has one is answered -32602.
// The same documents reach the handlers of a plain ACP connection
// (gen/acp's TestPlainConnectionKeepsHarnForbiddenMembers).
func TestHarnConnectionRejectsContractMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	handled := make(chan string, 4)
	client := &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			handled <- "update " + n.Update.Tag()
			return nil
		},
		SessionRequestPermission: func(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			handled <- "permission"
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		},
	}
	frameErrs := make(chan *rpc.FrameError, 4)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := harn.NewBridgeConn(inR, outW, harn.HostHandler(nil, client), &rpc.Options{OnFrameError: func(fe *rpc.FrameError) { frameErrs <- fe }})
	defer conn.Close()
	replies := bufio.NewReader(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","error":"boom"}}}`)
	select {
	case fe := <-frameErrs:
		var de *wire.DecodeError
		var se *json.SemanticError
		if fe.Kind != rpc.FrameBadParams || fe.Method != acp.MethodSessionUpdate || !errors.Is(fe.Err, rpc.ErrInvalidParams) ||
			!errors.Is(fe.Err, wire.ErrForbiddenMember) || !errors.As(fe.Err, &de) || de.Type != "ToolCallUpdate" || de.Member != "error" ||
			!errors.As(fe.Err, &se) || se.JSONPointer != "/update/error" {
			t.Errorf("report: %+v (%v)", fe, fe.Err)
		}
	case h := <-handled:
		t.Fatalf("handled: %s", h)
	case <-ctx.Done():
		t.Fatal("no report")
	}

	send(`{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t1","durationMs":4},"options":[]}}`)
	line, err := replies.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		ID    jsontext.Value `json:"id"`
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &reply); err != nil || string(reply.ID) != `"p1"` || reply.Error == nil ||
		reply.Error.Code != rpc.CodeInvalidParams || !strings.Contains(reply.Error.Message, "invalid params: /toolCall/durationMs: forbidden member") {
		t.Fatalf("reply %s (%v)", line, err)
	}

	// A current document still passes, and so does a legacy one through
	// AcceptLegacy (its fields moved under _meta.harn first).
	send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","_meta":{"harn":{"durationMs":4}}}}}`)
	select {
	case h := <-handled:
		if h != "update tool_call_update" {
			t.Fatalf("handled %s", h)
		}
	case fe := <-frameErrs:
		t.Fatalf("current shape refused: %v", fe.Err)
	case <-ctx.Done():
		t.Fatal("not handled")
	}
	inW.Close()
	if err := conn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// AcceptLegacy on a Harn connection moves the forbidden members before the
// contract sees them.
func TestHarnConnectionAcceptLegacy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan *acp.SessionNotification, 1)
	client := &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
		got <- n
		return nil
	}}
	inR, inW := io.Pipe()
	conn := harn.NewBridgeConn(inR, io.Discard, harn.AcceptLegacy(harn.HostHandler(nil, client)), nil)
	defer conn.Close()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","error":"boom"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		h, err := harn.ToolLifecycleOf(n.Update.ToolCallUpdate.Meta)
		if err != nil || h == nil || h.Error == nil || *h.Error != "boom" || len(n.Update.ToolCallUpdate.Extra) != 0 {
			t.Fatalf("not moved under _meta.harn: %+v", n.Update.ToolCallUpdate)
		}
	case <-ctx.Done():
		t.Fatal("not delivered")
	}
	inW.Close()
	if err := conn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
