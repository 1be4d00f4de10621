package acprouter_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/acpnegotiate"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/acprouter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// transports are the two frame transports a router runs on: the in-memory pair, and NDJSON over pipes (a
// child's stdio).
var transports = []struct {
	name string
	pair func() (agent, client frame.Transport)
}{
	{"pipe", func() (frame.Transport, frame.Transport) { a, b := frame.Pipe(); return a, b }},
	{"ndjson", func() (frame.Transport, frame.Transport) {
		ar, cw := io.Pipe()
		cr, aw := io.Pipe()
		return ndjson.NewTransport(ar, aw, nil), ndjson.NewTransport(cr, cw, nil)
	}},
}

// v1Agent is a v1 agent whose prompt streams one chunk and ends its turn.
func v1Agent() *acp.AgentHandlers {
	return &acp.AgentHandlers{
		Initialize: func(_ context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: p.ProtocolVersion, AgentInfo: wire.Some(acp.Implementation{Name: "v1", Version: "1"})}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "s1"}, nil
		},
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			chunk := &acp.ContentChunk{Content: acp.ContentBlock{Text: &acp.TextContent{Text: "hello from v1"}}}
			if err := acp.ClientPeerFrom(ctx).SessionUpdate(ctx, &acp.SessionNotification{SessionID: p.SessionID, Update: acp.SessionUpdate{AgentMessageChunk: chunk}}); err != nil {
				return nil, err
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
}

// v2Update decodes a v2 session update written as JSON.
func v2Update(t testing.TB, s string) acpv2.SessionUpdate {
	var u acpv2.SessionUpdate
	if err := json.Unmarshal([]byte(s), &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// v2Agent is a v2 agent whose prompt streams running, one chunk and idle, and answers with its message id.
func v2Agent(t testing.TB) *acpv2.AgentHandlers {
	return &acpv2.AgentHandlers{
		Initialize: func(_ context.Context, p *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
			return &acpv2.InitializeResponse{ProtocolVersion: p.ProtocolVersion, Info: acpv2.Implementation{Name: "v2", Version: "2"}}, nil
		},
		SessionNew: func(context.Context, *acpv2.NewSessionRequest) (*acpv2.NewSessionResponse, error) {
			return &acpv2.NewSessionResponse{SessionID: "s2"}, nil
		},
		SessionPrompt: func(ctx context.Context, p *acpv2.PromptRequest) (*acpv2.PromptResponse, error) {
			client := acpv2.ClientPeerFrom(ctx)
			for _, u := range []string{
				`{"sessionUpdate":"state_update","state":"running"}`,
				`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"hello from v2"}}`,
				`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`,
			} {
				if err := client.SessionUpdate(ctx, &acpv2.UpdateSessionNotification{SessionID: p.SessionID, Update: v2Update(t, u)}); err != nil {
					return nil, err
				}
			}
			return &acpv2.PromptResponse{MessageID: "m1"}, nil
		},
	}
}

// updates collects the session/update notifications a client gets, as JSON.
type updates struct {
	mu   sync.Mutex
	seen []string
	idle chan struct{} // gets a value per update that ends a turn
}

func newUpdates() *updates { return &updates{idle: make(chan struct{}, 16)} }

func (u *updates) add(v any, ends bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	u.mu.Lock()
	u.seen = append(u.seen, string(b))
	u.mu.Unlock()
	if ends {
		u.idle <- struct{}{}
	}
	return nil
}

func (u *updates) all() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.seen, "\n")
}

func negotiatingClient(u *updates) *acpnegotiate.Client {
	return &acpnegotiate.Client{
		Init: acpv2.InitializeRequest{Info: acpv2.Implementation{Name: "go-client", Version: "1"}},
		V2: &acpv2.ClientHandlers{SessionUpdate: func(_ context.Context, n *acpv2.UpdateSessionNotification) error {
			return u.add(n.Update, n.Update.StateUpdate != nil && n.Update.StateUpdate.Idle != nil)
		}},
		V1Init: &acp.InitializeRequest{ClientCapabilities: &acp.ClientCapabilities{Terminal: new(true)}},
		V1: &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			return u.add(n.Update, false)
		}},
	}
}

