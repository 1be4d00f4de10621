package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// ACPAgent plays an ACP client (stable v1) against an agent: initialize,
// authenticate when asked to, session/new in a workspace conform makes,
// prompts whose streamed session/update notifications are checked, the
// agent's own requests answered (fs/* inside the workspace only,
// session/request_permission allowed once or rejected as the scenario
// says, terminal/* refused: conform does not offer it), session/cancel
// during a prompt, and the bad inputs an agent must survive. Only stable
// methods are sent.
var ACPAgent = &Side{
	Name:   "acp-agent",
	Family: frames.ACP,
	Doc:    "conform plays an ACP client against an agent that speaks ACP on its stdin/stdout",
	Scenarios: func(cfg *Config) []Scenario {
		a := &acpAgent{cfg: cfg, side: "acp-agent"}
		cfg.answer = a.answer
		return a.scenarios()
	},
}

// HarnRuntime plays a Harn host against a runtime (harn serve acp, or any
// program serving Harn's stdio bridge as the VM): the acp-agent suite on
// Harn's stream, where every frame is decoded under Harn's contract
// (harn.ContractHarn: fields Harn moved under _meta.harn are problems at
// their old places), initialize must carry agentCapabilities._meta.harn,
// the extension session/update variants and prompt result fields the
// runtime uses must be the ones it advertised, and conform answers the
// bridge requests a runtime makes of its host (host/capabilities,
// host/call of the operations it advertises, host/tools/list, skills/*,
// skill/match, builtin_call).
var HarnRuntime = &Side{
	Name:   "harn-runtime",
	Family: frames.Harn,
	Doc:    "conform plays a Harn host against a runtime that serves the bridge on its stdin/stdout",
	Scenarios: func(cfg *Config) []Scenario {
		a := &acpAgent{cfg: cfg, side: "harn-runtime", harn: true}
		cfg.answer = a.answer
		return a.scenarios()
	},
}

// DefaultPrompt and DefaultCancelPrompt are the acp-agent side's prompts
// when --prompt and --cancel-prompt are not given: "read PATH" and "wait"
// are what examples/acp-agent understands, and plain enough for an agent
// with a model.
const (
	DefaultPrompt       = "read {file}"
	DefaultCancelPrompt = "wait"
)

// Permission answers the acp-agent side gives, by scenario.
const (
	allowOnce  = "allow"
	rejectOnce = "reject"
	cancelled  = "cancelled"
)

// acpAgent is the client's state: what the agent offered, the session,
// and the agent's requests as conform answered them.
type acpAgent struct {
	cfg  *Config
	side string // the scenario ids' prefix
	harn bool   // the runtime of Harn's bridge
	// updateExts and resultExts are the runtime's advertised extensions
	// (agentCapabilities._meta.harn).
	updateExts, resultExts []string

	mu        sync.Mutex
	peer      *Peer // the peer the session was made on
	authIDs   []string
	sessionID string
	policy    string // how session/request_permission is answered now
	phase     string // the prompt scenario running ("" between prompts)
	asked     []agentRequest
	turns     []*turn // the prompts answered, in order
	file      string  // the file {file} names
	fileText  string
}

// agentRequest is one request of the agent's and conform's answer.
type agentRequest struct {
	rec      Received
	method   string
	phase    string // the scenario it came in
	answered string // what conform answered (an option id, "cancelled", or an error)
	problem  *Problem
}

