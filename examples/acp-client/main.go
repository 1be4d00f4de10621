// Command acp-client is a small ACP client: it starts an agent as a child
// process, or reaches one across the network with -url, sends it one
// prompt and prints the answer as it streams.
//
//	acp-client -prompt "hello" -- my-agent --flag
//	acp-client -url ws://127.0.0.1:8765/acp -prompt "hello"
//
// Across the network (a URL served by 'bridgekit serve', say) the only
// change to the program is the line that makes the agent: acpremote.DialAgent
// instead of acpcmd.StartAgent. A token for the server is read from the
// environment variable BRIDGEKIT_TOKEN, never from the command line. Over
// WebSocket a dropped connection is resumed by itself; and -resume SESSION
// attaches to a session an earlier client started (one that was killed
// mid-turn): the session's updates are replayed from the start, then the
// turn goes on to its end, which is printed.
//
// The agent's message chunks go to stdout; tool calls and permission
// requests are reported on stderr. A permission request is answered with
// the agent's first "allow" option when -allow is given, else its first
// "reject" option. fs/read_text_file is served for files under -cwd only.
// Ctrl-C (or -timeout) sends session/cancel, and the client waits for the
// agent to end the turn; a second Ctrl-C stops waiting and exits. Before
// the prompt is sent (initialize, session/new), Ctrl-C stops waiting at
// once.
//
// Exit status: 0 when the turn ended normally (end_turn), 3 when it was
// cancelled, 4 for any other stop reason, 1 when the agent failed, 2 for a
// usage error, 130 when an interrupt ended the wait for the agent.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/clients/acpcmd"
	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, interrupt := context.WithCancel(context.Background())
	force, quit := context.WithCancel(context.Background())
	go func() {
		<-sigs
		interrupt()
		<-sigs
		quit()
	}()
	os.Exit(run(ctx, force, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the client. Cancelling ctx (the first Ctrl-C) ends the wait for
// initialize and session/new, and cancels the prompt with session/cancel;
// cancelling force (the second) ends the wait for the prompt's answer.
func run(ctx, force context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acp-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prompt := fs.String("prompt", "hello", "the prompt to send")
	cwd := fs.String("cwd", ".", "the session's working directory; the agent may read files under it")
	allow := fs.Bool("allow", false, "grant the agent's permission requests (default: reject them)")
	timeout := fs.Duration("timeout", 0, "cancel the prompt after this long (0: never)")
	url := fs.String("url", "", "reach the agent at this `URL` (ws://, wss://, http://, https://) instead of starting AGENT")
	resume := fs.String("resume", "", "with -url (WebSocket): attach to the running `SESSION` an earlier client started and print its turn, instead of prompting")
	connection := fs.String("connection", "", "with -resume: the `ID` of the connection that started the session (printed by the client that did)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acp-client [flags] -- AGENT [ARGS...]\n       acp-client -url URL [flags]\n\nStarts AGENT (or reaches the agent at URL), sends it one prompt over ACP and prints the answer as it streams.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if (fs.NArg() == 0) == (*url == "") || *resume != "" && *url == "" {
		fs.Usage()
		return 2
	}
	root, err := filepath.Abs(*cwd)
	if err != nil {
		fmt.Fprintln(stderr, "acp-client:", err)
		return 2
	}

	c := &client{root: root, allow: *allow, out: stdout, log: stderr}
	handlers := &acp.ClientHandlers{
		SessionUpdate:            c.update,
		SessionRequestPermission: c.permission,
		FsReadTextFile:           c.readFile,
	}
	if *resume != "" {
		return c.resume(ctx, *url, *resume, *connection, handlers)
	}
	// The one line that differs between a child process and a URL.
	var agent interface {
		Close() error
		Wait(context.Context) error
	}
	connID := func() string { return "" }
	var peer *acp.AgentPeer
	if *url != "" {
		a, err := acpremote.DialAgent(context.Background(), *url, handlers, &acpremote.Options{Dial: remote.DialOptions{Token: os.Getenv("BRIDGEKIT_TOKEN")}})
		if err != nil {
			fmt.Fprintln(stderr, "acp-client:", err)
			return 1
		}
		agent, peer, connID = a, a.AgentPeer, a.ConnectionID
	} else {
		a, err := acpcmd.StartAgent(context.Background(), exec.Command(fs.Arg(0), fs.Args()[1:]...), handlers, &acpcmd.Options{Stderr: stderr})
		if err != nil {
			fmt.Fprintln(stderr, "acp-client:", err)
			return 1
		}
		agent, peer = a, a.AgentPeer
	}
	defer agent.Close()

	// An agent that never answers initialize or session/new must not
	// hold the client past an interrupt.
	if _, err := peer.Initialize(ctx, &acp.InitializeRequest{
		ProtocolVersion:    1,
		ClientCapabilities: &acp.ClientCapabilities{Fs: &acp.FileSystemCapabilities{ReadTextFile: new(true)}},
		ClientInfo:         wire.Some(acp.Implementation{Name: "bridgekit-acp-client", Version: "0.1.0"}),
	}); err != nil {
		return failed(ctx, stderr, "initialize", err)
	}
	session, err := peer.SessionNew(ctx, &acp.NewSessionRequest{Cwd: root, MCPServers: []acp.MCPServer{}})
	if err != nil {
		return failed(ctx, stderr, "session/new", err)
	}
	if id := connID(); id != "" {
		fmt.Fprintln(stderr, "acp-client: session", session.SessionID, "on connection", id)
	} else {
		fmt.Fprintln(stderr, "acp-client: session", session.SessionID)
	}

	// Cancel on Ctrl-C or at the timeout: the agent ends the turn itself,
	// with stopReason "cancelled".
	cancelAt := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		cancelAt, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	stopCancel := context.AfterFunc(cancelAt, func() {
		fmt.Fprintln(stderr, "acp-client: cancelling the prompt")
		_ = peer.SessionCancel(context.Background(), &acp.CancelNotification{SessionID: session.SessionID})
	})
	defer stopCancel()

	// The prompt is not cut short by the first interrupt, which cancels it
	// with session/cancel: the agent ends the turn itself. Only a second
	// one stops waiting for an agent that does not.
	res, err := peer.SessionPrompt(force, &acp.PromptRequest{SessionID: session.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock(*prompt)}})
	fmt.Fprintln(stdout)
	if err != nil {
		if errors.Is(err, rpc.ErrClosed) {
			fmt.Fprintln(stderr, "acp-client: session/prompt:", err)
			fmt.Fprintln(stderr, "acp-client: the agent ended:", agent.Wait(context.Background()))
			return 1
		}
		return failed(force, stderr, "session/prompt", err)
	}
	fmt.Fprintln(stderr, "acp-client: stop reason", res.StopReason)
	switch res.StopReason {
	case acp.StopReasonEndTurn:
		return 0
	case acp.StopReasonCancelled:
		return 3
	}
	return 4
}

// resume attaches to session over the WebSocket at url, prints its turn
// (the updates replayed from the start, then live) and returns the exit
// status of the turn's stop reason once its result arrives.
func (c *client) resume(ctx context.Context, url, session, connection string, handlers *acp.ClientHandlers) int {
	result := make(chan []byte, 1)
	agent, err := acpremote.DialAgent(ctx, url, handlers, &acpremote.Options{Dial: remote.DialOptions{
		Token:  os.Getenv("BRIDGEKIT_TOKEN"),
		Resume: &remote.Resume{SessionID: session, ConnectionID: connection},
		OnForeignResponse: func(frame []byte) {
			if strings.Contains(string(frame), `"stopReason"`) {
				select {
				case result <- append([]byte(nil), frame...):
				default:
				}
			}
		},
	}})
	if err != nil {
		fmt.Fprintln(c.log, "acp-client:", err)
		return 1
	}
	defer agent.Close()
	var res struct {
		Result acp.PromptResponse `json:"result"`
	}
	select {
	case b := <-result:
		if err := json.Unmarshal(b, &res); err != nil {
			fmt.Fprintln(c.log, "acp-client:", err)
			return 1
		}
	case <-ctx.Done():
		return 130
	case <-agent.Conn().Done():
		fmt.Fprintln(c.out)
		fmt.Fprintln(c.log, "acp-client: the session ended before its turn did:", agent.Wait(context.Background()))
		return 1
	}
	// The result came on the same socket after the turn's updates, but
	// notifications are handled off the reading goroutine: a round trip
	// (any answer, an error included) makes sure they have been printed.
	bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	agent.Conn().Call(bctx, "_bridgekit/flush", nil, nil)
	cancel()
	fmt.Fprintln(c.out)
	fmt.Fprintln(c.log, "acp-client: stop reason", res.Result.StopReason, "(resumed)")
	switch res.Result.StopReason {
	case acp.StopReasonEndTurn:
		return 0
	case acp.StopReasonCancelled:
		return 3
	}
	return 4
}

// failed reports the failed call method and returns the exit status: 130
// when ctx, an interrupt, ended the wait for it, else 1.
func failed(ctx context.Context, stderr io.Writer, method string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "acp-client: %s: interrupted before the agent answered\n", method)
		return 130
	}
	fmt.Fprintf(stderr, "acp-client: %s: %v\n", method, err)
	return 1
}

