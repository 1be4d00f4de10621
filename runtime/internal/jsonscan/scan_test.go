package jsonscan

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

type collect map[string]string

func (c collect) SetMember(name, value []byte) { c[string(name)] = string(value) }

// Head hands over the members a cut line holds whole and names the member
// the cut fell in, whatever the cut value is.
func TestHead(t *testing.T) {
	for _, tc := range []struct {
		head string
		want collect
		cut  string
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"a":[1,2`, collect{"jsonrpc": `"2.0"`, "id": "3"}, "result"},
		{`{"id":"c-1","result":"abc`, collect{"id": `"c-1"`}, "result"},
		{`{"id":"c-1", "params" : [ {"x":tru`, collect{"id": `"c-1"`}, "params"},
		{`{"id":7,"method":"m","params":12345`, collect{"id": "7", "method": `"m"`}, "params"},
		{`{"result":{"deep":{"er":{}}},"id":1,"er`, collect{"result": `{"deep":{"er":{}}}`, "id": "1"}, ""},
		{`{"id":1,`, collect{"id": "1"}, ""},
		{`{"id":1`, collect{}, "id"},
		{`{"a":"\u00e9","b":"x`, collect{"a": `"\u00e9"`}, "b"},
		{`[1,2`, collect{}, ""},
		{``, collect{}, ""},
		// Head stops at what jsontext refuses, in the member it was in, from the value's first byte on
		// too (FuzzEnvelope found the engine answering such a request with a null id).
		{`{"id":4,"method":kkkkk"w`, collect{"id": "4"}, "method"},
		{`{"id":4,"method": @`, collect{"id": "4"}, "method"},
		{`{"id":4,"method":"ok","params":tru,"x":1}`, collect{"id": "4", "method": `"ok"`}, "params"},
	} {
		got := collect{}
		var s Scanner
		cut := s.Head([]byte(tc.head), got)
		if !reflect.DeepEqual(got, tc.want) || string(cut) != tc.cut {
			t.Errorf("Head(%s) = %v, cut %q; want %v, cut %q", tc.head, got, cut, tc.want, tc.cut)
		}
	}
}

// On a whole object, Head and Decode agree and nothing is cut.
func TestHeadOfWholeObject(t *testing.T) {
	const line = `{"jsonrpc":"2.0","id":3,"result":{"a":[1,2]}}`
	a, b := collect{}, collect{}
	var s Scanner
	if object, err := s.Decode([]byte(line), a); !object || err != nil {
		t.Fatalf("Decode refused a valid line: %v", err)
	}
	if cut := s.Head([]byte(line), b); cut != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("Head = %v, cut %q; Object gave %v", b, cut, a)
	}
}

// containersOf counts the objects and arrays of a valid JSON text with
// jsontext, the reference Containers is checked against.
func containersOf(text []byte) int {
	dec := jsontext.NewDecoder(bytes.NewReader(text), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	n := 0
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return n
		}
		if k := tok.Kind(); k == '{' || k == '[' {
			n++
		}
	}
}

// On valid JSON, Containers agrees with jsontext's count at every limit
// around it, escapes inside strings included.
func FuzzContainers(f *testing.F) {
	for _, s := range []string{`{}`, `[[],{}]`, `{"a":"[{\"","b":["\\",{"c":"\\\"]"}]}`, `"{"`, `["\\\\\\"]`, `[1,"x",[true,null]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if !jsontext.Value(text).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
			Containers(text, 1) // must not panic on anything
			return
		}
		n := containersOf(text)
		for _, limit := range []int{0, n - 1, n, n + 1} {
			if limit < 0 {
				continue
			}
			if got := Containers(text, limit); got != (n > limit) {
				t.Fatalf("Containers(%q, %d) = %v; the text has %d", text, limit, got, n)
			}
		}
	})
}

// A cut that falls after a member's colon, before its value starts, interrupts no value: Head names no
// member, as it does for a cut inside the name or before the colon. (A codec's DecodeHead takes a cut
// "result" or "params" for what the line is.)
func TestHeadCutBeforeValue(t *testing.T) {
	for _, head := range []string{
		`{"id":1,"result":`,
		`{"id":1,"result": `,
		`{"id":1,"result" : ` + "\n\t",
		`{"id":1,"result"`,
		`{"id":1,"resu`,
	} {
		got := collect{}
		var s Scanner
		if cut := s.Head([]byte(head), got); cut != nil || !reflect.DeepEqual(got, collect{"id": "1"}) {
			t.Errorf("Head(%q) = %v, cut %q; want map[id:1], no cut", head, got, cut)
		}
	}
}
