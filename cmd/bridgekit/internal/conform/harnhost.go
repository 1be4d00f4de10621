package conform

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// HarnHost plays a Harn runtime (the VM side of Harn's stdio bridge)
// against a host: the catalogue's VM-to-host requests and notifications
// (spec/catalogue/harn.json), the ACP client methods a runtime calls on
// its host (session/request_permission, fs/*), session/update streams,
// and the bad inputs a host must survive. The expected error codes are
// the catalogue's (TestHarnHostCodesAreTheCatalogues checks them).
var HarnHost = &Side{
	Name:   "harn-host",
	Family: frames.Harn,
	Doc:    "conform plays a Harn runtime (the VM) against a host that serves the bridge on its stdin/stdout",
	Scenarios: func(cfg *Config) []Scenario {
		// The operations' schemas are loaded here, before any scenario's
		// timeout runs (an error is reported by the scenarios that need
		// them).
		_, _ = loadOpSchemas()
		h := &harnHost{}
		return h.scenarios(cfg)
	},
}

// harnHost holds what earlier scenarios learnt for later ones.
type harnHost struct {
	caps       map[string][]string // host/capabilities' answer (nil: not served)
	capsServed bool
	skillIDs   []string
	// results holds each operation's result, decoded, for the arguments
	// later operations learn from it (learntArgs).
	results map[string]any
}

// catalogueCodes are the error codes the Harn catalogue lists for the
// methods and operations the suite expects errors from.
var catalogueCodes = map[string][]int{
	"host/call":                  {-32601, -32602},
	"builtin_call":               {-32001, -32000},
	"skills/fetch":               {-32602},
	"process.shell_invocation":   {-32602, -32000},
	"process.set_default_shell":  {-32602},
	"hypothesis.attest_event":    {-32000},
	"host/capabilities":          {-32601},
	"session/request_permission": {},
}

func (h *harnHost) scenarios(cfg *Config) []Scenario {
	ss := []Scenario{
		{"harn-host/capabilities", "host/capabilities answers the capability manifest", h.capabilities},
	}
	for _, op := range frames.Operations(frames.Harn, "host/call") {
		op := op
		title := "host/call " + op.Info.Match[0] + " answers its operation's result"
		if op.Info.Match[0] == "hypothesis.attest_event" {
			title = "host/call hypothesis.attest_event with a receipt never issued is -32000 (there is no successful denial)"
		}
		ss = append(ss, Scenario{"harn-host/host-call/" + op.Info.Match[0], title,
			func(ctx context.Context, t *T) { h.hostCall(ctx, t, op) }})
	}
	ss = append(ss,
		Scenario{"harn-host/host-call/unknown-operation", "host/call of an operation nobody serves is -32601", h.unknownOperation},
		Scenario{"harn-host/host-call/bad-args", "host/call with arguments that do not fit the operation is -32602", h.badArgs},
		Scenario{"harn-host/tools-list", "host/tools/list answers tool descriptors", h.toolsList},
		Scenario{"harn-host/builtin-call/unknown-tool", "builtin_call of a tool the host does not have is refused (-32001 or -32000)", h.unknownTool},
		Scenario{"harn-host/skills-list", "skills/list answers skill manifest refs", h.skillsList},
		Scenario{"harn-host/skills-fetch", "skills/fetch of a listed id answers the skill", h.skillsFetch},
		Scenario{"harn-host/skills-fetch/unknown-id", "skills/fetch of an unknown id is -32602", h.skillsFetchUnknown},
		Scenario{"harn-host/skill-match", "skill/match answers matches among the candidates, scores not negative", h.skillMatch},
		Scenario{"harn-host/permission", "session/request_permission selects an offered option or is cancelled", h.permission},
		Scenario{"harn-host/fs/read", "fs/read_text_file answers the file's text, or refuses", h.fsRead},
		Scenario{"harn-host/fs/write", "fs/write_text_file writes exactly the text, or refuses", h.fsWrite},
		Scenario{"harn-host/session-update", "session/update notifications (ACP, Harn extensions, an unknown variant) get no answer", h.sessionUpdates},
		Scenario{"harn-host/notifications", "agent/idle, progress, log, output and _harn/agentEvent get no answer", h.notifications},
		Scenario{"harn-host/unknown-method", "an unknown request is -32601 with its id", h.unknownMethod},
		Scenario{"harn-host/unknown-notification", "an unknown notification gets no answer", h.unknownNotification},
		Scenario{"harn-host/wrong-params", "session/request_permission with wrong params is -32602", h.wrongParams},
		Scenario{"harn-host/bad-json", "a line that is not JSON is survived (answered -32700 with id null, or dropped)", h.badJSON},
		Scenario{"harn-host/not-a-request", "JSON values that are not requests are survived (-32600 with id null, or dropped)", h.notARequest},
		Scenario{"harn-host/large-line", "a 1 MiB request line is read and answered", h.largeLine},
		Scenario{"harn-host/duplicate-id", "two requests with the same id are each answered once", h.duplicateID},
		Scenario{"harn-host/unknown-reply", "a reply to an id the host never used is ignored", h.unknownReply},
		Scenario{"harn-host/u64-id", "the largest unsigned 64-bit id (Harn's ids are u64) is echoed exactly", h.u64ID},
		Scenario{"harn-host/interleaved", "requests sent together are all answered, matched by id", h.interleaved},
		Scenario{"harn-host/end-of-input", "at the end of its input the host answers what it read and exits 0", h.endOfInput},
	)
	return ss
}