func (a *acpAgent) scenarios() []Scenario {
	g := &harnHost{} // the generic JSON-RPC scenarios use no host state
	ss := []Scenario{
		{"acp-agent/initialize", "initialize answers protocolVersion 1, agentCapabilities and authMethods that fit InitializeResponse", a.initialize},
		{"acp-agent/authenticate", "authenticate with --auth succeeds when the agent lists that method", a.authenticate},
		{"acp-agent/session-new", "session/new in a new workspace answers a sessionId", a.sessionNew},
		{"acp-agent/prompt", "session/prompt streams session/update for the session and ends with a stop reason (permissions allowed once)", a.prompt},
		{"acp-agent/fs/read", "the agent's fs/read_text_file requests are for the session, inside its cwd", a.fsCheck("fs/read_text_file")},
		{"acp-agent/fs/write", "the agent's fs/write_text_file requests are for the session, inside its cwd", a.fsCheck("fs/write_text_file")},
		{"acp-agent/permission/allow", "the agent's session/request_permission offers options; allowed once, the tool call goes on", a.permissionAllow},
		{"acp-agent/permission/reject", "a prompt whose permissions are rejected ends with a stop reason and completes no rejected tool call", a.permissionReject},
		{"acp-agent/terminal", "the agent makes no terminal/* request: the client did not offer terminal", a.terminal},
		{"acp-agent/cancel", "session/cancel during a prompt ends it with stopReason cancelled", a.cancel},
		{"acp-agent/unknown-method", "an unknown request is -32601 with its id", g.unknownMethod},
		{"acp-agent/unknown-notification", "an unknown notification gets no answer", g.unknownNotification},
		{"acp-agent/wrong-params", "session/prompt with params of the wrong kinds is -32602", a.wrongParams},
		{"acp-agent/bad-json", "a line that is not JSON is answered -32700 with id null", a.badJSON},
		{"acp-agent/large-line", "a 1 MiB request line is read and answered", g.largeLine},
		{"acp-agent/duplicate-id", "two requests with the same id are each answered once", g.duplicateID},
		{"acp-agent/unknown-reply", "a reply to an id the agent never used is ignored", g.unknownReply},
		{"acp-agent/end-of-input", "at the end of its input the agent answers what it read and exits 0", g.endOfInput},
	}
	if !a.harn {
		return ss
	}
	// A Harn runtime: the same scenarios under harn-runtime/, initialize's
	// title says what it checks more, and the bridge's own scenarios come
	// after the prompts.
	var out []Scenario
	for _, sc := range ss {
		sc.ID = "harn-runtime/" + strings.TrimPrefix(sc.ID, "acp-agent/")
		sc.Title = strings.ReplaceAll(sc.Title, "the agent", "the runtime")
		switch sc.ID {
		case "harn-runtime/initialize":
			sc.Title = "initialize answers protocolVersion 1 and agentCapabilities._meta.harn, Harn's extension contract, under Harn's contract"
		case "harn-runtime/authenticate":
			continue // Harn's bridge has no authentication
		}
		out = append(out, sc)
		if sc.ID == "harn-runtime/cancel" {
			out = append(out,
				Scenario{"harn-runtime/session-update", "the runtime's session/update extension variants are ones it advertised in sessionUpdateExtensions", a.harnUpdates},
				Scenario{"harn-runtime/prompt-result", "a prompt result's _meta.harn fields are ones advertised in promptResultExtensionFields, with terminal when advertised", a.harnPromptResult},
				Scenario{"harn-runtime/host-calls", "the runtime's host/call operations are ones the host advertised in host/capabilities", a.harnHostCalls},
			)
		}
	}
	return out
}

func (a *acpAgent) initParams() map[string]any {
	caps := map[string]any{
		"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
		"terminal": false,
	}
	if a.harn {
		// A Harn host says it is one; what it serves is in host/capabilities.
		caps["_meta"] = map[string]any{"harn": map[string]any{"host": "bridgekit-conform"}}
	}
	return map[string]any{"protocolVersion": 1, "clientCapabilities": caps,
		"clientInfo": map[string]any{"name": "bridgekit-conform", "version": "1"}}
}

// hostManifest is what conform's host/capabilities answers a runtime:
// the one operation it serves.
var hostManifest = map[string][]string{"process": {"list_shells"}}

