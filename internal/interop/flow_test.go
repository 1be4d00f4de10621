package interop

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// notesText is the file the tour's prompt links; the peers read lines 2-3.
const notesText = "line one\nline two\nline three\nline four\n"

func writeNotes(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(notesText), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readLines is fs/read_text_file's rule: from 1-based line, at most limit
// lines.
func readLines(text string, line, limit int64, hasLimit bool) string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start := max(line-1, 0)
	if start > int64(len(lines)) {
		return ""
	}
	end := int64(len(lines))
	if hasLimit {
		end = min(end, start+limit)
	}
	return strings.Join(lines[start:end], "")
}

// goClient is the ACP client side, on the generated handlers, that drives
// the TypeScript agent and records the typed values it receives.
type goClient struct {
	mu          sync.Mutex
	updates     []acp.SessionNotification
	permissions []acp.RequestPermissionRequest
	reads       []acp.ReadTextFileRequest
	echoes      []jsontext.Value
	notes       []jsontext.Value
}

func (c *goClient) handlers() *acp.ClientHandlers {
	return &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			c.mu.Lock()
			c.updates = append(c.updates, *n)
			c.mu.Unlock()
			return nil
		},
		// Allow "allowed", reject "rejected", and fail on "erroring": the
		// agent must treat the error as a denial.
		SessionRequestPermission: func(_ context.Context, p *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
			c.mu.Lock()
			c.permissions = append(c.permissions, *p)
			c.mu.Unlock()
			title, _ := p.ToolCall.Title.Get()
			want := acp.PermissionOptionKindRejectOnce
			switch title {
			case "erroring":
				return nil, errors.New("the permission prompt crashed")
			case "allowed":
				want = acp.PermissionOptionKindAllowOnce
			}
			for _, o := range p.Options {
				if o.Kind == want {
					return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}, nil
				}
			}
			return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
		},
		FsReadTextFile: func(_ context.Context, p *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
			c.mu.Lock()
			c.reads = append(c.reads, *p)
			c.mu.Unlock()
			data, err := os.ReadFile(p.Path)
			if err != nil {
				return nil, rpc.NewError(int64(acp.ErrorCodeResourceNotFound), err.Error(), nil)
			}
			line, ok := p.Line.Get()
			if !ok {
				line = 1
			}
			limit, hasLimit := p.Limit.Get()
			return &acp.ReadTextFileResponse{Content: readLines(string(data), line, limit, hasLimit)}, nil
		},
		Fallback: rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			switch req.Method {
			case "_bridgekit/echo":
				c.echoes = append(c.echoes, jsontext.Value(req.Params).Clone())
				return map[string]any{"echo": jsontext.Value(req.Params).Clone()}, nil
			case "_bridgekit/note":
				c.notes = append(c.notes, jsontext.Value(req.Params).Clone())
				return nil, nil
			}
			return nil, rpc.MethodNotFound(req.Method)
		}),
	}
}

// agentReport is the TypeScript agent's account of the tour, from the
// prompt result's _meta.interop.
type agentReport struct {
	Permissions []struct {
		Title   string `json:"title"`
		Outcome *struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
		ErrorCode any  `json:"errorCode"`
		Granted   bool `json:"granted"`
	} `json:"permissions"`
	File struct {
		Content string `json:"content"`
	} `json:"file"`
	Echo        jsontext.Value `json:"echo"`
	UnknownCode any            `json:"unknownCode"`
	Received    struct {
		Pings   []jsontext.Value `json:"pings"`
		Notes   []jsontext.Value `json:"notes"`
		Aborted []string         `json:"aborted"`
	} `json:"received"`
}