func (h *harnHost) capabilities(ctx context.Context, t *T) {
	r := t.Call(ctx, "host/capabilities", map[string]any{})
	if IsMethodNotFound(r) {
		t.NotImplemented("host/capabilities is -32601 (Harn assumes an empty manifest)")
		return
	}
	res, ok := t.ExpectResult(r)
	if !ok {
		return
	}
	var caps map[string][]string
	if json.Unmarshal(res, &caps) == nil {
		h.caps, h.capsServed = caps, true
		t.Note("%d capabilities", len(caps))
	}
}

func (h *harnHost) advertised(op frames.Operation) bool {
	return op.Info.Capability != "" && slices.Contains(h.caps[op.Info.Capability], op.Info.Op)
}

// opArgs are the arguments operation op is called with: an example of its
// schema (operationArgs), with the members learnt from earlier results
// (learntArgs). A learnt member whose source result is missing makes the
// scenario not runnable, and why is returned.
func (h *harnHost) opArgs(op frames.Operation) (map[string]any, string, error) {
	name := op.Info.Match[0]
	args, err := operationArgs("harn", "host/call", op.Info.Go)
	if err != nil {
		return nil, "", err
	}
	for _, l := range learntArgs {
		if l.op != name {
			continue
		}
		v, ok := at(h.results[l.from], l.pointer)
		if !ok {
			return nil, fmt.Sprintf("%s's result has no %s to give %s", l.from, l.pointer, l.member), nil
		}
		args[l.member] = v
	}
	return args, "", nil
}

