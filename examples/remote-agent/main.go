// Command remote-agent is an ACP agent written with bridgekit and served across the network in process:
// WebSocket (ws://ADDR/acp) and Streamable HTTP (http://ADDR/acp) on one endpoint, each remote
// connection with handlers of its own, sessions resumable after a dropped connection.
//
//	remote-agent -listen 127.0.0.1:8765
//	BRIDGEKIT_TOKEN=secret remote-agent -listen 0.0.0.0:8765
//
// It streams each prompt back word by word, asking the client's permission first when the prompt
// starts with "write". Clients: examples/remote-client, examples/acp-client -url, or any ACP client with
// a remote transport (the TypeScript SDK's experimental ones). A non-loopback address needs a token
// (BRIDGEKIT_TOKEN; clients send "Authorization: Bearer TOKEN"). To serve an agent program instead,
// use `bridgekit serve -- AGENT`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/acpremote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// run serves until ctx ends. ready, if set, gets the address listened on.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) int {
	fs := flag.NewFlagSet("remote-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8765", "listen on `ADDR`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	opts := &acpremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 8}}
	opts.Server.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if token := os.Getenv("BRIDGEKIT_TOKEN"); token != "" {
		opts.Server.Authenticate = remote.Tokens([]string{token}, nil)
	} else if host, _, _ := net.SplitHostPort(*listen); host != "localhost" && !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(stderr, "remote-agent: a non-loopback address needs a token (BRIDGEKIT_TOKEN)")
		return 2
	}
	srv := acpremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return newAgent() }, opts)
	mux := http.NewServeMux()
	mux.Handle("/acp", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "remote-agent:", err)
		return 1
	}
	fmt.Fprintf(stderr, "remote-agent: ws://%s/acp and http://%s/acp\n", ln.Addr(), ln.Addr())
	if ready != nil {
		ready(ln.Addr().String())
	}
	go hs.Serve(ln)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	srv.Close()
	return 0
}

// newAgent returns the handlers of one connection.
func newAgent() *acp.AgentHandlers {
	var sessions atomic.Int64
	return &acp.AgentHandlers{
		Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: acp.SessionID(fmt.Sprintf("remote-%d", sessions.Add(1)))}, nil
		},
		SessionCancel: func(context.Context, *acp.CancelNotification) error { return nil }, // ends the prompt's context
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			client := acp.ClientPeerFrom(ctx)
			text := acp.PromptText(p.Prompt)
			if strings.HasPrefix(text, "write") {
				res, err := client.SessionRequestPermission(ctx, &acp.RequestPermissionRequest{SessionID: p.SessionID,
					ToolCall: acp.ToolCallUpdate{ToolCallID: "write-1"},
					Options: []acp.PermissionOption{
						{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
						{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
					}})
				if err != nil {
					return cancelledOr(ctx, err)
				}
				if res.Outcome.Selected == nil || res.Outcome.Selected.OptionID != "allow" {
					return &acp.PromptResponse{StopReason: acp.StopReasonRefusal}, nil
				}
			}
			for _, w := range strings.Fields(text) {
				if err := client.SessionUpdate(ctx, acp.AgentText(p.SessionID, w+" ")); err != nil {
					return cancelledOr(ctx, err)
				}
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
	}
}

// cancelledOr ends a turn cut short: cancelled when the client cancelled it, else with err.
func cancelledOr(ctx context.Context, err error) (*acp.PromptResponse, error) {
	if ctx.Err() != nil {
		return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	return nil, err
}
