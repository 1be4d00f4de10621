package remote

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/eventlog/boltlog"
)

// The server restarts with the durable log: a client resumes from the last id it read and gets every
// frame after it, once, in order (the rest of a turn that ended while it was away), then the typed
// answer that the agent is gone.
func TestRestartResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	log, err := boltlog.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{}
	s := NewServer(fb.start, &Options{Log: log})
	hs := httptest.NewServer(s)
	proxy := newCutProxy(t, strings.TrimPrefix(hs.URL, "http://"))

	tr, err := Dial(context.Background(), "ws://"+proxy.ln.Addr().String(), &DialOptions{NoResume: true})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: tr, tb: t}
	c.call("initialize", `{"protocolVersion":1}`)
	res := c.call("session/new", `{}`)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res.Result, &ns)
	// The client reads the first 5 updates of a 40-update turn, noting the last event id, and goes away.
	w := tr.(*wsClient)
	tr.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"`+ns.SessionID+`","prompt":[{"type":"text","text":"40 updates"}]}}`))
	var last uint64
	seen := 0
	permission := ""
	for seen < 5 {
		b, err := tr.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = w.last
		if strings.Contains(string(b), "session/update") {
			seen++
		}
		if strings.Contains(string(b), "request_permission") {
			permission = string(b)
		}
	}
	_ = permission
	proxy.cut()
	tr.Close()
	// The agent asks permission at update 20: answer it through a second socket resumed live, so that
	// the turn ends while the first client is away.
	ended := make(chan struct{}, 1)
	tr2, err := Dial(context.Background(), wsURL(hs), &DialOptions{Resume: &Resume{SessionID: ns.SessionID, After: last},
		OnForeignResponse: func([]byte) { ended <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	c2 := &client{t: tr2, tb: t}
	for {
		b, err := tr2.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var m rpcMsg
		json.Unmarshal(b, &m)
		if m.Method == "session/request_permission" {
			tr2.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}`))
		}
		if m.Method == "session/update" {
			c2.updates = append(c2.updates, string(b))
		}
		if len(c2.updates) == 35 {
			break
		}
	}
	// The turn's result (to a request the first client sent) comes after its updates: read on until it
	// has, so that the turn is over and logged before the server stops.
	go func() {
		for {
			if _, err := tr2.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	<-ended
	tr2.Close()

	// The server stops (its agents with it) and starts again on the same log.
	hs.CloseClientConnections()
	s.Close()
	hs.Close()
	fb.wait()
	log.Close()
	log, err = boltlog.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	fb2 := &fakeBackend{}
	s2 := NewServer(fb2.start, &Options{Log: log})
	hs2 := httptest.NewServer(s2)
	defer func() { hs2.CloseClientConnections(); s2.Close(); hs2.Close() }()

	// The first client comes back with the id it had read.
	var foreign []string
	tr3, err := Dial(context.Background(), wsURL(hs2), &DialOptions{Resume: &Resume{SessionID: ns.SessionID, After: last}, OnForeignResponse: func(b []byte) { foreign = append(foreign, string(b)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr3.Close()
	c3 := &client{t: tr3, tb: t}
	var ee *ExpiredError
	for {
		b, err := tr3.Read(context.Background())
		if errors.As(err, &ee) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var m rpcMsg
		json.Unmarshal(b, &m)
		if m.Method == "session/update" {
			c3.updates = append(c3.updates, string(b))
		} else if os.Getenv("DBG") != "" {
			t.Logf("tr3 got %s", b)
		}
	}
	if ee.Reason != "agent_gone" {
		t.Fatalf("expired for %q", ee.Reason)
	}
	// Updates 5..39, each once, in order, then the turn's result (an answer to a request this transport
	// did not send).
	if len(c3.updates) != 35 {
		t.Fatalf("%d updates replayed, want 35", len(c3.updates))
	}
	for i, u := range c3.updates {
		if !strings.Contains(u, `"text":"chunk `+itoa(i+5)+`"`) || !strings.Contains(u, `"replayed":true`) {
			t.Fatalf("update %d: %s", i, u)
		}
	}
	if len(foreign) != 1 || !strings.Contains(foreign[0], `"end_turn"`) {
		t.Fatalf("the turn's result was not replayed: %q", foreign)
	}
	if fb2.starts != 0 {
		t.Fatal("an agent was started for a replay")
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
