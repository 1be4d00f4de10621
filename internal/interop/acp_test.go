package interop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }

// peerDir holds the TypeScript peers and their node_modules (npm ci).
var peerDir = peers.Dir()

// child is a TypeScript peer running as a child process, its stdio pipes
// connected to a Go connection.
type child struct {
	cmd     *exec.Cmd
	stderr  *os.File
	conn    *rpc.Conn
	exited  chan struct{} // closed once the process has been reaped
	waitErr error
}

// wait waits up to d for the peer to exit and returns its exit error.
func (c *child) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-c.exited:
		return c.waitErr
	case <-time.After(d):
		t.Fatalf("%s did not exit within %v", c.cmd.Args[1], d)
		return nil
	}
}

// startPeer starts `node script args...` and connects h to its stdio with
// the generated ACP connection.
func startPeer(t *testing.T, h rpc.Handler, script string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(peers.Node(t), append([]string{script}, args...)...)
	cmd.Dir = peerDir
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: stderr, exited: make(chan struct{})}
	c.conn = acp.NewConn(stdout, stdin, h, nil) // default options
	go func() { c.waitErr = cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		c.conn.Close() // closes the child's stdin: the peer ends
		select {
		case <-c.exited:
			if c.waitErr != nil && !t.Failed() {
				t.Errorf("%s: %v", script, c.waitErr)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-c.exited
			t.Errorf("%s did not exit after its stdin closed", script)
		}
		if t.Failed() {
			log, _ := os.ReadFile(stderr.Name())
			t.Logf("%s stderr:\n%s", script, log)
		}
	})
	return c
}

// chunks records the text of the agent_message_chunk updates a client sees.
type chunks struct {
	mu    sync.Mutex
	texts []string
	seen  chan struct{} // receives a value per update, without blocking
}

func newChunks() *chunks { return &chunks{seen: make(chan struct{}, 1024)} }

func (c *chunks) update(_ context.Context, n *acp.SessionNotification) error {
	u := n.Update
	if u.AgentMessageChunk == nil || u.AgentMessageChunk.Content.Text == nil {
		return errors.New("unexpected update")
	}
	c.mu.Lock()
	c.texts = append(c.texts, u.AgentMessageChunk.Content.Text.Text)
	c.mu.Unlock()
	select {
	case c.seen <- struct{}{}:
	default:
	}
	return nil
}

func (c *chunks) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.texts)
}

// startSession runs initialize and session/new against the agent.
func startSession(ctx context.Context, t *testing.T, agent *acp.AgentPeer) acp.SessionID {
	t.Helper()
	init, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: &acp.ClientCapabilities{}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if init.ProtocolVersion != 1 {
		t.Fatalf("initialize: protocolVersion %d", init.ProtocolVersion)
	}
	cwd, _ := filepath.Abs(peerDir)
	s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: cwd, MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	return s.SessionID
}

func text(s string) []acp.ContentBlock {
	return []acp.ContentBlock{{Text: &acp.TextContent{Text: s}}}
}

// A Go client drives the TypeScript agent: initialize, session/new,
// session/prompt with streamed session/update, then session/cancel, which
// ends the prompt with stopReason "cancelled".
func TestGoClientCancelsTypeScriptAgentsPrompt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := newChunks()
	p := startPeer(t, &acp.ClientHandlers{SessionUpdate: seen.update}, "agent.mjs")
	agent := acp.NewAgentPeer(p.conn)
	session := startSession(ctx, t, agent)

	type result struct {
		res *acp.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: session, Prompt: text("until cancelled")})
		done <- result{res, err}
	}()
	for seen.count() < 5 {
		select {
		case <-seen.seen:
		case <-ctx.Done():
			t.Fatalf("only %d updates streamed", seen.count())
		}
	}
	if err := agent.SessionCancel(ctx, &acp.CancelNotification{SessionID: session}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.StopReason != acp.StopReasonCancelled {
		t.Fatalf("session/prompt after session/cancel: %+v, %v", r.res, r.err)
	}
	// The response barrier: every update sent before the answer was handled.
	if n := seen.count(); n < 5 || seen.texts[0] != "one" {
		t.Fatalf("updates %q", seen.texts)
	}
}

// Abandoning the prompt's context sends the protocol's cancel message,
// session/cancel for that session: the TypeScript agent ends its turn.
func TestContextCancellationSendsSessionCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := newChunks()
	p := startPeer(t, &acp.ClientHandlers{SessionUpdate: seen.update}, "agent.mjs")
	agent := acp.NewAgentPeer(p.conn)
	session := startSession(ctx, t, agent)

	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := agent.SessionPrompt(pctx, &acp.PromptRequest{SessionID: session, Prompt: text("until cancelled")})
		done <- err
	}()
	for seen.count() < 4 {
		select {
		case <-seen.seen:
		case <-ctx.Done():
			t.Fatalf("only %d updates streamed", seen.count())
		}
	}
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("SessionPrompt returned %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("SessionPrompt did not return when its context ended")
	}
	// The agent received session/cancel and stopped streaming.
	deadline := time.Now().Add(10 * time.Second)
	for {
		log, _ := os.ReadFile(p.stderr.Name())
		if strings.Contains(string(log), "prompt cancelled "+string(session)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never saw session/cancel; its log:\n%s", log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n := seen.count()
	time.Sleep(100 * time.Millisecond)
	if seen.count() != n {
		t.Fatalf("updates kept coming after the cancel: %d -> %d", n, seen.count())
	}
}

// A TypeScript client drives a Go agent: with default options, the Go
// prompt handler sees its context cancelled within 100 ms of the client's
// session/cancel and ends the turn "cancelled".
func TestTypeScriptClientCancelsGoAgentsPrompt(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	a := &goAgent{}
	p := startPeer(t, a.handlers(), "client.mjs", report)
	a.conn.Store(p.conn)
	if err := p.wait(t, 20*time.Second); err != nil {
		log, _ := os.ReadFile(p.stderr.Name())
		t.Fatalf("client.mjs: %v\n%s", err, log)
	}
	data, _ := os.ReadFile(report)
	checkCancelReport(t, a, data)
}

// checkCancelReport checks the cancellation that ends every client.mjs
// scenario: the TypeScript client sent session/cancel after three updates,
// the Go prompt handler saw its context end within 100 ms and the turn ended
// "cancelled".
func checkCancelReport(t *testing.T, a *goAgent, data []byte) {
	t.Helper()
	var r struct {
		Updates      []string `json:"updates"`
		CancelSentAt int64    `json:"cancelSentAt"`
		StopReason   string   `json:"stopReason"`
		SessionID    string   `json:"sessionId"`
		Error        *string  `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	if r.StopReason != "cancelled" || r.SessionID != "go-session-1" || len(r.Updates) < 3 || r.Error != nil {
		t.Fatalf("client report: %s", data)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	lag := a.cancelledAt.Sub(time.UnixMilli(r.CancelSentAt))
	t.Logf("the prompt handler saw its context end %v after the client sent session/cancel", lag)
	if a.cancelledAt.IsZero() || lag > 100*time.Millisecond {
		t.Fatalf("the prompt handler saw its context end %v after session/cancel, want < 100ms", lag)
	}
	if !a.cancelSeen {
		t.Fatal("the SessionCancel field never saw the notification")
	}
}
