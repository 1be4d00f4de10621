// Command remote-client sends one prompt to an ACP agent across the network and prints the answer as
// it streams: the client of examples/acp-client with its one changed line, acpremote.DialAgent instead
// of acpcmd.StartAgent.
//
//	remote-client -url ws://127.0.0.1:8765/acp -prompt "hello"
//	remote-client -url http://127.0.0.1:8765/acp -prompt "write this" -allow
//
// A token for the server is read from BRIDGEKIT_TOKEN. Over WebSocket a dropped connection is resumed
// by itself: the turn goes on and every update arrives once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("remote-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "ws://127.0.0.1:8765/acp", "the agent's `URL` (ws://, wss://, http://, https://)")
	prompt := fs.String("prompt", "hello", "the prompt to send")
	allow := fs.Bool("allow", false, "grant the agent's permission requests")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	agent, err := acpremote.DialAgent(ctx, *url, &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
				fmt.Fprint(stdout, c.Content.Text.Text)
			}
			return nil
		},
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			want := acp.PermissionOptionKindRejectOnce
			if *allow {
				want = acp.PermissionOptionKindAllowOnce
			}
			for _, o := range p.Options {
				if o.Kind == want {
					return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}, nil
				}
			}
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		},
	}, &acpremote.Options{Dial: remote.DialOptions{Token: os.Getenv("BRIDGEKIT_TOKEN")}})
	if err != nil {
		fmt.Fprintln(stderr, "remote-client:", err)
		return 1
	}
	defer agent.Close()
	if _, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		fmt.Fprintln(stderr, "remote-client: initialize:", err)
		return 1
	}
	s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
	if err != nil {
		fmt.Fprintln(stderr, "remote-client: session/new:", err)
		return 1
	}
	res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock(*prompt)}})
	fmt.Fprintln(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "remote-client: session/prompt:", err)
		return 1
	}
	fmt.Fprintln(stderr, "remote-client: stop reason", res.StopReason)
	if res.StopReason != acp.StopReasonEndTurn {
		return 3
	}
	return 0
}