// TestWholeTurnEachWay: a Go client asking for v2 and a Go agent behind the router do a whole prompt turn
// in the version the router picks, over both transports.
func TestWholeTurnEachWay(t *testing.T) {
	for _, tr := range transports {
		for _, c := range []struct {
			name    string
			agent   func(t testing.TB) *acprouter.Agent
			version int
			seen    string
		}{
			{"both", func(t testing.TB) *acprouter.Agent { return &acprouter.Agent{V1: v1Agent(), V2: v2Agent(t)} }, 2, "hello from v2"},
			{"v2 only", func(t testing.TB) *acprouter.Agent { return &acprouter.Agent{V2: v2Agent(t)} }, 2, "hello from v2"},
			{"v1 only", func(t testing.TB) *acprouter.Agent { return &acprouter.Agent{V1: v1Agent()} }, 1, "hello from v1"},
		} {
			t.Run(tr.name+"/"+c.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				at, ct := tr.pair()
				served := make(chan *acprouter.Conn, 1)
				go func() {
					conn, err := c.agent(t).Serve(ctx, at)
					if err != nil {
						t.Error(err)
					}
					served <- conn
				}()
				u := newUpdates()
				conn, err := negotiatingClient(u).Connect(ctx, ct)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				agentConn := <-served
				if agentConn == nil {
					return
				}
				defer agentConn.Close()
				if conn.Version != c.version || agentConn.Version != c.version || agentConn.Requested != 2 {
					t.Fatalf("client on v%d, agent on v%d (asked %d), want v%d", conn.Version, agentConn.Version, agentConn.Requested, c.version)
				}
				if c.version == 2 {
					agent := conn.AgentV2()
					s, err := agent.SessionNew(ctx, &acpv2.NewSessionRequest{Cwd: "/tmp"})
					if err != nil {
						t.Fatal(err)
					}
					res, err := agent.SessionPrompt(ctx, &acpv2.PromptRequest{SessionID: s.SessionID, Prompt: []acpv2.ContentBlock{{Text: &acpv2.TextContent{Text: "hi"}}}})
					if err != nil || res.MessageID != "m1" {
						t.Fatalf("prompt: %+v, %v", res, err)
					}
					select {
					case <-u.idle:
					case <-ctx.Done():
						t.Fatal("no idle state update")
					}
				} else {
					if conn.InitV1.AgentInfo.IsAbsent() {
						t.Errorf("v1 answer %+v", conn.InitV1)
					}
					agent := conn.AgentV1()
					s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/tmp", MCPServers: []acp.MCPServer{}})
					if err != nil {
						t.Fatal(err)
					}
					res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{{Text: &acp.TextContent{Text: "hi"}}}})
					if err != nil || res.StopReason != acp.StopReasonEndTurn {
						t.Fatalf("prompt: %+v, %v", res, err)
					}
				}
				if !strings.Contains(u.all(), c.seen) {
					t.Errorf("updates %s, want %q", u.all(), c.seen)
				}
			})
		}
	}
}

// raw drives the agent end of a router with frames written by hand.
type raw struct {
	t  *testing.T
	tr frame.Transport
}

