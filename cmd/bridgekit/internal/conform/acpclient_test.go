package conform

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"
)

// A broken client: its initialize does not fit the schema, and it answers
// every request of the agent with the same wrong result. The rows name the
// method, the frame and the pointer.
func TestServeACPClientReportsABrokenClient(t *testing.T) {
	toAgent, clientOut := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer clientOut.Close()
		send := func(s string) { fmt.Fprintln(clientOut, s) }
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"one"}}`)
		sc := bufio.NewScanner(fromAgent)
		sc.Buffer(nil, 4<<20)
		prompted := false
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch {
			case m.Method == "" && string(m.ID) == "1":
				send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`)
			case m.Method == "" && string(m.ID) == "2" && !prompted:
				var r struct {
					SessionID string `json:"sessionId"`
				}
				_ = json.Unmarshal(m.Result, &r)
				prompted = true
				send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + r.SessionID + `","prompt":[]}}`)
			case m.Method == "" && string(m.ID) == "3":
				return // the prompt is answered: the session ends
			case m.Method != "" && m.ID != nil:
				send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":"bogus"}}`)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results, err := ServeACPClient(ctx, Config{Timeout: 300 * time.Millisecond}, toAgent, agentOut, nil)
	agentOut.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]Result{}
	for _, r := range results {
		res[r.ID] = r
	}
	for _, c := range []struct{ id, method, pointer string }{
		{"acp-client/initialize", "initialize", "/params/protocolVersion"},
		{"acp-client/session-new", "session/new", "/params/cwd"},
		{"acp-client/permission", "session/request_permission", "/result/outcome"},
		{"acp-client/unknown-method", "conform/no_such_method", "/result"},
	} {
		r := res[c.id]
		found := false
		for _, p := range r.Problems {
			found = found || p.Method == c.method && p.Frame > 0 && p.Pointer == c.pointer
		}
		if r.Status != Fail || !found {
			t.Errorf("%s: %s %+v, want a failure of %s at %s", c.id, r.Status, r.Problems, c.method, c.pointer)
		}
	}
	if res["acp-client/session-update"].Status != Pass {
		t.Errorf("session-update: %+v", res["acp-client/session-update"])
	}
}