// harnStandardUpdates are the session/update values Harn's bridge treats
// as ACP's own (the seed's "ACP compatibility contract"); any other a
// runtime sends must be in its sessionUpdateExtensions.
var harnStandardUpdates = []string{"user_message", "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}

func (a *acpAgent) initialize(ctx context.Context, t *T) {
	r := t.Call(ctx, "initialize", a.initParams())
	res, ok := t.ExpectResult(r)
	if !ok {
		return
	}
	a.mu.Lock()
	a.peer = t.peer
	a.mu.Unlock()
	var v struct {
		ProtocolVersion json.Number `json:"protocolVersion"`
		AuthMethods     []struct {
			ID string `json:"id"`
		} `json:"authMethods"`
	}
	dec := json.NewDecoder(bytes.NewReader(res))
	dec.UseNumber()
	_ = dec.Decode(&v)
	if v.ProtocolVersion.String() != "1" {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/protocolVersion", Code: "rule",
			Message: fmt.Sprintf("protocolVersion %s to a client that asked for 1 (the stable version)", v.ProtocolVersion)})
	}
	a.authIDs = nil
	for _, m := range v.AuthMethods {
		a.authIDs = append(a.authIDs, m.ID)
	}
	t.Note("protocol version %s, %d auth methods", v.ProtocolVersion, len(v.AuthMethods))
	if !a.harn {
		return
	}
	var h struct {
		Caps struct {
			Meta struct {
				Harn *struct {
					Updates []string `json:"sessionUpdateExtensions"`
					Results []string `json:"promptResultExtensionFields"`
				} `json:"harn"`
			} `json:"_meta"`
		} `json:"agentCapabilities"`
	}
	_ = json.Unmarshal(res, &h)
	if h.Caps.Meta.Harn == nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/agentCapabilities/_meta/harn", Code: "rule",
			Message: "a Harn runtime advertises its extension contract here, and it is missing"})
		return
	}
	a.mu.Lock()
	a.updateExts, a.resultExts = h.Caps.Meta.Harn.Updates, h.Caps.Meta.Harn.Results
	a.mu.Unlock()
	t.Note("protocol version %s, %d session/update extensions advertised", v.ProtocolVersion, len(h.Caps.Meta.Harn.Updates))
}

func (a *acpAgent) authenticate(ctx context.Context, t *T) {
	m := t.Config().AuthMethod
	switch {
	case m == "":
		t.NotImplemented("no --auth method given")
		return
	case !slices.Contains(a.authIDs, m):
		t.NotImplemented(fmt.Sprintf("the agent does not list auth method %q (it lists %q)", m, a.authIDs))
		return
	}
	if _, ok := t.ExpectResult(t.Call(ctx, "authenticate", map[string]any{"methodId": m})); ok {
		t.Note("authenticated with %q", m)
	}
}

// workspace is the session's cwd: the run's work directory.
func (a *acpAgent) workspace() string { return a.cfg.WorkDir }

func (a *acpAgent) sessionNew(ctx context.Context, t *T) {
	if a.workspace() == "" {
		t.Failf("session/new", 0, "conform", "no work directory for the session's cwd")
		return
	}
	a.newSession(ctx, t)
}

func (a *acpAgent) newSession(ctx context.Context, t *T) bool {
	r := t.Call(ctx, "session/new", map[string]any{"cwd": a.workspace(), "mcpServers": []any{}})
	res, ok := t.ExpectResult(r)
	if !ok {
		return false
	}
	var v struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &v)
	if v.SessionID == "" {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/sessionId", Code: "rule", Message: "no sessionId"})
		return false
	}
	a.mu.Lock()
	a.sessionID, a.peer = v.SessionID, t.peer
	a.mu.Unlock()
	return true
}