func (h *harnHost) hostCall(ctx context.Context, t *T, op frames.Operation) {
	name := op.Info.Match[0]
	args, missing, err := h.opArgs(op)
	if err != nil {
		t.Failf("host/call "+name, 0, "conform", "no arguments to call it with: %v", err)
		return
	}
	if missing != "" {
		t.NotImplemented(missing)
		return
	}
	r := t.Call(ctx, "host/call", map[string]any{"name": name, "args": args})
	if r == nil {
		return
	}
	r.Method = "host/call " + name
	if IsMethodNotFound(r) {
		if h.advertised(op) {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error/code", Code: "advertised",
				Message: fmt.Sprintf("host/capabilities advertises %s.%s but host/call answers -32601", op.Info.Capability, op.Info.Op)})
			return
		}
		t.NotImplemented(name + " is not served (-32601, and not advertised)")
		return
	}
	if name == "hypothesis.attest_event" {
		// A receipt the host never issued: there is no successful denial.
		t.ExpectError(r, catalogueCodes[name]...)
		return
	}
	if e := r.Err(); e != nil {
		if name == "process.get_default_shell" && e.Code == -32000 {
			t.Note("the host has no usable shell (-32000)")
			return
		}
		t.ExpectResult(r)
		return
	}
	if !t.CheckBody(r, op, r.Msg.Result, "/result") {
		return
	}
	var res any
	dec := json.NewDecoder(bytes.NewReader(r.Msg.Result))
	dec.UseNumber()
	if dec.Decode(&res) == nil {
		if h.results == nil {
			h.results = map[string]any{}
		}
		h.results[name] = res
	}
	if h.capsServed && !h.advertised(op) && op.Info.Capability != "" {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Code: "not_advertised",
			Message: fmt.Sprintf("served, but host/capabilities does not list %s in %q", op.Info.Op, op.Info.Capability)})
	}
	switch name {
	case "process.list_shells":
		var v struct {
			Shells []struct {
				ID string `json:"id"`
			} `json:"shells"`
			Default string `json:"default_shell_id"`
		}
		_ = json.Unmarshal(r.Msg.Result, &v)
		if v.Default != "" && !slices.ContainsFunc(v.Shells, func(s struct {
			ID string `json:"id"`
		}) bool {
			return s.ID == v.Default
		}) {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/default_shell_id", Code: "rule",
				Message: fmt.Sprintf("default_shell_id %q is none of the shells listed", v.Default)})
		}
		t.Note("%d shells", len(v.Shells))
	case "process.shell_invocation":
		var v struct {
			Args  []string `json:"args"`
			Index int      `json:"command_arg_index"`
		}
		_ = json.Unmarshal(r.Msg.Result, &v)
		if command, ok := args["command"].(string); ok && (v.Index < 0 || v.Index >= len(v.Args) || v.Args[v.Index] != command) {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/command_arg_index", Code: "rule",
				Message: fmt.Sprintf("args[command_arg_index] must be the command %q, exactly one argument: args %q, index %d", command, v.Args, v.Index)})
		}
	}
}

func (h *harnHost) unknownOperation(ctx context.Context, t *T) {
	r := t.Call(ctx, "host/call", map[string]any{"name": "conform.no_such_operation", "args": map[string]any{}})
	t.ExpectError(r, CodeMethodNotFound)
}

func (h *harnHost) badArgs(ctx context.Context, t *T) {
	r := t.Call(ctx, "host/call", map[string]any{"name": "process.shell_invocation", "args": map[string]any{"command": 42}})
	if IsMethodNotFound(r) {
		t.NotImplemented("process.shell_invocation is not served")
		return
	}
	t.ExpectError(r, CodeInvalidParams)
}

func (h *harnHost) toolsList(ctx context.Context, t *T) {
	r := t.Call(ctx, "host/tools/list", map[string]any{})
	if IsMethodNotFound(r) {
		t.NotImplemented("host/tools/list is -32601 (the host has no tool surface)")
		return
	}
	if res, ok := t.ExpectResult(r); ok {
		var v struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(res, &v) == nil {
			t.Note("%d tools", len(v.Tools))
		}
	}
}

func (h *harnHost) unknownTool(ctx context.Context, t *T) {
	r := t.Call(ctx, "builtin_call", map[string]any{"name": "conform_no_such_tool", "args": []any{map[string]any{}}})
	if IsMethodNotFound(r) {
		t.NotImplemented("builtin_call is -32601")
		return
	}
	t.ExpectError(r, catalogueCodes["builtin_call"]...)
}

func (h *harnHost) skillsList(ctx context.Context, t *T) {
	r := t.Call(ctx, "skills/list", map[string]any{})
	if IsMethodNotFound(r) {
		t.NotImplemented("skills/list is -32601")
		return
	}
	res, ok := t.ExpectResult(r)
	if !ok {
		return
	}
	var refs []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(res, &refs) != nil {
		var wrapped struct {
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		}
		_ = json.Unmarshal(res, &wrapped)
		refs = wrapped.Skills
	}
	h.skillIDs = nil
	for _, r := range refs {
		if r.ID != "" {
			h.skillIDs = append(h.skillIDs, r.ID)
		}
	}
	t.Note("%d skills", len(refs))
}

