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
	return startServerWith(t, opts, &fakeBackend{})
}

func startServerWith(t *testing.T, opts *Options, fb *fakeBackend) (*Server, *httptest.Server, *fakeBackend) {
	t.Helper()
	s := NewServer(fb.backend(), opts)
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

// A whole prompt turn over each transport and each backend: streamed updates, a permission request
// answered, the result.
func TestTurn(t *testing.T) {
	for _, transport := range []string{"websocket", "http"} {
		for _, b := range backends {
			t.Run(transport+"/"+b.name, func(t *testing.T) { testTurn(t, transport, b.inProcess, b.wrapped) })
		}
	}
}

func testTurn(t *testing.T, transport string, inProcess, wrapped bool) {
	_, hs, _ := startServerWith(t, nil, &fakeBackend{inProcess: inProcess, wrapped: wrapped})
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
}
