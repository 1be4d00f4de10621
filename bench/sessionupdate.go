package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// session/update decoding: the params of a session/update notification
// (sessionId and the update union) decoded into generated ACP types, by
// bridgekit's gen/acp (go-json-experiment, one pass, tag-dispatched) and by
// acp-go-sdk's types_gen.go (encoding/json, which reads the document into a
// map to find the tag, then decodes it again into the variant), on the
// same documents.

// UpdateDoc is one session/update notification's params.
type UpdateDoc struct {
	Name string // metric prefix
	What string // what the document holds, for the report
	JSON []byte
	// BridgekitOnly documents are Harn's: acp-go-sdk has no type for them
	// (it reads them, without an error, as another variant), so only
	// bridgekit's decode is measured, as a Harn host decodes them: gen/acp
	// keeps the update verbatim (ACP does not know its tag) and gen/harn
	// types it (DecodeUpdateHarn).
	BridgekitOnly bool
}

// UpdateDocs are representative updates of a prompt turn: a streamed
// message chunk, a tool call with a location and raw input, a tool call
// update carrying text content and a diff, a plan of four entries, and
// Harn's progress update (its fields under _meta.harn); then frames the
// agents of today sent (RecordedUpdateDocs).
func UpdateDocs() []UpdateDoc {
	docs := []UpdateDoc{
		{"chunk", "agent_message_chunk", []byte(`{"sessionId":"sess_6f1c2a9e4b7d","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",` +
			`"text":"I'll start by reading the service configuration to see how the HTTP port and the database pool are wired."}}}`), false},
		{"toolcall", "tool_call with a location and raw input", []byte(`{"sessionId":"sess_6f1c2a9e4b7d","update":{"sessionUpdate":"tool_call","toolCallId":"call_0001",` +
			`"title":"Reading config/app.yaml","kind":"read","status":"pending","locations":[{"path":"/home/dev/service/config/app.yaml","line":1}],` +
			`"rawInput":{"path":"/home/dev/service/config/app.yaml","limit":200}}}`), false},
		{"toolupdate", "tool_call_update with text content and a diff", []byte(`{"sessionId":"sess_6f1c2a9e4b7d","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_0002",` +
			`"status":"completed","content":[{"type":"content","content":{"type":"text","text":"Updated the listen port and raised the pool size; ` +
			`the tests for the config loader pass."}},{"type":"diff","path":"/home/dev/service/config/app.yaml",` +
			`"oldText":"server:\n  port: 3000\ndb:\n  pool: 5\n","newText":"server:\n  port: 8080\ndb:\n  pool: 20\n"}],` +
			`"locations":[{"path":"/home/dev/service/config/app.yaml","line":2}],"rawOutput":{"bytesWritten":44}}}`), false},
		{"plan", "plan of four entries", []byte(`{"sessionId":"sess_6f1c2a9e4b7d","update":{"sessionUpdate":"plan","entries":[` +
			`{"content":"Read the service configuration","priority":"high","status":"completed"},` +
			`{"content":"Change the listen port to 8080","priority":"high","status":"completed"},` +
			`{"content":"Raise the database pool size","priority":"medium","status":"in_progress"},` +
			`{"content":"Run the config loader's tests","priority":"low","status":"pending"}]}}`), false},
		{"harnprogress", "Harn's progress, fields under _meta.harn", []byte(`{"sessionId":"sess_6f1c2a9e4b7d","update":{"sessionUpdate":"progress","_meta":{"harn":{` +
			`"phase":"indexing","message":"Indexing the workspace for symbol search","progress":128,"total":512,` +
			`"data":{"root":"/home/dev/service","skipped":["node_modules",".git"]}}}}}`), true},
	}
	return append(docs, RecordedUpdateDocs()...)
}