// session returns the session to prompt in, making a new one (initialize,
// authenticate, session/new) on an agent started again since.
func (a *acpAgent) session(ctx context.Context, t *T) (string, bool) {
	a.mu.Lock()
	id, same := a.sessionID, a.peer == t.peer
	a.mu.Unlock()
	if id != "" && same {
		return id, true
	}
	if !same {
		if a.initialize(ctx, t); t.Failed() {
			return "", false
		}
		if m := t.Config().AuthMethod; m != "" && slices.Contains(a.authIDs, m) {
			if _, ok := t.ExpectResult(t.Call(ctx, "authenticate", map[string]any{"methodId": m})); !ok {
				return "", false
			}
		}
	}
	if !a.newSession(ctx, t) {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessionID, true
}

// promptText returns text with {file} replaced by a file conform makes in
// the workspace.
func (a *acpAgent) promptText(text string) (string, error) {
	if !strings.Contains(text, "{file}") {
		return text, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.file == "" {
		a.file = filepath.Join(a.workspace(), "conform-notes.txt")
		a.fileText = "conform first line\nconform second line\n"
		if err := os.WriteFile(a.file, []byte(a.fileText), 0o644); err != nil {
			return "", err
		}
	}
	return strings.ReplaceAll(text, "{file}", a.file), nil
}

// turn is one prompt's outcome.
type turn struct {
	reply      *Reply
	stopReason string
	// sinceCancel is how long after session/cancel was sent the answer
	// came (cancelled turns only).
	sinceCancel time.Duration
	toolCalls   map[string]string // toolCallId -> last status reported
	result      json.RawMessage
	updates     []Received // the turn's session/update notifications
}

// runPrompt sends a prompt with the permission policy and waits for its
// answer; cancelAfter, when true, sends session/cancel once the turn has
// begun (its first session/update, or 300ms).
func (a *acpAgent) runPrompt(ctx context.Context, t *T, phase, text, policy string, cancelAfter bool) (*turn, bool) {
	session, ok := a.session(ctx, t)
	if !ok {
		return nil, false
	}
	text, err := a.promptText(text)
	if err != nil {
		t.Failf("session/prompt", 0, "conform", "preparing the prompt's file: %v", err)
		return nil, false
	}
	a.mu.Lock()
	a.policy, a.phase = policy, phase
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.policy, a.phase = "", ""
		a.mu.Unlock()
	}()
	id, ok := t.Request(ctx, "session/prompt", map[string]any{"sessionId": session,
		"prompt": []any{map[string]any{"type": "text", "text": text}}})
	if !ok {
		return nil, false
	}
	isReply := func(rec Received) bool {
		return rec.Msg != nil && rec.Msg.IsReply() && string(bytes.TrimSpace(rec.Msg.ID)) == idText(id)
	}
	if cancelAfter {
		begun, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		rec, _ := t.WaitFor(begun, func(rec Received) bool {
			return isReply(rec) || rec.Msg != nil && rec.Msg.Method == "session/update"
		})
		cancel()
		if rec.Msg != nil && isReply(rec) {
			t.NotImplemented("the turn ended before it could be cancelled")
			return nil, false
		}
		a.mu.Lock()
		a.policy = cancelled
		a.mu.Unlock()
		if !t.Notify(ctx, "session/cancel", map[string]any{"sessionId": session}) {
			return nil, false
		}
	}
	sent := time.Now()
	r := t.Await(ctx, "session/prompt", id)
	res, ok := t.ExpectResult(r)
	if !ok {
		return nil, false
	}
	tn := &turn{reply: r, toolCalls: map[string]string{}, sinceCancel: time.Since(sent)}
	var v struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(res, &v)
	tn.stopReason, tn.result = v.StopReason, res
	updates := 0
	for _, rec := range t.Received() {
		if rec.Msg == nil || rec.Msg.Method != "session/update" || rec.Seq > r.Seq {
			continue
		}
		updates++
		tn.updates = append(tn.updates, rec)
		var u struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind       string `json:"sessionUpdate"`
				ToolCallID string `json:"toolCallId"`
				Status     string `json:"status"`
			} `json:"update"`
		}
		_ = json.Unmarshal(rec.Msg.Params, &u)
		if u.SessionID != session {
			t.Fail(Problem{Method: "session/update", Frame: rec.Seq, Pointer: "/params/sessionId", Code: "rule",
				Message: fmt.Sprintf("an update for session %q during a prompt of %q", u.SessionID, session)})
		}
		if (u.Update.Kind == "tool_call" || u.Update.Kind == "tool_call_update") && u.Update.ToolCallID != "" {
			if _, seen := tn.toolCalls[u.Update.ToolCallID]; !seen || u.Update.Status != "" {
				tn.toolCalls[u.Update.ToolCallID] = u.Update.Status
			}
		}
	}
	// Every request the agent made during the turn has been answered by
	// now (the turn waited for them); their problems are this scenario's.
	// (fs/* requests' problems are the fs scenarios'.)
	for _, q := range a.requests(phase) {
		if q.problem != nil && !strings.HasPrefix(q.method, "fs/") {
			t.Fail(*q.problem)
		}
	}
	t.Note("stop reason %s, %d updates, %d requests of its own", tn.stopReason, updates, len(a.requests(phase)))
	a.mu.Lock()
	a.turns = append(a.turns, tn)
	a.mu.Unlock()
	return tn, true
}