func (h *harnHost) skillsFetch(ctx context.Context, t *T) {
	if len(h.skillIDs) == 0 {
		t.NotImplemented("skills/list listed no skill to fetch")
		return
	}
	r := t.Call(ctx, "skills/fetch", map[string]any{"id": h.skillIDs[0]})
	if res, ok := t.ExpectResult(r); ok {
		var v struct {
			Body *string `json:"body"`
		}
		if json.Unmarshal(res, &v) == nil && v.Body == nil {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/body", Code: "rule", Message: "the skill has no body"})
		}
		t.Note("fetched %q", h.skillIDs[0])
	}
}

func (h *harnHost) skillsFetchUnknown(ctx context.Context, t *T) {
	r := t.Call(ctx, "skills/fetch", map[string]any{"id": "conform/no-such-skill-" + randomHex()})
	if IsMethodNotFound(r) {
		t.NotImplemented("skills/fetch is -32601")
		return
	}
	t.ExpectError(r, catalogueCodes["skills/fetch"]...)
}

func (h *harnHost) skillMatch(ctx context.Context, t *T) {
	// The seed's request.
	params := map[string]any{
		"strategy": "host", "prompt": "Ship the new release to production",
		"working_files": []string{"infra/terraform/cluster.tf"},
		"candidates": []map[string]any{
			{"name": "ship", "description": "Ship a production release", "when_to_use": "User says ship/release/deploy", "paths": []string{"infra/**", "Dockerfile"}},
			{"name": "review", "description": "Review existing code for correctness", "when_to_use": "User asks to review/audit", "paths": []string{}},
		},
	}
	r := t.Call(ctx, "skill/match", params)
	if IsMethodNotFound(r) {
		t.NotImplemented("skill/match is -32601 (Harn falls back to its own ranker)")
		return
	}
	res, ok := t.ExpectResult(r)
	if !ok {
		return
	}
	type match struct {
		Name  string   `json:"name"`
		Score *float64 `json:"score"`
	}
	var list []match
	if json.Unmarshal(res, &list) != nil {
		var obj struct {
			Matches []match `json:"matches"`
			Skills  []match `json:"skills"`
		}
		_ = json.Unmarshal(res, &obj)
		list = append(obj.Matches, obj.Skills...)
	}
	for i, m := range list {
		if m.Score != nil && *m.Score < 0 {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: fmt.Sprintf("/result/matches/%d/score", i), Code: "rule",
				Message: fmt.Sprintf("score %v is negative", *m.Score)})
		}
	}
	t.Note("%d matches", len(list))
}

func permissionParams(session string) map[string]any {
	return map[string]any{
		"sessionId": session,
		"toolCall": map[string]any{"toolCallId": "conform-call-1", "title": "conform_delete", "kind": "delete",
			"status": "pending", "rawInput": map[string]any{"path": "/nonexistent/conform"}},
		"options": []map[string]any{
			{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
			{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
		},
	}
}

func (h *harnHost) permission(ctx context.Context, t *T) {
	h.permissionFor(ctx, t, "conform-session")
}

func (h *harnHost) permissionFor(ctx context.Context, t *T, session string) {
	r := t.Call(ctx, "session/request_permission", permissionParams(session))
	if IsMethodNotFound(r) {
		t.NotImplemented("session/request_permission is -32601 (Harn then fails closed)")
		return
	}
	if r != nil && r.Err() != nil {
		t.Note("answered error %d (Harn denies the call)", r.Err().Code)
		return
	}
	res, ok := t.ExpectResult(r)
	if !ok {
		return
	}
	var v struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(res, &v)
	switch v.Outcome.Outcome {
	case "selected":
		if v.Outcome.OptionID != "allow" && v.Outcome.OptionID != "reject" {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/outcome/optionId", Code: "rule",
				Message: fmt.Sprintf("selected option %q was not offered", v.Outcome.OptionID)})
		}
		t.Note("selected %q", v.Outcome.OptionID)
	case "cancelled":
		t.Note("cancelled")
	}
}

