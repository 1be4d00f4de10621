package acpterm

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// limitedServer is testServer on a Manager with lim.
func limitedServer(t *testing.T, lim terminal.Limits, allow ...string) (*Server, func() []Event) {
	t.Helper()
	s, events := testServer(t, allow...)
	s.Terms = terminal.New(&lim)
	t.Cleanup(func() { s.Terms.Close(5 * time.Second) })
	return s, events
}

// Past a quota terminal/create is refused with -32001 and data.reason
// "quota", nothing is started, and the refusal is an event; a released
// terminal frees its place.
func TestCreateQuotas(t *testing.T) {
	posix(t)
	s, events := limitedServer(t, terminal.Limits{MaxPerSession: 2, MaxTerminals: 3, MaxSessionIDBytes: 16}, "sleep 30")
	ctx := context.Background()
	create := func(session string) (acp.TerminalID, error) {
		res, err := s.Create(ctx, &acp.CreateTerminalRequest{SessionID: acp.SessionID(session), Command: "sleep", Args: []string{"30"}})
		if err != nil {
			return "", err
		}
		return res.TerminalID, nil
	}
	quota := func(what string, err error) {
		t.Helper()
		e, ok := errors.AsType[*rpc.Error](err)
		if !ok || e.Code != files.CodeDenied || !strings.Contains(string(e.Data), `"reason":"quota"`) {
			t.Errorf("%s: %v, want a quota refusal", what, err)
		}
	}
	first, err := create("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create("a"); err != nil {
		t.Fatal(err)
	}
	_, err = create("a")
	quota("a session's third terminal", err)
	if _, err := create("b"); err != nil {
		t.Fatal(err)
	}
	_, err = create("c")
	quota("the fourth terminal in all", err)
	if _, err = create(strings.Repeat("x", 17)); code(err) != rpc.CodeInvalidParams {
		t.Errorf("a session id over its bound: %v", err)
	}
	if _, err := s.Release(ctx, &acp.ReleaseTerminalRequest{SessionID: "a", TerminalID: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := create("a"); err != nil {
		t.Errorf("after a release: %v", err)
	}
	refused := 0
	for _, e := range events() {
		if !e.Allowed && strings.Contains(e.Reason, "quota") {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d quota refusals in the events: %+v", refused, events())
	}
}

// The text of one terminal/output or wait_for_exit answer stays under
// MaxReplyBytes once JSON-encoded (escapes counted), keeping the end of
// the output; outputByteLimit beyond MaxOutputBytes is lowered to it.
func TestOutputCaps(t *testing.T) {
	posix(t)
	const reply = 4 << 10
	s, _ := limitedServer(t, terminal.Limits{MaxReplyBytes: reply, MaxOutputBytes: 64 << 10}, "sh -c *")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// 100 KiB of control characters (six bytes each in JSON), then an end.
	res, err := s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sh", Args: []string{"-c", `head -c 102400 /dev/zero | tr '\0' '\001'; echo THE-END`},
		OutputByteLimit: wire.Some(int64(1 << 30))})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: res.TerminalID})
	if err != nil {
		t.Fatal(err)
	}
	combined, _ := w.Extra.Get("combined")
	if len(combined) > reply || !strings.HasSuffix(string(combined), `THE-END\n"`) {
		t.Errorf("wait_for_exit's combined: %d bytes encoded, ending %q", len(combined), tail(string(combined)))
	}
	out, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: res.TerminalID})
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := jsontext.AppendQuote(nil, out.Output)
	if len(enc) > reply || !out.Truncated || !strings.HasSuffix(out.Output, "THE-END\n") {
		t.Errorf("terminal/output: %d bytes encoded, truncated %v, ending %q", len(enc), out.Truncated, tail(out.Output))
	}
}

func tail(s string) string { return s[max(0, len(s)-20):] }

// pipeConns connects a client serving s's terminals (with ConnOptions and
// others slots for the rest) to an agent; the agent's peer calls it.
func pipeConns(t *testing.T, s *Server, others int, h *acp.ClientHandlers) (agent *rpc.Conn, peer *acp.ClientPeer, client *rpc.Conn) {
	t.Helper()
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	s.Register(h)
	var opts rpc.Options
	s.ConnOptions(&opts, others)
	client = acp.NewConn(clientIn, clientOut, h, &opts)
	agent = acp.NewConn(agentIn, agentOut, &acp.AgentHandlers{}, nil)
	t.Cleanup(func() { agent.Close(); client.Close() })
	return agent, acp.NewClientPeer(agent), client
}

// Pending terminal/wait_for_exit calls, as many as the Manager allows,
// leave every other request answered on a connection set up by
// ConnOptions: another method (in the others slot), and terminal/kill,
// output and release (preempted), which ends the waits.
func TestWaitsDoNotStarve(t *testing.T) {
	posix(t)
	s, _ := limitedServer(t, terminal.Limits{MaxWaits: 8}, "sleep 30")
	other := make(chan struct{}, 1)
	_, peer, _ := pipeConns(t, s, 1, &acp.ClientHandlers{
		FsReadTextFile: func(context.Context, *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
			other <- struct{}{}
			return &acp.ReadTextFileResponse{Content: "a"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created, err := peer.TerminalCreate(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: created.TerminalID}
	waits := make(chan error, 8)
	for range 8 {
		go func() {
			w, err := peer.TerminalWaitForExit(ctx, &ids)
			if err == nil {
				if sig, _ := w.Signal.Get(); sig != "SIGKILL" {
					err = errors.New("not killed: " + sig)
				}
			}
			waits <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Terms.Pending() < 8 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	quick, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if _, err := peer.FsReadTextFile(quick, &acp.ReadTextFileRequest{SessionID: "s", Path: "/a"}); err != nil {
		t.Fatalf("another request behind 8 waits: %v", err)
	}
	if _, err := peer.TerminalOutput(quick, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: created.TerminalID}); err != nil {
		t.Fatalf("terminal/output behind 8 waits: %v", err)
	}
	if _, err := peer.TerminalKill(quick, &acp.KillTerminalRequest{SessionID: "s", TerminalID: created.TerminalID}); err != nil {
		t.Fatalf("terminal/kill behind 8 waits: %v", err)
	}
	for range 8 {
		if err := <-waits; err != nil {
			t.Errorf("wait: %v", err)
		}
	}
}

// A host ends pending waits at the end of its input by closing the
// Manager: a terminal/wait_for_exit pending over the connection is
// answered at once (with an error), so the connection, its input ended,
// ends too instead of waiting for a command that may never exit.
func TestEndOfInputEndsWaits(t *testing.T) {
	posix(t)
	s, _ := limitedServer(t, terminal.Limits{}, "sleep 30")
	agent, peer, client := pipeConns(t, s, 1, &acp.ClientHandlers{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created, err := peer.TerminalCreate(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := peer.TerminalWaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: created.TerminalID})
		waited <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); s.Terms.Pending() < 1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	began := time.Now()
	s.Terms.Close(5 * time.Second)
	select {
	case err := <-waited:
		if err == nil || time.Since(began) > 2*time.Second {
			t.Errorf("the wait ended after %v with %v, want an error at once", time.Since(began), err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a wait pending")
	}
	agent.Close()
	select {
	case <-client.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client's connection outlived the end of its input")
	}
}
