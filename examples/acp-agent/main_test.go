package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// envRun makes the test binary run the agent itself (run with no
// arguments): acpx starts it as its agent command.
const envRun = "BRIDGEKIT_ACP_AGENT_RUN"

func TestMain(m *testing.M) {
	if os.Getenv(envRun) == "1" {
		os.Exit(run(nil, os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m, proctest.IgnoreSpawner())
}

// session is a Go ACP client connected to the agent over pipes, recording
// what the agent streams.
type session struct {
	t      *testing.T
	agent  *acp.AgentPeer
	id     acp.SessionID
	mu     sync.Mutex
	text   strings.Builder
	tools  []string // tool call ids and statuses, as updated
	ticked chan struct{}
}

func (s *session) said() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// start runs the agent in this process and initializes a session with a
// client that answers permission requests with answer and reads files
// from dir.
func start(t *testing.T, answer string, canRead bool) *session {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- run(nil, agentIn, agentOut, io.Discard); agentOut.Close() }()
	s := &session{t: t, ticked: make(chan struct{}, 1)}
	client := &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			switch u := n.Update; {
			case u.AgentMessageChunk != nil:
				s.text.WriteString(u.AgentMessageChunk.Content.Text.Text)
				if strings.HasPrefix(u.AgentMessageChunk.Content.Text.Text, "tick") {
					select {
					case s.ticked <- struct{}{}:
					default:
					}
				}
			case u.ToolCall != nil:
				st, _ := u.ToolCall.Status.Get()
				s.tools = append(s.tools, string(u.ToolCall.ToolCallID)+":"+string(st))
			case u.ToolCallUpdate != nil:
				st, _ := u.ToolCallUpdate.Status.Get()
				s.tools = append(s.tools, string(u.ToolCallUpdate.ToolCallID)+":"+string(st))
			}
			return nil
		},
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: acp.PermissionOptionID(answer)}}}, nil
		},
		FsReadTextFile: func(_ context.Context, p *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
			b, err := os.ReadFile(p.Path)
			if err != nil {
				return nil, rpc.NewError(-32002, "resource not found", nil)
			}
			return &acp.ReadTextFileResponse{Content: string(b)}, nil
		},
	}
	conn := acp.NewConn(clientIn, clientOut, client, nil)
	t.Cleanup(func() {
		conn.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("the agent exited %d at the end of its input", code)
			}
		case <-time.After(10 * time.Second):
			t.Error("the agent did not end with its input")
		}
	})
	s.agent = acp.NewAgentPeer(conn)
	ctx := context.Background()
	init, err := s.agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1,
		ClientCapabilities: &acp.ClientCapabilities{Fs: &acp.FileSystemCapabilities{ReadTextFile: &canRead}}})
	if err != nil || init.ProtocolVersion != 1 {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	ns, err := s.agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: t.TempDir(), MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	s.id = ns.SessionID
	return s
}

func (s *session) prompt(ctx context.Context, text string) acp.StopReason {
	s.t.Helper()
	res, err := s.agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		s.t.Fatalf("prompt %q: %v", text, err)
	}
	return res.StopReason
}

func TestEcho(t *testing.T) {
	s := start(t, "allow", true)
	if r := s.prompt(context.Background(), "hello there"); r != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %q", r)
	}
	if got := s.said(); got != "You said: hello there " {
		t.Fatalf("streamed %q", got)
	}
}

func TestReadAllowedAndRejected(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("first line\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "allow", true)
	s.prompt(context.Background(), "read "+file)
	if got := s.said(); !strings.Contains(got, "is: first line") || strings.Contains(got, "second") {
		t.Fatalf("allowed read streamed %q", got)
	}
	if got := strings.Join(s.tools, " "); got != "read-1:pending read-1:completed" {
		t.Fatalf("tool call went %s", got)
	}
	s = start(t, "reject", true)
	s.prompt(context.Background(), "read "+file)
	if got := s.said(); !strings.Contains(got, "Permission denied") || strings.Contains(got, "first line") {
		t.Fatalf("rejected read streamed %q", got)
	}
	if got := strings.Join(s.tools, " "); got != "read-1:pending read-1:failed" {
		t.Fatalf("tool call went %s", got)
	}
	// A client without fs.readTextFile is never asked to read.
	s = start(t, "allow", false)
	s.prompt(context.Background(), "read "+file)
	if got := s.said(); !strings.Contains(got, "fs.readTextFile") || len(s.tools) != 0 {
		t.Fatalf("a client that cannot read: %q %v", got, s.tools)
	}
}

func TestWaitCancelled(t *testing.T) {
	s := start(t, "allow", true)
	got := make(chan acp.StopReason, 1)
	go func() { got <- s.prompt(context.Background(), "wait") }()
	select {
	case <-s.ticked:
	case <-time.After(10 * time.Second):
		t.Fatal("no tick")
	}
	// Another request is served while the prompt runs.
	if _, err := s.agent.SessionNew(context.Background(), &acp.NewSessionRequest{Cwd: t.TempDir(), MCPServers: []acp.MCPServer{}}); err != nil {
		t.Fatalf("session/new during a prompt: %v", err)
	}
	if err := s.agent.SessionCancel(context.Background(), &acp.CancelNotification{SessionID: s.id}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r != acp.StopReasonCancelled {
			t.Fatalf("stop reason after session/cancel: %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prompt did not end after session/cancel")
	}
}

// A "wait" whose client closes its input ends the turn cancelled, since no
// session/cancel can come any more, and the agent exits 0: before, it
// ticked for ever after the end of its input.
func TestWaitEndsAtTheEndOfInput(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"session-1","prompt":[{"type":"text","text":"wait"}]}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(nil, strings.NewReader(in), &out, io.Discard) }()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`) {
			t.Fatalf("exit %d\n%s", code, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent went on after the end of its input")
	}
}

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"-h"}, nil, io.Discard, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage: acp-agent") {
		t.Fatalf("-h: exit %d, %q", code, stderr.String())
	}
	if code := run([]string{"extra"}, nil, io.Discard, io.Discard); code != 2 {
		t.Fatalf("an argument: exit %d, want 2", code)
	}
}

// acpx returns the pinned acpx of testdata/acpx (npm ci there). It skips
// without node or acpx, and fails in CI, where .ci/run installs them.
func acpx(t *testing.T) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip("node is not on PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "acpx", "node_modules", ".bin", "acpx")
	if _, err := os.Stat(bin); err != nil {
		skip("acpx is not installed; run (cd testdata/acpx && npm ci)")
	}
	return bin
}

// frames is acpx's --format json output: the ACP messages it exchanged.
type frame struct {
	ID     jsontext.Value `json:"id"`
	Method string         `json:"method"`
	Params struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
			Status        string `json:"status"`
			Content       struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"update"`
		Options []struct {
			OptionID string `json:"optionId"`
		} `json:"options"`
	} `json:"params"`
	Result struct {
		StopReason string `json:"stopReason"`
		Content    string `json:"content"`
		Outcome    struct {
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	} `json:"result"`
}

