package tracelog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// FuzzMarshal checks the hand-written Marshal against encoding/json: both
// encodings of a record read back as the same JSON value.
func FuzzMarshal(f *testing.F) {
	f.Add("frame", "s1", int64(3), int64(1764583200123456789), `{"a":"<b>&\u2028"}`, "", "7", 12.5, "schema", "/params/x", uint8(7))
	f.Add("end", "s\xff", int64(-1), int64(0), "", "AAE=", `"id-1"`, 1e-9, "", "", uint8(0))
	f.Add("session", "", int64(0), int64(-62135596800000000), "\x00\t\n", "", "null", 3e22, "c", "", uint8(255))
	f.Fuzz(func(t *testing.T, typ, session string, seq, nanos int64, raw, b64, id string, latency float64, code, pointer string, bits uint8) {
		status := int(seq % 300)
		r := &Record{Type: typ, Session: session, Seq: seq, Time: time.Unix(0, nanos).In(time.FixedZone("x", int(seq%50000))),
			Dir: frames.Direction(raw[:min(len(raw), 3)]), Size: int(seq), RawBase64: b64, Method: raw, Qualifier: session,
			Redacted: bits&1 != 0, Truncated: bits&2 != 0, Partial: bits&4 != 0, ReplyTo: seq / 2, Signal: code, Unclean: bits&128 != 0}
		if bits&8 != 0 {
			r.Raw = &raw
		}
		if bits&16 != 0 {
			r.LatencyUS = &latency
		}
		if bits&32 != 0 {
			r.Status = &status
			r.Command = []string{raw, session}
		}
		if bits&64 != 0 {
			r.Problems = []frames.Problem{{Code: code, Pointer: pointer, Message: raw}, {Code: session}}
			r.Unanswered = []frames.Pending{{Seq: seq, Dir: frames.In, Method: code, ID: id, At: r.Time}}
		}
		if json.Valid([]byte(id)) {
			r.ID = json.RawMessage(id)
		}
		want, werr := json.Marshal(r)
		got, gerr := r.Marshal(nil)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("encoding/json: %v; Marshal: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if len(got) == 0 || got[len(got)-1] != '\n' {
			t.Fatalf("no newline: %q", got)
		}
		var a, b any
		if err := json.Unmarshal(want, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &b); err != nil {
			t.Fatalf("Marshal wrote %q: %v", got, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("encoding/json: %s\nMarshal:       %s", want, got)
		}
	})
}

func BenchmarkMarshal(b *testing.B) {
	line := `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`
	us := 42.5
	r := &Record{Type: TypeFrame, Session: "20261202T190000Z-0a1b2c3d", Seq: 1234, Time: time.Now().UTC(), Dir: frames.Out,
		Size: len(line), Family: frames.ACP, Kind: frames.Response, Method: "session/prompt", ID: json.RawMessage("7"),
		ReplyTo: 1233, LatencyUS: &us}
	r.SetLine([]byte(line))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = r.Marshal(buf[:0])
	}
}

// FuzzQuote checks quote's fast path against jsontext: the same bytes for
// any string.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", `{"jsonrpc":"2.0","id":"a\"b","params":{"path":"C:\\x"}}`, "tab\there", "é\"", "\xff\"", "\u2028", "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := jsontext.AppendQuote([]byte("x"), s)
		if got := quote([]byte("x"), s); !bytes.Equal(got, want) {
			t.Fatalf("quote(%q) = %s, jsontext writes %s", s, got, want)
		}
	})
}
