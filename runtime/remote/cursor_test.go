package remote

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestAppendWithCursor(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{},"_meta":{"acp/cursor":"7"}}}`},
		{`{"jsonrpc":"2.0","method":"n","params":{}}`, `{"jsonrpc":"2.0","method":"n","params":{"_meta":{"acp/cursor":"7"}}}`},
		{`{"jsonrpc":"2.0","method":"n","params":{ "a" : 1 } }`, `{"jsonrpc":"2.0","method":"n","params":{ "a" : 1,"_meta":{"acp/cursor":"7"} } }`},
		{`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"_meta":{"x":1},"toolCall":{}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"_meta":{"acp/cursor":"7","x":1},"toolCall":{}}}`},
		{`{"jsonrpc":"2.0","id":3,"result":{"_meta":{}}}`, `{"jsonrpc":"2.0","id":3,"result":{"_meta":{"acp/cursor":"7"}}}`},
		{`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"acp/cursor":"7"}}}`},
		{`{"result":{"a":"\u00e9"},"jsonrpc":"2.0","id":3}`, `{"result":{"a":"\u00e9","_meta":{"acp/cursor":"7"}},"jsonrpc":"2.0","id":3}`},
		// Unchanged: no object to hold it, a _meta that is not an object or already names a cursor, bad JSON.
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x"}}`, ""},
		{`{"jsonrpc":"2.0","id":3,"result":null}`, ""},
		{`{"jsonrpc":"2.0","method":"n","params":[1]}`, ""},
		{`{"jsonrpc":"2.0","method":"n"}`, ""},
		{`{"jsonrpc":"2.0","method":"n","params":{"_meta":null}}`, ""},
		{`{"jsonrpc":"2.0","method":"n","params":{"_meta":{"acp/cursor":"1"}}}`, ""},
		{`{"jsonrpc":"2.0","method":"n","params":{"a":1,"a":2}}`, ""},
		{`{"jsonrpc":"2.0","method":"n","params":{}} x`, ""},
		{`{"jsonrpc":"2.0","method":"n","params":{}`, ""},
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got := string(appendWithCursor([]byte("prefix:"), []byte(tc.in), "7")); got != "prefix:"+want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, want)
		}
	}
}

// The cursor is added to valid messages only, and what comes out is valid; the rest of the message is
// unchanged byte for byte.
func FuzzAppendWithCursor(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n","params":{"_meta":{"x":1},"a":[1,{"_meta":2}]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := appendWithCursor(nil, b, "12")
		if string(out) == string(b) {
			return
		}
		if !jsontext.Value(b).IsValid() || !jsontext.Value(out).IsValid() {
			t.Fatalf("%q became %q", b, out)
		}
		// Taking out what was inserted, in one of its forms, at one place gives the message back.
		o := string(out)
		for _, ins := range []string{`"acp/cursor":"12",`, `"acp/cursor":"12"`, `,"_meta":{"acp/cursor":"12"}`, `"_meta":{"acp/cursor":"12"}`} {
			for i := strings.Index(o, ins); i >= 0; i = next(o, ins, i) {
				if o[:i]+o[i+len(ins):] == string(b) {
					return
				}
			}
		}
		t.Fatalf("%q became %q: more than the cursor changed", b, out)
	})
}

func next(s, sub string, i int) int {
	j := strings.Index(s[i+1:], sub)
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
