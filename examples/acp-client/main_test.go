package main

import (
	"context"
	"github.com/bridgekit/bridgekit/internal/testio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	code := run(context.Background(), append([]string{"-prompt", "updates only", "-cwd", t.TempDir(), "--"}, tsAgent(t)...), &stdout, &stderr)
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
	code := run(context.Background(), append([]string{"-prompt", "until cancelled", "-timeout", "300ms", "-cwd", t.TempDir(), "--"}, tsAgent(t)...), &stdout, &stderr)
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

func TestUsage(t *testing.T) {
	var stderr syncBuffer
	if code := run(context.Background(), []string{"-h"}, &syncBuffer{}, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage: acp-client") {
		t.Fatalf("-h: exit %d %q", code, stderr.String())
	}
	if code := run(context.Background(), nil, &syncBuffer{}, &syncBuffer{}); code != 2 {
		t.Fatalf("no agent: exit %d, want 2", code)
	}
	if code := run(context.Background(), []string{"--", "/nonexistent/agent"}, &syncBuffer{}, &syncBuffer{}); code != 1 {
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
