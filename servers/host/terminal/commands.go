package terminal

import (
	"errors"
	"slices"
	"strings"

	"github.com/bridgekit/bridgekit/servers/host/permission"
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
	cwd      [][]string // per pattern: where it may run; nil anywhere
}

// CommandRule is a command pattern and, when Cwd is set, the workspace
// directories (slash-separated patterns relative to the workspace, "."
// its root, permission.Glob's syntax) the command may run in.
type CommandRule struct {
	Pattern string
	Cwd     []string
}

// NewCommands parses patterns; an empty pattern is an error.
func NewCommands(patterns []string) (*Commands, error) {
	rules := make([]CommandRule, len(patterns))
	for i, p := range patterns {
		rules[i] = CommandRule{Pattern: p}
	}
	return NewCommandRules(rules)
}

// NewCommandRules parses rules; an empty pattern is an error.
func NewCommandRules(rules []CommandRule) (*Commands, error) {
	c := &Commands{}
	for _, r := range rules {
		w := strings.Fields(r.Pattern)
		if len(w) == 0 {
			return nil, errors.New("an empty command pattern")
		}
		c.patterns = append(c.patterns, r.Pattern)
		c.words = append(c.words, w)
		c.cwd = append(c.cwd, r.Cwd)
	}
	return c, nil
}

// Match returns the pattern that allows command with args, if one does,
// among the patterns that may run anywhere (MatchIn decides the others).
func (c *Commands) Match(command string, args []string) (string, bool) {
	return c.MatchIn("", command, args)
}

// MatchIn returns the pattern that allows command with args run in the
// workspace directory dir (slash-separated, relative to the workspace,
// "." its root; "" unknown, which only a pattern that may run anywhere
// allows), if one does.
func (c *Commands) MatchIn(dir, command string, args []string) (string, bool) {
	if c == nil {
		return "", false
	}
	for i, words := range c.words {
		if c.mayRunIn(i, dir) && matchWords(words, command, args) {
			return strings.Join(words, " "), true
		}
	}
	return "", false
}

// Scoped reports whether some pattern may run only in some directories.
func (c *Commands) Scoped() bool {
	return c != nil && slices.ContainsFunc(c.cwd, func(d []string) bool { return len(d) > 0 })
}

// mayRunIn reports whether pattern i may run in dir.
func (c *Commands) mayRunIn(i int, dir string) bool {
	if len(c.cwd[i]) == 0 {
		return true
	}
	if dir == "" {
		return false
	}
	return slices.ContainsFunc(c.cwd[i], func(g string) bool { return g == dir || g != "." && permission.Glob(g, dir) })
}

// MatchShellLine returns the pattern that allows a command line a shell is
// to run, if one does. A plain line (PlainShellLine) is decided like the
// command and arguments its words are. Any other line may hold a second
// command (;, &&, |, a newline), a substitution ($(...), backticks), a
// redirection or an expansion, so no wildcard may allow it: only a pattern
// without "*" or "?" that is the same line (spaces and tabs around it
// aside) does.
func (c *Commands) MatchShellLine(line string) (pattern string, exact, ok bool) {
	return c.MatchShellLineIn("", line)
}

// MatchShellLineIn is MatchShellLine for a line run in the workspace
// directory dir (see MatchIn).
func (c *Commands) MatchShellLineIn(dir, line string) (pattern string, exact, ok bool) {
	if c == nil {
		return "", false, false
	}
	if PlainShellLine(line) {
		words := strings.Fields(line)
		if len(words) == 0 {
			return "", false, false
		}
		p, ok := c.MatchIn(dir, words[0], words[1:])
		return p, false, ok
	}
	want := strings.Trim(line, " \t")
	for i, p := range c.patterns {
		if p = strings.Trim(p, " \t"); p == want && !strings.ContainsAny(p, "*?") && c.mayRunIn(i, dir) {
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
