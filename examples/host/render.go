package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/lossy"
	"github.com/bridgekit/bridgekit/internal/tty"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// renderer writes session/update notifications, permission decisions and
// the host's own status lines readably to a writer (stderr), with ANSI
// colours when it is a terminal. Text from the agent is stripped of control
// characters, so an agent cannot drive the terminal. Writing happens on a
// goroutine of its own behind a bounded queue: a stderr nobody reads never
// stalls the connection (lines are dropped, and counted, instead).
type renderer struct {
	color bool
	out   *lossy.Writer

	mu     sync.Mutex
	stream string          // the update kind whose chunks are being streamed on the current line
	harn   map[string]bool // Harn extension variants, rendered from _meta.harn
}

// rendererQueue bounds the writes waiting for a slow stderr.
const rendererQueue = 4096

func newRenderer(w io.Writer, color bool) *renderer {
	r := &renderer{color: color, out: lossy.New(w, "stderr", rendererQueue)}
	r.setHarnExtensions(defaultHarnExtensions)
	return r
}

// colorMode decides colour: "always", "never", or "auto", which colours a
// terminal unless NO_COLOR is set or TERM is dumb.
func colorMode(mode string, f *os.File) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		return tty.Is(f) && os.Getenv("NO_COLOR") == "", nil
	}
	return false, fmt.Errorf("-color must be auto, always or never, not %q", mode)
}

// setHarnExtensions sets the session/update variants rendered as Harn
// extensions (initialize's sessionUpdateExtensions).
func (r *renderer) setHarnExtensions(tags []string) {
	m := make(map[string]bool, len(tags))
	for _, t := range tags {
		m[t] = true
	}
	r.mu.Lock()
	r.harn = m
	r.mu.Unlock()
}

// close ends the stream line and writes what is queued within timeout.
func (r *renderer) close(timeout time.Duration) {
	r.endStream()
	_ = r.out.Close(timeout) // stderr: nothing to report a failure on
}

// emitLocked queues b, or drops it when stderr is behind.
func (r *renderer) emitLocked(b []byte) { r.out.Emit(b, true) }

func (r *renderer) endStreamLocked() {
	if r.stream != "" {
		r.stream = ""
		r.emitLocked([]byte("\n"))
	}
}

// endStream ends the line of streamed chunks, if one is open.
func (r *renderer) endStream() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStreamLocked()
}

// line writes one complete line (or lines) of output; "" writes nothing
// (an update with nothing to show makes no line).
func (r *renderer) line(s string) {
	if s == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStreamLocked()
	r.emitLocked([]byte(s + "\n"))
}

// Status writes a line of the host's own.
func (r *renderer) Status(format string, args ...any) {
	r.line(r.paint("host:", cBold) + " " + fmt.Sprintf(format, args...))
}

// ANSI styles.
const (
	cBold    = "1"
	cDim     = "2"
	cItalic  = "3"
	cRed     = "31"
	cGreen   = "32"
	cYellow  = "33"
	cBlue    = "34"
	cMagenta = "35"
	cCyan    = "36"
)

// paint wraps s in the styles when colour is on.
func (r *renderer) paint(s string, styles ...string) string {
	if !r.color || len(styles) == 0 || s == "" {
		return s
	}
	return "\x1b[" + strings.Join(styles, ";") + "m" + s + "\x1b[0m"
}

