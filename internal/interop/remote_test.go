package interop

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	srvremote "github.com/bridgekit/bridgekit/servers/acpremote"
)

// nodeWithWS is peers.Node, also requiring the ws package the TypeScript SDK's network transports use
// in Node.
func nodeWithWS(t *testing.T) string {
	bin := peers.Node(t)
	if _, err := os.Stat(filepath.Join(peerDir, "node_modules", "ws")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the ws package is missing from the ACP peers' node_modules; run (cd testdata/interop/acp-ts && npm ci)")
		}
		t.Skip("the ws package is missing from the ACP peers' node_modules; run (cd testdata/interop/acp-ts && npm ci)")
	}
	return bin
}

// startTSServer starts remote-agent.mjs and returns its base URL (http://127.0.0.1:PORT/acp).
func startTSServer(t *testing.T) string {
	url, _ := startTSServerPid(t)
	return url
}

// startTSServerPid is startTSServer, with the server's process id.
func startTSServerPid(t *testing.T) (string, int) {
	t.Helper()
	cmd := exec.Command(nodeWithWS(t), "remote-agent.mjs")
	cmd.Dir = peerDir
	stderr, _ := os.Create(filepath.Join(t.TempDir(), "stderr"))
	cmd.Stderr = stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			log, _ := os.ReadFile(stderr.Name())
			t.Logf("remote-agent.mjs stderr:\n%s", log)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("remote-agent.mjs: %v", err)
	}
	port := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return "http://127.0.0.1:" + port + "/acp", cmd.Process.Pid
}

// remoteClient records what a Go client sees of a remote agent's turns.
type remoteClient struct {
	mu        sync.Mutex
	texts     []string
	asked     int
	seen      chan struct{}
	cancelled bool
}

func (c *remoteClient) handlers() *acp.ClientHandlers {
	return &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			c.mu.Lock()
			if ch := n.Update.AgentMessageChunk; ch != nil && ch.Content.Text != nil {
				c.texts = append(c.texts, ch.Content.Text.Text)
			}
			c.mu.Unlock()
			select {
			case c.seen <- struct{}{}:
			default:
			}
			return nil
		},
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			c.mu.Lock()
			c.asked++
			c.mu.Unlock()
			for _, o := range p.Options {
				if o.Kind == acp.PermissionOptionKindAllowOnce {
					return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}, nil
				}
			}
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		},
	}
}

func (c *remoteClient) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.texts
	c.texts = nil
	return out
}

func chunkList(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("chunk %d", i)
	}
	return out
}

// bridgekit's clients against the TypeScript SDK's servers, both transports: a whole turn (streamed
// updates, a permission request answered), then a turn cancelled with session/cancel.
func TestGoRemoteClientAgainstTypeScriptServer(t *testing.T) {
	base := startTSServer(t)
	for _, url := range []string{"ws" + strings.TrimPrefix(base, "http"), base} {
		t.Run(url[:strings.Index(url, ":")], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := &remoteClient{seen: make(chan struct{}, 1024)}
			agent, err := acpremote.DialAgent(ctx, url, c.handlers(), &acpremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 4}})
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()
			if _, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
				t.Fatal(err)
			}
			s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: text("20 updates")})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.take(); res.StopReason != acp.StopReasonEndTurn || c.asked != 1 || strings.Join(got, ",") != strings.Join(chunkList(20), ",") {
				t.Fatalf("stop %s, %d permission requests, updates %q", res.StopReason, c.asked, got)
			}
			// Cancel after 3 updates (of this turn: the first turn's are drained first).
			for len(c.seen) > 0 {
				<-c.seen
			}
			go func() {
				for i := 0; i < 3; i++ {
					<-c.seen
				}
				agent.SessionCancel(ctx, &acp.CancelNotification{SessionID: s.SessionID})
			}()
			res, err = agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: text("until cancelled")})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.take(); res.StopReason != acp.StopReasonCancelled || len(got) < 3 || got[0] != "chunk 0" {
				t.Fatalf("stop %s after %q", res.StopReason, got)
			}
		})
	}
}

// goRemoteAgent is the agent the TypeScript clients drive: "N updates" (a permission request half
// way), "until cancelled".
func goRemoteAgent() *acp.AgentHandlers {
	return &acp.AgentHandlers{
		Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "go-remote-1"}, nil
		},
		SessionCancel: func(context.Context, *acp.CancelNotification) error { return nil },
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			client := acp.ClientPeerFrom(ctx)
			say := func(i int) error {
				return client.SessionUpdate(ctx, acp.AgentText(p.SessionID, fmt.Sprintf("chunk %d", i)))
			}
			txt := acp.PromptText(p.Prompt)
			if txt == "until cancelled" {
				for i := 0; ; i++ {
					if ctx.Err() != nil {
						return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
					}
					if err := say(i); err != nil {
						return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
					}
					select {
					case <-ctx.Done():
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
			n := 3
			fmt.Sscanf(txt, "%d updates", &n)
			for i := 0; i < n; i++ {
				if i == n/2 {
					res, err := client.SessionRequestPermission(ctx, &acp.RequestPermissionRequest{SessionID: p.SessionID,
						ToolCall: acp.ToolCallUpdate{ToolCallID: "call_1", Title: wire.Some("write")},
						Options:  []acp.PermissionOption{{OptionID: "ok", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}}})
					if err != nil {
						return nil, err
					}
					if res.Outcome.Selected == nil || res.Outcome.Selected.OptionID != "ok" {
						return &acp.PromptResponse{StopReason: acp.StopReasonRefusal}, nil
					}
				}
				if err := say(i); err != nil {
					return nil, err
				}
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
}

// The TypeScript SDK's clients against bridgekit's server, both transports: the same two turns.
func TestTypeScriptRemoteClientAgainstGoServer(t *testing.T) {
	node := nodeWithWS(t)
	srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return goRemoteAgent() },
		&srvremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 4}})
	hs := httptest.NewServer(srv)
	defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
	for _, url := range []string{"ws" + strings.TrimPrefix(hs.URL, "http") + "/acp", hs.URL + "/acp"} {
		t.Run(url[:strings.Index(url, ":")], func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.json")
			cmd := exec.Command(node, "remote-client.mjs", url, report)
			cmd.Dir = peerDir
			out, err := cmd.CombinedOutput()
			data, rerr := os.ReadFile(report)
			if err != nil || rerr != nil {
				t.Fatalf("remote-client.mjs: %v %v\n%s\n%s", err, rerr, out, data)
			}
			var r struct {
				Turn             []string `json:"turn"`
				Permission       string   `json:"permission"`
				StopReason       string   `json:"stopReason"`
				Cancelled        []string `json:"cancelled"`
				CancelStopReason string   `json:"cancelStopReason"`
				Error            *string  `json:"error"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if r.Error != nil || r.StopReason != "end_turn" || r.Permission != "write" || strings.Join(r.Turn, ",") != strings.Join(chunkList(20), ",") {
				t.Fatalf("turn: %s", data)
			}
			if r.CancelStopReason != "cancelled" || len(r.Cancelled) < 3 || r.Cancelled[0] != "chunk 0" {
				t.Fatalf("cancelled turn: %s", data)
			}
		})
	}
}
