// Command acp-agent is a small ACP agent: it speaks ACP on its stdin and
// stdout, which is how a client such as acpx or an editor starts it
// (`acpx --agent ./acp-agent exec "hello"`).
//
// It has no model. What it does with a prompt:
//
//   - it streams its answer as agent_message_chunk updates, word by word;
//   - "read PATH" asks the client's permission (session/request_permission,
//     with a read tool call) and, if allowed, reads PATH through the client
//     (fs/read_text_file) and streams the file's first line back;
//   - "wait" streams a tick every 50ms until the client sends
//     session/cancel (or its input ends), then ends the turn with
//     stopReason "cancelled"; "wait N" ends it after N ticks (end_turn).
//
// Its handlers reach the client through acp.ClientPeerFrom(ctx): the
// handler's context carries its connection from the first message on, so
// there is nothing to wire up after acp.NewConn and no race with a client
// that sends at once.
//
// Requests are handled concurrently (rpc.Options.MaxConcurrentRequests):
// by default a connection handles one request at a time, so one long
// session/prompt would hold up every other request, even another
// session's. session/cancel needs no free slot: cancel messages are applied
// by the reader as they arrive and end the prompt handler's context.
//
// Logs go to stderr (with -v, every request served), never to stdout,
// which carries only the protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/middleware"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "log every request served on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acp-agent [-v]\n\nA small ACP agent on stdin/stdout: it echoes prompts word by word; \"read PATH\" asks permission and reads PATH through the client; \"wait\" streams until cancelled.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acp-agent: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	in := &inputEnd{r: stdin, ended: make(chan struct{})}
	a := &agent{inputEnded: in.ended}
	h := &acp.AgentHandlers{
		Initialize:    a.initialize,
		SessionNew:    a.newSession,
		SessionPrompt: a.prompt,
		// The engine ends the prompt's context on session/cancel; the
		// handler only has to be there so that the notification is served.
		SessionCancel: func(context.Context, *acp.CancelNotification) error { return nil },
	}
	conn := acp.NewConn(in, stdout, h, &rpc.Options{
		MaxConcurrentRequests: 8,
		Logger:                logger,
		Middleware:            []rpc.Middleware{middleware.Logging(logger, nil), middleware.Recover(logger)},
	})
	defer conn.Close()
	if err := conn.Wait(context.Background()); err != nil { // nil at a clean end of input
		logger.Error("acp-agent: connection failed", "err", err)
		return 1
	}
	return 0
}

// agent is the agent's state: its sessions' working directories and what
// the client said it can do.
type agent struct {
	last    atomic.Int64
	cwds    sync.Map // acp.SessionID -> string, the session's cwd
	canRead atomic.Bool
	// inputEnded is closed at the end of the client's input, after which
	// no session/cancel can come: a "wait" ends there as cancelled, or it
	// would run for ever.
	inputEnded <-chan struct{}
}

// inputEnd reads r and closes ended once a read fails (EOF or any error).
type inputEnd struct {
	r     io.Reader
	ended chan struct{}
	once  sync.Once
}

func (e *inputEnd) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}

func (a *agent) initialize(_ context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	a.canRead.Store(p.GetClientCapabilities().GetFs().GetReadTextFile())
	return &acp.InitializeResponse{
		ProtocolVersion:   1,
		AgentCapabilities: &acp.AgentCapabilities{},
		AgentInfo:         wire.Some(acp.Implementation{Name: "bridgekit-acp-agent", Version: "0.1.0"}),
		AuthMethods:       []acp.AuthMethod{},
	}, nil
}

func (a *agent) newSession(_ context.Context, p *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	if !filepath.IsAbs(p.Cwd) {
		return nil, rpc.InvalidParams(errors.New("cwd must be an absolute path"))
	}
	id := acp.SessionID(fmt.Sprintf("session-%d", a.last.Add(1)))
	a.cwds.Store(id, p.Cwd)
	return &acp.NewSessionResponse{SessionID: id}, nil
}

