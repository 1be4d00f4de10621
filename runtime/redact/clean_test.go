package redact

import (
	"bytes"
	"testing"
)

// Frames of the kinds a trace records all day: clean must take them
// without the slow path, or every frame pays a decode and an encode.
func TestCleanTakesOrdinaryFrames(t *testing.T) {
	r := FromEnv([]string{"OPENAI_API_KEY=not-a-real-key-1234"})
	for _, doc := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"sess-0123456789","prompt":[{"type":"text","text":"Summarise the open pull requests and flag the ones that touch the runtime."}]}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n"}}],"rawInput":{"path":"/workspace/src/main.go","limit":200}}}}`,
		`{"token":null,"password":false,"authMethods":[{"id":"x"}]}`,
		" [1, -2.5e3, true, {\"a\": \"caf\u00e9 au lait\"}] ",
	} {
		if !r.clean([]byte(doc)) {
			t.Errorf("clean(%s) = false", doc)
		}
	}
	for _, doc := range []string{
		`{"apiKey":"x"}`, `{"a":{"token":1}}`, `{"note":"key not-a-real-key-1234"}`, `{"not-a-real-key-1234":1}`,
		`{"a":"Authorization: Bearer abcdefghijkl"}`, `{"a":"x\u0020sk-abcdefghijklmnopqrstu"}`, `1 2`, `{"a":`, ``,
	} {
		if r.clean([]byte(doc)) {
			t.Errorf("clean(%s) = true", doc)
		}
	}
}

func TestJSONMasksNames(t *testing.T) {
	r := New("hunter2hunter2")
	if got := string(r.JSON([]byte(`{"hunter2hunter2":{"sk-abcdefghijklmnopqrstuvwx":1}}`))); got != `{"[REDACTED]":{"[REDACTED]":1}}` {
		t.Errorf("got %s", got)
	}
}

// FuzzCleanAgrees checks the pre-filter against the slow path: a document
// clean passes is one mask would not change.
func FuzzCleanAgrees(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"usage":{"inputTokens":1}}}`), "hunter2hunter2")
	f.Add([]byte(`{"a":"Bearer abcdefghijkl","b":"\u0073k-abcdefghijklmnopqrstu"}`), "")
	f.Add([]byte(`{"pass_word":"x","k\u0065y":1,"tok":[1]}`), "")
	f.Add([]byte(`[999999, "t\u212aen abcdefghij"]`), "999999")
	f.Add([]byte(` {"a" : [ true , null , -1.5E+3 ] } `), "abcdefgh")
	f.Fuzz(func(t *testing.T, doc []byte, secret string) {
		r := New(secret)
		if r.clean(doc) {
			if out := r.mask(doc); !bytes.Equal(out, doc) {
				t.Fatalf("clean passed %q, which mask changes to %q", doc, out)
			}
		}
	})
}

func BenchmarkClean(b *testing.B) {
	r := FromEnv([]string{"OPENAI_API_KEY=not-a-real-key-1234"})
	doc := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","title":"Read src/main.go","content":[{"type":"content","content":{"type":"text","text":"package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n"}}],"rawInput":{"path":"/workspace/src/main.go","limit":200}}}}`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if !r.clean(doc) {
			b.Fatal("not clean")
		}
	}
}

// BenchmarkCleanTrace is clean on the two frames of trace's overhead
// benchmark (a session/prompt request and its reply).
func BenchmarkCleanTrace(b *testing.B) {
	r := FromEnv([]string{"OPENAI_API_KEY=not-a-real-key-1234"})
	req := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"sess-0123456789","prompt":[{"type":"text","text":"Summarise the open pull requests and flag the ones that touch the runtime."}]}}`)
	resp := []byte(`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`)
	b.SetBytes(int64(len(req) + len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		if !r.clean(req) || !r.clean(resp) {
			b.Fatal("not clean")
		}
	}
}
