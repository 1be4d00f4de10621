package conform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// ACPClient plays an ACP agent against a client. The client starts its
// agent itself, so conform is what it starts (`bridgekit conform --side
// acp-client --agent`, see ServeACPClient): it answers initialize and
// session/new, and runs the scenarios inside the client's first
// session/prompt, which it then ends with end_turn.
var ACPClient = &Side{
	Name:   "acp-client",
	Family: frames.ACP,
	Doc:    "conform plays an ACP agent against a client that starts it (--agent: conform serves on its own stdin/stdout)",
	Scenarios: func(cfg *Config) []Scenario {
		return (&acpClient{}).scenarios()
	},
}

// acpClient holds what the client said before the prompt.
type acpClient struct {
	mu                    sync.Mutex
	initialize, newSess   *Received
	prompt                *Received
	sessionID, cwd        string
	canRead, canWrite     bool
	protocolVersionNumber bool
}

func (c *acpClient) scenarios() []Scenario {
	g := &harnHost{} // the generic JSON-RPC scenarios use no host state
	return []Scenario{
		{"acp-client/initialize", "initialize's params fit InitializeRequest, with an integer protocolVersion", c.checkInitialize},
		{"acp-client/session-new", "session/new's params fit NewSessionRequest, with an absolute cwd", c.checkNew},
		{"acp-client/session-prompt", "session/prompt's params fit PromptRequest, for the session conform made", c.checkPrompt},
		{"acp-client/session-update", "session/update notifications (every kind, and an unknown one) get no answer", c.sessionUpdates},
		{"acp-client/permission", "session/request_permission selects an offered option or is cancelled", c.permission},
		{"acp-client/fs/read", "fs/read_text_file answers the file's text (when the client offers it)", c.fsRead},
		{"acp-client/fs/write", "fs/write_text_file writes exactly the text (when the client offers it)", c.fsWrite},
		{"acp-client/unknown-method", "an unknown request is -32601 with its id", g.unknownMethod},
		{"acp-client/unknown-notification", "an unknown notification gets no answer", g.unknownNotification},
		{"acp-client/bad-json", "a line that is not JSON is survived (answered -32700 with id null, or dropped)", g.badJSON},
		{"acp-client/not-a-request", "JSON values that are not requests are survived", g.notARequest},
		{"acp-client/large-line", "a 1 MiB request line is read and answered", g.largeLine},
		{"acp-client/duplicate-id", "two requests with the same id are each answered once", g.duplicateID},
		{"acp-client/unknown-reply", "a reply to an id the client never used is ignored", g.unknownReply},
		{"acp-client/big-id", "a request id of 18446744073709551615 is echoed exactly", g.u64ID},
	}
}

// frameProblems fails t with the classifier's findings on rec.
func frameProblems(t *T, rec *Received, what string) bool {
	if rec == nil {
		t.Failf(what, 0, "no_request", "the client never sent %s", what)
		return false
	}
	for _, p := range rec.Frame.Problems {
		t.Fail(Problem{Method: what, Frame: rec.Seq, Pointer: p.Pointer, Code: p.Code, Message: p.Message})
	}
	return !t.Failed()
}

func (c *acpClient) checkInitialize(_ context.Context, t *T) {
	if frameProblems(t, c.initialize, "initialize") && !c.protocolVersionNumber {
		t.Failf("initialize", c.initialize.Seq, "rule", "protocolVersion is not an integer")
	}
}

func (c *acpClient) checkNew(_ context.Context, t *T) {
	if frameProblems(t, c.newSess, "session/new") && !filepath.IsAbs(c.cwd) {
		t.Fail(Problem{Method: "session/new", Frame: c.newSess.Seq, Pointer: "/params/cwd", Code: "rule", Message: fmt.Sprintf("cwd %q is not absolute", c.cwd)})
	}
}

func (c *acpClient) checkPrompt(_ context.Context, t *T) {
	if !frameProblems(t, c.prompt, "session/prompt") {
		return
	}
	var v struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(c.prompt.Msg.Params, &v)
	if v.SessionID != c.sessionID {
		t.Fail(Problem{Method: "session/prompt", Frame: c.prompt.Seq, Pointer: "/params/sessionId", Code: "rule",
			Message: fmt.Sprintf("session %q, conform made %q", v.SessionID, c.sessionID)})
	}
}

func (c *acpClient) sessionUpdates(ctx context.Context, t *T) {
	for _, u := range []map[string]any{
		{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "conform says hello"}},
		{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": "thinking"}},
		{"sessionUpdate": "user_message_chunk", "content": map[string]any{"type": "text", "text": "echo"}},
		{"sessionUpdate": "tool_call", "toolCallId": "conform-t1", "title": "read", "kind": "read", "status": "pending"},
		{"sessionUpdate": "tool_call_update", "toolCallId": "conform-t1", "status": "completed"},
		{"sessionUpdate": "plan", "entries": []map[string]any{{"content": "check", "priority": "high", "status": "pending"}}},
		{"sessionUpdate": "available_commands_update", "availableCommands": []map[string]any{{"name": "conform", "description": "d"}}},
		{"sessionUpdate": "current_mode_update", "currentModeId": "default"},
		{"sessionUpdate": "conform_future_variant", "x": 1},
	} {
		if !t.Notify(ctx, "session/update", map[string]any{"sessionId": c.sessionID, "update": u}) {
			return
		}
	}
	expectSilence(ctx, t, "session/update")
}