// A Go client drives the TypeScript agent through the whole ACP flow:
// initialize, session/new, "_"-prefixed extension calls both ways (one of
// them cancelled with $/cancel_request), session/prompt streaming every
// session/update kind of ACP v0.12.2 plus extension variants, three
// permission round trips (allowed, rejected, and a handler error the agent
// must treat as a denial), fs/read_text_file, and finally a prompt cancelled
// with session/cancel.
func TestGoClientDrivesTypeScriptAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	docs := loadTour(t)
	notes := writeNotes(t)
	c := &goClient{}
	p := startPeer(t, c.handlers(), "agent.mjs")
	agent := acp.NewAgentPeer(p.conn)
	session := startSession(ctx, t, agent)

	// Extension methods, client to agent.
	if err := p.conn.Notify(ctx, "_bridgekit/note", map[string]string{"text": "from the go client"}); err != nil {
		t.Fatal(err)
	}
	var pong struct {
		Pong  string           `json:"pong"`
		Notes []jsontext.Value `json:"notes"`
	}
	if err := p.conn.Call(ctx, "_bridgekit/ping", map[string]string{"value": "from go"}, &pong); err != nil {
		t.Fatalf("_bridgekit/ping: %v", err)
	}
	if pong.Pong != "from go" || len(pong.Notes) != 1 || !sameJSON(t, pong.Notes[0], []byte(`{"text":"from the go client"}`)) {
		t.Fatalf("_bridgekit/ping answered %+v", pong)
	}
	if err := p.conn.Call(ctx, "_bridgekit/unknown", map[string]any{}, nil); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("an extension request the agent does not serve: %v, want -32601", err)
	}
	// A request whose context ends is cancelled with $/cancel_request: the
	// agent's handler sees its signal abort.
	slowCtx, slowCancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := p.conn.Call(slowCtx, "_bridgekit/slow", map[string]string{"tag": "slow-1"}, nil)
	slowCancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("_bridgekit/slow: %v, want the context's deadline", err)
	}
	waitFor(t, ctx, "the agent to see $/cancel_request", func() bool {
		var r struct {
			Aborted []string `json:"aborted"`
		}
		return p.conn.Call(ctx, "_bridgekit/ping", map[string]string{}, &r) == nil && slices.Contains(r.Aborted, "slow-1")
	})

	// The tour.
	res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: session, Prompt: []acp.ContentBlock{
		textBlock("interop tour"),
		{ResourceLink: &acp.ResourceLink{URI: (&url.URL{Scheme: "file", Path: notes}).String(), Name: "notes.txt"}},
	}})
	if err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	if res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("stopReason %q", res.StopReason)
	}

	c.mu.Lock()
	updates := slices.Clone(c.updates)
	perms := slices.Clone(c.permissions)
	reads := slices.Clone(c.reads)
	echoes, cnotes := slices.Clone(c.echoes), slices.Clone(c.notes)
	c.mu.Unlock()

	// Every update arrived before the prompt's answer, typed, in order.
	if len(updates) != len(docs.Updates)+len(docs.ExtensionUpdates) {
		t.Fatalf("%d updates, want %d", len(updates), len(docs.Updates)+len(docs.ExtensionUpdates))
	}
	for i, n := range updates {
		if n.SessionID != session {
			t.Errorf("update %d for session %q", i, n.SessionID)
		}
		var doc jsontext.Value
		if i < len(docs.Updates) {
			doc = docs.Updates[i]
			checkTourUpdate(t, i, n.Update)
		} else {
			doc = docs.ExtensionUpdates[i-len(docs.Updates)]
		}
		got, err := json.Marshal(n.Update)
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if !sameJSON(t, got, doc) {
			t.Errorf("update %d re-encodes as\n%s\nwant\n%s", i, got, doc)
		}
	}
	// Harn's extension variant keeps its tag and its _meta.harn (as the
	// union's Unknown until gen/harn types it); an unknown variant is kept
	// verbatim in Unknown and never guessed into another variant.
	harnExt := updates[len(docs.Updates)].Update
	if harnExt.Tag() != "progress" {
		t.Errorf("Harn extension update decoded with tag %q", harnExt.Tag())
	}
	custom := updates[len(docs.Updates)+1].Update
	if custom.Unknown == nil || custom.Tag() != "_bridgekit_custom" {
		t.Errorf("an unknown variant is not kept in Unknown: %+v", custom)
	} else if again, _ := json.Marshal(custom); !bytes.Equal(again, custom.Unknown) {
		t.Errorf("Unknown re-encodes as %s, not verbatim %s", again, custom.Unknown)
	}

	// The permission requests, typed.
	if len(perms) != 3 {
		t.Fatalf("%d permission requests", len(perms))
	}
	for i, title := range []string{"allowed", "rejected", "erroring"} {
		pr := perms[i]
		got, _ := pr.ToolCall.Title.Get()
		kind, _ := pr.ToolCall.Kind.Get()
		if got != title || pr.ToolCall.ToolCallID != acp.ToolCallID("perm-"+title) || kind != acp.ToolKindEdit || pr.SessionID != session ||
			len(pr.Options) != 2 || pr.Options[0].OptionID != "allow" || pr.Options[1].Kind != acp.PermissionOptionKindRejectOnce {
			t.Errorf("permission request %d: %+v", i, pr)
		}
	}
	if len(reads) != 1 || reads[0].Path != notes || reads[0].SessionID != session {
		t.Fatalf("fs/read_text_file requests: %+v", reads)
	}
	if line, _ := reads[0].Line.Get(); line != 2 {
		t.Errorf("fs/read_text_file line %d", line)
	}

	// The agent's account, from _meta.interop.
	typed, ok := res.Meta.Get()
	if !ok {
		t.Fatal("the prompt result has no _meta")
	}
	meta, err := json.Marshal(&typed) // acp types _meta (Harn's part); interop is kept in Extra
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Interop agentReport `json:"interop"`
	}
	if err := json.Unmarshal(meta, &r); err != nil {
		t.Fatalf("_meta %s: %v", meta, err)
	}
	rep := r.Interop
	if len(rep.Permissions) != 3 {
		t.Fatalf("agent report: %s", meta)
	}
	if a := rep.Permissions[0]; !a.Granted || a.Outcome == nil || a.Outcome.Outcome != "selected" || a.Outcome.OptionID != "allow" {
		t.Errorf("allowed: %+v", a)
	}
	if a := rep.Permissions[1]; a.Granted || a.Outcome == nil || a.Outcome.OptionID != "reject" {
		t.Errorf("rejected: %+v", a)
	}
	if a := rep.Permissions[2]; a.Granted || a.ErrorCode != float64(rpc.CodeInternalError) {
		t.Errorf("the handler error must reach the agent as a JSON-RPC error and deny: %+v", a)
	}
	if want := readLines(notesText, 2, 2, true); rep.File.Content != want || want != "line two\nline three\n" {
		t.Errorf("fs/read_text_file content %q, want %q", rep.File.Content, want)
	}
	if !sameJSON(t, rep.Echo, []byte(`{"echo":{"value":{"n":1,"s":"from the agent"}}}`)) || len(echoes) != 1 {
		t.Errorf("_bridgekit/echo: agent got %s, client saw %d", rep.Echo, len(echoes))
	}
	if rep.UnknownCode != float64(rpc.CodeMethodNotFound) {
		t.Errorf("an extension request the client does not serve: %v, want -32601", rep.UnknownCode)
	}
	if len(cnotes) != 1 || !sameJSON(t, cnotes[0], []byte(`{"text":"from the agent"}`)) {
		t.Errorf("_bridgekit/note from the agent: %s", cnotes)
	}
	if !slices.Contains(rep.Received.Aborted, "slow-1") || len(rep.Received.Notes) != 1 {
		t.Errorf("the agent's extension log: %+v", rep.Received)
	}

	// Cancellation with session/cancel ends the next prompt "cancelled".
	before := len(updates)
	done := make(chan *acp.PromptResponse, 1)
	go func() {
		res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: session, Prompt: text("until cancelled")})
		if err != nil {
			t.Errorf("session/prompt: %v", err)
		}
		done <- res
	}()
	waitFor(t, ctx, "streamed updates", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.updates) >= before+5
	})
	if err := agent.SessionCancel(ctx, &acp.CancelNotification{SessionID: session}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || res.StopReason != acp.StopReasonCancelled {
		t.Fatalf("after session/cancel: %+v", res)
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// clientTourReport is client.mjs's account of the tour.
type clientTourReport struct {
	Tour struct {
		Updates            []jsontext.Value `json:"updates"`
		PermissionRequests []struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				ToolCallID string `json:"toolCallId"`
				Title      string `json:"title"`
				Kind       string `json:"kind"`
			} `json:"toolCall"`
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		} `json:"permissionRequests"`
		FsRequests []struct {
			Path  string `json:"path"`
			Line  int    `json:"line"`
			Limit int    `json:"limit"`
		} `json:"fsRequests"`
		EchoRequests []jsontext.Value `json:"echoRequests"`
		Notes        []jsontext.Value `json:"notes"`
		Ping         struct {
			Pong  string `json:"pong"`
			Notes int    `json:"notes"`
		} `json:"ping"`
		UnknownCode any            `json:"unknownCode"`
		SlowCode    any            `json:"slowCode"`
		StopReason  string         `json:"stopReason"`
		Meta        jsontext.Value `json:"meta"`
	} `json:"tour"`
	Error *string `json:"error"`
}