func (a *acpAgent) prompt(ctx context.Context, t *T) {
	text := t.Config().Prompt
	if text == "" {
		text = DefaultPrompt
	}
	if tn, ok := a.runPrompt(ctx, t, "prompt", text, allowOnce, false); ok && tn.stopReason == "cancelled" {
		// Only a client's session/cancel makes a turn cancelled.
		t.Fail(Problem{Method: "session/prompt", Frame: tn.reply.Seq, Pointer: "/result/stopReason", Code: "rule",
			Message: "stopReason cancelled, but the client did not cancel (it allowed every permission)"})
	}
}

// requests returns the agent's requests made in phase ("" for all).
func (a *acpAgent) requests(phase string) []agentRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []agentRequest
	for _, q := range a.asked {
		if phase == "" || q.phase == phase {
			out = append(out, q)
		}
	}
	return out
}

func (a *acpAgent) fsCheck(method string) func(ctx context.Context, t *T) {
	return func(ctx context.Context, t *T) {
		n := 0
		for _, q := range a.requests("") {
			if q.method == method {
				n++
				if q.problem != nil {
					t.Fail(*q.problem)
				}
			}
		}
		if n == 0 {
			t.NotImplemented("no " + method + " request in the prompts")
			return
		}
		t.Note("%d requests answered", n)
	}
}

// permissionRequests returns the agent's permission requests of phase.
func (a *acpAgent) permissionRequests(phase string) []agentRequest {
	var out []agentRequest
	for _, q := range a.requests(phase) {
		if q.method == "session/request_permission" {
			out = append(out, q)
		}
	}
	return out
}

func (a *acpAgent) permissionAllow(ctx context.Context, t *T) {
	qs := a.permissionRequests("prompt")
	if len(qs) == 0 {
		t.NotImplemented("the agent asked no permission in the first prompt")
		return
	}
	t.Note("%d permission requests, answered %s", len(qs), qs[0].answered)
}

func (a *acpAgent) permissionReject(ctx context.Context, t *T) {
	text := t.Config().Prompt
	if text == "" {
		text = DefaultPrompt
	}
	tn, ok := a.runPrompt(ctx, t, "reject", text, rejectOnce, false)
	if !ok {
		return
	}
	qs := a.permissionRequests("reject")
	if len(qs) == 0 {
		t.NotImplemented("the agent asked no permission in this prompt")
		return
	}
	for _, q := range qs {
		var p struct {
			ToolCall struct {
				ID string `json:"toolCallId"`
			} `json:"toolCall"`
		}
		_ = json.Unmarshal(q.rec.Msg.Params, &p)
		if q.answered == rejectOnce && tn.toolCalls[p.ToolCall.ID] == "completed" {
			t.Fail(Problem{Method: "session/update", Frame: tn.reply.Seq, Code: "rule",
				Message: fmt.Sprintf("tool call %q was rejected (frame %d) but reported completed", p.ToolCall.ID, q.rec.Seq)})
		}
	}
	if tn.stopReason == "" {
		t.Fail(Problem{Method: "session/prompt", Frame: tn.reply.Seq, Pointer: "/result/stopReason", Code: "rule", Message: "no stop reason"})
	}
}

func (a *acpAgent) terminal(ctx context.Context, t *T) {
	for _, q := range a.requests("") {
		if strings.HasPrefix(q.method, "terminal/") {
			t.Fail(Problem{Method: q.method, Frame: q.rec.Seq, Pointer: "/method", Code: "not_advertised",
				Message: "the agent asked for a terminal of a client whose initialize offered terminal false"})
		}
	}
	if !t.Failed() {
		t.Note("no terminal/* request")
	}
}

