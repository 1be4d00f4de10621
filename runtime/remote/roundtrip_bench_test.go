package remote

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/internal/wsecho"
	"github.com/bridgekit/bridgekit/runtime/frame"
)

// syncEcho is a backend that answers each client frame inside Write, on the goroutine that read it from
// the socket, as no real agent can (an ACP agent's prompt runs while the socket must still be read, for
// session/cancel): the reference for what the goroutine between reading and answering costs.
type syncEcho struct {
	sink func([]byte)
	resp []byte
	done chan struct{}
}

func (s *syncEcho) push(sink func([]byte), end func()) bool { s.sink = sink; return true }

func (s *syncEcho) Read(ctx context.Context) ([]byte, error) {
	<-s.done
	return nil, context.Canceled
}

func (s *syncEcho) Write(ctx context.Context, b []byte) error {
	if strings.Contains(string(b), `"initialize"`) {
		s.sink([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
		return nil
	}
	s.sink(s.resp)
	return nil
}

func (s *syncEcho) Close() error { return nil }

// BenchmarkServerRoundTrip takes the WebSocket round trip of BenchmarkWebSocketRoundTrip (internal/interop)
// apart: a bare coder/websocket client against the Server, the agent answering on a goroutine of its own
// (InProcess, no engine: "agent-goroutine") or on the socket's own ("same-goroutine", syncEcho), and the
// bare echo. On the 2-core VM of docs/performance.md (2026-12-06, 4 runs of 20,000) the first two took
// 44-62 us both, against 31-36 us for the bare echo: the agent's goroutine is not what costs. Two one-line
// experiments, not kept, located the cost: writing the answer from the reading goroutine too, instead of
// the Server's sender goroutine, made same-goroutine 35-46 us, but the same change with the engine's agent,
// whose answer a worker goroutine writes, made the round trip slower (72-75 us against 62-67 us). What
// costs on this machine is the answer being written by another goroutine than the one that read the
// request, which an ACP agent needs (its prompt runs while the socket is still read, for session/cancel).
//
//	go test -run '^$' -bench BenchmarkServerRoundTrip ./runtime/remote
func BenchmarkServerRoundTrip(b *testing.B) {
	ctx := context.Background()
	payload := map[string]string{"text": strings.Repeat("lorem ipsum ", 40)}
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "_bench/echo", "params": payload})
	resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": payload})
	agent := InProcess(func(ctx context.Context, info ConnInfo, t frame.Transport) error {
		go func() {
			for {
				f, err := t.Read(ctx)
				if err != nil {
					return
				}
				if strings.Contains(string(f), `"initialize"`) {
					t.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
					continue
				}
				t.Write(ctx, resp)
			}
		}()
		return nil
	})
	run := func(b *testing.B, h *Server) {
		hs := httptest.NewServer(h)
		defer func() { hs.CloseClientConnections(); h.Close(); hs.Close() }()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
		c.Read(ctx)
		for b.Loop() {
			c.Write(ctx, websocket.MessageText, req)
			if _, _, err := c.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("agent-goroutine", func(b *testing.B) { run(b, NewServer(agent, nil)) })
	b.Run("same-goroutine", func(b *testing.B) {
		run(b, NewServer(func(ctx context.Context, info ConnInfo) (frame.Transport, error) {
			return &syncEcho{resp: resp, done: make(chan struct{})}, nil
		}, nil))
	})
	b.Run("bare", func(b *testing.B) {
		bc := wsecho.Dial(b, ctx)
		for b.Loop() {
			bc.Write(ctx, websocket.MessageText, req)
			if _, _, err := bc.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