// recordedUpdates are session/update frames of today's agents, from
// their recorded turns through the host (testdata/acp/traffic): the
// recording and the frame's sequence number.
var recordedUpdates = []struct {
	name, what, recording string
	seq                   int
}{
	{"rec-qwen-chunk", "qwen 0.24.4: agent_message_chunk", "qwen-0.24.4", 9},
	{"rec-codex-diff", "codex-acp 2.6.0: tool_call with a diff (its _meta in the diff)", "codex-acp-2.6.0", 22},
	{"rec-gemini-diff", "gemini 0.61.0: tool_call_update with a diff, a location and the kind", "gemini-0.61.0", 22},
	{"rec-opencode-output", "opencode 1.18.33: tool_call_update with text content and a large raw output", "opencode-1.18.33", 13},
	{"rec-claude-write", "claude-agent-acp 0.101.0: tool_call_update with _meta first, raw input and a diff", "claude-agent-acp-0.101.0", 22},
}

// RecordedUpdateDocs are recordedUpdates' params, read from the
// repository's testdata; it panics when a frame is missing (the
// recordings are committed with the module that reads them).
func RecordedUpdateDocs() []UpdateDoc {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "acp", "traffic")
	var out []UpdateDoc
	for _, r := range recordedUpdates {
		data, err := os.ReadFile(filepath.Join(dir, r.recording, "turn.jsonl"))
		if err != nil {
			panic(err)
		}
		var params []byte
		for line := range strings.SplitSeq(string(data), "\n") {
			var f struct {
				Seq  int    `json:"seq"`
				Line string `json:"line"`
			}
			if line == "" || json.Unmarshal([]byte(line), &f) != nil || f.Seq != r.seq {
				continue
			}
			var frame struct {
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal([]byte(f.Line), &frame); err != nil {
				panic(err)
			}
			params = frame.Params
		}
		if params == nil {
			panic(fmt.Sprintf("bench: no frame %d in %s", r.seq, r.recording))
		}
		out = append(out, UpdateDoc{Name: r.name, What: r.what, JSON: params})
	}
	return out
}

// DecodeUpdateBridgekit decodes params as a bridgekit handler does
// (rpc.DecodeParams into gen/acp's SessionNotification).
func DecodeUpdateBridgekit(params []byte, n *acp.SessionNotification) error {
	return rpc.DecodeParams(params, n)
}

// DecodeUpdateHarn decodes params as a Harn host does: into gen/acp's
// SessionNotification, then the update, whose tag ACP does not know, into
// gen/harn's variant (harn.UpdateOf).
func DecodeUpdateHarn(params []byte, n *acp.SessionNotification) (harn.SessionUpdate, error) {
	if err := rpc.DecodeParams(params, n); err != nil {
		return harn.SessionUpdate{}, err
	}
	return harn.UpdateOf(n.Update)
}

// decodeBridgekit decodes d as bridgekit's users do: Harn's documents
// through gen/harn too.
func (d UpdateDoc) decodeBridgekit(n *acp.SessionNotification) error {
	if d.BridgekitOnly {
		_, err := DecodeUpdateHarn(d.JSON, n)
		return err
	}
	return DecodeUpdateBridgekit(d.JSON, n)
}

// DecodeUpdateACPSDK decodes params as acp-go-sdk's connection does
// (encoding/json into its SessionNotification).
func DecodeUpdateACPSDK(params []byte, n *acpsdk.SessionNotification) error {
	return json.Unmarshal(params, n)
}

// The views below spell out what a decoder read, member by member, in the
// same words for both libraries, so that two decoders agree only when
// they read the same values (not merely the same variant).

