// Package redact keeps secrets out of what bridgekit quotes: a child's
// stderr in an error, a peer's frame in a log line, a trace on disk.
//
// One Redactor is used wherever bridgekit quotes a peer's or a child's
// output. It masks
//
//   - the values it was told about (the secret variables passed to a child:
//     see FromEnv), wherever they appear;
//   - well-known token shapes (OpenAI and Anthropic keys, GitHub, Slack,
//     AWS and Google keys, JWTs, bearer tokens, PEM private keys, the
//     password of a URL's user info);
//
// and, in JSON, the values of members whose names look secret (JSON).
//
// Masking is conservative: a masked value is replaced by Mask, never
// shortened or hashed, so nothing of it can be recovered. A nil *Redactor
// masks token shapes only.
package redact

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// MinValueLen is the shortest value FromEnv and Add mask: shorter ones
// ("1", "true", "on") appear in text by chance and are not secrets worth
// the noise.
const MinValueLen = 6

// envWords mark the names of environment variables that hold secrets.
var envWords = []string{
	"SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY", "API_KEY",
	"ACCESS_KEY", "PRIVATE_KEY", "PRIVATEKEY", "AUTH", "COOKIE", "SESSION_KEY", "SIGNING_KEY", "WEBHOOK",
	"DATABASE_URL", "DB_URL", "DSN", "CONNECTION_STRING", "CONN_STR", "BEARER", "JWT",
}

// EnvName reports whether an environment variable's name looks like it
// holds a secret: OPENAI_API_KEY, GITHUB_TOKEN, DATABASE_URL,
// SLACK_WEBHOOK, AWS_SECRET_ACCESS_KEY, SENTRY_DSN, ...
func EnvName(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_PAT") || strings.HasSuffix(n, "_PWD") ||
		slices.ContainsFunc(envWords, func(w string) bool { return strings.Contains(n, w) })
}

// keyWords mark JSON member names that hold secrets, compared lower-case
// with '-' and '_' removed. They are narrower than envWords on purpose:
// protocol documents are full of names such as sessionId, authMethods,
// dedupe_key and inputTokens that hold no secret.
var keyWords = []string{"secret", "password", "passwd", "passphrase", "apikey", "credential", "authorization",
	"cookie", "privatekey", "webhookurl", "databaseurl", "connectionstring"}

// KeyName reports whether a JSON member's name looks like it holds a
// secret: apiKey, api_key, password, clientSecret, accessToken, token,
// authorization, Cookie, ... A name ending in "tokens" (inputTokens) is a
// count, not a secret.
func KeyName(name string) bool {
	n := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', ' ':
			return -1
		}
		return r
	}, strings.ToLower(name))
	return strings.HasSuffix(n, "token") || n == "key" || n == "pat" ||
		slices.ContainsFunc(keyWords, func(w string) bool { return strings.Contains(n, w) })
}

// A shape is a well-known token shape: each match is masked whole except
// for the group named keep, which stays (a "Bearer " prefix, a URL's
// scheme and user). The regular expression runs only on text that holds
// one of its needles (compared lower-case where fold is set), so that
// ordinary text costs a few substring searches, not a regexp run each.
type shape struct {
	re      *regexp.Regexp
	needles []string
	fold    bool
}