// A TypeScript client drives a Go agent through the same flow: extension
// calls both ways ($/cancel_request among them), a prompt whose updates are
// every session/update kind built as typed Go values, three permission round
// trips (the TypeScript handler's error must deny), fs/read_text_file, and
// a prompt cancelled with session/cancel.
func TestTypeScriptClientDrivesGoAgent(t *testing.T) {
	docs := loadTour(t)
	notes := writeNotes(t)
	report := filepath.Join(t.TempDir(), "report.json")
	a := &goAgent{}
	p := startPeer(t, a.handlers(), "client.mjs", report, "tour", notes)
	a.conn.Store(p.conn)
	if err := p.wait(t, 30*time.Second); err != nil {
		log, _ := os.ReadFile(p.stderr.Name())
		t.Fatalf("client.mjs: %v\n%s", err, log)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r clientTourReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	if r.Error != nil {
		t.Fatalf("client.mjs failed: %s", *r.Error)
	}
	tr := r.Tour

	// What the TypeScript SDK parsed is exactly what the Go agent sent.
	if len(tr.Updates) != len(docs.Updates) {
		t.Fatalf("the client saw %d updates, want %d:\n%s", len(tr.Updates), len(docs.Updates), data)
	}
	for i, u := range tr.Updates {
		if !sameJSON(t, u, docs.Updates[i]) {
			t.Errorf("update %d reached the TypeScript client as\n%s\nwant\n%s", i, u, docs.Updates[i])
		}
	}

	a.mu.Lock()
	tour, notesSeen, slowEnded := a.tour, slices.Clone(a.notes), slices.Clone(a.slowEnded)
	a.mu.Unlock()
	if tour == nil {
		t.Fatalf("the Go agent never ran the tour; report:\n%s", data)
	}
	for i, err := range tour.updateErrs {
		t.Errorf("session/update %d: %v", i, err)
	}
	// The prompt as the Go agent decoded it.
	if len(tour.prompt) != 2 || tour.prompt[1].ResourceLink == nil || tour.prompt[1].ResourceLink.Name != "notes.txt" {
		t.Errorf("prompt blocks %+v", tour.prompt)
	}

	// Permission round trips: typed outcomes, and the error denies.
	if len(tour.permissions) != 3 || len(tr.PermissionRequests) != 3 {
		t.Fatalf("permissions: go %d, ts %d", len(tour.permissions), len(tr.PermissionRequests))
	}
	if pr := tour.permissions[0]; pr.err != nil || pr.res.Outcome.Selected == nil || pr.res.Outcome.Selected.OptionID != "allow" || !pr.granted {
		t.Errorf("allowed: %+v %v", pr.res, pr.err)
	}
	if pr := tour.permissions[1]; pr.err != nil || pr.res.Outcome.Selected == nil || pr.res.Outcome.Selected.OptionID != "reject" || pr.granted {
		t.Errorf("rejected: %+v %v", pr.res, pr.err)
	}
	var rpcErr *rpc.Error
	if pr := tour.permissions[2]; !errors.As(pr.err, &rpcErr) || rpcErr.Code != rpc.CodeInternalError || pr.granted {
		t.Errorf("erroring: the TypeScript handler's throw must arrive as a JSON-RPC error and deny: %+v %v", pr.res, pr.err)
	}
	for i, q := range tr.PermissionRequests {
		title := tour.permissions[i].title
		if q.SessionID != "go-session-1" || q.ToolCall.Title != title || q.ToolCall.ToolCallID != "perm-"+title || q.ToolCall.Kind != "edit" ||
			len(q.Options) != 2 || q.Options[0].Kind != "allow_once" || q.Options[1].OptionID != "reject" {
			t.Errorf("permission request %d as the client parsed it: %+v", i, q)
		}
	}
	if !sameJSON(t, tr.Meta, []byte(`{"interop":{"granted":[true,false,false]}}`)) || tr.StopReason != "end_turn" {
		t.Errorf("tour result: %s %s", tr.StopReason, tr.Meta)
	}

	// fs/read_text_file.
	if tour.fileErr != nil || tour.file.Content != "line two\nline three\n" {
		t.Errorf("fs/read_text_file: %+v %v", tour.file, tour.fileErr)
	}
	if len(tr.FsRequests) != 1 || tr.FsRequests[0].Path != notes || tr.FsRequests[0].Line != 2 || tr.FsRequests[0].Limit != 2 {
		t.Errorf("fs requests the client saw: %+v", tr.FsRequests)
	}

	// Extension methods both ways.
	if tour.echoErr != nil || !sameJSON(t, tour.echo, []byte(`{"echo":{"value":{"n":1,"s":"from the go agent"}}}`)) {
		t.Errorf("_bridgekit/echo: %s %v", tour.echo, tour.echoErr)
	}
	if !errors.Is(tour.unknownErr, rpc.ErrMethodNotFound) {
		t.Errorf("an extension request the client does not serve: %v", tour.unknownErr)
	}
	if len(tr.Notes) != 1 || !sameJSON(t, tr.Notes[0], []byte(`{"text":"from the go agent"}`)) {
		t.Errorf("notes the client got: %s", tr.Notes)
	}
	if len(notesSeen) != 1 || !sameJSON(t, notesSeen[0], []byte(`{"text":"from the ts client"}`)) || tr.Ping.Pong != "from ts" || tr.Ping.Notes != 1 {
		t.Errorf("client to agent: notes %s, ping %+v", notesSeen, tr.Ping)
	}
	if tr.UnknownCode != float64(rpc.CodeMethodNotFound) {
		t.Errorf("an extension request the Go agent does not serve: %v", tr.UnknownCode)
	}
	if !slices.Equal(slowEnded, []string{"slow-1"}) || tr.SlowCode != float64(rpc.CodeRequestCancelled) {
		t.Errorf("$/cancel_request: the Go handler saw %v, the client got %v", slowEnded, tr.SlowCode)
	}

	checkCancelReport(t, a, data)
}
