package main

import (
	"context"
	"fmt"
	"github.com/bridgekit/bridgekit/internal/testio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// envStubborn makes the test binary an agent that answers initialize and
// session/new but never ends a prompt, session/cancel or not.
const envStubborn = "ACP_CLIENT_TEST_STUBBORN_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(envStubborn) == "1" {
		stubbornAgent()
		return
	}
	goleak.VerifyTestMain(m, proctest.IgnoreSpawner())
}

func stubbornAgent() {
	h := &acp.AgentHandlers{
		Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "s"}, nil
		},
		SessionPrompt: func(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
			fmt.Fprintln(os.Stderr, "stubborn agent: prompted")
			// Deaf to session/cancel. Not select {}: should every other
			// goroutine block too, the runtime's deadlock check would end
			// the agent.
			time.Sleep(time.Hour)
			return nil, nil
		},
		SessionCancel: func(context.Context, *acp.CancelNotification) error { return nil },
	}
	acp.NewConn(exitAtEOF{os.Stdin}, os.Stdout, h, &rpc.Options{MaxConcurrentRequests: 2})
	select {}
}

// exitAtEOF ends the process when its input ends, which the connection's
// Done would not: it waits for the prompt's handler, which never returns.
type exitAtEOF struct{ r io.Reader }

func (e exitAtEOF) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		os.Exit(0)
	}
	return n, err
}

// syncBuffer is a goroutine-safe sink the test reads.
type syncBuffer = testio.Buffer

// tsAgent is the command line of the TypeScript SDK's agent of
// testdata/interop/acp-ts, an independent ACP peer.
func tsAgent(t *testing.T) []string {
	return []string{peers.Node(t), peers.Script("agent.mjs")}
}

// The client against the official TypeScript SDK's agent: a prompt whose
// updates stream to stdout, ending end_turn.
func TestAgainstTypeScriptAgent(t *testing.T) {
	var stdout, stderr syncBuffer
	code := run(context.Background(), context.Background(), append([]string{"-prompt", "updates only", "-cwd", t.TempDir(), "--"}, tsAgent(t)...), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if got := stdout.String(); got != "onetwothree\n" {
		t.Fatalf("stdout %q", got)
	}
	if !strings.Contains(stderr.String(), "stop reason end_turn") {
		t.Fatalf("stderr %s", stderr.String())
	}
}

// -timeout sends session/cancel; the TypeScript agent ends the turn
// cancelled and the client exits 3.
func TestCancelAgainstTypeScriptAgent(t *testing.T) {
	var stdout, stderr syncBuffer
	code := run(context.Background(), context.Background(), append([]string{"-prompt", "until cancelled", "-timeout", "300ms", "-cwd", t.TempDir(), "--"}, tsAgent(t)...), &stdout, &stderr)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (cancelled)\n%s", code, stderr.String())
	}
	if got := stdout.String(); !strings.HasPrefix(got, "onetwothreechunk 0") {
		t.Fatalf("stdout %q", got)
	}
	if !strings.Contains(stderr.String(), "cancelling the prompt") || !strings.Contains(stderr.String(), "stop reason cancelled") {
		t.Fatalf("stderr %s", stderr.String())
	}
}

// An interrupt while the agent has not answered initialize ends the wait:
// the client exits 130 at once instead of hanging on an agent that reads
// and never answers.
func TestInterruptBeforeTheAgentAnswers(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, interrupt)
	var stderr syncBuffer
	start := time.Now()
	code := run(ctx, context.Background(), []string{"--", "sh", "-c", "cat >/dev/null; exit 0"}, &syncBuffer{}, &stderr)
	if code != 130 || !strings.Contains(stderr.String(), "initialize: interrupted") {
		t.Fatalf("exit %d, want 130\n%s", code, stderr.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("exited %v after the interrupt", d)
	}
}

// The first interrupt sends session/cancel; an agent that ignores it does
// not hold the client past the second.
func TestSecondInterruptLeavesADeafAgent(t *testing.T) {
	t.Setenv(envStubborn, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, interrupt := context.WithCancel(context.Background())
	force, quit := context.WithCancel(context.Background())
	var stderr syncBuffer
	go func() { // the first interrupt once the agent has the prompt, the second soon after
		for !strings.Contains(stderr.String(), "stubborn agent: prompted") {
			time.Sleep(10 * time.Millisecond)
		}
		interrupt()
		time.Sleep(200 * time.Millisecond)
		quit()
	}()
	code := run(ctx, force, []string{"--", self}, &syncBuffer{}, &stderr)
	if code != 130 || !strings.Contains(stderr.String(), "cancelling the prompt") || !strings.Contains(stderr.String(), "session/prompt: interrupted") {
		t.Fatalf("exit %d, want 130\n%s", code, stderr.String())
	}
}

func TestUsage(t *testing.T) {
	var stderr syncBuffer
	if code := run(context.Background(), context.Background(), []string{"-h"}, &syncBuffer{}, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage: acp-client") {
		t.Fatalf("-h: exit %d %q", code, stderr.String())
	}
	if code := run(context.Background(), context.Background(), nil, &syncBuffer{}, &syncBuffer{}); code != 2 {
		t.Fatalf("no agent: exit %d, want 2", code)
	}
	if code := run(context.Background(), context.Background(), []string{"--", "/nonexistent/agent"}, &syncBuffer{}, &syncBuffer{}); code != 1 {
		t.Fatalf("a missing agent: exit %d, want 1", code)
	}
}

// The client's file reads stay under -cwd.
func TestReadFileConfined(t *testing.T) {
	dir := t.TempDir()
	c := &client{root: dir}
	if _, err := c.readFile(context.Background(), readReq("/etc/passwd")); err == nil {
		t.Fatal("read a file outside the session's directory")
	}
	if _, err := c.readFile(context.Background(), readReq(dir+"/../x")); err == nil {
		t.Fatal("read through ..")
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("1\n2\n3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	req := readReq(filepath.Join(dir, "f.txt"))
	req.Line, req.Limit = wire.Some[int64](2), wire.Some[int64](1)
	if res, err := c.readFile(context.Background(), req); err != nil || res.Content != "2\n" {
		t.Fatalf("line 2, limit 1: %+v %v", res, err)
	}
	if _, err := c.readFile(context.Background(), readReq(filepath.Join(dir, "missing"))); err == nil {
		t.Fatal("read a missing file")
	}
}

func readReq(path string) *acp.ReadTextFileRequest {
	return &acp.ReadTextFileRequest{SessionID: "s", Path: path}
}