func (a *acpAgent) cancel(ctx context.Context, t *T) {
	text := t.Config().CancelPrompt
	if text == "" {
		text = DefaultCancelPrompt
	}
	tn, ok := a.runPrompt(ctx, t, "cancel", text, allowOnce, true)
	if !ok {
		return
	}
	if tn.stopReason != "cancelled" && tn.sinceCancel < cancelRace {
		// The answer may have been on its way before the agent read the
		// cancel: inconclusive, not a failure.
		t.NotImplemented(fmt.Sprintf("the turn ended (%s) %v after session/cancel was sent, too soon to tell; use a --cancel-prompt the agent works on longer",
			tn.stopReason, tn.sinceCancel.Round(time.Millisecond)))
		return
	}
	if tn.stopReason != "cancelled" {
		t.Fail(Problem{Method: "session/prompt", Frame: tn.reply.Seq, Pointer: "/result/stopReason", Code: "rule",
			Message: fmt.Sprintf("stopReason %q after session/cancel, want \"cancelled\"", tn.stopReason)})
	}
}

// cancelRace is how soon after session/cancel a turn may still end
// otherwise than cancelled: its answer was already written.
const cancelRace = 100 * time.Millisecond

func (a *acpAgent) wrongParams(ctx context.Context, t *T) {
	t.ExpectError(t.Call(ctx, "session/prompt", map[string]any{"sessionId": 7, "prompt": "not a list"}), CodeInvalidParams)
}

// badJSON sends a line that is not JSON: a v1 agent answers -32700 with
// id null (JSON-RPC 2.0) and goes on.
func (a *acpAgent) badJSON(ctx context.Context, t *T) {
	if !t.SendRaw(ctx, "(bad JSON)", []byte(`{not json`)) {
		return
	}
	// An error without an id member is its answer too, a wrong one.
	rec, ok := t.WaitFor(ctx, func(rec Received) bool {
		return rec.Msg != nil && (rec.Msg.IsReply() || rec.Msg.Method == "" && rec.Msg.Error != nil)
	})
	if !ok {
		t.Failf("(bad JSON)", 0, "no_answer", "no -32700 answer to a line that is not JSON: %s", t.why(ctx))
		return
	}
	switch {
	case !rec.Msg.hasID:
		t.Tolerate(frames.ProblemMalformed) // reported here, in JSON-RPC's words
		t.Fail(Problem{Method: "(bad JSON)", Frame: rec.Seq, Pointer: "/id", Code: "id",
			Message: fmt.Sprintf("answered %s without an id member; JSON-RPC 2.0 answers a parse error with id null", clip(string(rec.Raw)))})
	case string(rec.Msg.ID) != "null" || rec.Msg.Error == nil || rec.Msg.Error.Code != CodeParseError:
		t.Fail(Problem{Method: "(bad JSON)", Frame: rec.Seq, Pointer: "/error/code", Code: "error_code",
			Message: fmt.Sprintf("answered %s, want error -32700 with id null", clip(string(rec.Raw)))})
	}
	t.Alive(ctx)
}

// answer answers a request of the agent's.
func (a *acpAgent) answer(rec Received) (any, *RPCError) {
	a.mu.Lock()
	q := agentRequest{rec: rec, method: rec.Msg.Method, phase: a.phase}
	policy, session, ws := a.policy, a.sessionID, a.workspace()
	a.mu.Unlock()
	if policy == "" {
		policy = rejectOnce // outside a prompt nothing is allowed
	}
	fail := func(pointer, code, format string, args ...any) {
		q.problem = &Problem{Method: q.method, Frame: rec.Seq, Pointer: pointer, Code: code, Message: fmt.Sprintf(format, args...)}
	}
	var (
		result any
		rpcErr *RPCError
	)
	var p struct {
		SessionID string          `json:"sessionId"`
		Path      string          `json:"path"`
		Content   *string         `json:"content"`
		Line      *int            `json:"line"`
		Limit     *int            `json:"limit"`
		Options   []permissionOpt `json:"options"`
	}
	_ = json.Unmarshal(rec.Msg.Params, &p)
	if len(rec.Frame.Problems) > 0 {
		// The classifier has the schema problem; refuse what does not fit.
		rpcErr = &RPCError{Code: CodeInvalidParams, Message: "params do not fit the method's type"}
	} else if p.SessionID != session && !strings.HasPrefix(q.method, "_") && !isBridgeRequest(q.method) {
		fail("/params/sessionId", "rule", "session %q, the client's session is %q", p.SessionID, session)
		rpcErr = &RPCError{Code: CodeInvalidParams, Message: "unknown session"}
	} else {
		switch q.method {
		case "fs/read_text_file", "fs/write_text_file":
			result, rpcErr = a.fsAnswer(q.method, p.Path, p.Content, p.Line, p.Limit, ws, fail)
		case "host/capabilities", "host/call", "host/tools/list", "skills/list", "skills/fetch", "skill/match", "builtin_call":
			if !a.harn {
				rpcErr = &RPCError{Code: CodeMethodNotFound, Message: "conform does not serve " + q.method}
				break
			}
			result, rpcErr = a.bridgeAnswer(q.method, rec.Msg.Params)
		case "session/request_permission":
			result, q.answered = choose(p.Options, policy)
			if len(p.Options) == 0 {
				fail("/params/options", "rule", "a permission request with no option")
			}
		default:
			rpcErr = &RPCError{Code: CodeMethodNotFound, Message: "conform does not serve " + q.method}
			q.answered = "-32601"
		}
	}
	a.mu.Lock()
	a.asked = append(a.asked, q)
	a.mu.Unlock()
	return result, rpcErr
}

