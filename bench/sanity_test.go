package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// These fast tests run in a plain `go test ./...` (no -bench): every
// adapter must complete a round trip in memory and to a child process, and
// deliver a small burst.

func TestPayloadSize(t *testing.T) {
	n := WireSize(MethodPrompt, NewPrompt())
	if n < 415 || n > 435 {
		t.Errorf("request is %d bytes on the wire, want about 425", n)
	}
	t.Logf("request: %d bytes: %s", n, RequestFrame())
	if got := len(NewPrompt().Prompt[0].Text); got != 160 {
		t.Errorf("first text block is %d bytes, want 160", got)
	}
	if got := len(NewLargePrompt(64 << 10).Prompt[0].Text); got != 64<<10 {
		t.Errorf("large text block is %d bytes, want %d", got, 64<<10)
	}
}

func TestCodecsAgree(t *testing.T) {
	var v1, v1s, v2 bytes.Buffer
	p := NewPrompt()
	if err := EncodeV1Double(&v1, 7, MethodPrompt, p); err != nil {
		t.Fatal(err)
	}
	if err := EncodeV1Single(&v1s, 7, MethodPrompt, p); err != nil {
		t.Fatal(err)
	}
	if err := EncodeV2Single(&v2, 7, MethodPrompt, p); err != nil {
		t.Fatal(err)
	}
	if v1.String() != v1s.String() || v1.String() != v2.String() {
		t.Errorf("encodings differ:\n%s%s%s", v1.String(), v1s.String(), v2.String())
	}
	for name, dec := range map[string]func([]byte, *PromptParams) error{"v1": DecodeV1, "v2": DecodeV2} {
		var got PromptParams
		if err := dec(bytes.TrimSpace(v1.Bytes()), &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.SessionID != p.SessionID || len(got.Prompt) != 2 || got.Prompt[0] != p.Prompt[0] || *got.Meta != *p.Meta {
			t.Errorf("%s decoded %+v", name, got)
		}
	}
}

// Both decoders read every session/update document, and read the same
// values; bridgekit's value, encoded again, is the document.
func TestSessionUpdateDecodersAgree(t *testing.T) {
	for _, d := range UpdateDocs() {
		if err := CheckUpdateDecoder(d); err != nil {
			t.Error(err)
		}
	}
	m, err := codecSessionUpdate(nil, Profile{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range UpdateDocs() {
		sides := []string{"_bk_ns", "_acp_ns"}
		if d.BridgekitOnly {
			sides = sides[:1]
			if _, ok := m[d.Name+"_acp_ns"]; ok {
				t.Errorf("%s: acp-go-sdk measured on a document it has no type for", d.Name)
			}
		}
		for _, side := range sides {
			if m[d.Name+side] <= 0 {
				t.Errorf("%s%s not measured", d.Name, side)
			}
		}
	}
}

// The comparison notices one changed value in any document: the same
// document with one value changed, decoded by the other library, fails.
func TestSessionUpdateComparisonFails(t *testing.T) {
	changes := map[string][2]string{
		"chunk":      {"database pool", "database pools"},
		"toolcall":   {`"limit":200`, `"limit":201`},
		"toolupdate": {`pool: 20`, `pool: 21`},
		"plan":       {`"priority":"medium"`, `"priority":"low"`},
		// The recorded frames of today's agents.
		"rec-qwen-chunk":      {"Reading the notes.", "Reading the notes!"},
		"rec-codex-diff":      {"two lines", "2 lines"},
		"rec-gemini-diff":     {"two lines", "2 lines"},
		"rec-opencode-output": {"End of file", "End of the file"},
		"rec-claude-write":    {`"newText":"The notes have two lines.`, `"newText":"The notes have 2 lines.`},
	}
	for _, d := range UpdateDocs() {
		if d.BridgekitOnly {
			continue
		}
		c, ok := changes[d.Name]
		if !ok {
			t.Fatalf("%s: no change to try", d.Name)
		}
		changed := []byte(strings.Replace(string(d.JSON), c[0], c[1], 1))
		if bytes.Equal(changed, d.JSON) {
			t.Fatalf("%s: %q not in the document", d.Name, c[0])
		}
		if same, err := SameJSON(d.JSON, changed); err != nil || same {
			t.Errorf("%s: SameJSON misses %q changed to %q (%v)", d.Name, c[0], c[1], err)
		}
		var b acp.SessionNotification
		var s acpsdk.SessionNotification
		if err := DecodeUpdateBridgekit(d.JSON, &b); err != nil {
			t.Fatal(err)
		}
		if err := DecodeUpdateACPSDK(changed, &s); err != nil {
			t.Fatal(err)
		}
		if err := CompareUpdateDecodes(&b, &s); err == nil {
			t.Errorf("%s: %q changed to %q, yet the decoders agree", d.Name, c[0], c[1])
		}
	}
}

// Harn's documents are bridgekit's alone because acp-go-sdk cannot
// represent them: it decodes them without an error into another variant,
// and its value, encoded again, is not the document. bridgekit keeps them.
func TestSessionUpdateHarnOnlyBridgekit(t *testing.T) {
	n := 0
	for _, d := range UpdateDocs() {
		if !d.BridgekitOnly {
			continue
		}
		n++
		var s acpsdk.SessionNotification
		if err := DecodeUpdateACPSDK(d.JSON, &s); err != nil {
			continue // rejecting it is also "cannot represent"
		}
		out, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		if same, err := SameJSON(d.JSON, out); err != nil || same {
			t.Errorf("%s: acp-go-sdk now keeps it (%s): compare it too", d.Name, out)
		}
		t.Logf("%s: acp-go-sdk reads %s", d.Name, out)
	}
	if n == 0 {
		t.Error("no Harn document")
	}
}

// forEachRuntime runs f for every compared runtime and for the reference
// runtimes, which must be just as correct.
func forEachRuntime(t *testing.T, f func(t *testing.T, rt Runtime)) {
	for _, rt := range append(Runtimes(), References()...) {
		t.Run(rt.Key(), func(t *testing.T) {
			t.Parallel()
			f(t, rt)
		})
	}
}

func TestInMemory(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		svc := &Service{}
		p := NewPair(rt, svc)
		defer p.Close(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var res PromptResult
		if err := p.Client.Call(ctx, MethodPrompt, NewPrompt(), &res); err != nil {
			t.Fatal(err)
		}
		if want := promptSize(NewPrompt()); res != (PromptResult{StopReason: "end_turn", Echoed: want}) {
			t.Errorf("result %+v", res)
		}
		l, err := RoundTrips(p.Client, LoopConfig{Callers: 4, MaxCalls: 200}, NewPrompt())
		if err != nil || l.N != 200 {
			t.Fatalf("RoundTrips: %v, %v", l, err)
		}
		// A burst below acp-go-sdk's queue limit of 1024, so all must pass.
		r, err := Burst(p.Client, 500, 10*time.Second, p.Server, p.Client)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seen != 500 || svc.Seen() != 500 {
			t.Errorf("burst: %+v, service saw %d", r, svc.Seen())
		}
	})
}

func TestChild(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		ch, err := StartChild(rt, testExe)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := ch.Close(5 * time.Second); err != nil {
				t.Error(err)
			}
		}()
		l, err := RoundTrips(ch.Conn, LoopConfig{Callers: 2, MaxCalls: 100}, NewPrompt())
		if err != nil || l.N != 100 {
			t.Fatalf("RoundTrips: %v, %v; peer stderr: %s", l, err, ch.Stderr())
		}
		r, err := Burst(ch.Conn, 300, 10*time.Second, ch.Conn)
		if err != nil {
			t.Fatalf("burst: %v; peer stderr: %s", err, ch.Stderr())
		}
		if r.Seen != 300 {
			t.Errorf("burst: %+v", r)
		}
	})
}

func TestLargeAndCancel(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := NewPair(rt, &Service{})
		r, err := Large(p.Client, 64<<10, LoopConfig{MaxCalls: 5})
		p.Close(time.Second)
		if err != nil || r.N != 5 {
			t.Fatalf("Large: %+v, %v", r, err)
		}
		c, err := Cancellation(rt, 3, 5*time.Millisecond)
		if err != nil {
			t.Fatalf("Cancellation: %v", err)
		}
		t.Logf("cancel: %+v", c)
	})
}
