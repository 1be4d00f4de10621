package validate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func newValidator(t testing.TB, protocol string) *Validator {
	t.Helper()
	v, err := New(Options{Protocol: protocol})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func check(t *testing.T, v *Validator, name, input string) ([]Problem, Stats) {
	t.Helper()
	var ps []Problem
	st, err := v.Stream(name, strings.NewReader(input), func(p Problem) { ps = append(ps, p) })
	if err != nil {
		t.Fatal(err)
	}
	return ps, st
}

// The committed traffic of real ACP agents (testdata/acp/traffic) is
// valid, every body with a schema judged by it and by its type, but for
// the methods outside ACP that the traffic's baseline of untyped places
// lists (qwen's craft/drainMidTurnQueue): each is reported as an unknown
// method, and nothing else is.
func TestRealAgentTrafficIsValid(t *testing.T) {
	const traffic = "../../../../testdata/acp/traffic"
	files, _ := filepath.Glob(traffic + "/*/turn.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded traffic")
	}
	baseline, err := os.ReadFile(traffic + "/untyped_baseline.txt")
	if err != nil {
		t.Fatal(err)
	}
	untyped := map[string]bool{} // recording/turn.jsonl TAB method
	for _, l := range strings.Split(string(baseline), "\n") {
		if f := strings.Split(l, "\t"); len(f) == 3 && f[2] == "(a method no catalogue types)" {
			untyped[f[0]+"\t"+strings.Fields(f[1])[0]] = true
		}
	}
	v := newValidator(t, "")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rec := filepath.Base(filepath.Dir(f)) + "/turn.jsonl"
		ps, st := check(t, v, f, string(data))
		for _, p := range ps {
			if p.Code == "unknown_method" && untyped[rec+"\t"+p.Method] {
				continue
			}
			t.Errorf("%s", p)
		}
		if st.Frames == 0 || st.Checked < st.Frames/2 {
			t.Errorf("%s: %+v: too few bodies checked", f, st)
		}
		t.Logf("%s: %+v", filepath.Base(filepath.Dir(f)), st)
	}
}

const (
	initReq  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`
	initResp = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}`
	prompt   = `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`
	promptOK = `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`
)

// Corrupted frames are refused at the JSON pointer of what is wrong, with
// the frame's line and method.
func TestCorruptedFramesRefused(t *testing.T) {
	v := newValidator(t, "")
	for name, tc := range map[string]struct {
		frame   string
		want    Problem
		message string
	}{
		"wrong member kind": {`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":"hi"}}`,
			Problem{Line: 3, Method: "session/prompt", Code: "schema", Pointer: "/params/prompt"}, ""},
		"wrong kind deep": {`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":7}]}}`,
			Problem{Line: 3, Method: "session/prompt", Code: "schema", Pointer: "/params/prompt/0/text"}, ""},
		"missing member": {`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[]}}`,
			Problem{Line: 3, Method: "session/prompt", Code: "schema", Pointer: "/params/sessionId"}, "missing"},
		// The three: a missing member's pointer names the object
		// that lacks it, its own segment included.
		"missing member in a nested object": {`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"title":"t"},"options":[]}}`,
			Problem{Line: 3, Method: "session/request_permission", Code: "schema", Pointer: "/params/toolCall/toolCallId"}, "missing"},
		"missing member in a union's member": {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}}`,
			Problem{Line: 3, Method: "session/update", Code: "schema", Pointer: "/params/update/content/text"}, "missing"},
		"missing member in a result's union": {`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}` + "\n" +
			`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected"}}}`,
			Problem{Line: 4, Method: "session/request_permission", Code: "schema", Pointer: "/result/outcome/optionId"}, "missing"},
		"missing member in an array element": {`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"a"},{"type":"text"}]}}`,
			Problem{Line: 3, Method: "session/prompt", Code: "schema", Pointer: "/params/prompt/1/text"}, "missing"},
		"unknown method": {`{"jsonrpc":"2.0","id":1,"method":"session/nope","params":{}}`,
			Problem{Line: 3, Method: "session/nope", Code: "unknown_method", Pointer: "/method"}, "no method"},
		"reply to unknown id": {`{"jsonrpc":"2.0","id":42,"result":{}}`,
			Problem{Line: 3, Code: "unmatched_id", Pointer: "/id"}, "42"},
		"bad JSON": {`{"jsonrpc":"2.0","id":1,"method":`,
			Problem{Line: 3, Code: "malformed"}, ""},
		"wrong result kind": {prompt + "\n" + `{"jsonrpc":"2.0","id":1,"result":{"stopReason":5}}`,
			Problem{Line: 4, Method: "session/prompt", Code: "schema", Pointer: "/result/stopReason"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			ps, _ := check(t, v, "t.ndjson", initReq+"\n"+initResp+"\n"+tc.frame+"\n")
			tc.want.File = "t.ndjson"
			found := slices.ContainsFunc(ps, func(p Problem) bool {
				m := p.Message
				p.Message = ""
				return p == tc.want && strings.Contains(m, tc.message)
			})
			if !found {
				t.Errorf("problems %v lack %+v (message with %q)", ps, tc.want, tc.message)
			}
		})
	}
}

