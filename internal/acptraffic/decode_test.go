package acptraffic

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
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

// qwen's qwen/notify/session/mode-update, which no recorded turn sends (no
// turn changes the mode), is typed by both packages and round-trips byte
// for byte. The frames are built from qwen 0.24.4's own source
// (testdata/agents/node_modules/@qwen-code/qwen-code/chunks/acpAgent-GQCJ4KZY.js):
// setMode sends {v, sessionId, currentModeId} and, in plan mode,
// planExecutionMode; sendCurrentModeUpdateNotification adds legacyFrameSent.
// A member qwen may add later is kept as sent.
func TestQwenModeUpdateRoundTrips(t *testing.T) {
	for _, params := range []string{
		`{"v":1,"sessionId":"0f9e2c1a-6b7d-4e8f-9a0b-1c2d3e4f5a6b","currentModeId":"auto-edit"}`,
		`{"v":1,"sessionId":"0f9e2c1a-6b7d-4e8f-9a0b-1c2d3e4f5a6b","currentModeId":"plan","planExecutionMode":"default"}`,
		`{"v":1,"sessionId":"s","currentModeId":"plan","planExecutionMode":"auto-edit","legacyFrameSent":true}`,
		`{"v":1,"sessionId":"s","currentModeId":"yolo","legacyFrameSent":false,"later":{"x":[1,2]}}`,
	} {
		for name, p := range map[string]Package{"acp": Stable, "acpunstable": Unstable} {
			msgs, errs := p.Decode(frames(`recv {"jsonrpc":"2.0","method":"qwen/notify/session/mode-update","params":` + params + `}`))
			if len(errs) > 0 || len(msgs) != 1 {
				t.Fatalf("%s: %v %v", name, msgs, errs)
			}
			m := msgs[0]
			if m.Untyped || m.Value == nil || m.Kind != Notification {
				t.Fatalf("%s: %s is not typed: %+v", name, params, m)
			}
			if string(m.Reencoded) != params {
				t.Errorf("%s: re-encoded\n%s\nwant\n%s", name, m.Reencoded, params)
			}
			u := Untyped(m.Value)
			if strings.Contains(params, `"later"`) {
				if len(u) != 1 || !strings.HasSuffix(u[0], ".later") {
					t.Errorf("%s: untyped %q, want the one member qwen 0.24.4 does not send", name, u)
				}
			} else if len(u) != 0 {
				t.Errorf("%s: untyped %q", name, u)
			}
		}
	}
	var n acp.QwenModeUpdate
	if err := json.Unmarshal([]byte(`{"v":1,"sessionId":"s","currentModeId":"plan","planExecutionMode":"default","legacyFrameSent":true}`), &n); err != nil {
		t.Fatal(err)
	}
	if v, _ := n.V.Get(); v != 1 || n.SessionID != "s" || n.CurrentModeID != "plan" {
		t.Errorf("decoded %+v", n)
	}
	if mode, _ := n.PlanExecutionMode.Get(); mode != "default" {
		t.Errorf("planExecutionMode %q", mode)
	}
	if sent, _ := n.LegacyFrameSent.Get(); !sent {
		t.Error("legacyFrameSent lost")
	}
}
