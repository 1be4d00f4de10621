package acpnegotiate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/acpnegotiate"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script answers each request the client sends with the reply answer builds from its frame, and
// records the frames.
func script(t *testing.T, agent *frame.PipeEnd, answer func(n int, req string) string) <-chan []string {
	seen := make(chan []string, 1)
	go func() {
		var got []string
		defer func() { seen <- got }()
		for n := 0; ; n++ {
			f, err := agent.Read(context.Background())
			if err != nil {
				return
			}
			got = append(got, string(f))
			if err := agent.Write(context.Background(), []byte(answer(n, string(f)))); err != nil {
				return
			}
		}
	}()
	return seen
}

func client() *acpnegotiate.Client {
	return &acpnegotiate.Client{
		Init:   acpv2.InitializeRequest{Info: acpv2.Implementation{Name: "c", Version: "1"}},
		V1Init: &acp.InitializeRequest{ClientCapabilities: &acp.ClientCapabilities{Terminal: new(true)}},
	}
}

func TestFallback(t *testing.T) {
	for _, c := range []struct {
		name    string
		client  func() *acpnegotiate.Client
		answers []string // replies, by request, with ID for the request's id
		version int
		err     error
		sent    []string // what the requests must contain, in order
	}{
		{"v2", client, []string{`{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}`}, 2, nil,
			[]string{`"params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}`}},
		{"v1 answer", client, []string{`{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":1}}`}, 1, nil,
			[]string{`"protocolVersion":2`}},
		{"v1 answer, reinitialize", func() *acpnegotiate.Client { c := client(); c.Reinitialize = true; return c },
			[]string{`{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":1}}`, `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":1,"agentInfo":{"name":"a","version":"1"}}}`}, 1, nil,
			[]string{`"protocolVersion":2`, `"params":{"protocolVersion":1,"clientCapabilities":{"terminal":true}}`}},
		{"-32022", client, []string{`{"jsonrpc":"2.0","id":ID,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":2,"supported":[1]}}}`, `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":1}}`}, 1, nil,
			[]string{`"protocolVersion":2`, `"params":{"protocolVersion":1,"clientCapabilities":{"terminal":true}}`}},
		{"-32022 with no v1 params", func() *acpnegotiate.Client { c := client(); c.V1Init = &acp.InitializeRequest{}; return c },
			[]string{`{"jsonrpc":"2.0","id":ID,"error":{"code":-32022,"message":"x","data":{"supported":[1]}}}`, `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":1}}`}, 1, nil,
			[]string{`"protocolVersion":2`, `"params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"configOptions":{"boolean":{}}},"plan":{},"auth":{"terminal":false}},"clientInfo":{"name":"c","version":"1"}}`}},
		{"v1 refused", func() *acpnegotiate.Client { c := client(); c.V1Init = nil; return c },
			[]string{`{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":1}}`}, 0, acpnegotiate.ErrUnsupportedVersion, nil},
		{"-32022 for v3 only", client, []string{`{"jsonrpc":"2.0","id":ID,"error":{"code":-32022,"message":"x","data":{"supported":[3]}}}`}, 0, rpc.NewError(-32022, "", nil), nil},
		{"version 0", client, []string{`{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":0}}`}, 0, acpnegotiate.ErrUnsupportedVersion, nil},
		{"v1 after -32022 answers 2", client, []string{`{"jsonrpc":"2.0","id":ID,"error":{"code":-32022,"message":"x","data":{"supported":[1]}}}`, `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":2}}`}, 0, acpnegotiate.ErrUnsupportedVersion, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ct, at := frame.Pipe()
			seen := script(t, at, func(n int, req string) string {
				if n >= len(c.answers) {
					return `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"no more"}}`
				}
				id := strings.SplitN(strings.SplitN(req, `"id":`, 2)[1], ",", 2)[0]
				return strings.ReplaceAll(c.answers[n], "ID", id)
			})
			conn, err := c.client().Connect(t.Context(), ct)
			switch {
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, want %v", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case conn.Version != c.version || (c.version == 1) != (conn.AgentV1() != nil) || (c.version == 2) != (conn.AgentV2() != nil):
				t.Fatalf("version %d, want %d", conn.Version, c.version)
			}
			if conn != nil {
				conn.Close()
			}
			at.Close()
			sent := <-seen
			if c.sent != nil && len(sent) != len(c.sent) {
				t.Fatalf("sent %q", sent)
			}
			for i, want := range c.sent {
				if !strings.Contains(sent[i], want) {
					t.Errorf("request %d: %s, want %s", i, sent[i], want)
				}
			}
		})
	}
}

// Once the agent answered v2 (and while it has not answered), a request from the agent whose id is
// neither a string nor an integer is refused under a null id, as the TypeScript SDK's v2 client
// connection does; on v1 any JSON-RPC id is taken.
func TestV2RequestIDsFromTheAgent(t *testing.T) {
	for _, c := range []struct {
		answer, want string
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ACP v2 request IDs must be strings or integers"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":1.5,"error":{"code":-32601,`},
	} {
		agent, ct := frame.Pipe()
		done := make(chan error, 1)
		var conn *acpnegotiate.Conn
		go func() {
			var err error
			conn, err = client().Connect(t.Context(), ct)
			done <- err
		}()
		if _, err := agent.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := agent.Write(t.Context(), []byte(c.answer)); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := agent.Write(t.Context(), []byte(`{"jsonrpc":"2.0","id":1.5,"method":"session/request_permission","params":{}}`)); err != nil {
			t.Fatal(err)
		}
		f, err := agent.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(f), c.want) {
			t.Errorf("v%d: %s, want %s", conn.Version, f, c.want)
		}
		conn.Close()
		agent.Close()
	}
}