func (c *acpClient) permission(ctx context.Context, t *T) {
	(&harnHost{}).permissionFor(ctx, t, c.sessionID)
}

// fileFor returns where the file scenarios put their files: --workdir,
// else the session's cwd.
func (c *acpClient) fileFor(t *T, name string) string {
	dir := t.Config().WorkDir
	if dir == "" {
		dir = c.cwd
	}
	return filepath.Join(dir, ".bridgekit-conform-"+name+"-"+randomHex()+".txt")
}

func (c *acpClient) fsRead(ctx context.Context, t *T) {
	if !c.canRead {
		t.NotImplemented("the client does not offer fs.readTextFile")
		return
	}
	path := c.fileFor(t, "read")
	text := "conform line one\nconform line two\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Failf("fs/read_text_file", 0, "conform", "preparing the file: %v", err)
		return
	}
	defer os.Remove(path)
	r := t.Call(ctx, "fs/read_text_file", map[string]any{"sessionId": c.sessionID, "path": path})
	res, ok := t.ExpectResult(r)
	if !ok {
		return
	}
	var v struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(res, &v)
	if v.Content != text {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/content", Code: "rule",
			Message: fmt.Sprintf("content %q, the file holds %q", clip(v.Content), clip(text))})
	}
}

func (c *acpClient) fsWrite(ctx context.Context, t *T) {
	if !c.canWrite {
		t.NotImplemented("the client does not offer fs.writeTextFile")
		return
	}
	path := c.fileFor(t, "write")
	defer os.Remove(path)
	text := "written by conform\n"
	r := t.Call(ctx, "fs/write_text_file", map[string]any{"sessionId": c.sessionID, "path": path, "content": text})
	if _, ok := t.ExpectResult(r); !ok {
		return
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != text {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result", Code: "rule",
			Message: fmt.Sprintf("answered success, but the file holds %q (%v)", clip(string(got)), err)})
	}
}

// ErrNoPrompt is returned by ServeACPClient when the client ended the
// session without a session/prompt.
var ErrNoPrompt = errors.New("the client sent no session/prompt")

// ServeACPClient serves an ACP client that started conform as its agent:
// in is what the client writes (our stdin), out what it reads (our
// stdout). It answers initialize and session/new, runs the acp-client
// scenarios inside the first session/prompt, calls report with the
// results before answering the prompt (end_turn), and returns them when
// the client ends its output (or ctx ends). A second prompt is answered
// end_turn at once.
func ServeACPClient(ctx context.Context, cfg Config, in io.Reader, out io.Writer, report func([]Result)) ([]Result, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	c := &acpClient{}
	peer := streamPeer(out, in, frames.ACP)
	var (
		results []Result
		runErr  error
		ran     bool
	)
	peer.answer = func(rec Received) (any, *RPCError) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch rec.Msg.Method {
		case "initialize":
			c.initialize = &rec
			var v struct {
				ProtocolVersion json.Number `json:"protocolVersion"`
				Caps            struct {
					Fs struct {
						Read  bool `json:"readTextFile"`
						Write bool `json:"writeTextFile"`
					} `json:"fs"`
				} `json:"clientCapabilities"`
			}
			dec := json.NewDecoder(bytesReader(rec.Msg.Params))
			dec.UseNumber()
			_ = dec.Decode(&v)
			_, err := v.ProtocolVersion.Int64()
			c.protocolVersionNumber = err == nil
			c.canRead, c.canWrite = v.Caps.Fs.Read, v.Caps.Fs.Write
			return map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"loadSession": false},
				"authMethods": []any{}, "agentInfo": map[string]any{"name": "bridgekit-conform", "version": "1"}}, nil
		case "session/new":
			c.newSess = &rec
			var v struct {
				Cwd string `json:"cwd"`
			}
			_ = json.Unmarshal(rec.Msg.Params, &v)
			c.cwd = v.Cwd
			c.sessionID = "conform-session-" + randomHex()
			return map[string]any{"sessionId": c.sessionID}, nil
		case "session/prompt":
			if ran {
				return map[string]any{"stopReason": "end_turn"}, nil
			}
			ran = true
			c.prompt = &rec
			c.mu.Unlock()
			results, runErr = runScenarios(ctx, peer, c.scenarios(), cfg, rec.Seq, nil)
			if report != nil {
				report(results)
			}
			c.mu.Lock()
			return map[string]any{"stopReason": "end_turn"}, nil
		}
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "conform does not serve " + rec.Msg.Method}
	}
	peer.startReading()
	select {
	case <-peer.readDone:
	case <-ctx.Done():
	}
	peer.servers.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ran {
		return nil, ErrNoPrompt
	}
	return results, runErr
}
