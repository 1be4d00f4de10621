package frames

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type line struct {
	dir  Direction
	text string
}

func classifyAll(c *Classifier, lines []line) []Frame {
	t0 := time.Unix(1000, 0)
	var out []Frame
	for i, l := range lines {
		out = append(out, c.Classify(int64(i+1), l.dir, t0.Add(time.Duration(i)*time.Millisecond), []byte(l.text), false))
	}
	return out
}

func TestClassifyACPPairsRepliesAndChecksBodies(t *testing.T) {
	c := New(Unknown)
	fs := classifyAll(c, []line{
		{In, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
		{Out, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}`},
		{In, `{"jsonrpc":"2.0","id":"x","method":"session/new","params":{"cwd":"/tmp"}}`},
		{Out, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{In, `{"jsonrpc":"2.0","method":"nope/nope","params":{}}`},
		{In, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"one"}}`},
		{In, `not json`},
	})
	if c.Family() != ACP {
		t.Fatalf("family %q", c.Family())
	}
	want := []struct {
		kind    Kind
		method  string
		replyTo int64
		problem string
		pointer string
	}{
		{Request, "initialize", 0, "", ""},
		{Response, "initialize", 1, "", ""},
		{Request, "session/new", 0, ProblemSchema, "/params/mcpServers"},
		{Response, "", 0, ProblemUnmatchedID, "/id"},
		{Notification, "nope/nope", 0, ProblemUnknownMethod, "/method"},
		{Request, "initialize", 0, ProblemSchema, "/params/protocolVersion"},
		{Invalid, "", 0, ProblemMalformed, ""},
	}
	for i, w := range want {
		f := fs[i]
		if f.Kind != w.kind || f.Method != w.method || f.ReplyTo != w.replyTo {
			t.Errorf("frame %d: %+v, want %+v", i+1, f, w)
		}
		if w.problem == "" && len(f.Problems) > 0 || w.problem != "" && (len(f.Problems) == 0 || f.Problems[0].Code != w.problem || f.Problems[0].Pointer != w.pointer) {
			t.Errorf("frame %d: problems %+v, want %s at %q", i+1, f.Problems, w.problem, w.pointer)
		}
	}
	if fs[1].Latency != time.Millisecond {
		t.Errorf("latency %v", fs[1].Latency)
	}
	un := c.Unanswered()
	if len(un) != 2 || un[0].Method != "session/new" || un[0].ID != `"x"` || un[1].ID != "2" {
		t.Errorf("unanswered %+v", un)
	}
}

func TestClassifyHarnFromItsMethods(t *testing.T) {
	c := New(Unknown)
	fs := classifyAll(c, []line{
		{In, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
		{Out, `{"jsonrpc":"2.0","id":"h1","method":"host/capabilities","params":{}}`},
		{In, `{"jsonrpc":"2.0","id":"h1","result":{}}`},
	})
	if c.Family() != Harn || fs[1].Family != Harn || fs[2].Method != "host/capabilities" || fs[2].ReplyTo != 2 {
		t.Fatalf("family %q, frames %+v", c.Family(), fs)
	}
}

// A tool_call_update with a root error is an extra member in plain ACP
// traffic and a schema problem in Harn's, where Harn's contract moved it
// under _meta.harn.
func TestClassifyHarnContract(t *testing.T) {
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","error":"boom"}}}`
	for _, tc := range []struct {
		family  Family
		problem bool
	}{{ACP, false}, {Harn, true}} {
		fs := classifyAll(New(tc.family), []line{{Out, update}})
		got := len(fs[0].Problems) > 0
		if got != tc.problem || got && (fs[0].Problems[0].Code != ProblemSchema || fs[0].Problems[0].Pointer != "/params/update/error") {
			t.Errorf("%s: problems %+v", tc.family, fs[0].Problems)
		}
	}
}

func TestClassifyAgentPMEnvelopes(t *testing.T) {
	c := New(Unknown)
	fs := classifyAll(c, []line{
		{In, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c1","method":"initialize","payload":{}}`},
		{Out, `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"c1","payload":{"bogus":1}}`},
		{In, `{"protocol":"agentpm-harness-machine","version":2,"kind":"request","id":"c2","method":"preflight","payload":{}}`},
	})
	if c.Family() != AgentPMMachine || fs[0].Kind != Request || fs[1].ReplyTo != 1 || fs[1].Method != "initialize" {
		t.Fatalf("%q %+v", c.Family(), fs)
	}
	if len(fs[1].Problems) == 0 || fs[1].Problems[0].Code != ProblemSchema || !strings.HasPrefix(fs[1].Problems[0].Pointer, "/payload") {
		t.Errorf("response problems %+v", fs[1].Problems)
	}
	if fs[2].Kind != Invalid || len(fs[2].Problems) == 0 || fs[2].Problems[0].Code != ProblemMalformed {
		t.Errorf("wrong version: %+v", fs[2])
	}
	s := New(Unknown)
	f := s.Classify(1, Out, time.Now(), []byte(`{"protocol":"agentpm-service","version":1,"kind":"request","id":"r1","service":"knowledge","method":"retrieve","payload":{}}`), false)
	if s.Family() != AgentPMService || f.Method != "retrieve" || f.Qualifier != "knowledge" {
		t.Fatalf("%q %+v", s.Family(), f)
	}
}

func TestClassifyTruncatedLine(t *testing.T) {
	c := New(Unknown)
	c.Classify(1, In, time.Now(), []byte(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}`), false)
	f := c.Classify(2, Out, time.Now(), []byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","x":"aaaa`), true)
	if f.Kind != Response || f.ReplyTo != 1 || f.Method != "session/prompt" {
		t.Fatalf("%+v", f)
	}
}

func TestEveryFamilyHasTypedMethods(t *testing.T) {
	for _, f := range Families {
		n := 0
		for _, m := range indexes[f].methods {
			if m.Params != nil {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no method has a params type: the handler structs changed shape", f)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":"h1","method":"host/capabilities","params":{}}`,
		`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c1","method":"initialize","payload":{}}`,
		`{"protocol":"agentpm-service","version":1,"kind":"initialize","id":"i","service":"model","payload":{}}`,
		`[1,2]`, `{`, ``,
	} {
		f.Add(s, false, byte(0))
	}
	f.Fuzz(func(t *testing.T, s string, truncated bool, dir byte) {
		c, deferring := New(Unknown), New(Unknown)
		deferring.DeferChecks = true
		d := In
		if dir&1 == 1 {
			d = Out
		}
		at := time.Now()
		for i := range 3 {
			fr := c.Classify(int64(i+1), d, at, []byte(s), truncated)
			if fr.Kind == "" {
				t.Fatalf("no kind for %q", s)
			}
			// Deferred, the check comes to the same frame.
			later := deferring.Classify(int64(i+1), d, at, []byte(s), truncated)
			later.Check()
			if !reflect.DeepEqual(fr, later) {
				t.Fatalf("%q: checked at once %+v, deferred %+v", s, fr, later)
			}
			d = d.Opposite()
		}
		if len(c.Unanswered()) > 3 {
			t.Fatal("more pending than requests")
		}
	})
}
