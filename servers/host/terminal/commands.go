package terminal

import (
	"errors"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"strings"
)

// Commands is an allow-list of the commands an agent may run, one pattern
// per entry:
//
//   - for a command and its arguments (ACP's command and args, run
//     without a shell), the first word of a pattern is the command exactly
//     as the agent sends it ("echo" does not allow "/tmp/x/echo"), each
//     further word matches one argument ("*" any characters, "?" one), and
//     a last word "**" matches any remaining arguments;
//   - for a command line a shell is to run, see MatchShellLine: only a
//     plain line (PlainShellLine) is decided word by word; any other line
//     needs a pattern without wildcards equal to it.
//
// The zero Commands allows nothing. It is safe for concurrent use.
type Commands struct {
	patterns []string
	words    [][]string
}

// NewCommands parses patterns; an empty pattern is an error.
func NewCommands(patterns []string) (*Commands, error) {
	c := &Commands{}
	for _, p := range patterns {
		w := strings.Fields(p)
		if len(w) == 0 {
			return nil, errors.New("an empty command pattern")
		}
		c.patterns = append(c.patterns, p)
		c.words = append(c.words, w)
	}
	return c, nil
}

// Match returns the pattern that allows command with args, if one does.
func (c *Commands) Match(command string, args []string) (string, bool) {
	if c == nil {
		return "", false
	}
	for _, words := range c.words {
		if matchWords(words, command, args) {
			return strings.Join(words, " "), true
		}
	}
	return "", false
}

// MatchShellLine returns the pattern that allows a command line a shell is
// to run, if one does. A plain line (PlainShellLine) is decided like the
// command and arguments its words are. Any other line may hold a second
// command (;, &&, |, a newline), a substitution ($(...), backticks), a
// redirection or an expansion, so no wildcard may allow it: only a pattern
// without "*" or "?" that is the same line (spaces and tabs around it
// aside) does.
func (c *Commands) MatchShellLine(line string) (pattern string, exact, ok bool) {
	if c == nil {
		return "", false, false
	}
	if PlainShellLine(line) {
		words := strings.Fields(line)
		if len(words) == 0 {
			return "", false, false
		}
		p, ok := c.Match(words[0], words[1:])
		return p, false, ok
	}
	want := strings.Trim(line, " \t")
	for _, p := range c.patterns {
		if p = strings.Trim(p, " \t"); p == want && !strings.ContainsAny(p, "*?") {
			return p, true, true
		}
	}
	return "", false, false
}

// PlainShellLine reports whether line consists of words of plain
// characters separated by spaces and tabs: ASCII letters and digits and
// - _ . / : + =, with no = starting a word (zsh expands =cmd). No shell of
// the families servers/host/shells knows (sh-like, fish, csh, PowerShell,
// cmd) gives such a line any meaning but its words: there is nothing in it
// to quote, expand, glob, redirect or start another command with.
func PlainShellLine(line string) bool {
	start := true // at the start of a word
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			start = true
			continue
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '=' && !start:
		case strings.IndexByte("-_./:+", c) >= 0:
		default:
			return false
		}
		start = false
	}
	return true
}

// matchWords matches argv against a pattern's words, by the permission
// rule's command matching.
func matchWords(words []string, command string, args []string) bool {
	return permission.MatchCommand(words, append([]string{command}, args...))
}

// Wildcard matches s against a pattern in which "*" matches any
// characters (slashes too) and "?" one character; everything else is
// literal. It is permission.Wildcard.
func Wildcard(pat, s string) bool { return permission.Wildcard(pat, s) }