func (a *agent) prompt(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
	client := acp.ClientPeerFrom(ctx)
	say := func(text string) error { return client.SessionUpdate(ctx, acp.AgentText(p.SessionID, text)) }
	text := strings.TrimSpace(acp.PromptText(p.Prompt))
	switch verb, arg, _ := strings.Cut(text, " "); verb {
	case "wait":
		// "wait N" ends the turn by itself after N ticks.
		n, err := strconv.Atoi(strings.TrimSpace(arg))
		if err != nil || n <= 0 {
			n = -1
		}
		for i := 0; i != n; i++ {
			if err := say(fmt.Sprintf("tick %d ", i)); err != nil {
				return cancelledOr(ctx, err)
			}
			select {
			case <-ctx.Done():
				return cancelledOr(ctx, ctx.Err())
			case <-a.inputEnded:
				return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	case "read":
		if err := a.read(ctx, client, p.SessionID, strings.TrimSpace(arg)); err != nil {
			return cancelledOr(ctx, err)
		}
	default:
		for _, word := range strings.Fields("You said: " + text) {
			if err := say(word + " "); err != nil {
				return cancelledOr(ctx, err)
			}
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// read asks permission to read path and, if granted, reads it through the
// client and streams its first line, reporting the tool call as it goes.
func (a *agent) read(ctx context.Context, client *acp.ClientPeer, session acp.SessionID, path string) error {
	say := func(text string) error { return client.SessionUpdate(ctx, acp.AgentText(session, text)) }
	if path == "" || !a.canRead.Load() {
		return say("I can only read a file the client lets me read: say read PATH, to a client offering fs.readTextFile.")
	}
	if !filepath.IsAbs(path) { // ACP's paths are absolute: resolve it in the session's cwd
		cwd, ok := a.cwds.Load(session)
		if !ok {
			return rpc.InvalidParams(errors.New("unknown session"))
		}
		path = filepath.Join(cwd.(string), path)
	}
	id := acp.ToolCallID("read-1")
	if err := client.SessionUpdate(ctx, &acp.SessionNotification{SessionID: session, Update: acp.SessionUpdate{
		ToolCall: &acp.ToolCall{ToolCallID: id, Title: "Read " + path, Kind: wire.Some(acp.ToolKindRead), Status: wire.Some(acp.ToolCallStatusPending)},
	}}); err != nil {
		return err
	}
	answer, err := client.SessionRequestPermission(ctx, &acp.RequestPermissionRequest{
		SessionID: session,
		ToolCall:  acp.ToolCallUpdate{ToolCallID: id, Title: wire.Some("Read " + path), Kind: wire.Some(acp.ToolKindRead)},
		Options: []acp.PermissionOption{
			{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return err
	}
	status := acp.ToolCallStatusFailed
	defer func() {
		_ = client.SessionUpdate(context.WithoutCancel(ctx), &acp.SessionNotification{SessionID: session, Update: acp.SessionUpdate{
			ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: id, Status: wire.Some(status)},
		}})
	}()
	if s := answer.Outcome.Selected; s == nil || s.OptionID != "allow" {
		return say("Permission denied: I did not read " + path + ".")
	}
	file, err := client.FsReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: session, Path: path, Limit: wire.Some(int64(1))})
	if err != nil {
		return say("The client could not read " + path + ": " + err.Error())
	}
	status = acp.ToolCallStatusCompleted
	first, _, _ := strings.Cut(file.Content, "\n")
	return say("The first line of " + path + " is: " + first)
}

// cancelledOr ends a turn whose context ended with stopReason "cancelled",
// as ACP asks of an agent whose prompt the client cancelled, and returns
// any other error as the prompt's error.
func cancelledOr(ctx context.Context, err error) (*acp.PromptResponse, error) {
	if ctx.Err() != nil {
		return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	return nil, err
}