var shapes = []shape{
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`), []string{"PRIVATE KEY-----"}, false},
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`), []string{"sk-"}, false}, // OpenAI, Anthropic (sk-ant-...)
	{regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, false},
	{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`), []string{"xox"}, false},                                 // Slack
	{regexp.MustCompile(`\bhooks\.slack\.com/services/[A-Za-z0-9/]+`), []string{"hooks.slack.com"}, false},          // Slack webhooks
	{regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`), []string{"AKIA", "ASIA"}, false},                            // AWS access key ids
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`), []string{"AIza"}, false},                                       // Google API keys
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), []string{"eyJ"}, false}, // JWTs
	{regexp.MustCompile(`(?i)(?P<keep>\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{8,}`), []string{"bearer", "basic", "token"}, true},
	{regexp.MustCompile(`(?P<keep>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+@`), []string{"://"}, false},
	{regexp.MustCompile(`(?i)(?P<keep>\b[a-z0-9_\-]*(?:secret|password|passwd|api_?key|access_?token|auth_?token)\s*[=:]\s*)[^\s,;&"']{4,}`),
		[]string{"secret", "password", "passwd", "api", "token"}, true},
}

// A case-folded shape (fold) must need, after its needle, one of the bytes
// of foldGate (clean.go): the JSON pre-filter skips folded needles in text
// without them.

// minShapeLen is shorter than any token shape: shorter text is not searched.
const minShapeLen = 8

// A Redactor masks secrets in text and JSON. The zero value and nil mask
// token shapes only; Add and FromEnv add exact values.
type Redactor struct {
	values []string // longest first, so a value containing another is masked whole
}

// New returns a Redactor that masks values (those of MinValueLen bytes or
// more) and token shapes.
func New(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// FromEnv returns a Redactor that masks the values of the secret-looking
// variables (EnvName) of env, a list of NAME=VALUE as os.Environ and
// exec.Cmd.Env hold, and token shapes. Pass the environment given to a
// child, so that what the child echoes of it is masked.
func FromEnv(env []string) *Redactor {
	r := &Redactor{}
	for _, kv := range env {
		if name, value, ok := strings.Cut(kv, "="); ok && EnvName(name) {
			r.Add(value)
		}
	}
	return r
}

// Add makes r mask each of values (those of MinValueLen bytes or more). It
// must not be called while r is in use by another goroutine.
func (r *Redactor) Add(values ...string) {
	for _, v := range values {
		if len(v) >= MinValueLen && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	slices.SortStableFunc(r.values, func(a, b string) int { return len(b) - len(a) })
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, v := range r.values {
			if strings.Contains(s, v) {
				s = strings.ReplaceAll(s, v, Mask)
			}
		}
	}
	if len(s) < minShapeLen {
		return s
	}
	lower := ""
	for _, sh := range shapes {
		text := s
		if sh.fold {
			if lower == "" {
				lower = strings.ToLower(s)
			}
			text = lower
		}
		if slices.ContainsFunc(sh.needles, func(n string) bool { return strings.Contains(text, n) }) {
			if m := maskShape(sh.re, s); m != s {
				s, lower = m, ""
			}
		}
	}
	return s
}

// Bytes is String for a byte slice; it returns b itself when nothing is
// masked.
func (r *Redactor) Bytes(b []byte) []byte {
	s := r.String(string(b))
	if s == string(b) {
		return b
	}
	return []byte(s)
}

func maskShape(re *regexp.Regexp, s string) string {
	keep := re.SubexpIndex("keep")
	if keep < 0 {
		return re.ReplaceAllLiteralString(s, Mask)
	}
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if sub == nil {
			return Mask
		}
		return sub[keep] + Mask
	})
}

// JSON returns doc with the value of every member whose name looks secret
// (KeyName) replaced by the string Mask, and every other string, name and
// number masked as String masks it. Member order and every other value are
// kept; the result is compact. A document that is not valid JSON is masked as text
// (String), so nothing of a secret survives a malformed frame either. It
// returns doc itself when nothing is masked.
func (r *Redactor) JSON(doc []byte) []byte {
	if r.clean(doc) {
		return doc
	}
	return r.mask(doc)
}

// mask is JSON without the pre-filter: it decodes doc token by token and
// re-encodes what it masks.
func (r *Redactor) mask(doc []byte) []byte {
	dec := jsontext.NewDecoder(bytes.NewReader(doc), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	changed, values := false, 0
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			if err != io.EOF || dec.StackDepth() != 0 || out.Len() == 0 {
				// Not one JSON value (cut short, or invalid): masked as
				// text.
				return r.Bytes(doc)
			}
			break
		}
		if dec.StackDepth() == 0 {
			// A top-level value ended here. The decoder reads a stream of
			// them ("00010000" is four numbers); a document is one, and
			// the rest is masked as text.
			if values++; values > 1 {
				return r.Bytes(doc)
			}
		}
		if tok.Kind() == '"' {
			s := tok.String()
			// A name is the token read at an even index of an object.
			if kind, n := dec.StackIndex(dec.StackDepth()); kind == '{' && n%2 == 1 {
				// A name is masked as text too: a map keyed by a secret
				// must not show it.
				if m := r.String(s); m != s {
					changed = true
					tok = jsontext.String(m)
				}
				if err := enc.WriteToken(tok); err != nil {
					return r.Bytes(doc)
				}
				if KeyName(s) {
					val, err := dec.ReadValue()
					if err != nil {
						return r.Bytes(doc)
					}
					if kind := val.Kind(); kind == '"' || kind == '0' || kind == '{' || kind == '[' {
						changed = true
						err = enc.WriteToken(jsontext.String(Mask))
					} else {
						err = enc.WriteValue(val) // null, true, false: nothing to hide
					}
					if err != nil {
						return r.Bytes(doc)
					}
				}
				continue
			}
			if m := r.String(s); m != s {
				changed = true
				tok = jsontext.String(m)
			}
		}
		if tok.Kind() == '0' {
			// A known value may be all digits: a number holding one is
			// masked whole.
			if s := tok.String(); r.String(s) != s {
				changed = true
				tok = jsontext.String(Mask)
			}
		}
		if err := enc.WriteToken(tok); err != nil {
			return r.Bytes(doc)
		}
	}
	if !changed {
		return doc
	}
	return bytes.TrimRight(out.Bytes(), "\n")
}
