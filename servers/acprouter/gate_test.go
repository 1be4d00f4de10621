package acprouter_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/acprouter"
)

const (
	v2Init     = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`
	badV2IDMsg = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ACP v2 request IDs must be strings or integers"}}`
)

// recvWithin reads the next frame, failing the test when none comes within 5 s.
func (r raw) recvWithin() string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 5*time.Second)
	defer cancel()
	f, err := r.tr.Read(ctx)
	if err != nil {
		r.t.Fatalf("no frame: %v", err)
	}
	return string(f)
}

// serveRaw serves agent on one end of a pipe and returns the other end, and the routed connection once
// the first frame sent has been routed.
func serveRaw(t *testing.T, agent *acprouter.Agent) (raw, func() *acprouter.Conn) {
	at, ct := frame.Pipe()
	served := make(chan *acprouter.Conn, 1)
	go func() {
		conn, _ := agent.Serve(t.Context(), at)
		served <- conn
	}()
	conn := sync.OnceValue(func() *acprouter.Conn { return <-served })
	t.Cleanup(func() {
		ct.Close()
		if c := conn(); c != nil {
			c.Close()
		}
	})
	return raw{t, ct}, conn
}

// On v2, a request whose id is neither a string nor an integer is refused under a null id before any
// handler sees it, as the TypeScript SDK's v2 connection does; v1 takes any JSON-RPC id.
func TestV2RequestIDs(t *testing.T) {
	news := make(chan string, 8)
	v2 := v2Agent(t)
	v2.SessionNew = func(_ context.Context, p *acpv2.NewSessionRequest) (*acpv2.NewSessionResponse, error) {
		news <- string(p.Cwd)
		return &acpv2.NewSessionResponse{SessionID: "s2"}, nil
	}
	screened := 0
	c, _ := serveRaw(t, &acprouter.Agent{V2: v2, Options: &rpc.Options{Screen: func(*rpc.Message) *rpc.FrameError {
		screened++ // the program's own Screen still runs, after the id check
		return nil
	}}})
	c.send(v2Init)
	if r := c.recvWithin(); !strings.Contains(r, `"result"`) {
		t.Fatalf("initialize: %s", r)
	}
	for _, id := range []string{`1.5`, `null`, `1e400`, `-0.25`} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/new","params":{"cwd":"/bad"}}`)
		if r := c.recvWithin(); r != badV2IDMsg {
			t.Errorf("id %s: %s", id, r)
		}
	}
	// A repeated initialize with a bad id is refused the same way.
	c.send(`{"jsonrpc":"2.0","id":2.5,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`)
	if r := c.recvWithin(); r != badV2IDMsg {
		t.Errorf("repeated initialize: %s", r)
	}
	for _, id := range []string{`"s"`, `7`, `3.0`, `-4`} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/new","params":{"cwd":"/ok"}}`)
		if r := c.recvWithin(); !strings.HasPrefix(r, `{"jsonrpc":"2.0","id":`+id+`,"result"`) {
			t.Errorf("id %s: %s", id, r)
		}
	}
	close(news)
	for cwd := range news {
		if cwd != "/ok" {
			t.Errorf("the handler got %s", cwd)
		}
	}
	if screened == 0 {
		t.Error("Options.Screen never ran")
	}
}

func TestV1TakesAnyJSONRPCID(t *testing.T) {
	c, _ := serveRaw(t, &acprouter.Agent{V1: v1Agent()})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	if r := c.recvWithin(); !strings.Contains(r, `"result"`) {
		t.Fatalf("initialize: %s", r)
	}
	c.send(`{"jsonrpc":"2.0","id":1.5,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	if r := c.recvWithin(); !strings.HasPrefix(r, `{"jsonrpc":"2.0","id":1.5,"result"`) {
		t.Errorf("v1 id 1.5: %s", r)
	}
}

// Requests other than initialize are refused while an initialize is in progress, the first or a repeat,
// never held for it (the TypeScript SDK's v2 agent connection); a notification sent during a repeat
// waits for it.
func TestV2RequestsDuringInitialize(t *testing.T) {
	entered, release := make(chan int, 2), make(chan struct{}, 2)
	cancels := make(chan struct{}, 1)
	v2 := v2Agent(t)
	v2.Initialize = func(ctx context.Context, p *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
		entered <- 1
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &acpv2.InitializeResponse{ProtocolVersion: 2, Info: acpv2.Implementation{Name: "a", Version: "1"}}, nil
	}
	v2.SessionCancel = func(context.Context, *acpv2.CancelSessionNotification) error {
		cancels <- struct{}{}
		return nil
	}
	c, _ := serveRaw(t, &acprouter.Agent{V2: v2, Options: &rpc.Options{MaxConcurrentRequests: 4}})
	const refused = `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid request","data":"ACP v2 connection must be initialized before 'session/new'"}}`
	for round, init := range []string{v2Init, strings.Replace(v2Init, `"id":1`, `"id":3`, 1)} {
		c.send(init)
		<-entered
		if round == 1 {
			c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s2"}}`)
		}
		c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`)
		if r := c.recvWithin(); r != refused {
			t.Fatalf("round %d: session/new during initialize: %s", round, r)
		}
		if round == 1 && len(cancels) != 0 {
			t.Fatal("a notification was handled during the repeated initialize")
		}
		release <- struct{}{}
		if r := c.recvWithin(); !strings.Contains(r, `"result"`) {
			t.Fatalf("round %d: initialize: %s", round, r)
		}
	}
	<-cancels // handled once the repeat ended
	c.send(`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/"}}`)
	if r := c.recvWithin(); !strings.Contains(r, `"result"`) {
		t.Fatalf("session/new after initialize: %s", r)
	}
}

// Before initialize the router holds frames to the bounds the routed connection keeps
// (Options.MaxFrame, Options.MaxObjects): one over them is refused under its id, never decoded, and the
// stream stays open, where it was rewritten and routed (seconds of CPU for a few MiB of "[],").
func TestBoundsBeforeInitialize(t *testing.T) {
	wide := strings.Repeat(`[],`, 2000) + `[]`
	for _, c := range []struct {
		name string
		opts *rpc.Options
		msg  string
		want string
	}{
		{"MaxObjects", &rpc.Options{MaxObjects: 1000},
			`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"x":[` + wide + `]}}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request","data":"message has more than 1000 JSON objects and arrays"}}`},
		{"MaxFrameBelowHead", &rpc.Options{MaxFrame: 120},
			`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"x":"0123456789"}}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request","data":"message exceeds the 120-byte limit"}}`},
		{"MaxFrame", &rpc.Options{MaxFrame: 4096},
			`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"x":"` + strings.Repeat("a", 5000) + `"}}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request","data":"message exceeds the 4096-byte limit"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, served := serveRaw(t, &acprouter.Agent{V1: v1Agent(), V2: v2Agent(t), Options: c.opts})
			r.send(c.msg)
			if got := r.recvWithin(); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			r.send(v2Init)
			if got := r.recvWithin(); !strings.Contains(got, `"result"`) {
				t.Fatalf("initialize after: %s", got)
			}
			if conn := served(); conn == nil || conn.Version != acprouter.V2 {
				t.Fatalf("routed %+v", conn)
			}
		})
	}
}
