package jsonrpc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
)

// scanSeeds are frames for the scanner: ones it must take (the fast path)
// and ones it must leave to jsontext.
var (
	scanTaken = []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hello"}]}}`,
		`{"jsonrpc":"2.0","id":"req-7","result":{"stopReason":"end_turn","echoed":425}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`  {"jsonrpc" : "2.0" ,	"method":"n", "params" : [ 1 , -0.5e+3 , 0 , 10E2 , true , false , null , "" , { } , [ ] ] }  `,
		`{"jsonrpc":"2.0","id":2,"method":"m","params":{"s":"\" \\ \/ \b \f \n \r \t \u0000 \u00e9 \uFFFF"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"m","params":{"s":"déjà vu — 日本語 😀 \u20ac"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"m","params":{"a":{"a":{"a":1}},"b":{"a":2}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"m","params":{"x":1},"extra":{"jsonrpc":"1.0","id":6}}`,
		`{}`,
		`{"":""}`,
		`{"id":123456789012345678901234567890,"method":"m"}`,
	}
	scanDeclined = []string{
		// invalid JSON
		``, ` `, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`, `{,}`, `[1,]`, `{"a":1]`, `[1}`,
		`{"a":1}x`, `{"a":1} {}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":+1}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`,
		"{\"a\":\"tab\there\"}", "{\"a\":\"\x00\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}",
		`{"a":"unterminated}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`,
		// duplicate names, at any depth
		`{"id":1,"id":2}`, `{"params":{"a":1,"a":2}}`, `{"p":[{"x":1,"y":2,"x":3}]}`,
		// valid, but left to jsontext
		`[1]`, `"s"`, `1`, `null`,
		`{"a\u0062":1}`, `{"params":{"\"":1}}`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`,
		`{"a":` + strings.Repeat("[", jsonscan.MaxDepth) + strings.Repeat("]", jsonscan.MaxDepth) + `}`,
		`{"a":{` + manyMembers(jsonscan.MaxMembers+1) + `}}`,
	}
)

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"m`)
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(`":1`)
	}
	return b.String()
}

// scanInto scans frame into a cleared e, as Decode does.
func scanInto(s *jsonscan.Scanner, frame []byte, e *envelope) bool {
	*e = envelope{}
	return s.Object(frame, e)
}

func TestScanEnvelope(t *testing.T) {
	var s jsonscan.Scanner
	for _, frame := range scanTaken {
		var e envelope
		if !scanInto(&s, []byte(frame), &e) {
			t.Errorf("declined %s", frame)
			continue
		}
		checkScan(t, []byte(frame), &e)
	}
	for _, frame := range scanDeclined {
		var e envelope
		if scanInto(&s, []byte(frame), &e) {
			t.Errorf("took %q", frame)
		}
	}
	// Limits: the largest nesting and object it takes.
	for _, frame := range []string{
		`{"a":` + strings.Repeat("[", jsonscan.MaxDepth-1) + strings.Repeat("]", jsonscan.MaxDepth-1) + `}`,
		`{"a":{` + manyMembers(jsonscan.MaxMembers) + `}}`,
	} {
		var e envelope
		if !scanInto(&s, []byte(frame), &e) {
			t.Errorf("declined %.60s...", frame)
		}
	}
}

func TestScanEnvelopeMembers(t *testing.T) {
	var s jsonscan.Scanner
	var e envelope
	frame := ` { "params" : [1, {"id":9}] , "jsonrpc":"2.0","method": "a/b", "id" : "x" , "result":null,"error":{"code":1} } `
	if !scanInto(&s, []byte(frame), &e) {
		t.Fatal("declined")
	}
	for _, m := range []struct{ name, got, want string }{
		{"jsonrpc", string(e.version), `"2.0"`},
		{"id", string(e.id), `"x"`},
		{"method", string(e.method), `"a/b"`},
		{"params", string(e.params), `[1, {"id":9}]`},
		{"result", string(e.result), `null`},
		{"error", string(e.err), `{"code":1}`},
	} {
		if m.got != m.want {
			t.Errorf("%s = %s, want %s", m.name, m.got, m.want)
		}
	}
}

// checkScan fails unless jsontext accepts frame too and finds the same
// members as the scanner did.
func checkScan(t *testing.T, frame []byte, fast *envelope) {
	t.Helper()
	var s jsonscan.Scanner
	slow := new(envelope)
	if _, err := s.Slow(frame, slow); err != nil {
		t.Fatalf("scanner took %q, which jsontext rejects: %v", frame, err)
	}
	for _, m := range []struct {
		name       string
		fast, slow []byte
	}{
		{"jsonrpc", fast.version, slow.version},
		{"id", fast.id, slow.id},
		{"method", fast.method, slow.method},
		{"params", fast.params, slow.params},
		{"result", fast.result, slow.result},
		{"error", fast.err, slow.err},
	} {
		if (m.fast == nil) != (m.slow == nil) || !bytes.Equal(m.fast, m.slow) {
			t.Fatalf("frame %q: %s is %q for the scanner, %q for jsontext", frame, m.name, m.fast, m.slow)
		}
	}
}

// FuzzScanEnvelope checks the fast scanner against jsontext: whatever it
// takes, jsontext takes too, with the same members.
func FuzzScanEnvelope(f *testing.F) {
	for _, seeds := range [][]string{scanTaken, scanDeclined, envelopeSeeds} {
		for _, s := range seeds {
			f.Add([]byte(s))
		}
	}
	var s jsonscan.Scanner
	f.Fuzz(func(t *testing.T, frame []byte) {
		var e envelope
		if scanInto(&s, frame, &e) {
			checkScan(t, frame, &e)
		}
	})
}
