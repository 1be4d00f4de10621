package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
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
	// bridgekit's decode is measured.
	BridgekitOnly bool
}

// UpdateDocs are representative updates of a prompt turn: a streamed
// message chunk, a tool call with a location and raw input, a tool call
// update carrying text content and a diff, a plan of four entries, and
// Harn's progress update (its fields under _meta.harn).
func UpdateDocs() []UpdateDoc {
	return []UpdateDoc{
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
}

// DecodeUpdateBridgekit decodes params as a bridgekit handler does
// (rpc.DecodeParams into gen/acp's SessionNotification).
func DecodeUpdateBridgekit(params []byte, n *acp.SessionNotification) error {
	return rpc.DecodeParams(params, n)
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

type view []string

func (v *view) add(format string, args ...any) { *v = append(*v, fmt.Sprintf(format, args...)) }

func (v *view) raw(name string, b []byte) error {
	c, err := canonJSON(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if c != "" {
		v.add("%s=%s", name, c)
	}
	return nil
}

func bkText(b acp.ContentBlock) (string, error) {
	if b.Text == nil {
		return "", errors.New("content block is not text")
	}
	return b.Text.Text, nil
}

func bkLocations(v *view, locs []acp.ToolCallLocation) {
	for _, l := range locs {
		line, ok := l.Line.Get()
		v.add("location=%s:%d:%t", l.Path, line, ok)
	}
}

// viewBridgekit is what gen/acp read.
func viewBridgekit(n *acp.SessionNotification) (view, error) {
	v := view{"session=" + string(n.SessionID)}
	u := &n.Update
	switch {
	case u.AgentMessageChunk != nil:
		t, err := bkText(u.AgentMessageChunk.Content)
		if err != nil {
			return nil, err
		}
		v.add("agent_message_chunk text=%q", t)
	case u.ToolCall != nil:
		c := u.ToolCall
		v.add("tool_call id=%s title=%q", c.ToolCallID, c.Title)
		if c.Kind != nil {
			v.add("kind=%s", *c.Kind)
		}
		if c.Status != nil {
			v.add("status=%s", *c.Status)
		}
		bkLocations(&v, c.Locations)
		if err := bkContents(&v, c.Content); err != nil {
			return nil, err
		}
		if err := v.raw("rawInput", c.RawInput); err != nil {
			return nil, err
		}
		if err := v.raw("rawOutput", c.RawOutput); err != nil {
			return nil, err
		}
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		v.add("tool_call_update id=%s", c.ToolCallID)
		if t, ok := c.Title.Get(); ok {
			v.add("title=%q", t)
		}
		if k, ok := c.Kind.Get(); ok {
			v.add("kind=%s", k)
		}
		if s, ok := c.Status.Get(); ok {
			v.add("status=%s", s)
		}
		locs, _ := c.Locations.Get()
		bkLocations(&v, locs)
		content, _ := c.Content.Get()
		if err := bkContents(&v, content); err != nil {
			return nil, err
		}
		if err := v.raw("rawInput", c.RawInput); err != nil {
			return nil, err
		}
		if err := v.raw("rawOutput", c.RawOutput); err != nil {
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
	return v, nil
}

func bkContents(v *view, cs []acp.ToolCallContent) error {
	for _, c := range cs {
		switch {
		case c.Content != nil:
			t, err := bkText(c.Content.Content)
			if err != nil {
				return err
			}
			v.add("content text=%q", t)
		case c.Diff != nil:
			old, ok := c.Diff.OldText.Get()
			v.add("content diff %s old=%q:%t new=%q", c.Diff.Path, old, ok, c.Diff.NewText)
		default:
			return errors.New("tool call content is neither content nor diff")
		}
	}
	return nil
}

func sdkText(b acpsdk.ContentBlock) (string, error) {
	if b.Text == nil {
		return "", errors.New("content block is not text")
	}
	return b.Text.Text, nil
}

func sdkLocations(v *view, locs []acpsdk.ToolCallLocation) {
	for _, l := range locs {
		var line int64
		if l.Line != nil {
			line = int64(*l.Line)
		}
		v.add("location=%s:%d:%t", l.Path, line, l.Line != nil)
	}
}

func sdkRaw(v *view, name string, x any) error {
	if x == nil {
		return nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	return v.raw(name, b)
}

// viewACPSDK is what acp-go-sdk read, in viewBridgekit's words.
func viewACPSDK(n *acpsdk.SessionNotification) (view, error) {
	v := view{"session=" + string(n.SessionId)}
	u := &n.Update
	switch {
	case u.AgentMessageChunk != nil:
		t, err := sdkText(u.AgentMessageChunk.Content)
		if err != nil {
			return nil, err
		}
		v.add("agent_message_chunk text=%q", t)
	case u.ToolCall != nil:
		c := u.ToolCall
		v.add("tool_call id=%s title=%q", c.ToolCallId, c.Title)
		if c.Kind != "" {
			v.add("kind=%s", c.Kind)
		}
		if c.Status != "" {
			v.add("status=%s", c.Status)
		}
		sdkLocations(&v, c.Locations)
		if err := sdkContents(&v, c.Content); err != nil {
			return nil, err
		}
		if err := sdkRaw(&v, "rawInput", c.RawInput); err != nil {
			return nil, err
		}
		if err := sdkRaw(&v, "rawOutput", c.RawOutput); err != nil {
			return nil, err
		}
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		v.add("tool_call_update id=%s", c.ToolCallId)
		if c.Title != nil {
			v.add("title=%q", *c.Title)
		}
		if c.Kind != nil {
			v.add("kind=%s", *c.Kind)
		}
		if c.Status != nil {
			v.add("status=%s", *c.Status)
		}
		sdkLocations(&v, c.Locations)
		if err := sdkContents(&v, c.Content); err != nil {
			return nil, err
		}
		if err := sdkRaw(&v, "rawInput", c.RawInput); err != nil {
			return nil, err
		}
		if err := sdkRaw(&v, "rawOutput", c.RawOutput); err != nil {
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
	return v, nil
}

func sdkContents(v *view, cs []acpsdk.ToolCallContent) error {
	for _, c := range cs {
		switch {
		case c.Content != nil:
			t, err := sdkText(c.Content.Content)
			if err != nil {
				return err
			}
			v.add("content text=%q", t)
		case c.Diff != nil:
			var old string
			if c.Diff.OldText != nil {
				old = *c.Diff.OldText
			}
			v.add("content diff %s old=%q:%t new=%q", c.Diff.Path, old, c.Diff.OldText != nil, c.Diff.NewText)
		default:
			return errors.New("tool call content is neither content nor diff")
		}
	}
	return nil
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

// checkHarnProgress compares gen/acp's typed progress update with the
// document's _meta.harn, read generically.
func checkHarnProgress(doc []byte, n *acp.SessionNotification) error {
	p := n.Update.Progress
	if p == nil {
		return errors.New("not read as progress")
	}
	var generic struct {
		Update struct {
			Meta struct {
				Harn struct {
					Phase, Message  string
					Progress, Total *float64
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
		if err := checkHarnProgress(d.JSON, &b); err != nil {
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
			return DecodeUpdateBridgekit(doc.JSON, &n)
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