// A request never answered is reported at its line when the stream ends;
// a trace's directions pair its replies, session by session.
func TestTraceSessionsAndUnanswered(t *testing.T) {
	v := newValidator(t, "")
	rec := func(typ, dir, raw string) string {
		m := map[string]any{"type": typ, "session": "s1", "seq": 1, "time": "2026-12-01T00:00:00Z"}
		if dir != "" {
			m["dir"], m["raw"] = dir, raw
		}
		b, _ := json.Marshal(m)
		return string(b) + "\n"
	}
	trace := rec("session", "", "") + rec("frame", "in", initReq) + rec("frame", "out", initResp) +
		rec("frame", "in", prompt) + rec("end", "", "") +
		rec("session", "", "") + rec("frame", "in", prompt) + rec("frame", "out", promptOK) + rec("end", "", "")
	ps, st := check(t, v, "trace.jsonl", trace)
	if len(ps) != 1 || ps[0].Line != 4 || ps[0].Code != "unanswered" || ps[0].Method != "session/prompt" {
		t.Errorf("problems %v, want one: line 4's session/prompt unanswered", ps)
	}
	if st.Frames != 5 || st.Checked != 5 {
		t.Errorf("stats %+v", st)
	}
	// The same reply in the wrong direction answers nothing.
	bad := rec("session", "", "") + rec("frame", "in", prompt) + rec("frame", "in", promptOK) + rec("end", "", "")
	ps, _ = check(t, v, "trace.jsonl", bad)
	if !slices.ContainsFunc(ps, func(p Problem) bool { return p.Line == 3 && p.Code == "unmatched_id" }) {
		t.Errorf("a reply in the request's direction: %v", ps)
	}
	ps, _ = check(t, v, "trace.jsonl", rec("session", "", "")+`{"type":"frame","session":"s1","dir":"in"}`+"\n")
	if len(ps) != 1 || ps[0].Code != ProblemTrace || ps[0].Line != 2 {
		t.Errorf("a frame record without raw: %v", ps)
	}
}

// In raw NDJSON, directions are inferred: both peers may use the same id
// at once, each reply answering the other side's request.
func TestRawNDJSONPairsByID(t *testing.T) {
	v := newValidator(t, "")
	perm := `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}`
	permOK := `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}`
	in := strings.Join([]string{initReq, initResp, prompt, perm, permOK, promptOK}, "\n")
	ps, st := check(t, v, "raw.ndjson", in)
	if len(ps) != 0 || st.Checked != 6 {
		t.Errorf("problems %v, stats %+v", ps, st)
	}
}