type permissionOpt struct {
	ID   string `json:"optionId"`
	Kind string `json:"kind"`
}

// choose answers a permission request by policy: allow once (else always),
// reject once (else always), or cancelled.
func choose(opts []permissionOpt, policy string) (any, string) {
	kinds := map[string][]string{allowOnce: {"allow_once", "allow_always"}, rejectOnce: {"reject_once", "reject_always"}}[policy]
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.ID}}, policy
			}
		}
	}
	return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, cancelled
}

// fsAnswer serves fs/read_text_file and fs/write_text_file inside ws only.
func (a *acpAgent) fsAnswer(method, path string, content *string, line, limit *int, ws string, fail func(pointer, code, format string, args ...any)) (any, *RPCError) {
	if !filepath.IsAbs(path) {
		fail("/params/path", "rule", "path %q is not absolute", path)
		return nil, &RPCError{Code: CodeInvalidParams, Message: "path must be absolute"}
	}
	if !inside(ws, path) {
		fail("/params/path", "rule", "path %q is outside the session's cwd %q", path, ws)
		return nil, &RPCError{Code: -32000, Message: "conform serves files inside the session's cwd only"}
	}
	if method == "fs/write_text_file" {
		if content == nil {
			return nil, &RPCError{Code: CodeInvalidParams, Message: "no content"}
		}
		if err := os.WriteFile(path, []byte(*content), 0o644); err != nil {
			return nil, &RPCError{Code: -32000, Message: err.Error()}
		}
		return map[string]any{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &RPCError{Code: -32002, Message: "resource not found: " + filepath.Base(path)}
	}
	text := string(b)
	if line != nil || limit != nil {
		lines := strings.SplitAfter(text, "\n")
		from := 0
		if line != nil && *line > 1 {
			from = min(*line-1, len(lines))
		}
		to := len(lines)
		if limit != nil && *limit >= 0 {
			to = min(from+*limit, len(lines))
		}
		text = strings.Join(lines[from:to], "")
	}
	return map[string]any{"content": text}, nil
}

// inside says whether path is dir or under it, symbolic links resolved
// where they exist.
func inside(dir, path string) bool {
	resolve := func(p string) string {
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(r, filepath.Base(p))
		}
		return p
	}
	d, p := resolve(dir), resolve(path)
	return p == d || strings.HasPrefix(p, d+string(filepath.Separator))
}

// isBridgeRequest says whether method is one of the bridge's requests of a
// runtime to its host, which carry no sessionId.
func isBridgeRequest(method string) bool {
	return slices.Contains([]string{"host/capabilities", "host/call", "host/tools/list", "skills/list", "skills/fetch", "skill/match", "builtin_call"}, method)
}

// bridgeAnswer answers a runtime's bridge request as a host with no tools,
// no skills and one host/call operation (process.list_shells) does.
func (a *acpAgent) bridgeAnswer(method string, params json.RawMessage) (any, *RPCError) {
	switch method {
	case "host/capabilities":
		return hostManifest, nil
	case "host/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(params, &p)
		if p.Name == "process.list_shells" {
			return listShells(), nil
		}
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "conform does not serve host/call " + p.Name}
	case "host/tools/list":
		return map[string]any{"tools": []any{}}, nil
	case "skills/list":
		return []any{}, nil
	case "skills/fetch":
		return nil, &RPCError{Code: CodeInvalidParams, Message: "conform has no skills"}
	case "skill/match":
		return map[string]any{"matches": []any{}}, nil
	}
	return nil, &RPCError{Code: -32001, Message: "conform has no builtin tools"}
}

