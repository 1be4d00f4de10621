package harness

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// ContentPolicy is the Harness's trace.content setting: what frames the
// Harness writes say of content. It applies to every frame except
// host_service requests, responses included.
type ContentPolicy string

// The content policies.
const (
	// ContentRedacted (the default) replaces content with "[redacted]".
	ContentRedacted ContentPolicy = "redacted"
	// ContentNone removes content members.
	ContentNone ContentPolicy = "none"
	// ContentFull keeps content as it is.
	ContentFull ContentPolicy = "full"
)

// Check reports whether p is a policy this package knows; "" is the
// default, redacted.
func (p ContentPolicy) Check() error {
	switch p {
	case "", ContentRedacted, ContentNone, ContentFull:
		return nil
	}
	return fmt.Errorf("harness: unknown content policy %q (want redacted, none or full)", string(p))
}

// contentKeys are the member names the content policy applies to, at any
// depth.
var contentKeys = map[string]bool{
	"content": true, "prompt": true, "active_profiles": true, "assistant_content": true,
	"arguments": true, "argument": true, "query": true, "filter": true, "scope": true,
	"result": true, "provenance": true, "vector": true, "vectors": true,
	"embedding_vector": true, "embedding_values": true, "input": true, "output": true,
	"text": true, "value": true,
}

// secretKey reports whether a member called name always holds
// "[secret redacted]", whatever the policy.
func secretKey(name string) bool {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "secret"), strings.Contains(n, "password"), strings.Contains(n, "api_key"):
		return true
	case n == "token", n == "key", n == "authorization", n == "cookie":
		return true
	}
	return strings.HasSuffix(n, "_token") || strings.HasSuffix(n, "-token")
}

var (
	redactedValue = jsontext.Value(`"` + agentpmmachine.Redacted + `"`)
	secretValue   = jsontext.Value(`"` + agentpmmachine.SecretRedacted + `"`)
)

// Redact applies policy p to the JSON value v, as the Harness does to the
// frames it writes: members named like content (content, prompt, query,
// input, output, text, value, ...) become "[redacted]" under redacted, are
// removed under none and are kept under full; members named like secrets
// (containing secret, password or api_key; token, key, authorization,
// cookie; ending _token or -token) become "[secret redacted]" under every
// policy. v must be valid JSON; the result is a new value, or v itself
// when nothing changes.
func Redact(v jsontext.Value, p ContentPolicy) (jsontext.Value, error) {
	if p == "" {
		p = ContentRedacted
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	if !v.IsValid() {
		return nil, fmt.Errorf("harness: redact: not a valid JSON value: %s", rpc.Truncate(string(v), rpc.MaxEcho))
	}
	if !mayRedact(v, p) {
		return v, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	if err := redactValue(dec, enc, p); err != nil {
		return nil, fmt.Errorf("harness: redact: %w", err)
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// mayRedact is a quick test: could any member of v be touched?
func mayRedact(v jsontext.Value, p ContentPolicy) bool {
	if len(v) == 0 || (v[0] != '{' && v[0] != '[') {
		return false
	}
	if p != ContentFull {
		return true
	}
	lower := bytes.ToLower(v)
	for _, s := range []string{"secret", "password", "api_key", "token", "key", "authorization", "cookie"} {
		if bytes.Contains(lower, []byte(s)) {
			return true
		}
	}
	return false
}

// redactValue copies the next value of dec to enc, applying p to the
// members of the objects it contains.
func redactValue(dec *jsontext.Decoder, enc *jsontext.Encoder, p ContentPolicy) error {
	kind := dec.PeekKind()
	if kind != '{' && kind != '[' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return enc.WriteValue(v)
	}
	if err := copyToken(dec, enc); err != nil { // { or [
		return err
	}
	end := jsontext.Kind('}')
	if kind == '[' {
		end = ']'
	}
	for dec.PeekKind() != end {
		if kind == '[' {
			if err := redactValue(dec, enc, p); err != nil {
				return err
			}
			continue
		}
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		key := name.String()
		var replace jsontext.Value
		switch {
		case secretKey(key):
			replace = secretValue
		case contentKeys[key] && p == ContentRedacted:
			replace = redactedValue
		case contentKeys[key] && p == ContentNone:
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		default:
			if err := enc.WriteToken(jsontext.String(key)); err != nil {
				return err
			}
			if err := redactValue(dec, enc, p); err != nil {
				return err
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return err
		}
		if err := writeMember(enc, key, replace); err != nil {
			return err
		}
	}
	return copyToken(dec, enc) // } or ]
}

func copyToken(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	return enc.WriteToken(tok)
}

func writeMember(enc *jsontext.Encoder, name string, v jsontext.Value) error {
	if err := enc.WriteToken(jsontext.String(name)); err != nil {
		return err
	}
	return enc.WriteValue(v)
}