// Update renders one session/update notification.
func (r *renderer) Update(n *acp.SessionNotification) {
	u := &n.Update
	switch {
	case u.UserMessageChunk != nil:
		r.chunk("user_message_chunk", r.paint("user:", cCyan, cBold), u.UserMessageChunk.Content, nil)
	case u.AgentMessageChunk != nil:
		r.chunk("agent_message_chunk", r.paint("agent:", cBold), u.AgentMessageChunk.Content, nil)
	case u.AgentThoughtChunk != nil:
		r.chunk("agent_thought_chunk", r.paint("thinking:", cDim, cItalic), u.AgentThoughtChunk.Content, []string{cDim, cItalic})
	case u.ToolCall != nil:
		r.line(r.toolCall(u.ToolCall))
	case u.ToolCallUpdate != nil:
		r.line(r.toolCallUpdate(u.ToolCallUpdate))
	case u.Plan != nil:
		r.line(r.plan(u.Plan))
	case u.AvailableCommandsUpdate != nil:
		r.line(r.commands(u.AvailableCommandsUpdate))
	case u.CurrentModeUpdate != nil:
		r.line(r.paint("mode:", cBlue) + " " + clean(string(u.CurrentModeUpdate.CurrentModeID)))
	case u.ConfigOptionUpdate != nil:
		r.line(r.configOptions(u.ConfigOptionUpdate))
	case u.SessionInfoUpdate != nil:
		r.line(r.sessionInfo(u.SessionInfoUpdate))
	case u.UsageUpdate != nil:
		r.line(r.usage(u.UsageUpdate))
	case u.Notice != nil:
		n := u.Notice
		s := r.paint("notice:", cYellow) + " " + clean(string(n.Severity)) + " " + strconv.Quote(cleanLine(n.Title))
		if d, ok := n.Description.Get(); ok {
			s += " " + cleanLine(d)
		}
		r.line(s)
	case u.CompactionUpdate != nil:
		c := u.CompactionUpdate
		s := r.paint("compaction:", cBlue) + " " + clean(string(c.CompactionID)) + " " + clean(string(c.Status))
		if e, ok := c.Error.Get(); ok {
			s += " error " + strconv.Quote(cleanLine(e))
		}
		r.line(s)
	case u.CompactionSummaryChunk != nil:
		c := u.CompactionSummaryChunk
		r.chunk("compaction_summary_chunk", r.paint("compaction "+clean(string(c.CompactionID))+":", cDim), c.Content, []string{cDim})
	default:
		r.line(r.extension(u))
	}
}

// chunk streams a content chunk: chunks of one kind in a row share a line.
func (r *renderer) chunk(kind, label string, c acp.ContentBlock, styles []string) {
	var text string
	if c.Text != nil {
		if text = cleanText(c.Text.Text); text == "" {
			return // an empty chunk: no label without text after it
		}
	} else {
		text = "[" + contentBlock(c) + "]"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.Text == nil { // a line of its own
		r.endStreamLocked()
		r.emitLocked([]byte(label + " " + r.paint(text, styles...) + "\n"))
		return
	}
	if r.stream != kind {
		// A new line starts with text: line breaks before it would leave
		// the label alone on its line.
		if text = strings.TrimLeft(text, "\n"); text == "" {
			return
		}
		r.endStreamLocked()
		r.emitLocked([]byte(label + " "))
		r.stream = kind
	}
	r.emitLocked([]byte(r.paint(text, styles...)))
}

// contentBlock describes a content block other than text.
func contentBlock(c acp.ContentBlock) string {
	switch {
	case c.Text != nil:
		return truncate(cleanLine(c.Text.Text), 120)
	case c.Image != nil:
		uri, _ := c.Image.URI.Get()
		return join("image", clean(c.Image.MIMEType), clean(uri), sizeOf(c.Image.Data))
	case c.Audio != nil:
		return join("audio", clean(c.Audio.MIMEType), sizeOf(c.Audio.Data))
	case c.ResourceLink != nil:
		l := c.ResourceLink
		title, _ := l.Title.Get()
		return join("link", clean(l.Name), clean(title), clean(l.URI))
	case c.Resource != nil:
		switch res := c.Resource.Resource; {
		case res.TextResourceContents != nil:
			t := res.TextResourceContents
			return join("resource", clean(t.URI), strconv.Quote(truncate(strings.TrimSpace(cleanLine(t.Text)), 60)))
		case res.BlobResourceContents != nil:
			b := res.BlobResourceContents
			mime, _ := b.MIMEType.Get()
			return join("resource", clean(b.URI), clean(mime), sizeOf(b.Blob))
		}
		return "resource"
	}
	return join("content", wireTag(c.Unknown, "type"), compact(c.Unknown, 80))
}

// sizeOf is the decoded size of base64 data.
func sizeOf(b64 string) string {
	return strconv.Itoa(len(b64)*3/4-strings.Count(b64[max(len(b64)-2, 0):], "=")) + " bytes"
}

func (r *renderer) status(s string) string {
	s = clean(s)
	switch acp.ToolCallStatus(s) {
	case acp.ToolCallStatusCompleted:
		return r.paint(s, cGreen)
	case acp.ToolCallStatusFailed:
		return r.paint(s, cRed, cBold)
	case acp.ToolCallStatusInProgress:
		return r.paint(s, cYellow)
	}
	return r.paint(s, cDim)
}

func (r *renderer) toolCall(c *acp.ToolCall) string {
	head := r.paint("tool", cYellow, cBold) + " " + clean(string(c.ToolCallID)) + " " + strconv.Quote(cleanLine(c.Title))
	if k, ok := c.Kind.Get(); ok {
		head += " (" + clean(string(k)) + ")"
	}
	if s, ok := c.Status.Get(); ok {
		head += " " + r.status(string(s))
	}
	locs, _ := c.Locations.Get()
	content, _ := c.Content.Get()
	return head + details(locations(locs), toolContent(content), rawSummary("input", c.RawInput), harnToolMeta(c.Meta))
}

// toolCallUpdate shows an update of a tool call, or "" when it carries
// nothing to show but the call's id (a bare "tool ID" line says nothing).
func (r *renderer) toolCallUpdate(c *acp.ToolCallUpdate) string {
	head := r.paint("tool", cYellow, cBold) + " " + clean(string(c.ToolCallID))
	bare := len(head)
	if t, ok := c.Title.Get(); ok {
		head += " " + strconv.Quote(cleanLine(t))
	}
	if k, ok := c.Kind.Get(); ok {
		head += " (" + clean(string(k)) + ")"
	}
	if s, ok := c.Status.Get(); ok {
		head += " " + r.status(string(s))
	}
	locs, _ := c.Locations.Get()
	content, _ := c.Content.Get()
	more := details(locations(locs), toolContent(content), rawSummary("output", c.RawOutput), harnToolMeta(c.Meta))
	if len(head) == bare && more == "" {
		return ""
	}
	return head + more
}

// details joins the non-empty parts after a colon.
func details(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, ", ")
}