// workFile creates a file with known text in the run's work directory.
func workDir(t *T) (string, bool) {
	dir := t.Config().WorkDir
	if dir == "" {
		t.NotImplemented("no --workdir")
		return "", false
	}
	return dir, true
}

func (h *harnHost) fsRead(ctx context.Context, t *T) {
	dir, ok := workDir(t)
	if !ok {
		return
	}
	text := "conform line one\nconform line two " + randomHex() + "\n"
	path := filepath.Join(dir, "conform-read-"+randomHex()+".txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Failf("fs/read_text_file", 0, "conform", "preparing the file: %v", err)
		return
	}
	defer os.Remove(path)
	r := t.Call(ctx, "fs/read_text_file", map[string]any{"sessionId": "conform-session", "path": path})
	if IsMethodNotFound(r) {
		t.NotImplemented("fs/read_text_file is -32601")
		return
	}
	if r == nil {
		return
	}
	if e := r.Err(); e != nil {
		t.Note("refused: error %d", e.Code)
		return
	}
	var v struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(r.Msg.Result, &v)
	if v.Content != text {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result/content", Code: "rule",
			Message: fmt.Sprintf("content %q, the file holds %q", clip(v.Content), clip(text))})
	}
	missing := t.Call(ctx, "fs/read_text_file", map[string]any{"sessionId": "conform-session", "path": filepath.Join(dir, "conform-missing-"+randomHex()+".txt")})
	if missing != nil && missing.Err() == nil {
		t.Fail(Problem{Method: missing.Method, Frame: missing.Seq, Pointer: "/result", Code: "rule", Message: "read a file that does not exist"})
	}
}

func (h *harnHost) fsWrite(ctx context.Context, t *T) {
	dir, ok := workDir(t)
	if !ok {
		return
	}
	text := "written by conform " + randomHex() + "\n"
	path := filepath.Join(dir, "conform-write-"+randomHex()+".txt")
	defer os.Remove(path)
	r := t.Call(ctx, "fs/write_text_file", map[string]any{"sessionId": "conform-session", "path": path, "content": text})
	if IsMethodNotFound(r) {
		t.NotImplemented("fs/write_text_file is -32601")
		return
	}
	if r == nil {
		return
	}
	got, err := os.ReadFile(path)
	if e := r.Err(); e != nil {
		if err == nil {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error", Code: "rule", Message: "refused the write, but wrote the file"})
		}
		t.Note("refused: error %d", e.Code)
		return
	}
	if err != nil || string(got) != text {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result", Code: "rule",
			Message: fmt.Sprintf("answered success, but the file holds %q (%v)", clip(string(got)), err)})
	}
}

// expectSilence checks that nothing answered the notifications just sent:
// the liveness probe's answer comes, and no other reply arrived.
func expectSilence(ctx context.Context, t *T, what string) {
	if !t.Alive(ctx) {
		return
	}
	t.Settle(ctx, 20*time.Millisecond)
	for _, rec := range t.Received() {
		if rec.Msg != nil && (rec.Msg.IsReply() && string(rec.Msg.ID) == "null" || rec.Msg.Method == "" && rec.Msg.Error != nil && !rec.Msg.hasID) {
			t.Fail(Problem{Method: what, Frame: rec.Seq, Pointer: "/id", Code: "answered_notification",
				Message: "a notification was answered: " + clip(string(rec.Raw))})
		}
	}
}

func (h *harnHost) sessionUpdates(ctx context.Context, t *T) {
	s := "conform-session"
	updates := []map[string]any{
		{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "hello",
			"_meta": map[string]any{"harn": map[string]any{"visible_text": "hello", "visible_delta": "hello"}}}},
		{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": "thinking"}},
		{"sessionUpdate": "tool_call", "toolCallId": "conform-t1", "title": "read_file", "kind": "read", "status": "pending",
			"_meta": map[string]any{"harn": map[string]any{"executor": "harn_builtin"}}},
		{"sessionUpdate": "tool_call_update", "toolCallId": "conform-t1", "status": "completed",
			"_meta": map[string]any{"harn": map[string]any{"durationMs": 3}}},
		{"sessionUpdate": "plan", "entries": []map[string]any{{"content": "check", "priority": "high", "status": "pending"}}},
		{"sessionUpdate": "progress", "_meta": map[string]any{"harn": map[string]any{"phase": "conform", "message": "half way", "progress": 1, "total": 2}}},
		{"sessionUpdate": "reminder_emitted", "_meta": map[string]any{"harn": map[string]any{"reminder": map[string]any{"reminderId": "r1", "tags": []string{"conform"}, "body": "b"}}}},
		{"sessionUpdate": "conform_future_variant", "_meta": map[string]any{"harn": map[string]any{"x": 1}}},
	}
	for _, u := range updates {
		if !t.Notify(ctx, "session/update", map[string]any{"sessionId": s, "update": u}) {
			return
		}
	}
	expectSilence(ctx, t, "session/update")
}