func (r raw) send(s string) {
	r.t.Helper()
	if err := r.tr.Write(r.t.Context(), []byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

func (r raw) recv() string {
	r.t.Helper()
	f, err := r.tr.Read(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return string(f)
}

// TestAnswersBeforeInitialize walks the router's table on a live stream, over both transports: every
// message before initialize is answered (or ignored) and the stream stays open until a valid initialize,
// which the chosen handlers get rewritten.
func TestAnswersBeforeInitialize(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			at, ct := tr.pair()
			got := make(chan *acpv2.InitializeRequest, 1)
			agent := &acprouter.Agent{V1: v1Agent(), V2: &acpv2.AgentHandlers{
				Initialize: func(_ context.Context, p *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
					got <- p
					return &acpv2.InitializeResponse{ProtocolVersion: 2, Info: acpv2.Implementation{Name: "a", Version: "1"}}, nil
				},
			}}
			served := make(chan *acprouter.Conn, 1)
			go func() {
				conn, err := agent.Serve(t.Context(), at)
				if err != nil {
					t.Error(err)
				}
				served <- conn
			}()
			c := raw{t, ct}
			for _, step := range []struct{ send, want string }{
				{`nonsense`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
				{`[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: JSON-RPC batches are not supported"}}`},
				{`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`, ``},
				{`{"jsonrpc":"2.0","id":9,"result":null}`, ``},
				{`{"jsonrpc":"2.0","id":"n","method":"session/new","params":{"cwd":"/"}}`, `{"jsonrpc":"2.0","id":"n","error":{"code":-32600,"message":"Invalid request","data":"first ACP request must be initialize"}}`},
				{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":0,"supported":[1,2]}}}`},
				{`{"jsonrpc":"2.0","id":2.5,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ACP v2 request IDs must be strings or integers"}}`},
				{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":7,"info":{"name":"c","version":"1"},"capabilities":{"auth":{"terminal":1}}}}`, `{"jsonrpc":"2.0","id":3,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}`},
			} {
				c.send(step.send)
				if step.want == "" {
					continue
				}
				if r := c.recv(); r != step.want {
					t.Fatalf("%s: got\n%s, want\n%s", step.send, r, step.want)
				}
			}
			p := <-got
			if p.ProtocolVersion != 2 || p.Capabilities == nil || p.Capabilities.Auth.IsNull() {
				t.Errorf("handler got %+v", p)
			}
			conn := <-served
			if conn == nil || conn.Version != 2 || conn.Requested != 7 {
				t.Fatalf("routed %+v", conn)
			}
			// On v2, a repeat asking for v1 is refused, a request before nothing else is let through, and a
			// repeat after it is refused.
			c.send(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}`)
			if r := c.recv(); r != `{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid request: a repeated initialize must request protocol version 2 or later"}}` {
				t.Fatalf("repeat for v1: %s", r)
			}
			c.send(`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"_meta":7}}`)
			if r := c.recv(); !strings.Contains(r, `"result"`) {
				t.Fatalf("repeat for v2: %s", r)
			}
			<-got
			c.send(`{"jsonrpc":"2.0","id":6,"method":"session/list","params":{}}`)
			if r := c.recv(); !strings.Contains(r, `"code":-32601`) {
				t.Fatalf("session/list: %s", r)
			}
			c.send(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`)
			if r := c.recv(); r != `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request","data":"ACP v2 initialize must not be repeated after other requests"}}` {
				t.Fatalf("repeat after a request: %s", r)
			}
			conn.Close()
			ct.Close()
		})
	}
}

// A v1 agent behind the router gets a v2 client's initialize in v1's shape.
func TestV1AgentGetsTheDowngrade(t *testing.T) {
	at, ct := frame.Pipe()
	got := make(chan jsontext.Value, 1)
	agent := &acprouter.Agent{V1: rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
		got <- jsontext.Value(req.Params).Clone()
		return map[string]any{"protocolVersion": 1}, nil
	})}
	served := make(chan *acprouter.Conn, 1)
	go func() {
		conn, _ := agent.Serve(t.Context(), at)
		served <- conn
	}()
	c := raw{t, ct}
	c.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{"auth":{"terminal":{}}},"_meta":{"trace":1}}}`)
	if r := c.recv(); r != `{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":1}}` {
		t.Fatalf("answer %s", r)
	}
	want := `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"configOptions":{"boolean":{}}},"plan":{},"auth":{"terminal":true}},"clientInfo":{"name":"c","version":"1"},"_meta":{"trace":1}}`
	if p := <-got; string(p) != want {
		t.Errorf("v1 handler got\n%s, want\n%s", p, want)
	}
	conn := <-served
	conn.Close()
	ct.Close()
}

