package acp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// A JSON-RPC id in a payload (ACP v1's RequestId) is kept byte for byte,
// as the runtime keeps the ids of frames: 1.0 stays 1.0, 1e3 stays 1e3,
// and an integer beyond int64 is not refused. What is no integer, string
// or null is refused, as the schema says.
func TestRequestIDKeptByteForByte(t *testing.T) {
	for _, id := range []string{`1`, `1.0`, `1e3`, `-0`, `12345678901234567890`, `"abc"`, `null`} {
		in := `{"requestId":` + id + `}`
		var n acp.CancelRequestNotification
		if err := json.Unmarshal([]byte(in), &n); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if string(n.RequestID) != id {
			t.Errorf("%s: requestId %s", in, n.RequestID)
		}
		if out, err := json.Marshal(n, wire.Fidelity); err != nil || string(out) != in {
			t.Errorf("%s re-encoded as %s (%v)", in, out, err)
		}
		var s acp.ElicitationRequestScope
		if err := json.Unmarshal([]byte(in), &s); err != nil || string(s.RequestID) != id {
			t.Errorf("%s as a request scope: %s %v", in, s.RequestID, err)
		}
	}
	for _, id := range []string{`1.5`, `1e-3`, `true`, `{}`, `[1]`} {
		err := json.Unmarshal([]byte(`{"requestId":`+id+`}`), new(acp.CancelRequestNotification))
		if !errors.Is(err, wire.ErrWrongKind) {
			t.Errorf("requestId %s: %v, want ErrWrongKind", id, err)
		}
	}
}

// On an ACP connection a request with id 1.0 is answered with id 1.0, and
// $/cancel_request naming 1.0 cancels it; the handler of $/cancel_request
// sees the id as sent.
func TestRequestIDOnTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := make(chan struct{})
	seen := make(chan string, 1)
	agent := &acp.AgentHandlers{
		SessionPrompt: func(ctx context.Context, _ *acp.PromptRequest) (*acp.PromptResponse, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
		CancelRequest: func(_ context.Context, n *acp.CancelRequestNotification) error {
			seen <- string(n.RequestID)
			return nil
		},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := acp.NewConn(inR, outW, agent, &rpc.Options{MaxConcurrentRequests: 2})
	defer conn.Close()
	replies := bufio.NewReader(outR)
	write := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1e3,"method":"session/nope","params":{}}`)
	if line, err := replies.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1e3,`) {
		t.Fatalf("reply %q (%v)", line, err)
	}
	write(`{"jsonrpc":"2.0","id":1.0,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("prompt not started")
	}
	write(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1.0}}`)
	line, err := replies.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1.0,`) || !strings.Contains(line, `"error"`) {
		t.Fatalf("reply %q (%v)", line, err)
	}
	select {
	case id := <-seen:
		if id != `1.0` {
			t.Errorf("$/cancel_request handler saw %s", id)
		}
	case <-ctx.Done():
		t.Fatal("$/cancel_request not handled")
	}
	inW.Close()
	if err := conn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