func (h *harnHost) notifications(ctx context.Context, t *T) {
	for _, n := range []struct {
		method string
		params any
	}{
		{"agent/idle", map[string]any{"iteration": 3, "backoff_ms": 1000}},
		{"progress", map[string]any{"phase": "conform", "message": "working"}},
		{"log", map[string]any{"level": "info", "message": "conform log line"}},
		{"output", map[string]any{"text": "conform output"}},
		{"_harn/agentEvent", map[string]any{"kind": "conform_future_kind", "runId": "r1"}},
	} {
		if !t.Notify(ctx, n.method, n.params) {
			return
		}
	}
	expectSilence(ctx, t, "notifications")
}

func (h *harnHost) unknownMethod(ctx context.Context, t *T) {
	t.ExpectError(t.Call(ctx, "conform/no_such_method", map[string]any{"x": 1}), CodeMethodNotFound)
}

func (h *harnHost) unknownNotification(ctx context.Context, t *T) {
	if t.Notify(ctx, "conform/no_such_notification", map[string]any{}) {
		expectSilence(ctx, t, "conform/no_such_notification")
	}
}

func (h *harnHost) wrongParams(ctx context.Context, t *T) {
	r := t.Call(ctx, "session/request_permission", map[string]any{"sessionId": 7, "toolCall": "no", "options": 3})
	if IsMethodNotFound(r) {
		t.NotImplemented("session/request_permission is -32601")
		return
	}
	t.ExpectError(r, CodeInvalidParams)
}

// nullIDErrors checks that every reply with a null id is an error of one
// of codes (the answer to a line too broken to carry an id).
func nullIDErrors(t *T, what string, codes ...int) {
	for _, rec := range t.Received() {
		if rec.Msg == nil || !rec.Msg.IsReply() || string(rec.Msg.ID) != "null" {
			continue
		}
		if rec.Msg.Error == nil || !slices.Contains(codes, rec.Msg.Error.Code) {
			t.Fail(Problem{Method: what, Frame: rec.Seq, Pointer: "/error/code", Code: "error_code",
				Message: fmt.Sprintf("answered %s, want an error %s or nothing", clip(string(rec.Raw)), codeList(codes))})
		}
	}
}

func (h *harnHost) badJSON(ctx context.Context, t *T) {
	for _, line := range []string{`{not json`, `{"jsonrpc":"2.0","id":1,"method":`, "\x00\xff"} {
		if !t.SendRaw(ctx, "(bad JSON)", []byte(line)) {
			return
		}
	}
	if t.Alive(ctx) {
		nullIDErrors(t, "(bad JSON)", CodeParseError, CodeInvalidRequest)
	}
}

func (h *harnHost) notARequest(ctx context.Context, t *T) {
	for _, line := range []string{`42`, `"conform"`, `[]`, `null`, `{}`, `{"jsonrpc":"2.0","method":7}`} {
		if !t.SendRaw(ctx, "(not a request)", []byte(line)) {
			return
		}
	}
	if t.Alive(ctx) {
		nullIDErrors(t, "(not a request)", CodeInvalidRequest, CodeParseError)
	}
}

func (h *harnHost) largeLine(ctx context.Context, t *T) {
	pad := strings.Repeat("x", 1<<20)
	r := t.Call(ctx, "conform/no_such_method", map[string]any{"padding": pad})
	if r != nil && !t.ExpectError(r, CodeMethodNotFound) {
		return
	}
	t.Alive(ctx)
}

