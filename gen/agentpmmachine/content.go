package agentpmmachine

// Hand-written beside the generated code: the Harness's content policy.

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// The strings the content policy (trace.content) puts in place of content.
// The policy applies to every frame the Harness writes except host_service
// requests: under redacted (the default) content keys (content, prompt,
// query, filter, scope, result, provenance, vector(s), input, output, text,
// value, arguments, ...) hold Redacted; under none they are removed; under
// full they keep their value. Keys that look secret (containing secret,
// password or api_key; token, key, authorization, cookie; ending _token or
// -token) always hold SecretRedacted.
const (
	Redacted       = "[redacted]"
	SecretRedacted = "[secret redacted]"
)

// Content says what the content policy left of a content member.
type Content int

// What a content member holds.
const (
	// ContentAbsent: the member is absent (policy none, or nothing to say).
	ContentAbsent Content = iota
	// ContentRedacted: the member holds Redacted, not the content.
	ContentRedacted
	// ContentSecretRedacted: the member holds SecretRedacted.
	ContentSecretRedacted
	// ContentPresent: the member holds the content itself.
	ContentPresent
)

// String names c.
func (c Content) String() string {
	switch c {
	case ContentAbsent:
		return "absent"
	case ContentRedacted:
		return "redacted"
	case ContentSecretRedacted:
		return "secret redacted"
	}
	return "present"
}

// ContentOf classifies the raw value of a content member (nil when absent),
// so that a redaction marker is never mistaken for output. A value that is
// really the string "[redacted]" cannot be told from a redacted one; the
// Harness run with trace.content full never writes the markers.
func ContentOf(v jsontext.Value) Content {
	switch {
	case v == nil:
		return ContentAbsent
	case bytes.Equal(v, redactedJSON):
		return ContentRedacted
	case bytes.Equal(v, secretRedactedJSON):
		return ContentSecretRedacted
	}
	return ContentPresent
}

var (
	redactedJSON       = jsontext.Value(`"` + Redacted + `"`)
	secretRedactedJSON = jsontext.Value(`"` + SecretRedacted + `"`)
)

// OutputContent says what the content policy left of the Run's output.
func (r *StartRunResult) OutputContent() Content { return ContentOf(r.Output) }
