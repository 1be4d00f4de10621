package frames

import (
	"strings"
	"testing"
)

// sniffCorpus holds lines sniffFast must read as sniffSlow does, or leave
// to it: frames of every family, duplicates at each depth, escapes,
// invalid UTF-8, surrogates, malformed and trailing bytes.
var sniffCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":1}}}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c1","method":"initialize","payload":{}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"result","id":"i","service":"model","result":{},"payload":[]}`,
	`{"protocol":"other","jsonrpc":"2.0"}`, `{"protocol":7,"jsonrpc":"2.0"}`, `{"protocol":"agentpm-s\u0065rvice"}`,
	`{"jsonrpc":"2.0","jsonrpc":"2.0"}`, `{"params":{"a":1,"a":2},"jsonrpc":"2.0"}`, `{"p":[{"a":1},{"a":1}],"jsonrpc":"x"}`,
	`{"p":{"a":{"b":1},"b":{"b":1}},"result":1}`, `{"json\u0072pc":"2.0"}`, `{"p":{"\u0061":1,"a":2},"jsonrpc":1}`,
	"{\"p\":\"caf\xc3\xa9\",\"jsonrpc\":1}", "{\"p\":\"bad\xff\",\"jsonrpc\":1}", `{"p":"\ud83d\ude00","jsonrpc":1}`,
	`{"p":"\ud800","jsonrpc":1}`, `{"p":"\u00e9\n\"","jsonrpc":1}`, `{"jsonrpc":"2.0"} trailing`, `{"jsonrpc":"2.0",}`,
	`{"a":01,"jsonrpc":1}`, `{"a":1.,"jsonrpc":1}`, `{"a":-0.5e+3,"jsonrpc":1}`, `{"a":tru,"jsonrpc":1}`, `{}`, ` { } `,
	`[1]`, `"x"`, ``, `{`, `{"a"}`, `{"a":}`, `{"a":1 "b":2}`, `{"jsonrpc":"2.0","x":[1,]}`, "{\"a\":\"\x01\"}",
	`{"result":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `,"jsonrpc":1}`,
}

func TestSniffFastAgrees(t *testing.T) {
	c := New(Unknown)
	for _, line := range sniffCorpus {
		for _, known := range []Family{Unknown, Harn, ACP} {
			checkSniff(t, c, []byte(line), known)
		}
	}
	// The common frames are decided fast.
	for _, line := range sniffCorpus[:4] {
		if _, _, ok := sniffFast([]byte(line), Unknown, new([][]byte)); !ok {
			t.Errorf("sniffFast left %s to sniffSlow", line)
		}
	}
}

func checkSniff(t *testing.T, c *Classifier, line []byte, known Family) {
	t.Helper()
	fam, tm, ok := sniffFast(line, known, &c.sniffNames)
	if !ok {
		return
	}
	sfam, stm := c.sniffSlow(line, known)
	if fam != sfam || tm != stm {
		t.Fatalf("sniff(%q, %q): fast %q %+v, jsontext %q %+v", line, known, fam, tm, sfam, stm)
	}
}

func FuzzSniff(f *testing.F) {
	for _, s := range sniffCorpus {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, line []byte, harn bool) {
		known := Unknown
		if harn {
			known = Harn
		}
		checkSniff(t, New(Unknown), line, known)
	})
}

func BenchmarkSniff(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"sess-0123456789","prompt":[{"type":"text","text":"Summarise the open pull requests and flag the ones that touch the runtime."}]}}`)
	c := New(Unknown)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sniffFast(line, Unknown, &c.sniffNames)
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.sniffSlow(line, Unknown)
		}
	})
}