func (h *harnHost) duplicateID(ctx context.Context, t *T) {
	id := t.NextID()
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"conform/no_such_method","params":{}}`, id))
	if !t.SendRaw(ctx, "conform/no_such_method", line) || !t.SendRaw(ctx, "conform/no_such_method", line) {
		return
	}
	// The classifier pairs the first answer; the second is unmatched by
	// construction.
	t.Tolerate(frames.ProblemUnmatchedID)
	want := fmt.Sprint(id)
	count := func() int {
		n := 0
		for _, r := range t.Received() {
			if r.Msg != nil && r.Msg.IsReply() && string(bytes.TrimSpace(r.Msg.ID)) == want {
				n++
			}
		}
		return n
	}
	if _, ok := t.WaitFor(ctx, func(Received) bool { return count() >= 2 }); !ok {
		t.Failf("conform/no_such_method", 0, "no_answer", "%d answer(s) to two requests with id %d, want 2: %s", count(), id, t.why(ctx))
		return
	}
	if !t.Alive(ctx) {
		return
	}
	t.Settle(ctx, 20*time.Millisecond)
	if n := count(); n != 2 {
		t.Failf("conform/no_such_method", 0, "duplicate_answer", "%d answers to two requests with id %d, want 2", n, id)
	}
}

func (h *harnHost) unknownReply(ctx context.Context, t *T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":987654321,"result":{}}`,
		`{"jsonrpc":"2.0","id":987654322,"error":{"code":-32000,"message":"conform"}}`,
		`{"jsonrpc":"2.0","id":"conform-string-id","result":null}`,
	}
	for _, l := range lines {
		if !t.SendRaw(ctx, "(reply)", []byte(l)) {
			return
		}
	}
	expectSilence(ctx, t, "(reply to an unknown id)")
}

func (h *harnHost) u64ID(ctx context.Context, t *T) {
	const id = "18446744073709551615"
	line := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"conform/no_such_method","params":{}}`)
	if !t.SendRaw(ctx, "conform/no_such_method", line) {
		return
	}
	// Any reply but the probes' answers this request.
	rec, ok := t.WaitFor(ctx, func(rec Received) bool { return rec.Msg != nil && rec.Msg.IsReply() })
	if !ok {
		t.Failf("conform/no_such_method", 0, "no_answer", "no answer to the request with id %s: %s", id, t.why(ctx))
		return
	}
	if got := string(bytes.TrimSpace(rec.Msg.ID)); got != id {
		t.Tolerate(frames.ProblemUnmatchedID)
		t.Fail(Problem{Method: "conform/no_such_method", Frame: rec.Seq, Pointer: "/id", Code: "id",
			Message: fmt.Sprintf("answered with id %s to a request with id %s", got, id)})
	}
}

func (h *harnHost) interleaved(ctx context.Context, t *T) {
	type req struct {
		id     int64
		method string
	}
	var reqs []req
	for _, m := range []string{"host/capabilities", "conform/no_such_method", "host/tools/list", "skills/list", "conform/no_such_method"} {
		id, ok := t.Request(ctx, m, map[string]any{})
		if !ok {
			return
		}
		reqs = append(reqs, req{id, m})
	}
	for _, r := range reqs {
		if t.Await(ctx, r.method, r.id) == nil {
			return
		}
	}
}

func (h *harnHost) endOfInput(ctx context.Context, t *T) {
	id, ok := t.Request(ctx, "conform/no_such_method", map[string]any{})
	if !ok {
		return
	}
	t.ExpectExit()
	t.peer.closeInput()
	if t.Await(ctx, "conform/no_such_method", id) == nil {
		return
	}
	grace := t.Config().Grace
	if !t.peer.waitExit(grace) {
		t.Failf("", 0, "no_exit", "still running %v after the end of its input", grace)
		return
	}
	if code := t.peer.exitCode(); code != 0 {
		t.Failf("", 0, "exit_status", "exited with status %d at the end of its input, want 0: %s", code, t.peer.exitDescription())
	}
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
