package permission

import (
	"container/list"
	"sync"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// Defaults of TrackerOptions.
const (
	DefaultTrackedCalls = 1024
	DefaultTrackedBytes = 8 << 20
)

// TrackerOptions bounds a Tracker. The zero value uses the defaults.
type TrackerOptions struct {
	// MaxCalls is how many unfinished tool calls are kept, over every
	// session (default DefaultTrackedCalls); past it the least recently
	// updated is forgotten.
	MaxCalls int
	// MaxBytes bounds the bytes kept (ids, titles, paths, raw inputs),
	// over every session (default DefaultTrackedBytes). A call whose own
	// state exceeds a quarter of it keeps only the mark that it did: its
	// permission request is then denied (Call.Overflow).
	MaxBytes int
}

// A Tracker keeps the state of the tool calls in flight, merged by
// toolCallId from the tool_call and tool_call_update session/update
// notifications, so that a permission decision sees the whole call and
// not only what the request repeats of it (claude-code-acp, for one,
// sends its request without the kind its tool_call carried). Feed it
// every session/update (Observe) and build decisions' input with Call. It
// forgets a call once it is completed or failed, and is bounded in calls
// and bytes. It is safe for concurrent use; the zero value is not: use
// NewTracker.
type Tracker struct {
	opts TrackerOptions

	mu    sync.Mutex
	calls map[callKey]*list.Element // of *tracked
	lru   *list.List                // least recently updated first
	bytes int
}

type callKey struct {
	session acp.SessionID
	id      acp.ToolCallID
}

type tracked struct {
	key      callKey
	kind     acp.ToolKind
	title    string
	tool     string
	locs     []string
	diffs    []string
	raws     []jsontext.Value
	size     int
	overflow bool
}

// NewTracker returns an empty Tracker; nil opts uses the defaults.
func NewTracker(opts *TrackerOptions) *Tracker {
	t := &Tracker{calls: map[callKey]*list.Element{}, lru: list.New()}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.MaxCalls <= 0 {
		t.opts.MaxCalls = DefaultTrackedCalls
	}
	if t.opts.MaxBytes <= 0 {
		t.opts.MaxBytes = DefaultTrackedBytes
	}
	return t
}

// Observe takes one session/update notification; only tool_call and
// tool_call_update change anything. Call it from the
// acp.ClientHandlers.SessionUpdate handler, before the notification is
// rendered.
func (t *Tracker) Observe(n *acp.SessionNotification) {
	if n == nil {
		return
	}
	if tc := n.Update.ToolCall; tc != nil {
		// The members a tool_call shares with its updates have one type
		// (spec/overrides.json represent), so they carry over as they are.
		u := acp.ToolCallUpdate{ToolCallID: tc.ToolCallID, Meta: tc.Meta, RawInput: tc.RawInput, Title: someString(tc.Title),
			Kind: tc.Kind, Status: tc.Status, Locations: tc.Locations, Content: tc.Content}
		t.update(n.SessionID, &u)
		return
	}
	if u := n.Update.ToolCallUpdate; u != nil {
		t.update(n.SessionID, u)
	}
}

func someString(s string) (n wire.Nullable[string]) {
	if s != "" {
		n = wire.Some(s)
	}
	return n
}

func (t *Tracker) update(session acp.SessionID, u *acp.ToolCallUpdate) {
	key := callKey{session, u.ToolCallID}
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := u.Status.Get(); ok && (st == acp.ToolCallStatusCompleted || st == acp.ToolCallStatusFailed) {
		t.removeLocked(key)
		return
	}
	var e *tracked
	if el, ok := t.calls[key]; ok {
		e = el.Value.(*tracked)
		t.lru.MoveToBack(el)
	} else {
		e = &tracked{key: key, size: len(session) + len(u.ToolCallID) + 64}
		t.calls[key] = t.lru.PushBack(e)
		t.bytes += e.size
	}
	grow := 0
	if k, ok := u.Kind.Get(); ok {
		e.kind = k
	}
	if title, ok := u.Title.Get(); ok {
		grow += len(title) - len(e.title)
		e.title = title
	}
	if name := harnToolName(u); name != "" {
		grow += len(name) - len(e.tool)
		e.tool = name
	}
	if !e.overflow {
		locs, _ := u.Locations.Get()
		for _, l := range locs {
			e.locs = append(e.locs, l.Path)
			grow += len(l.Path) + 16
		}
		content, _ := u.Content.Get()
		for _, c := range content {
			if c.Diff != nil {
				e.diffs = append(e.diffs, c.Diff.Path)
				grow += len(c.Diff.Path) + 16
			}
		}
		if len(u.RawInput) > 0 {
			e.raws = append(e.raws, u.RawInput)
			grow += len(u.RawInput) + 24
		}
	}
	e.size += grow
	t.bytes += grow
	if e.size > t.opts.MaxBytes/4 && !e.overflow {
		t.bytes -= e.size
		e.locs, e.diffs, e.raws, e.title, e.tool = nil, nil, nil, "", ""
		e.overflow = true
		e.size = len(session) + len(u.ToolCallID) + 64
		t.bytes += e.size
	}
	for (t.lru.Len() > t.opts.MaxCalls || t.bytes > t.opts.MaxBytes) && t.lru.Len() > 0 {
		oldest := t.lru.Front().Value.(*tracked)
		if oldest == e && t.lru.Len() == 1 {
			break
		}
		t.removeLocked(oldest.key)
	}
}

func (t *Tracker) removeLocked(key callKey) {
	if el, ok := t.calls[key]; ok {
		t.bytes -= el.Value.(*tracked).size
		t.lru.Remove(el)
		delete(t.calls, key)
	}
}

// Forget drops every call of session (at its end).
func (t *Tracker) Forget(session acp.SessionID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key := range t.calls {
		if key.session == session {
			t.removeLocked(key)
		}
	}
}

// Len returns how many calls are kept, and their bytes.
func (t *Tracker) Len() (calls, bytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len(), t.bytes
}

// harnToolName is the tool name a Harn agent puts under _meta.harn, or ""
// (a plain agent's update, or a _meta.harn of another shape).
func harnToolName(u *acp.ToolCallUpdate) string {
	if h, err := harn.ToolLifecycleOf(u.Meta); err == nil && h != nil && h.ToolName != nil {
		return *h.ToolName
	}
	return ""
}

// NewCall builds the Call a Policy decides for req: req's tool call over
// what t kept of it (t may be nil), with at most maxPaths path-like
// strings (0 means DefaultMaxPaths). It takes time linear in the size of
// the request and the tracked state.
func NewCall(t *Tracker, req *acp.RequestPermissionRequest, maxPaths int) *Call {
	c := &Call{Request: req}
	col := newCollector(maxPaths)
	if req == nil {
		c.Overflow = true
		return c
	}
	tc := &req.ToolCall
	c.SessionID, c.ToolCallID = req.SessionID, tc.ToolCallID
	if t != nil {
		t.mu.Lock()
		if el, ok := t.calls[callKey{req.SessionID, tc.ToolCallID}]; ok {
			e := el.Value.(*tracked)
			c.Kind, c.Title, c.Tool, c.Overflow = e.kind, e.title, e.tool, e.overflow
			for _, p := range e.locs {
				col.declare(p)
			}
			for _, p := range e.diffs {
				col.declare(p)
			}
			for _, raw := range e.raws {
				col.rawInput(raw)
			}
		}
		t.mu.Unlock()
	}
	if k, ok := tc.Kind.Get(); ok {
		c.Kind = k
	}
	if title, ok := tc.Title.Get(); ok {
		c.Title = title
	}
	if name := harnToolName(tc); name != "" {
		c.Tool = name
	}
	if c.Tool == "" {
		c.Tool = c.Title
	}
	locs, _ := tc.Locations.Get()
	for _, l := range locs {
		col.declare(l.Path)
	}
	content, _ := tc.Content.Get()
	for _, ct := range content {
		if ct.Diff != nil {
			col.declare(ct.Diff.Path)
		}
	}
	col.rawInput(tc.RawInput)
	c.Paths, c.Mentions = col.paths, col.mentions
	c.Overflow = c.Overflow || col.overflow
	c.Commands, c.Command = col.commands, col.last
	return c
}