// listShells is conform's answer to process.list_shells: /bin/sh.
func listShells() map[string]any {
	return map[string]any{"shells": []any{map[string]any{"id": "sh", "label": "sh", "path": "/bin/sh", "platform": "linux",
		"available": true, "supports_login": false, "supports_interactive": false, "default_args": []string{"-c"},
		"login_args": []string{}, "source": "host"}}, "default_shell_id": "sh"}
}

func (a *acpAgent) harnUpdates(ctx context.Context, t *T) {
	a.mu.Lock()
	turns, exts := a.turns, a.updateExts
	a.mu.Unlock()
	if len(turns) == 0 {
		t.NotImplemented("no prompt was answered")
		return
	}
	n, ext := 0, 0
	for _, tn := range turns {
		for _, rec := range tn.updates {
			n++
			var u struct {
				Update struct {
					Kind string `json:"sessionUpdate"`
				} `json:"update"`
			}
			_ = json.Unmarshal(rec.Msg.Params, &u)
			if slices.Contains(harnStandardUpdates, u.Update.Kind) {
				continue
			}
			ext++
			if !slices.Contains(exts, u.Update.Kind) {
				t.Fail(Problem{Method: "session/update", Frame: rec.Seq, Pointer: "/params/update/sessionUpdate", Code: "not_advertised",
					Message: fmt.Sprintf("variant %q is not in agentCapabilities._meta.harn.sessionUpdateExtensions %q", u.Update.Kind, exts)})
			}
		}
	}
	t.Note("%d updates decoded under Harn's contract, %d of extension variants", n, ext)
}

func (a *acpAgent) harnPromptResult(ctx context.Context, t *T) {
	a.mu.Lock()
	turns, exts := a.turns, a.resultExts
	a.mu.Unlock()
	if len(turns) == 0 {
		t.NotImplemented("no prompt was answered")
		return
	}
	for _, tn := range turns {
		var v struct {
			Meta struct {
				Harn map[string]json.RawMessage `json:"harn"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(tn.result, &v)
		for k := range v.Meta.Harn {
			if !slices.Contains(exts, k) {
				t.Fail(Problem{Method: "session/prompt", Frame: tn.reply.Seq, Pointer: "/result/_meta/harn/" + k, Code: "not_advertised",
					Message: fmt.Sprintf("%q is not in agentCapabilities._meta.harn.promptResultExtensionFields %q", k, exts)})
			}
		}
		// The terminal outcome is what tells a host a prompt completed.
		if _, ok := v.Meta.Harn["terminal"]; slices.Contains(exts, "terminal") && !ok {
			t.Fail(Problem{Method: "session/prompt", Frame: tn.reply.Seq, Pointer: "/result/_meta/harn/terminal", Code: "rule",
				Message: "promptResultExtensionFields advertises terminal, and this result has none"})
		}
	}
	t.Note("%d prompt results", len(turns))
}

func (a *acpAgent) harnHostCalls(ctx context.Context, t *T) {
	asked, calls := false, 0
	for _, q := range a.requests("") {
		switch q.method {
		case "host/capabilities":
			asked = true
		case "host/call":
			calls++
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(q.rec.Msg.Params, &p)
			capability, op, _ := strings.Cut(p.Name, ".")
			if !slices.Contains(hostManifest[capability], op) {
				t.Fail(Problem{Method: "host/call", Frame: q.rec.Seq, Pointer: "/params/name", Code: "not_advertised",
					Message: fmt.Sprintf("called %q, which the host's host/capabilities did not list", p.Name)})
			}
		}
	}
	if calls == 0 {
		if asked {
			t.NotImplemented("the runtime asked host/capabilities but made no host/call")
		} else {
			t.NotImplemented("the runtime made no host/call (nor asked host/capabilities)")
		}
		return
	}
	t.Note("%d host/call requests", calls)
}
