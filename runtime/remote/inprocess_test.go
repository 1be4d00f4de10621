package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// An in-process agent that closes its end ends the connection, as an agent process that exits: the
// client reads what the agent wrote, then the end. The agent's writes fail from then on.
func TestInProcessAgentEnds(t *testing.T) {
	agentEnd := make(chan frame.Transport, 1)
	hs := inProcessServer(t, func(ctx context.Context, info ConnInfo, tr frame.Transport) error {
		go func() {
			b, err := tr.Read(ctx)
			if err != nil {
				return
			}
			m := new(peeker).peek(b)
			tr.Write(ctx, append(append([]byte(`{"jsonrpc":"2.0","id":`), m.id...), `,"result":{"protocolVersion":1}}`...))
			tr.Close()
			agentEnd <- tr
		}()
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := dialNoResume(t, ctx, hs)
	if err := tr.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)); err != nil {
		t.Fatal(err)
	}
	b, err := tr.Read(ctx)
	if err != nil {
		t.Fatalf("the answer the agent wrote before it ended: %v", err)
	}
	if want := `"result":{"protocolVersion":1}`; !bytes.Contains(b, []byte(want)) {
		t.Fatalf("read %s, want the initialize answer", b)
	}
	if _, err := tr.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("after the agent ended, Read = %v, want io.EOF", err)
	}
	end := <-agentEnd
	if err := end.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"late"}`)); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a write after the end = %v, want io.ErrClosedPipe", err)
	}
}

// A start that fails refuses the connection: the client's initialize gets an error, and nothing is left;
// a Write the agent began meanwhile fails rather than waiting forever.
func TestInProcessStartFails(t *testing.T) {
	wrote := make(chan error, 1)
	hs := inProcessServer(t, func(ctx context.Context, info ConnInfo, tr frame.Transport) error {
		go func() { wrote <- tr.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"hello"}`)) }()
		return errors.New("no agent today")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := dialNoResume(t, ctx, hs)
	tr.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
	b, err := tr.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"code":-32603`)) || bytes.Contains(b, []byte("no agent today")) {
		t.Fatalf("read %s, want -32603 without the backend's error text", b)
	}
	if _, err := tr.Read(ctx); err == nil {
		t.Fatal("the socket stays open")
	}
	select {
	case err := <-wrote:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("the agent's Write = %v, want io.ErrClosedPipe", err)
		}
	case <-ctx.Done():
		t.Fatal("the agent's Write still waits after its start failed")
	}
}

// A frame the agent writes as soon as it starts, before it reads anything, reaches the WebSocket client
// first, with event id 1: the socket is attached before the agent starts. (When it was attached after,
// about one connection in a hundred or two lost that frame to the log alone.)
func TestInProcessEarlyFrame(t *testing.T) {
	hs := inProcessServer(t, func(ctx context.Context, info ConnInfo, tr frame.Transport) error {
		go func() {
			tr.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"early","params":{}}`))
			for {
				b, err := tr.Read(ctx)
				if err != nil {
					return
				}
				m := new(peeker).peek(b)
				tr.Write(ctx, append(append([]byte(`{"jsonrpc":"2.0","id":`), m.id...), `,"result":{"protocolVersion":1}}`...))
			}
		}()
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 300; i++ {
		tr := dialNoResume(t, ctx, hs)
		tr.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
		b, err := tr.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"method":"early"`)) || !bytes.Contains(b, []byte(`"eventId":1,`)) {
			t.Fatalf("connection %d: the first frame is %s, want the early one with event id 1", i, b)
		}
		if b, err = tr.Read(ctx); err != nil || !bytes.Contains(b, []byte(`"result"`)) {
			t.Fatalf("connection %d: then %s %v, want the initialize answer", i, b, err)
		}
		tr.Close()
	}
}

// An agent's write waits for its connection to be set up (it may write before its first read), and
// gives up with its context, or when the connection's end is closed first.
func TestInProcessWriteBeforeSetUp(t *testing.T) {
	var agent frame.Transport
	back, err := InProcess(func(ctx context.Context, info ConnInfo, tr frame.Transport) error {
		agent = tr
		return nil
	})(context.Background(), ConnInfo{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := agent.Write(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write before set-up with an ended context = %v", err)
	}
	got := make(chan []byte, 1)
	written := make(chan error, 1)
	go func() { written <- agent.Write(context.Background(), []byte(`{"early":true}`)) }()
	if !back.(pusher).push(func(b []byte) { got <- append([]byte(nil), b...) }, func() {}) {
		t.Fatal("push reports the agent closed")
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != `{"early":true}` {
		t.Fatalf("delivered %s", b)
	}
	back.Close()
	if err := agent.Write(context.Background(), []byte(`{}`)); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write after the connection's end closed = %v", err)
	}
	if _, err := agent.Read(context.Background()); err == nil {
		t.Fatal("Read after the connection's end closed")
	}
	agent.Close()

	// An agent that closes its end before the connection is set up: push says so.
	back, _ = InProcess(func(ctx context.Context, info ConnInfo, tr frame.Transport) error {
		tr.Close()
		return nil
	})(context.Background(), ConnInfo{})
	if back.(pusher).push(func([]byte) {}, func() { t.Error("end called for an agent closed before set-up") }) {
		t.Fatal("push does not report the agent closed")
	}
	back.Close()
}

// inProcessServer serves an InProcess backend of start until t ends.
func inProcessServer(t *testing.T, start func(ctx context.Context, info ConnInfo, tr frame.Transport) error) *httptest.Server {
	s := NewServer(InProcess(start), nil)
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.CloseClientConnections(); s.Close(); hs.Close() })
	return hs
}

// dialNoResume dials hs's WebSocket endpoint without resuming; the transport closes when t ends.
func dialNoResume(t *testing.T, ctx context.Context, hs *httptest.Server) Transport {
	tr, err := Dial(ctx, wsURL(hs), &DialOptions{NoResume: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}
