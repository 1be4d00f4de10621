package harness_test

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/servers/harness"
)

// Redact keeps any JSON valid, is idempotent, and leaves no content key
// under none and no secret anywhere.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		`{"output":{"text":"hi"},"n":[1,{"query":"q"}]}`,
		`{"api_key":"k","nested":{"x-token":"t","value":null}}`,
		`[{"content":"c"},"content",{"Cookie":{"a":1}}]`,
		`"plain"`, `12`, `{}`, `{"a":{"b":{"c":{"prompt":[1,2,3]}}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsontext.Value(s).IsValid() {
			if _, err := harness.Redact(jsontext.Value(s), harness.ContentRedacted); err == nil {
				t.Fatalf("invalid JSON accepted: %q", s)
			}
			return
		}
		for _, p := range []harness.ContentPolicy{harness.ContentRedacted, harness.ContentNone, harness.ContentFull} {
			out, err := harness.Redact(jsontext.Value(s), p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if !out.IsValid() {
				t.Fatalf("%s: invalid output %q", p, out)
			}
			again, err := harness.Redact(out, p)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%s: not idempotent: %q then %q", p, out, again)
			}
		}
	})
}

// ParseScript never panics, and what it accepts gives Options.
func FuzzParseScript(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"content":"none","runs":[{"steps":[{"end":{"status":"ended"}}]}]}`,
		`{"runs":[{"input":"x","steps":[{"emit":{"event_type":"run_started","payload":{"payload_type":"empty"}}}]}]}`,
		`{"agent":{"max_turns":2,"knowledge":{"p":{"registry_id":"k"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := harness.ParseScript(data)
		if err != nil {
			return
		}
		if o := s.Options(nil); o.Run == nil {
			t.Fatal("no Run")
		}
	})
}
