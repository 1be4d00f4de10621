package redact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/redact"
)

func TestEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "GITHUB_TOKEN": true, "DATABASE_URL": true,
		"SLACK_WEBHOOK": true, "SLACK_WEBHOOK_URL": true, "AWS_SECRET_ACCESS_KEY": true, "SENTRY_DSN": true,
		"CODEX_API_KEY": true, "PGPASSWORD": true, "NPM_AUTH": true, "my_service_pat": true,
		"PATH": false, "HOME": false, "LANG": false, "OPENAI_BASE_URL": false, "TERM": false, "GOFLAGS": false,
	} {
		if got := redact.EnvName(name); got != want {
			t.Errorf("EnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestKeyName(t *testing.T) {
	for name, want := range map[string]bool{
		"apiKey": true, "api_key": true, "password": true, "clientSecret": true, "accessToken": true,
		"token": true, "Authorization": true, "Cookie": true, "private_key": true, "key": true,
		"sessionId": false, "authMethods": false, "dedupe_key": false, "inputTokens": false,
		"maxTokens": false, "name": false, "env": false, "vars": false, "totalTokens": false,
	} {
		if got := redact.KeyName(name); got != want {
			t.Errorf("KeyName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestStringMasksValuesAndShapes(t *testing.T) {
	r := redact.FromEnv([]string{"PATH=/usr/bin:/bin", "MY_SERVICE_TOKEN=hunter2hunter2", "DEBUG=1", "X_API_KEY=ab"})
	for _, tc := range []struct{ in, want string }{
		{"auth failed for hunter2hunter2!", "auth failed for [REDACTED]!"},
		{"PATH is /usr/bin:/bin", "PATH is /usr/bin:/bin"}, // not a secret name
		{"key ab is short", "key ab is short"},             // shorter than MinValueLen
		{"using sk-proj-abcdefghijklmnopqrstuv now", "using [REDACTED] now"},
		{"sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", "[REDACTED]"},
		{"push with ghp_0123456789abcdefghijABCDEFGHIJ", "push with [REDACTED]"},
		{"xoxb-1234567890-abcdefghij", "[REDACTED]"},
		{"id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED]."},
		{"Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer [REDACTED]"},
		{"dial postgres://app:s3cretpw@db:5432/x", "dial postgres://app:[REDACTED]db:5432/x"},
		{"jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0NTY.SflKxwRJSMeKKF2QT4", "jwt [REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----", "[REDACTED]"},
		{"password=opensesame and more", "password=[REDACTED] and more"},
		{"nothing to see", "nothing to see"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var nilR *redact.Redactor
	if got := nilR.String("hunter2hunter2 sk-abcdefghijklmnopqrstuvwx"); got != "hunter2hunter2 [REDACTED]" {
		t.Errorf("nil Redactor: %q", got)
	}
}

func TestStringMasksTheLongestValueWhole(t *testing.T) {
	r := redact.New("abcdef", "abcdefghijkl")
	if got := r.String("x abcdefghijkl y"); got != "x [REDACTED] y" {
		t.Errorf("got %q", got)
	}
}

func TestJSON(t *testing.T) {
	r := redact.New("hunter2hunter2")
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"apiKey":"k-123","nested":{"password":{"x":1},"ok":true},"list":[{"token":42}]}`,
			`{"a":1,"apiKey":"[REDACTED]","nested":{"password":"[REDACTED]","ok":true},"list":[{"token":"[REDACTED]"}]}`},
		{`{"note":"the key is hunter2hunter2"}`, `{"note":"the key is [REDACTED]"}`},
		{`{"token":null,"password":false}`, `{"token":null,"password":false}`},
		{`{"sessionId":"s1","usage":{"inputTokens":5}}`, `{"sessionId":"s1","usage":{"inputTokens":5}}`},
		{`{"env":[{"name":"OPENAI_API_KEY","value":"sk-abcdefghijklmnopqrstuvwx"}]}`,
			`{"env":[{"name":"OPENAI_API_KEY","value":"[REDACTED]"}]}`},
		{`not json hunter2hunter2`, `not json [REDACTED]`},
		{`{"password":"cut here`, `{"password":"cut here`}, // malformed: masked as text only
		{`{"dup":1,"dup":"hunter2hunter2"}`, `{"dup":1,"dup":"[REDACTED]"}`},
	} {
		if got := string(r.JSON([]byte(tc.in))); got != tc.want {
			t.Errorf("JSON(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	in := []byte(`{"a": 1}`)
	if got := r.JSON(in); &got[0] != &in[0] {
		t.Errorf("JSON copied a document it did not change")
	}
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"apiKey":"sk-abcdefghijklmnopqrstuvwx","x":[1,"hunter2hunter2"]}`), "hunter2hunter2")
	f.Add([]byte(`{"password":`), "abcdefgh")
	f.Add([]byte(`"abc"`), "")
	f.Add([]byte(`999999`), "999999")           // a value that is a number
	f.Add([]byte(`{"n":[1234567]}`), "1234567") // and inside one
	f.Add([]byte(`0000qq`), "0000qq")           // not one JSON value: masked as text
	f.Add([]byte(`{"abcdefgh":1}`), "abcdefgh") // a name
	f.Fuzz(func(t *testing.T, doc []byte, secret string) {
		r := redact.New(secret)
		out := r.JSON(doc)
		// A secret of letters and digits that stands verbatim in a valid
		// document never survives in the output. (One that spans JSON
		// syntax, or stands only escaped, is not a value the document holds.)
		alnum := len(secret) >= redact.MinValueLen && strings.Trim(secret, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
		if alnum && !strings.Contains("REDACTED", secret) && strings.Contains(string(doc), secret) && strings.Contains(string(out), secret) {
			t.Fatalf("secret %q survives in %s", secret, out)
		}
	})
}

func ExampleRedactor_String() {
	env := []string{"PATH=/usr/bin", "OPENAI_API_KEY=not-a-real-key-1234"}
	r := redact.FromEnv(env)
	fmt.Println(r.String("401: invalid key not-a-real-key-1234"))
	fmt.Println(string(r.JSON([]byte(`{"method":"authenticate","params":{"apiKey":"x1"}}`))))
	// Output:
	// 401: invalid key [REDACTED]
	// {"method":"authenticate","params":{"apiKey":"[REDACTED]"}}
}

func BenchmarkJSON(b *testing.B) {
	r := redact.FromEnv([]string{"OPENAI_API_KEY=not-a-real-key-1234"})
	doc := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","title":"Read src/main.go","content":[{"type":"content","content":{"type":"text","text":"package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n"}}],"rawInput":{"path":"/workspace/src/main.go","limit":200}}}}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		r.JSON(doc)
	}
}