// acpxExec runs `acpx --agent <this agent> --format json <flags> exec
// prompt` in a fresh workspace holding notes.txt. With interrupt it sends
// acpx SIGINT once the agent has streamed a tick, as Ctrl-C does.
func acpxExec(t *testing.T, prompt string, interrupt bool, flags ...string) []frame {
	t.Helper()
	bin := acpx(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the notes' first line\nmore\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--agent", self, "--cwd", ws, "--format", "json"}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "exec", prompt)...)
	cmd.Dir = ws
	// acpx keeps its state under $HOME; the agent is this test binary.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), envRun+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var frames []frame
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	sent := false
	for sc.Scan() {
		var f frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("acpx printed %s: %v", sc.Bytes(), err)
		}
		frames = append(frames, f)
		if interrupt && !sent && strings.HasPrefix(f.Params.Update.Content.Text, "tick") {
			sent = true
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if !interrupt && err != nil {
		t.Fatalf("acpx: %v\n%s", err, stderr.String())
	}
	if interrupt && !sent {
		t.Fatalf("the agent streamed no tick:\n%s", stderr.String())
	}
	return frames
}

func streamed(frames []frame) string {
	var s strings.Builder
	for _, f := range frames {
		if f.Method == acp.MethodSessionUpdate && f.Params.Update.SessionUpdate == "agent_message_chunk" {
			s.WriteString(f.Params.Update.Content.Text)
		}
	}
	return s.String()
}

func methods(frames []frame) []string {
	var out []string
	for _, f := range frames {
		if f.Method != "" && f.Method != acp.MethodSessionUpdate {
			out = append(out, f.Method)
		}
	}
	return out
}

func stopReason(frames []frame) string {
	for _, f := range frames {
		if f.Result.StopReason != "" {
			return f.Result.StopReason
		}
	}
	return ""
}

// The agent driven by acpx, a real ACP client from npm: initialize,
// session/new, a prompt with streamed updates, a permission request it
// approves, and fs/read_text_file (the agent asks for one line; acpx
// honours the limit). A rejected permission is TestReadAllowedAndRejected's.
func TestACPXReadWithPermission(t *testing.T) {
	frames := acpxExec(t, "read notes.txt", false, "--approve-all")
	if got, want := strings.Join(methods(frames), " "), "initialize session/new session/prompt session/request_permission fs/read_text_file"; got != want {
		t.Fatalf("acpx and the agent exchanged %s, want %s", got, want)
	}
	var outcome, content string
	for _, f := range frames {
		if f.Result.Outcome.OptionID != "" {
			outcome = f.Result.Outcome.OptionID
		}
		if f.Result.Content != "" {
			content = f.Result.Content
		}
	}
	if outcome != "allow" || content != "the notes' first line" {
		t.Fatalf("acpx answered the permission %q and the read %q", outcome, content)
	}
	if got := streamed(frames); !strings.HasSuffix(got, "notes.txt is: the notes' first line") {
		t.Fatalf("streamed %q", got)
	}
	if r := stopReason(frames); r != "end_turn" {
		t.Fatalf("stop reason %q", r)
	}
}

// Ctrl-C at acpx sends session/cancel; the agent ends the turn cancelled.
func TestACPXCancel(t *testing.T) {
	frames := acpxExec(t, "wait", true, "--approve-all")
	if got := strings.Join(methods(frames), " "); got != "initialize session/new session/prompt session/cancel" {
		t.Fatalf("acpx and the agent exchanged %s", got)
	}
	if got := streamed(frames); !strings.HasPrefix(got, "tick 0 ") {
		t.Fatalf("streamed %q", got)
	}
	if r := stopReason(frames); r != "cancelled" {
		t.Fatalf("stop reason after Ctrl-C: %q, want cancelled", r)
	}
}
