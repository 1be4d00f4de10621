package acptraffic

import (
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/internal/recorder"
)

func frames(lines ...string) []recorder.Frame {
	var out []recorder.Frame
	for i, l := range lines {
		dir, line, _ := strings.Cut(l, " ")
		out = append(out, recorder.Frame{Seq: i + 1, Dir: dir, Line: line})
	}
	return out
}

// Decode matches a reply to its request through the id, in the other
// direction, decodes into the method's types, and Untyped names what is
// kept raw outside _meta (an Extra member, an unknown union variant) and
// nothing under _meta.
func TestDecodeMatchesRepliesAndFindsUntyped(t *testing.T) {
	msgs, errs := Decode(frames(
		`send {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[],"_meta":{"x":1}}}`,
		`recv {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","brandNew":{"currentModelId":"m"}}}`,
		`recv {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"brand_new","x":1}}}`,
		`recv {"jsonrpc":"2.0","id":"p","method":"fs/read_text_file","params":{"sessionId":"s","path":"/w/a"}}`,
		`send {"jsonrpc":"2.0","id":"p","error":{"code":-32603,"message":"no"}}`,
	))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Kind+" "+m.Method+" "+m.Part)
	}
	want := []string{"request session/new params", "result session/new result", "notification session/update params", "request fs/read_text_file params", "error fs/read_text_file error"}
	if !slices.Equal(got, want) {
		t.Fatalf("decoded %q, want %q", got, want)
	}
	if u := Untyped(msgs[0].Value); len(u) != 0 {
		t.Errorf("session/new params: untyped %q (only _meta is extra)", u)
	}
	if u := Untyped(msgs[1].Value); !slices.Equal(u, []string{"NewSessionResponse.brandNew"}) {
		t.Errorf("session/new result: untyped %q", u)
	}
	if u := Untyped(msgs[2].Value); !slices.Equal(u, []string{"SessionUpdate{sessionUpdate=brand_new}"}) {
		t.Errorf("session/update: untyped %q", u)
	}
}

// Frames that are not ACP, replies without a request, requests never
// answered and params of the wrong shape are each reported.
func TestDecodeReportsEveryProblem(t *testing.T) {
	_, errs := Decode(frames(
		`recv not json`,
		`recv {"jsonrpc":"2.0","id":7,"result":{}}`,
		`send {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`,
		`send {"jsonrpc":"2.0","method":"no/such","params":{}}`, // an extension method: kept, Untyped, no error
		`recv {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":5}}`,
		`send {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"},"extra":1}`,
		`send {"jsonrpc":"1.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	))
	want := []string{"frame 1 ", "frame 2 ", "frame 5 ", "frame 6 ", "frame 7 ", "never answered"}
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d: %v", len(errs), len(want), errs)
	}
	for _, w := range want {
		if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), w) }) {
			t.Errorf("no error about %q in %v", w, errs)
		}
	}
}

// Any frames decode without a panic, and each frame is either a message
// or an error: nothing is dropped without a word.
func FuzzDecode(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	f.Add(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}`, `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`)
	f.Fuzz(func(t *testing.T, sent, received string) {
		fs := []recorder.Frame{{Seq: 1, Dir: recorder.Send, Line: sent}, {Seq: 2, Dir: recorder.Recv, Line: received}}
		msgs, errs := Decode(fs)
		frameErrs := 0
		for _, e := range errs {
			if strings.HasPrefix(e.Error(), "frame ") {
				frameErrs++
			}
		}
		if len(msgs)+frameErrs != len(fs) {
			t.Fatalf("%d messages and %d frame errors for %d frames: %v", len(msgs), frameErrs, len(fs), errs)
		}
		for _, m := range msgs {
			_ = Untyped(m.Value)
		}
	})
}
