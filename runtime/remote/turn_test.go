package remote

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

func startServer(t *testing.T, opts *Options) (*Server, *httptest.Server, *fakeBackend) {
	t.Helper()
	fb := &fakeBackend{}
	s := NewServer(fb.start, opts)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		s.Close()
		hs.Close()
		fb.wait()
	})
	return s, hs, fb
}

func wsURL(hs *httptest.Server) string { return "ws" + strings.TrimPrefix(hs.URL, "http") }

// A whole prompt turn over each transport: streamed updates, a permission request answered, the result.
func TestTurn(t *testing.T) {
	for _, transport := range []string{"websocket", "http"} {
		t.Run(transport, func(t *testing.T) {
			_, hs, _ := startServer(t, nil)
			url := hs.URL
			if transport == "websocket" {
				url = wsURL(hs)
			}
			tr, err := Dial(context.Background(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			c := &client{t: tr, tb: t}
			c.call("initialize", `{"protocolVersion":1}`)
			if tr.ConnectionID() == "" {
				t.Error("no connection id")
			}
			res := c.call("session/new", `{"cwd":"/","mcpServers":[]}`)
			var ns struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(res.Result, &ns)
			res = c.call("session/prompt", `{"sessionId":"`+ns.SessionID+`","prompt":[{"type":"text","text":"10 updates"}]}`)
			if !strings.Contains(string(res.Result), "end_turn") {
				t.Fatalf("prompt result %s", res.Result)
			}
			wantUpdates(t, c.updates, 10)
		})
	}
}
