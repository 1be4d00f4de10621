package acpcmd_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/acpcmd"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// envAgent makes the test binary an ACP agent (agentMain).
const envAgent = "ACPCMD_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(envAgent) == "1" {
		agentMain()
		return
	}
	goleak.VerifyTestMain(m, proctest.IgnoreSpawner())
}

// agentMain is a minimal agent: each prompt streams its text back through
// acp.ClientPeerFrom(ctx) and asks the client's permission once.
func agentMain() {
	h := &acp.AgentHandlers{
		Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "s1"}, nil
		},
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			client := acp.ClientPeerFrom(ctx)
			if err := client.SessionUpdate(ctx, acp.AgentText(p.SessionID, acp.PromptText(p.Prompt))); err != nil {
				return nil, err
			}
			if acp.PromptText(p.Prompt) == "crash" {
				os.Stderr.WriteString("agent: giving up, token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\n")
				os.Exit(3)
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
	conn := acp.NewConn(os.Stdin, os.Stdout, h, nil)
	_ = conn.Wait(context.Background())
	conn.Close()
}

func self(t *testing.T) *exec.Cmd {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), envAgent+"=1")
	return cmd
}

func TestStartAgent(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var said []string
	agent, err := acpcmd.StartAgent(ctx, self(t), &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			mu.Lock()
			defer mu.Unlock()
			said = append(said, n.Update.AgentMessageChunk.Content.Text.Text)
			return nil
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: ns.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("hello")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	mu.Lock()
	if strings.Join(said, ",") != "hello" {
		t.Errorf("streamed %q", said)
	}
	mu.Unlock()
	// The agent ends at the end of its input: a clean exit.
	if err := agent.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := agent.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// An agent that dies fails the call in flight, and Wait and Close say how
// it ended, with the end of its stderr, redacted.
func TestAgentDies(t *testing.T) {
	ctx := context.Background()
	agent, err := acpcmd.StartAgent(ctx, self(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	_, err = agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{acp.TextBlock("crash")}})
	if !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("a prompt the agent died in: %v, want rpc.ErrClosed", err)
	}
	werr := agent.Wait(ctx)
	var ee *acpcmd.ExitError
	if !errors.As(werr, &ee) || !strings.Contains(ee.Stderr, "agent: giving up") || strings.Contains(werr.Error(), "abcdefghijklmnop") {
		t.Fatalf("Wait = %v", werr)
	}
	var xe *exec.ExitError
	if !errors.As(werr, &xe) || xe.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", werr)
	}
	if err := agent.Close(); !errors.As(err, &ee) {
		t.Fatalf("Close after the agent died = %v", err)
	}
}

// Close ends the child's whole process group: an agent that ignores the end
// of its input and SIGTERM, and the process it started, are killed.
func TestCloseEndsTheGroup(t *testing.T) {
	mark := proctest.Mark(t)
	cmd := exec.Command("/bin/sh", "-c", `trap "" TERM; sleep 300 & while :; do sleep 1; done`)
	cmd.Env = append(os.Environ(), mark)
	agent, err := acpcmd.StartAgent(context.Background(), cmd, nil, &acpcmd.Options{StopGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	proctest.WaitMarked(t, mark, 2, 30*time.Second) // the shell and its background sleep
	start := time.Now()
	err = agent.Close()
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("Close = %v after %v, want the kill reported within the graces", err, time.Since(start))
	}
	proctest.MarkedGone(t, mark, 10*time.Second)
}

// The context given to StartAgent bounds the agent's life.
func TestContextEndsAgent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	agent, err := acpcmd.StartAgent(ctx, self(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-agent.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the agent outlived its context")
	}
	if _, err := agent.Initialize(context.Background(), &acp.InitializeRequest{ProtocolVersion: 1}); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("a call after the context ended: %v", err)
	}
	agent.Close()
}

func TestStartErrors(t *testing.T) {
	cmd := exec.Command("/nonexistent/agent")
	if _, err := acpcmd.StartAgent(context.Background(), cmd, nil, nil); err == nil {
		t.Fatal("a missing binary started")
	}
	cmd = self(t)
	cmd.Stderr = os.Stderr
	if _, err := acpcmd.StartAgent(context.Background(), cmd, nil, nil); err == nil {
		t.Fatal("a command with Stderr set was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := acpcmd.StartClient(ctx, self(t), nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context: %v", err)
	}
}
