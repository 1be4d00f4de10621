// Package naming turns wire names (snake_case, camelCase, kebab-case, dotted)
// into exported Go identifiers, with the usual Go initialisms.
package naming

import (
	"strings"
	"unicode"
)

var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "json": "JSON", "http": "HTTP", "https": "HTTPS",
	"api": "API", "mcp": "MCP", "acp": "ACP", "vm": "VM", "uuid": "UUID", "mime": "MIME", "sha": "SHA",
	"ttl": "TTL", "ui": "UI", "ip": "IP", "tcp": "TCP", "io": "IO", "os": "OS", "cpu": "CPU", "llm": "LLM",
	"rpc": "RPC", "sse": "SSE", "ms": "MS", "usd": "USD", "hitl": "HITL", "tui": "TUI", "ide": "IDE",
}

// Go returns the exported Go identifier for a wire name: "default_shell_id" ->
// "DefaultShellID", "sessionId" -> "SessionID", "_meta" -> "Meta".
func Go(name string) string {
	var b strings.Builder
	for _, w := range Words(name) {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	s := b.String()
	if s == "" || unicode.IsDigit(rune(s[0])) {
		s = "X" + s
	}
	return s
}

// Words splits a wire name at separators and lower-to-upper case changes.
func Words(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) || unicode.IsDigit(cur[len(cur)-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]))):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}