func locations(locs []acp.ToolCallLocation) string {
	var out []string
	for _, l := range locs {
		s := clean(l.Path)
		if line, ok := l.Line.Get(); ok {
			s += ":" + strconv.FormatInt(line, 10)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func toolContent(content []acp.ToolCallContent) string {
	var out []string
	for _, c := range content {
		switch {
		case c.Content != nil:
			out = append(out, contentBlock(c.Content.Content))
		case c.Diff != nil:
			old, _ := c.Diff.OldText.Get()
			out = append(out, fmt.Sprintf("diff %s (%d -> %d lines)", clean(c.Diff.Path), lineCount(old), lineCount(c.Diff.NewText)))
		case c.Terminal != nil:
			out = append(out, "terminal "+clean(string(c.Terminal.TerminalID)))
		default:
			out = append(out, join("content", wireTag(c.Unknown, "type")))
		}
	}
	return strings.Join(out, ", ")
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// rawSummary shows raw input or output briefly.
func rawSummary(label string, raw jsontext.Value) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return label + " " + compact(raw, 80)
}

// harnToolMeta shows the Harn tool-lifecycle metadata a user cares about
// (_meta.harn of a tool call), or what is wrong with it.
func harnToolMeta(meta wire.Nullable[jsontext.Value]) string {
	h, err := harn.ToolLifecycleOf(meta)
	if err != nil {
		return "_meta.harn: " + cleanLine(err.Error())
	}
	if h == nil {
		return ""
	}
	var out []string
	if e := h.Executor; e != nil {
		switch {
		case e.String != nil:
			out = append(out, "via "+clean(string(*e.String)))
		case e.Object != nil && e.Object.MCPServer != nil:
			out = append(out, "via mcp:"+clean(e.Object.MCPServer.ServerName))
		case e.Object != nil:
			out = append(out, "via "+compact(e.Object.Unknown, 40))
		}
	}
	if h.DurationMS != nil {
		out = append(out, strconv.FormatFloat(*h.DurationMS, 'f', -1, 64)+"ms")
	}
	if h.MutationStatus != nil {
		out = append(out, "mutation "+clean(string(*h.MutationStatus)))
	}
	if len(h.ChangedPaths) > 0 {
		out = append(out, "changed "+clean(strings.Join(h.ChangedPaths, " ")))
	}
	if h.ErrorCategory != nil {
		out = append(out, "error "+clean(string(*h.ErrorCategory)))
	}
	if h.Error != nil {
		out = append(out, strconv.Quote(truncate(cleanLine(*h.Error), 80)))
	}
	if h.Parsing != nil && *h.Parsing {
		out = append(out, "parsing")
	}
	return strings.Join(out, ", ")
}

func (r *renderer) plan(p *acp.Plan) string {
	var b strings.Builder
	b.WriteString(r.paint("plan:", cBlue, cBold))
	if len(p.Entries) == 0 {
		b.WriteString(" (empty)")
	}
	for _, e := range p.Entries {
		mark := "[ ]"
		switch e.Status {
		case acp.PlanEntryStatusCompleted:
			mark = r.paint("[x]", cGreen)
		case acp.PlanEntryStatusInProgress:
			mark = r.paint("[~]", cYellow)
		}
		fmt.Fprintf(&b, "\n  %s %s (%s)", mark, cleanLine(e.Content), clean(string(e.Priority)))
	}
	return b.String()
}

func (r *renderer) commands(c *acp.AvailableCommandsUpdate) string {
	var out []string
	for _, cmd := range c.AvailableCommands {
		s := "/" + clean(cmd.Name)
		if in, ok := cmd.Input.Get(); ok && in.Unstructured != nil {
			s += " <" + cleanLine(in.Unstructured.Hint) + ">"
		}
		if cmd.Description != "" {
			s += " " + cleanLine(cmd.Description)
		}
		out = append(out, s)
	}
	return r.paint("commands:", cBlue) + " " + strings.Join(out, "; ")
}

func (r *renderer) configOptions(c *acp.ConfigOptionUpdate) string {
	var out []string
	for _, o := range c.ConfigOptions {
		switch {
		case o.Select != nil:
			out = append(out, fmt.Sprintf("%s = %s", cleanLine(o.Name), clean(string(o.Select.CurrentValue))))
		default:
			out = append(out, cleanLine(o.Name)+" ("+wireTag(o.Unknown, "type")+")")
		}
	}
	return r.paint("config:", cBlue) + " " + strings.Join(out, "; ")
}

// usage renders ACP v1's usage_update: the context window's use, and the
// session's cost when the agent reports one.
func (r *renderer) usage(u *acp.UsageUpdate) string {
	s := r.paint("usage:", cBlue) + " " + strconv.FormatInt(u.Used, 10) + "/" + strconv.FormatInt(u.Size, 10) + " tokens"
	if c, ok := u.Cost.Get(); ok {
		s += " cost " + strconv.FormatFloat(c.Amount, 'f', -1, 64) + " " + clean(c.Currency)
	}
	return s
}

func (r *renderer) sessionInfo(s *acp.SessionInfoUpdate) string {
	var out []string
	if t, ok := s.Title.Get(); ok {
		out = append(out, "title "+strconv.Quote(cleanLine(t)))
	} else if s.Title.IsNull() {
		out = append(out, "title cleared")
	}
	if t, ok := s.UpdatedAt.Get(); ok {
		out = append(out, "updated "+clean(t))
	}
	if len(out) == 0 {
		return "" // only _meta, or members this version does not show
	}
	return r.paint("session:", cBlue) + " " + strings.Join(out, ", ")
}

// defaultHarnExtensions are the Harn session/update extension variants of
// the seed, rendered as such until initialize advertises a list of its own
// (the seed: key rendering off the list, not a local allow-list).
var defaultHarnExtensions = []string{
	"artifact", "available_commands_update", "fs_watch", "handoff", "hitl_request", "hitl_resolved", "log",
	"progress", "reminder_emitted", "skill_activated", "skill_deactivated", "skill_narrow", "skill_scope_tools",
	"tool_search_query", "tool_search_result", "transcript_compacted", "transcript_projected", "worker_update",
	"user_message",
}

// fieldsOf reads an update's members from its encoding: the members of
// _meta.harn, and the other members at its root (for variants rendered
// generically).
func fieldsOf(u *acp.SessionUpdate) (harn, root map[string]jsontext.Value) {
	raw, err := json.Marshal(u)
	if err != nil {
		return nil, nil
	}
	_ = json.Unmarshal(raw, &root)
	if m, ok := root["_meta"]; ok {
		var meta struct {
			Harn map[string]jsontext.Value `json:"harn"`
		}
		_ = json.Unmarshal(m, &meta)
		harn = meta.Harn
	}
	delete(root, "_meta")
	delete(root, "sessionUpdate")
	return harn, root
}

// extension renders a variant ACP does not define. One of Harn's, typed
// by gen/harn (harn.UpdateOf), is rendered from its typed fields; the label
// says "harn" when the runtime advertised it as a Harn extension
// (initialize's list, not a local allow-list) and "update" otherwise.
// Unknown variants, and Harn's with nothing typed to show, are rendered
// generically from their members (those of _meta.harn when there are any).
func (r *renderer) extension(u *acp.SessionUpdate) string {
	tag := u.Tag()
	r.mu.Lock()
	advertised := r.harn[tag]
	r.mu.Unlock()
	h, err := harn.UpdateOf(*u)
	typed := err == nil && h.Unknown == nil && h.Tag() != ""
	label := r.paint("update "+clean(tag)+":", cDim)
	if advertised && typed {
		label = r.paint("harn "+clean(tag)+":", cMagenta)
	}
	if typed {
		if text, ok := r.harnText(&h); ok {
			return label + " " + strings.TrimSpace(text)
		}
	}
	hf, root := fieldsOf(u)
	fields := root
	if len(hf) > 0 {
		fields = hf
	}
	return label + " " + keyValues(fields, nil)
}

// Progress renders a top-level progress notification.
func (r *renderer) Progress(p *harn.Progress) {
	r.line(r.paint("bridge progress:", cMagenta) + " " + progressText(p))
}

// Log renders a top-level log notification.
func (r *renderer) Log(l *harn.Log) {
	r.line(r.paint("bridge log:", cMagenta) + " " + logText(l))
}

// Output renders text a script printed (the output notification).
func (r *renderer) Output(o *harn.OutputParams) {
	r.line(r.paint("output:", cDim) + " " + cleanLine(o.Text))
}

// Idle renders agent/idle: the daemon waits for host activity.
func (r *renderer) Idle(p *harn.AgentIdleParams) {
	var text string
	switch {
	case p.IdleBackoff != nil:
		b := p.IdleBackoff
		text = fmt.Sprintf("iteration %d, backoff %dms", b.Iteration, b.BackoffMS)
		if path, ok := b.PersistPath.Get(); ok {
			text += ", persist " + clean(path)
		}
		if len(b.WatchPaths) > 0 {
			text += ", watching " + cleanLine(strings.Join(b.WatchPaths, " "))
		}
	case p.IdleWait != nil:
		text = fmt.Sprintf("session %s, timeout %dms", clean(p.IdleWait.SessionID), p.IdleWait.TimeoutMS)
	}
	r.line(r.paint("idle:", cDim) + " " + text)
}

// AgentEvent renders a _harn/agentEvent by its kind and members.
func (r *renderer) AgentEvent(e *harn.AgentEvent) {
	raw, err := json.Marshal(e)
	var fields map[string]jsontext.Value
	if err == nil {
		_ = json.Unmarshal(raw, &fields)
	}
	r.line(r.paint("event "+clean(e.Tag())+":", cMagenta) + " " + keyValues(fields, []string{"sessionId", "kind"}))
}

// keyValues renders members as key=value pairs in name order.
func keyValues(m map[string]jsontext.Value, skip []string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if slices.Contains(skip, k) {
			continue
		}
		out = append(out, clean(k)+"="+truncate(scalarText(m[k]), 80))
	}
	return strings.Join(out, " ")
}

// scalarText shows a raw value: strings unquoted, arrays of strings joined,
// anything else as compact JSON; control characters removed.
func scalarText(raw jsontext.Value) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return cleanLine(s)
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return cleanLine(strings.Join(list, ", "))
	}
	return compact(raw, 120)
}

// compact shows raw JSON on one line, at most n runes.
func compact(raw jsontext.Value, n int) string {
	v := jsontext.Value(bytes.Clone(raw))
	if v.Compact() != nil {
		return "(invalid JSON)"
	}
	return truncate(cleanLine(string(v)), n)
}

// wireTag reads a union's tag member from raw JSON.
func wireTag(raw jsontext.Value, name string) string {
	var m map[string]jsontext.Value
	_ = json.Unmarshal(raw, &m)
	return scalarText(m[name])
}

// join joins the non-empty parts with spaces.
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// truncate shortens s to n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// clean removes every control character (escape sequences included) from a
// string that must stay on one line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
}

// cleanLine is clean with line breaks and tabs shown as spaces.
func cleanLine(s string) string {
	return clean(strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ").Replace(s))
}

// cleanText keeps line breaks and tabs of streamed text, and removes every
// other control character.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
}
