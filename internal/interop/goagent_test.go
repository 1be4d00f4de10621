package interop

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// goAgent is an ACP agent on the generated handlers, driven by the
// TypeScript client (client.mjs). Its prompt "until cancelled" streams
// chunks until its context ends, then ends the turn "cancelled"; its prompt
// "interop tour" runs the tour (see tour).
type goAgent struct {
	conn atomic.Pointer[rpc.Conn] // set once the connection exists

	mu          sync.Mutex
	cancelledAt time.Time // when the prompt handler saw its context end
	cancelSeen  bool      // the session/cancel notification reached its field
	notes       []jsontext.Value
	slowEnded   []string // tags of _bridgekit/slow requests whose context ended
	tour        *agentTour
}

// agentTour is what the Go agent got from the client during the tour.
type agentTour struct {
	prompt      []acp.ContentBlock
	permissions []permissionResult
	file        *acp.ReadTextFileResponse
	fileErr     error
	echo        jsontext.Value
	echoErr     error
	unknownErr  error
	updateErrs  []error
}

// permissionResult is one session/request_permission round trip.
type permissionResult struct {
	title   string
	res     *acp.RequestPermissionResponse
	err     error
	granted bool
}

// granted is Harn's fail-closed rule: only a selected "allow" grants; an
// error (or any other answer) denies.
func granted(res *acp.RequestPermissionResponse, err error) bool {
	return err == nil && res != nil && res.Outcome.Selected != nil && res.Outcome.Selected.OptionID == "allow"
}

func (a *goAgent) client() *acp.ClientPeer { return acp.NewClientPeer(a.conn.Load()) }

func (a *goAgent) handlers() *acp.AgentHandlers {
	return &acp.AgentHandlers{
		Initialize: func(_ context.Context, p *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{
				ProtocolVersion: p.ProtocolVersion,
				AuthMethods:     []acp.AuthMethod{},
				AgentInfo:       wire.Some(acp.Implementation{Name: "bridgekit-go-agent", Version: "0.0.0"}),
			}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "go-session-1"}, nil
		},
		SessionPrompt: a.prompt,
		SessionCancel: func(context.Context, *acp.CancelNotification) error {
			a.mu.Lock()
			a.cancelSeen = true
			a.mu.Unlock()
			return nil
		},
		Fallback: rpc.HandlerFunc(a.extension),
	}
}

// extension serves the "_"-prefixed methods the TypeScript client calls.
func (a *goAgent) extension(ctx context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case "_bridgekit/note":
		a.mu.Lock()
		a.notes = append(a.notes, jsontext.Value(req.Params).Clone())
		a.mu.Unlock()
		return nil, nil
	case "_bridgekit/ping":
		var p struct {
			Value string `json:"value"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, rpc.InvalidParams(err)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return map[string]any{"pong": p.Value, "notes": len(a.notes)}, nil
	case "_bridgekit/slow":
		var p struct {
			Tag string `json:"tag"`
		}
		_ = json.Unmarshal(req.Params, &p)
		<-ctx.Done() // $/cancel_request ends it
		a.mu.Lock()
		a.slowEnded = append(a.slowEnded, p.Tag)
		a.mu.Unlock()
		return nil, ctx.Err()
	}
	return nil, rpc.MethodNotFound(req.Method)
}

func (a *goAgent) prompt(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil && p.Prompt[0].Text.Text == "interop tour" {
		return a.runTour(ctx, p)
	}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			a.mu.Lock()
			a.cancelledAt = time.Now()
			a.mu.Unlock()
			return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		case <-time.After(10 * time.Millisecond):
		}
		chunk := &acp.ContentChunk{Content: acp.ContentBlock{Text: &acp.TextContent{Text: "chunk"}}}
		if err := a.client().SessionUpdate(ctx, &acp.SessionNotification{SessionID: p.SessionID, Update: acp.SessionUpdate{AgentMessageChunk: chunk}}); err != nil {
			return nil, err
		}
	}
}

// runTour streams every session/update kind, asks permission three times,
// reads the file the prompt links and calls the client's extension methods;
// it answers with a summary under _meta.interop.
func (a *goAgent) runTour(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
	client, conn := a.client(), a.conn.Load()
	tour := &agentTour{prompt: p.Prompt}
	defer func() {
		a.mu.Lock()
		a.tour = tour
		a.mu.Unlock()
	}()
	for _, u := range tourUpdates() {
		if err := client.SessionUpdate(ctx, &acp.SessionNotification{SessionID: p.SessionID, Update: u}); err != nil {
			tour.updateErrs = append(tour.updateErrs, err)
		}
	}
	for _, title := range []string{"allowed", "rejected", "erroring"} {
		res, err := client.SessionRequestPermission(ctx, &acp.RequestPermissionRequest{
			SessionID: p.SessionID,
			ToolCall: acp.ToolCallUpdate{
				ToolCallID: acp.ToolCallID("perm-" + title),
				Title:      wire.Some(title),
				Kind:       wire.Some(acp.ToolKindEdit),
				Status:     wire.Some(acp.ToolCallStatusPending),
				RawInput:   jsontext.Value(`{"path":"/workspace/notes.txt"}`),
			},
			Options: []acp.PermissionOption{
				{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		tour.permissions = append(tour.permissions, permissionResult{title: title, res: res, err: err, granted: granted(res, err)})
	}
	tour.fileErr = errors.New("the prompt links no file")
	for _, b := range p.Prompt {
		if b.ResourceLink == nil {
			continue
		}
		u, err := url.Parse(b.ResourceLink.URI)
		if err != nil {
			tour.fileErr = err
			break
		}
		tour.file, tour.fileErr = client.FsReadTextFile(ctx, &acp.ReadTextFileRequest{
			SessionID: p.SessionID, Path: u.Path, Line: wire.Some[int64](2), Limit: wire.Some[int64](2),
		})
	}
	tour.echoErr = conn.Call(ctx, "_bridgekit/echo", map[string]any{"value": map[string]any{"n": 1, "s": "from the go agent"}}, &tour.echo)
	tour.unknownErr = conn.Call(ctx, "_bridgekit/unknown", map[string]any{}, nil)
	if err := conn.Notify(ctx, "_bridgekit/note", map[string]any{"text": "from the go agent"}); err != nil {
		return nil, err
	}
	granted := make([]bool, len(tour.permissions))
	for i, r := range tour.permissions {
		granted[i] = r.granted
	}
	raw, err := json.Marshal(map[string]any{"interop": map[string]any{"granted": granted}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Meta: wire.Some(jsontext.Value(raw))}, nil
}