// canonJSON renders a JSON value with sorted keys (encoding/json's map
// order), so that raw members compare by content.
func canonJSON(b []byte) (string, error) {
	if len(b) == 0 {
		return "", nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	out, err := json.Marshal(v)
	return string(out), err
}

// SameJSON reports whether a and b are the same JSON value (member order
// and number spelling aside).
func SameJSON(a, b []byte) (bool, error) {
	ca, err := canonJSON(a)
	if err != nil {
		return false, err
	}
	cb, err := canonJSON(b)
	if err != nil {
		return false, err
	}
	return ca == cb, nil
}

// view is what a decoder read, a line a value.
type view []string

func (v *view) add(format string, args ...any) { *v = append(*v, fmt.Sprintf(format, args...)) }

// toolView is a tool_call or tool_call_update as either library read it.
type toolView struct {
	variant, id         string
	title, kind, status *string
	locations, content  []string
	rawInput, rawOutput []byte
}

func (t *toolView) addTo(v *view) error {
	v.add("%s id=%s", t.variant, t.id)
	for _, m := range []struct {
		name string
		val  *string
	}{{"title", t.title}, {"kind", t.kind}, {"status", t.status}} {
		if m.val != nil {
			v.add("%s=%q", m.name, *m.val)
		}
	}
	*v = append(append(*v, t.locations...), t.content...)
	for _, m := range []struct {
		name string
		raw  []byte
	}{{"rawInput", t.rawInput}, {"rawOutput", t.rawOutput}} {
		c, err := canonJSON(m.raw)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if c != "" && c != "null" {
			v.add("%s=%s", m.name, c)
		}
	}
	return nil
}

// with is v followed by t's lines, if there is a t.
func (v view) with(t *toolView) (view, error) {
	if t == nil {
		return v, nil
	}
	err := t.addTo(&v)
	return v, err
}

func location(path string, line *int64) string {
	if line == nil {
		return "location=" + path
	}
	return fmt.Sprintf("location=%s:%d", path, *line)
}

func textContent(text *string) (string, error) {
	if text == nil {
		return "", errors.New("content block is not text")
	}
	return fmt.Sprintf("content text=%q", *text), nil
}

func diffContent(path string, old *string, newText string) string {
	if old == nil {
		return fmt.Sprintf("content diff %s new=%q", path, newText)
	}
	return fmt.Sprintf("content diff %s old=%q new=%q", path, *old, newText)
}

var errNotCompared = errors.New("tool call content is neither content nor diff")

// asString is a string-kinded value as *string (nil for nil).
func asString[T ~string](p *T) *string {
	if p == nil {
		return nil
	}
	s := string(*p)
	return &s
}

// got is a wire.Nullable's value as a pointer (nil when absent or null).
func got[T any](v T, ok bool) *T {
	if !ok {
		return nil
	}
	return &v
}

// viewBridgekit is what gen/acp read.
func viewBridgekit(n *acp.SessionNotification) (view, error) {
	v := view{"session=" + string(n.SessionID)}
	u := &n.Update
	var t *toolView
	switch {
	case u.AgentMessageChunk != nil:
		c, err := bkText(u.AgentMessageChunk.Content)
		if err != nil {
			return nil, err
		}
		v.add("agent_message_chunk %s", c)
	case u.ToolCall != nil:
		c := u.ToolCall
		t = &toolView{variant: "tool_call", id: string(c.ToolCallID), title: &c.Title, kind: asString(got(c.Kind.Get())), status: asString(got(c.Status.Get())),
			rawInput: c.RawInput, rawOutput: c.RawOutput}
		locs, _ := c.Locations.Get()
		content, _ := c.Content.Get()
		if err := t.bkLists(locs, content); err != nil {
			return nil, err
		}
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		t = &toolView{variant: "tool_call_update", id: string(c.ToolCallID), title: got(c.Title.Get()),
			kind: asString(got(c.Kind.Get())), status: asString(got(c.Status.Get())), rawInput: c.RawInput, rawOutput: c.RawOutput}
		locs, _ := c.Locations.Get()
		content, _ := c.Content.Get()
		if err := t.bkLists(locs, content); err != nil {
			return nil, err
		}
	case u.Plan != nil:
		v.add("plan")
		for _, e := range u.Plan.Entries {
			v.add("entry %q %s %s", e.Content, e.Priority, e.Status)
		}
	default:
		return nil, errors.New("bridgekit read no compared variant")
	}
	return v.with(t)
}

func bkText(b acp.ContentBlock) (string, error) {
	if b.Text == nil {
		return textContent(nil)
	}
	return textContent(&b.Text.Text)
}

func (t *toolView) bkLists(locs []acp.ToolCallLocation, content []acp.ToolCallContent) error {
	for _, l := range locs {
		t.locations = append(t.locations, location(l.Path, got(l.Line.Get())))
	}
	for _, c := range content {
		switch {
		case c.Content != nil:
			s, err := bkText(c.Content.Content)
			if err != nil {
				return err
			}
			t.content = append(t.content, s)
		case c.Diff != nil:
			t.content = append(t.content, diffContent(c.Diff.Path, got(c.Diff.OldText.Get()), c.Diff.NewText))
		default:
			return errNotCompared
		}
	}
	return nil
}

// viewACPSDK is what acp-go-sdk read, in viewBridgekit's words.
func viewACPSDK(n *acpsdk.SessionNotification) (view, error) {
	v := view{"session=" + string(n.SessionId)}
	u := &n.Update
	var t *toolView
	nonEmpty := func(s string) *string { return got(s, s != "") }
	switch {
	case u.AgentMessageChunk != nil:
		c, err := sdkText(u.AgentMessageChunk.Content)
		if err != nil {
			return nil, err
		}
		v.add("agent_message_chunk %s", c)
	case u.ToolCall != nil:
		c := u.ToolCall
		t = &toolView{variant: "tool_call", id: string(c.ToolCallId), title: &c.Title, kind: nonEmpty(string(c.Kind)), status: nonEmpty(string(c.Status))}
		if err := t.sdkMembers(c.Locations, c.Content, c.RawInput, c.RawOutput); err != nil {
			return nil, err
		}
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		t = &toolView{variant: "tool_call_update", id: string(c.ToolCallId), title: c.Title, kind: asString(c.Kind), status: asString(c.Status)}
		if err := t.sdkMembers(c.Locations, c.Content, c.RawInput, c.RawOutput); err != nil {
			return nil, err
		}
	case u.Plan != nil:
		v.add("plan")
		for _, e := range u.Plan.Entries {
			v.add("entry %q %s %s", e.Content, e.Priority, e.Status)
		}
	default:
		return nil, errors.New("acp-go-sdk read no compared variant")
	}
	return v.with(t)
}

func sdkText(b acpsdk.ContentBlock) (string, error) {
	if b.Text == nil {
		return textContent(nil)
	}
	return textContent(&b.Text.Text)
}

func (t *toolView) sdkMembers(locs []acpsdk.ToolCallLocation, content []acpsdk.ToolCallContent, rawInput, rawOutput any) error {
	for _, l := range locs {
		var line *int64
		if l.Line != nil {
			line = new(int64(*l.Line))
		}
		t.locations = append(t.locations, location(l.Path, line))
	}
	for _, c := range content {
		switch {
		case c.Content != nil:
			s, err := sdkText(c.Content.Content)
			if err != nil {
				return err
			}
			t.content = append(t.content, s)
		case c.Diff != nil:
			t.content = append(t.content, diffContent(c.Diff.Path, c.Diff.OldText, c.Diff.NewText))
		default:
			return errNotCompared
		}
	}
	var err error
	if t.rawInput, err = json.Marshal(rawInput); err != nil {
		return err
	}
	t.rawOutput, err = json.Marshal(rawOutput)
	return err
}

// CompareUpdateDecodes reports where bridgekit's and acp-go-sdk's decoded
// values differ (nil when they read the same values).
func CompareUpdateDecodes(b *acp.SessionNotification, s *acpsdk.SessionNotification) error {
	vb, err := viewBridgekit(b)
	if err != nil {
		return err
	}
	vs, err := viewACPSDK(s)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(vb, vs) {
		return fmt.Errorf("decoders disagree:\nbridgekit:  %s\nacp-go-sdk: %s", strings.Join(vb, " | "), strings.Join(vs, " | "))
	}
	return nil
}

// checkHarnProgress compares gen/harn's typed progress update with the
// document's _meta.harn, read generically.
func checkHarnProgress(doc []byte) error {
	u, err := DecodeUpdateHarn(doc, new(acp.SessionNotification))
	if err != nil {
		return err
	}
	p := u.Progress
	if p == nil {
		return errors.New("not read as progress")
	}
	var generic struct {
		Update struct {
			Meta struct {
				Harn struct {
					Phase, Message  string
					Progress, Total *int64
					Data            json.RawMessage
				} `json:"harn"`
			} `json:"_meta"`
		} `json:"update"`
	}
	if err := json.Unmarshal(doc, &generic); err != nil {
		return err
	}
	want, h := generic.Update.Meta.Harn, p.Meta.Harn
	data, err := SameJSON(want.Data, h.Data)
	if err != nil {
		return err
	}
	if h.Phase != want.Phase || h.Message != want.Message || !reflect.DeepEqual(h.Progress, want.Progress) ||
		!reflect.DeepEqual(h.Total, want.Total) || !data {
		return fmt.Errorf("_meta.harn read as %+v (data %s), want %+v (data %s)", h, h.Data, want, want.Data)
	}
	return nil
}

// CheckUpdateDecoder decodes one document with bridgekit and, unless it
// is Harn's, with acp-go-sdk, and fails when they read different values
// or when bridgekit's value, encoded again, is not the document.
func CheckUpdateDecoder(d UpdateDoc) error {
	var b acp.SessionNotification
	if err := DecodeUpdateBridgekit(d.JSON, &b); err != nil {
		return fmt.Errorf("%s: bridgekit: %w", d.Name, err)
	}
	out, err := jsonv2.Marshal(&b)
	if err != nil {
		return fmt.Errorf("%s: bridgekit: encoding again: %w", d.Name, err)
	}
	if same, err := SameJSON(d.JSON, out); err != nil || !same {
		return fmt.Errorf("%s: bridgekit: encoded again as %s (%v)", d.Name, out, err)
	}
	if d.BridgekitOnly {
		if err := checkHarnProgress(d.JSON); err != nil {
			return fmt.Errorf("%s: bridgekit: %w", d.Name, err)
		}
		return nil
	}
	var s acpsdk.SessionNotification
	if err := DecodeUpdateACPSDK(d.JSON, &s); err != nil {
		return fmt.Errorf("%s: acp-go-sdk: %w", d.Name, err)
	}
	if err := CompareUpdateDecodes(&b, &s); err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	return nil
}

// CheckUpdateDecoders runs CheckUpdateDecoder on every document.
func CheckUpdateDecoders() error {
	for _, d := range UpdateDocs() {
		if err := CheckUpdateDecoder(d); err != nil {
			return err
		}
	}
	return nil
}

// codecSessionUpdate measures both decoders on every document: metrics
// <doc>_bk_* and <doc>_acp_* (ns, allocs, bytes per decode); Harn's
// documents only <doc>_bk_*.
func codecSessionUpdate(_ Runtime, p Profile) (Metrics, error) {
	if err := CheckUpdateDecoders(); err != nil {
		return nil, err
	}
	m := Metrics{}
	d := p.pick(500*time.Millisecond, 150*time.Millisecond)
	put := func(prefix string, s OpStats) {
		m[prefix+"_ns"], m[prefix+"_allocs"], m[prefix+"_bytes"] = s.NsPerOp, s.Allocs, s.Bytes
	}
	for _, doc := range UpdateDocs() {
		bk, err := Measure(d, func() error {
			var n acp.SessionNotification
			return doc.decodeBridgekit(&n)
		})
		if err != nil {
			return nil, err
		}
		put(doc.Name+"_bk", bk)
		if doc.BridgekitOnly {
			continue
		}
		sdk, err := Measure(d, func() error {
			var n acpsdk.SessionNotification
			return DecodeUpdateACPSDK(doc.JSON, &n)
		})
		if err != nil {
			return nil, err
		}
		put(doc.Name+"_acp", sdk)
	}
	return m, nil
}