// A round trip that loses or changes anything is found at its pointer.
func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b, ptr string
		same      bool
	}{
		{`{"a":1,"b":[true,null]}`, `{"b":[true,null],"a":1.0}`, "", true},
		{`{"a":"\u00e9"}`, `{"a":"é"}`, "", true},
		{`{"a":1e2}`, `{"a":100}`, "", true},
		{`{"a":{"b":1}}`, `{"a":{}}`, "/a/b", false},
		{`{"a":{}}`, `{"a":{"c/d":1}}`, "/a/c~1d", false},
		{`{"a":[1,2]}`, `{"a":[1]}`, "/a", false},
		{`{"a":null}`, `{}`, "/a", false},
		{`{"a":true}`, `{"a":false}`, "/a", false},
		{`{"a":"1"}`, `{"a":1}`, "/a", false},
		{`[1,{"x":2}]`, `[1,{"x":3}]`, "/1/x", false},
	} {
		ptr, msg, same := Equal([]byte(tc.a), []byte(tc.b))
		if same != tc.same || ptr != tc.ptr {
			t.Errorf("Equal(%s, %s) = %q, %q, %v; want %q, %v", tc.a, tc.b, ptr, msg, same, tc.ptr, tc.same)
		}
	}
}

func TestUnknownProtocol(t *testing.T) {
	if _, err := New(Options{Protocol: "nope"}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("New(nope): %v", err)
	}
}

// --protocol acp-v0.12.2 judges ACP frames by v0.12.2's schema (the
// generated v1 types decode both): v1's logout is no method of v0.12.2.
func TestProtocolV0122(t *testing.T) {
	logout := `{"jsonrpc":"2.0","id":2,"method":"logout","params":{}}`
	v := newValidator(t, "acp-v0.12.2")
	ps, st := check(t, v, "old.ndjson", strings.Join([]string{initReq, initResp, prompt, promptOK}, "\n"))
	if len(ps) != 0 || st.Checked != 4 {
		t.Errorf("v0.12.2 traffic: %v %+v", ps, st)
	}
	ps, _ = check(t, v, "old.ndjson", strings.Join([]string{initReq, initResp, logout}, "\n"))
	if !slices.ContainsFunc(ps, func(p Problem) bool {
		return p.Line == 3 && p.Method == "logout" && strings.Contains(p.Message, "not in ACP v0.12.2")
	}) {
		t.Errorf("logout under v0.12.2: %v", ps)
	}
	ps, _ = check(t, newValidator(t, "acp"), "new.ndjson", strings.Join([]string{initReq, initResp, logout}, "\n"))
	if slices.ContainsFunc(ps, func(p Problem) bool { return p.Line == 3 && p.Code != "unanswered" }) {
		t.Errorf("logout under v1: %v", ps)
	}
}

func FuzzStream(f *testing.F) {
	f.Add(initReq + "\n" + initResp + "\n")
	f.Add(prompt + "\n" + `{"jsonrpc":"2.0","id":1,"result":{"stopReason":7}}`)
	f.Add(`{"type":"session","session":"s"}` + "\n" + `{"type":"frame","session":"s","dir":"in","raw":"{}"}`)
	f.Add(`{"seq":1,"ms":0,"dir":"send","line":"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}","cut":false}`)
	f.Add(`{"protocol":"agentpm-service","version":1,"kind":"request","id":"r","service":"knowledge","method":"retrieve","payload":{}}`)
	v := newValidator(f, "")
	f.Fuzz(func(t *testing.T, in string) {
		_, err := v.Stream("f", strings.NewReader(in), func(p Problem) {
			if p.File != "f" || p.Line < 1 || p.Code == "" {
				t.Fatalf("problem %+v", p)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzEqual(f *testing.F) {
	f.Add(`{"a":1}`, `{"a":1.0}`)
	f.Add(`[1,{"x":"y"}]`, `[1,{"x":"z"}]`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var x tree
		if err := x.parse([]byte(a), false); err == nil {
			if ptr, msg, same := Equal([]byte(a), []byte(a)); !same {
				t.Fatalf("%s differs from itself at %q: %s", a, ptr, msg)
			}
		}
		_, _, ab := Equal([]byte(a), []byte(b))
		_, _, ba := Equal([]byte(b), []byte(a))
		if ab != ba {
			t.Fatalf("Equal is not symmetric for %s and %s", a, b)
		}
	})
}