// client serves what the agent asks of its client.
type client struct {
	root     string
	allow    bool
	out, log io.Writer
}

func (c *client) update(_ context.Context, n *acp.SessionNotification) error {
	switch u := n.Update; {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		fmt.Fprint(c.out, u.AgentMessageChunk.Content.Text.Text)
	case u.ToolCall != nil:
		fmt.Fprintf(c.log, "acp-client: tool call %s: %s\n", u.ToolCall.ToolCallID, u.ToolCall.Title)
	case u.ToolCallUpdate != nil:
		if st, ok := u.ToolCallUpdate.Status.Get(); ok {
			fmt.Fprintf(c.log, "acp-client: tool call %s %s\n", u.ToolCallUpdate.ToolCallID, st)
		}
	}
	return nil
}

func (c *client) permission(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	want := []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	if c.allow {
		want = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	}
	title, _ := p.ToolCall.Title.Get()
	for _, o := range p.Options {
		if slices.Contains(want, o.Kind) {
			fmt.Fprintf(c.log, "acp-client: permission %q: %s\n", title, o.Name)
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}, nil
		}
	}
	fmt.Fprintf(c.log, "acp-client: permission %q: no option to choose, refused\n", title)
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

// readFile serves fs/read_text_file for files under the session's
// directory, with ACP's 1-based line and line limit.
func (c *client) readFile(_ context.Context, p *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	rel, err := filepath.Rel(c.root, filepath.Clean(p.Path))
	if !filepath.IsAbs(p.Path) || err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, rpc.InvalidParams(fmt.Errorf("%s is not under %s", p.Path, c.root))
	}
	root, err := os.OpenRoot(c.root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	b, err := root.ReadFile(rel)
	if err != nil {
		return nil, rpc.NewError(-32002, "resource not found", struct {
			Path string `json:"path"`
		}{p.Path})
	}
	lines := strings.SplitAfter(string(b), "\n")
	first := 0
	if l, ok := p.Line.Get(); ok && l > 1 {
		first = int(min(l-1, int64(len(lines))))
	}
	lines = lines[first:]
	if n, ok := p.Limit.Get(); ok && n >= 0 && n < int64(len(lines)) {
		lines = lines[:n]
	}
	return &acp.ReadTextFileResponse{Content: strings.Join(lines, "")}, nil
}