// Serve ends with its context, and at the end of input before initialize, closing the transport.
func TestServeEnds(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			at, ct := tr.pair()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := (&acprouter.Agent{V1: v1Agent()}).Serve(ctx, at)
				done <- err
			}()
			raw{t, ct}.send(`{"jsonrpc":"2.0","method":"x"}`)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("after cancel: %v", err)
			}
			ct.Close()

			at, ct = tr.pair()
			go func() {
				_, err := (&acprouter.Agent{V2: v2Agent(t)}).Serve(t.Context(), at)
				done <- err
			}()
			ct.Close()
			if err := <-done; !errors.Is(err, acprouter.ErrNoInitialize) {
				t.Errorf("after EOF: %v", err)
			}
		})
	}
	if _, err := (&acprouter.Agent{}).Serve(t.Context(), nopTransport{}); !errors.Is(err, acprouter.ErrNoVersion) {
		t.Errorf("no version: %v", err)
	}
}

type nopTransport struct{ frame.Transport }

func (nopTransport) Close() error { return nil }

// A frame over the transport's limit before initialize is answered under its id, and the stream goes on.
func TestTooLargeBeforeInitialize(t *testing.T) {
	ar, cw := io.Pipe()
	cr, aw := io.Pipe()
	at := ndjson.NewTransport(ar, aw, &ndjson.Options{MaxFrame: 256})
	ct := ndjson.NewTransport(cr, cw, nil)
	served := make(chan *acprouter.Conn, 1)
	go func() {
		conn, err := (&acprouter.Agent{V1: v1Agent()}).Serve(t.Context(), at)
		if err != nil {
			t.Error(err)
		}
		served <- conn
	}()
	c := raw{t, ct}
	c.send(`{"jsonrpc":"2.0","id":"big","method":"initialize","params":{"protocolVersion":1,"pad":"` + strings.Repeat("x", 1000) + `"}}`)
	if r := c.recv(); r != `{"jsonrpc":"2.0","id":"big","error":{"code":-32600,"message":"Invalid request","data":"message exceeds the 256-byte limit"}}` {
		t.Fatalf("got %s", r)
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	if r := c.recv(); !strings.Contains(r, `"protocolVersion":1`) {
		t.Fatalf("got %s", r)
	}
	conn := <-served
	conn.Close()
	ct.Close()
}

// On v2, an initialize after a failed first one is checked and rewritten as the router would: below
// version 2 it gets -32022; otherwise the handler gets it with protocolVersion 2.
func TestV2RetryAfterAFailedInitialize(t *testing.T) {
	at, ct := frame.Pipe()
	calls := 0
	got := make(chan int, 2)
	agent := &acprouter.Agent{V2: &acpv2.AgentHandlers{
		Initialize: func(_ context.Context, p *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
			calls++
			got <- int(p.ProtocolVersion)
			if calls == 1 {
				return nil, errors.New("not yet")
			}
			return &acpv2.InitializeResponse{ProtocolVersion: 2, Info: acpv2.Implementation{Name: "a", Version: "1"}}, nil
		},
	}}
	served := make(chan *acprouter.Conn, 1)
	go func() {
		conn, _ := agent.Serve(t.Context(), at)
		served <- conn
	}()
	c := raw{t, ct}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`)
	if r := c.recv(); !strings.Contains(r, `"code":-32603`) {
		t.Fatalf("first: %s", r)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	if r := c.recv(); r != `{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":1,"supported":[2]}}}` {
		t.Fatalf("retry for v1: %s", r)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":9,"info":{"name":"c","version":"1"}}}`)
	if r := c.recv(); !strings.Contains(r, `"result"`) {
		t.Fatalf("retry for v9: %s", r)
	}
	if a, b := <-got, <-got; a != 2 || b != 2 {
		t.Errorf("the handler got versions %d and %d", a, b)
	}
	conn := <-served
	conn.Close()
	ct.Close()
}
