package redact

import (
	"bytes"
	"testing"
)

// cleanCorpus are documents for which clean must give rewrite's answer:
// frames with counts named like tokens, secrets by name and by shape,
// escapes, invalid UTF-8, malformed and deep documents.
var cleanCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`,
	`{"tokenizer":"cl100k","maxTokens":5,"totalTokens":7,"tokens":[1,2]}`,
	`{"access_token":"abc"}`, `{"apiKey":"x"}`, `{"Authorization":"Bearer abcdefghijkl"}`, `{"AUTHORIZATION":7}`,
	`{"api-key":{"a":1}}`, `{"x":{"clientSecret":[1]}}`, `{"password":null,"token":true,"secret":false}`,
	`{"text":"count the tokens in this text"}`, `{"text":"token abcdefghijkl"}`, `{"text":"the API is basic"}`,
	`{"text":"Bearer abcdefghijklmnop"}`, `{"t":"sk-abcdefghijklmnopqrstuvwx"}`, `{"t":"sk\u002dabcdefghijklmnopqrstuvwx"}`,
	`{"tok\u0065n":"abc"}`, `["hunter2hunter2"]`, `"hunter2hunter2"`, `{"a":"hunter\u0032hunter2"}`,
	`{"t":"to\u212aen abcdefghijkl"}`, "{\"t\":\"to\u212aen abcdefghijkl\"}", "{\"t\":\"token\xff abcdefghijkl\"}",
	"{\"t\":\"caf\xe9 au lait, nothing\"}", `{"a":1} {"b":2}`, `{"password":"x"} junk`, `{"a":01}`, `{"a":1.}`,
	`{"a":-0.5e+3,"b":[true,false,null,{}]}`, ` [ ] `, ``, `{`, `{"a"}`, `{"a":}`, `[1,]`, `{"a":1,}`, `"\x"`,
	"\"a\x01b\"", `{"a":"b\"c"}`, `{"dup":1,"dup":"hunter2hunter2"}`, `[[[[[[[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"url":"postgres://app:s3cretpw@db:5432/x"}`, `{"note":"password=opensesame"}`, `{"key":"v","pat":"p","dedupe_key":"d"}`,
	`{"sessionId":"s","authMethods":[{"id":"a"}]}`, `{"ÄpiKey":"x"}`, `{"a":"\ud800"}`,
}

func TestCleanAgreesWithRewrite(t *testing.T) {
	r := New("hunter2hunter2")
	for _, doc := range cleanCorpus {
		checkClean(t, r, []byte(doc))
		checkClean(t, nil, []byte(doc))
	}
	deep := bytes.Repeat([]byte("["), maxCleanDepth+1)
	deep = append(deep, bytes.Repeat([]byte("]"), maxCleanDepth+1)...)
	checkClean(t, r, deep)
}

func checkClean(t *testing.T, r *Redactor, doc []byte) {
	t.Helper()
	slow := r.rewrite(doc)
	if got := r.JSON(doc); !bytes.Equal(got, slow) {
		t.Fatalf("JSON(%q) = %q, rewrite gives %q", doc, got, slow)
	}
	if r.clean(doc) && !bytes.Equal(slow, doc) {
		t.Fatalf("clean(%q) but rewrite changes it to %q", doc, slow)
	}
}

// The reply trace sees most (counts named ...Tokens) takes the fast path.
func TestCleanTakesTheFastPath(t *testing.T) {
	r := New("hunter2hunter2")
	for _, doc := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}`,
		`{"tokenizer":"cl100k","maxTokens":5}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"content":{"type":"text","text":"caf\u00e9 \n na\u00efve"}}}}`,
	} {
		if !r.clean([]byte(doc)) {
			t.Errorf("clean(%s) = false", doc)
		}
	}
	doc := []byte(`{"usage":{"inputTokens":120,"outputTokens":48},"text":"plain prose of a reply"}`)
	if n := testing.AllocsPerRun(100, func() { r.JSON(doc) }); n != 0 {
		t.Errorf("JSON of a clean document: %v allocations", n)
	}
}

func TestKeyNameBytes(t *testing.T) {
	for _, name := range []string{"inputTokens", "tokenizer", "access_token", "apiKey", "Authorization", "x-api-key",
		"key", "KEY", "pat", "p_a_t", "sessionId", "ÄpiKey", "a_very_long_member_name_that_is_longer_than_sixty_four_bytes_password"} {
		if got, want := keyName([]byte(name)), KeyName(name); got != want {
			t.Errorf("keyName(%q) = %v, KeyName says %v", name, got, want)
		}
	}
}

func FuzzCleanAgrees(f *testing.F) {
	for _, doc := range cleanCorpus {
		f.Add([]byte(doc), "hunter2hunter2")
	}
	f.Fuzz(func(t *testing.T, doc []byte, secret string) {
		r := New(secret)
		checkClean(t, r, doc)
		if got, want := keyName(doc), KeyName(string(doc)); got != want {
			t.Fatalf("keyName(%q) = %v, KeyName says %v", doc, got, want)
		}
	})
}
