package jsonrpc

import (
	"testing"

	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
)

// scanSeeds are frames the scanner must take, with their members, and frames it must refuse.
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
		`{"a\u0062":1}`, `{"params":{"\"":1}}`, `{"a":"\ud83d\ude00"}`,
	}
	scanRefused = []string{
		``, ` `, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`, `{,}`, `[1,]`, `{"a":1]`, `[1}`,
		`{"a":1}x`, `{"a":1} {}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":+1}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`,
		"{\"a\":\"tab\there\"}", "{\"a\":\"\x00\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}",
		`{"a":"unterminated}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":"\ud800"}`,
		// duplicate names, at any depth
		`{"id":1,"id":2}`, `{"params":{"a":1,"a":2}}`, `{"p":[{"x":1,"y":2,"x":3}]}`,
	}
)

// scanInto scans frame into a cleared e, as Decode does.
func scanInto(s *jsonscan.Scanner, frame []byte, e *envelope) (object bool, err error) {
	*e = envelope{}
	return s.Decode(frame, e)
}

// The scanner takes valid objects, reports other valid values as not objects, and refuses invalid JSON.
func TestScanEnvelope(t *testing.T) {
	var s jsonscan.Scanner
	for _, frame := range scanTaken {
		var e envelope
		if object, err := scanInto(&s, []byte(frame), &e); !object || err != nil {
			t.Errorf("%s: object %v, %v", frame, object, err)
		}
	}
	for _, frame := range scanRefused {
		var e envelope
		if _, err := scanInto(&s, []byte(frame), &e); err == nil {
			t.Errorf("took %q", frame)
		}
	}
	for _, frame := range []string{`[1]`, `"s"`, `1`, `null`} {
		var e envelope
		if object, err := scanInto(&s, []byte(frame), &e); object || err != nil {
			t.Errorf("%s: object %v, %v; want a valid value that is no object", frame, object, err)
		}
	}
}

func TestScanEnvelopeMembers(t *testing.T) {
	var s jsonscan.Scanner
	var e envelope
	frame := ` { "params" : [1, {"id":9}] , "jsonrpc":"2.0","method": "a/b", "\u0069d" : "x" , "result":null,"error":{"code":1} } `
	if _, err := scanInto(&s, []byte(frame), &e); err != nil {
		t.Fatal(err)
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
