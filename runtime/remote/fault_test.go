package remote

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
)

// cutProxy forwards TCP connections to a server and cuts them all on demand.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(up, c); up.Close(); c.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, up); up.Close(); c.Close() }()
	}
}

// cut closes every connection through the proxy.
func (p *cutProxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// The TCP connection is cut at random points of a streaming turn, 50 turns: every update reaches the
// client once and in order, the permission request is answered, and the prompt's result arrives.
func TestCutMidTurn(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testCutMidTurn(t, b.inProcess, b.wrapped) })
	}
}

func testCutMidTurn(t *testing.T, inProcess, wrapped bool) {
	_, hs, fb := startServerWith(t, nil, &fakeBackend{inProcess: inProcess, wrapped: wrapped})
	proxy := newCutProxy(t, strings.TrimPrefix(hs.URL, "http://"))
	tr, err := Dial(context.Background(), "ws://"+proxy.ln.Addr().String()+"/acp", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c := &client{t: tr, tb: t}
	c.call("initialize", `{"protocolVersion":1}`)
	res := c.call("session/new", `{"cwd":"/","mcpServers":[]}`)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res.Result, &ns)
	const updates = 60
	cuts := 0
	for turn := 0; turn < 50; turn++ {
		// Cut after a random number of frames, once or twice a turn.
		points := map[int]bool{rand.IntN(updates + 3): true, rand.IntN(updates + 3): true}
		frames := 0
		c.onFrame = func() {
			frames++
			if points[frames] {
				cuts++
				proxy.cut()
			}
		}
		c.updates = nil
		res := c.call("session/prompt", `{"sessionId":"`+ns.SessionID+`","prompt":[{"type":"text","text":"60 updates"}]}`)
		if !strings.Contains(string(res.Result), "end_turn") {
			t.Fatalf("turn %d: result %s", turn, res.Result)
		}
		wantUpdates(t, c.updates, updates)
	}
	if fb.starts != 1 {
		t.Errorf("%d agents started, want 1: a resume must reach the same agent", fb.starts)
	}
	t.Logf("%d cuts", cuts)
}

// The same over Streamable HTTP with the draft cursor: the client resumes each dropped SSE stream with
// Last-Event-ID, and sends a POST the cut interrupted again (each taken once, by its Bridgekit-Seq).
func TestCutMidTurnHTTP(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testCutMidTurnHTTP(t, b.inProcess, b.wrapped) })
	}
}

func testCutMidTurnHTTP(t *testing.T, inProcess, wrapped bool) {
	_, hs, fb := startServerWith(t, &Options{DraftCursor: true}, &fakeBackend{inProcess: inProcess, wrapped: wrapped})
	proxy := newCutProxy(t, strings.TrimPrefix(hs.URL, "http://"))
	tr, err := Dial(context.Background(), "http://"+proxy.ln.Addr().String()+"/acp", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c := &client{t: tr, tb: t}
	c.call("initialize", `{"protocolVersion":1}`)
	res := c.call("session/new", `{"cwd":"/","mcpServers":[]}`)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res.Result, &ns)
	const updates = 60
	cuts := 0
	for turn := 0; turn < 50; turn++ {
		points := map[int]bool{rand.IntN(updates + 3): true, rand.IntN(updates + 3): true}
		frames := 0
		c.onFrame = func() {
			frames++
			if points[frames] {
				cuts++
				proxy.cut()
			}
		}
		c.updates = nil
		res := c.call("session/prompt", `{"sessionId":"`+ns.SessionID+`","prompt":[{"type":"text","text":"60 updates"}]}`)
		if !strings.Contains(string(res.Result), "end_turn") {
			t.Fatalf("turn %d: result %s", turn, res.Result)
		}
		wantUpdates(t, c.updates, updates)
	}
	if fb.starts != 1 {
		t.Errorf("%d agents started, want 1", fb.starts)
	}
	t.Logf("%d cuts", cuts)
}
