package permission

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// Rule decisions.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// Rule matches a tool call; every condition that is set must hold, and
// the first Rule of a Policy that matches decides. Its JSON form is a
// policy file's entry: {"id", "tools", "kinds", "paths", "commands",
// "decision"}.
type Rule struct {
	// ID names the rule in reasons ("rule <id>"); "" names it by index.
	ID string `json:"id,omitempty"`
	// Tools are glob patterns (path.Match syntax) on the tool name:
	// Harn's _meta.harn.toolName, else the title.
	Tools []string `json:"tools,omitempty"`
	// Kinds are ACP tool kinds (read, edit, delete, move, search,
	// execute, think, fetch, switch_mode, other). A call whose kind is
	// unknown, even after merging its earlier updates, matches none.
	Kinds []acp.ToolKind `json:"kinds,omitempty"`
	// Paths are workspace path patterns: slash-separated, relative to the
	// workspace root, segments matched with path.Match and "**" matching
	// any number of segments. They match fail-closed: an allow rule only
	// when the call declares at least one path and every declared path
	// (Call.Paths) is inside the workspace and matches a pattern; a deny
	// rule as soon as any path-like string the call mentions
	// (Call.Mentions) matches a pattern or is outside the workspace.
	Paths []string `json:"paths,omitempty"`
	// Commands are command patterns: words, the first the program exactly
	// as given, each further word one argument (* any characters, ? one),
	// and a last "**" any remaining arguments. An allow rule matches a
	// command line made of plain words only (no quotes, ;, &, |, $,
	// backticks, redirections, globs or newlines) that matches a pattern,
	// or a line equal to a pattern without wildcards; a deny rule matches
	// a line that matches a pattern, a line with shell syntax, and an
	// execute call whose command cannot be read.
	Commands []string `json:"commands,omitempty"`
	// Decision is DecisionAllow or DecisionDeny.
	Decision string `json:"decision"`
	// TrustWorkspaceCode, on an allow rule for commands that run code
	// from the workspace (git, make, go test, ...), says that running
	// what the runtime may have written there is meant. Deciding ignores
	// it; servers/host/policy's Check reports such a rule without it.
	TrustWorkspaceCode bool `json:"trust_workspace_code,omitempty"`
}

// Policy decides permission requests by its Rules; what no rule allows
// is denied. Its zero value denies everything.
type Policy struct {
	Rules []Rule
	// Resolve maps a path the agent names to its slash-separated path
	// relative to the workspace root, or fails for a path outside it.
	// Nil treats every path as outside (so allow rules with paths never
	// match and deny rules with paths always do); Workspace(root) is the
	// lexical resolver, and a host that resolves links passes its own.
	Resolve func(path string) (rel string, err error)
	// MaxPaths caps the path-like strings a call may name (default
	// DefaultMaxPaths); a call that names more is denied.
	MaxPaths int
}

// Verdict is a Policy's answer.
type Verdict struct {
	Allow bool
	// Rule is the rule that decided ("" when none did).
	Rule string
	// Reason says why, for logs and the answer's "reason".
	Reason string
}

// Decision is the Gate's Decision for v.
func (v Verdict) Decision() Decision { return Decision{Allow: v.Allow, Reason: v.Reason} }

// ErrPolicy is matched by the error of a Policy that cannot be used.
var ErrPolicy = errors.New("permission: invalid policy")

// Validate reports a rule that cannot be used: an unknown decision or
// kind, a malformed glob, a path pattern that could never match (absolute,
// or with an empty, "." or ".." segment), an empty command pattern.
func (p *Policy) Validate() error {
	var errs []error
	for i, r := range p.Rules {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%w: %s: %s", ErrPolicy, ruleName(i, r), fmt.Sprintf(format, args...)))
		}
		if r.Decision != DecisionAllow && r.Decision != DecisionDeny {
			bad("decision must be %q or %q, not %q", DecisionAllow, DecisionDeny, r.Decision)
		}
		for _, k := range r.Kinds {
			if !k.Known() {
				bad("%q is not an ACP tool kind", k)
			}
		}
		for _, g := range r.Tools {
			if err := CheckGlob(g); err != nil {
				bad("%v", err)
			}
		}
		for _, g := range r.Paths {
			if err := CheckPathGlob(g); err != nil {
				bad("%v", err)
			}
		}
		for _, c := range r.Commands {
			if len(strings.Fields(c)) == 0 {
				bad("an empty command pattern")
			}
		}
	}
	return errors.Join(errs...)
}

func ruleName(i int, r Rule) string {
	if r.ID != "" {
		return r.ID
	}
	return fmt.Sprintf("permissions[%d]", i)
}

// Reasons of a Policy's denials that no rule made.
const (
	ReasonNoRule   = "no rule allows it"
	ReasonOverflow = "the tool call cannot be checked: it names too many paths, its input is unreadable or its command ambiguous"
)

// Decide decides c. It takes time linear in c's paths and the rules'
// patterns.
func (p *Policy) Decide(c *Call) Verdict {
	if c == nil || c.Overflow {
		return Verdict{Reason: ReasonOverflow}
	}
	// Each path is resolved once, whatever the number of rules.
	resolved := make(map[string]string, len(c.Mentions))
	outside := map[string]bool{}
	anyOutside := false
	for _, m := range slices.Concat(c.Mentions, c.Paths) {
		if _, done := resolved[m]; done || outside[m] {
			continue
		}
		rel, err := p.resolve(m)
		if err != nil {
			outside[m], anyOutside = true, true
			continue
		}
		resolved[m] = rel
	}
	for i, r := range p.Rules {
		if len(r.Tools) > 0 && !slices.ContainsFunc(r.Tools, func(g string) bool { return Glob(g, c.Tool) }) {
			continue
		}
		if len(r.Kinds) > 0 && (c.Kind == "" || !slices.Contains(r.Kinds, c.Kind)) {
			continue
		}
		deny := r.Decision != DecisionAllow
		if len(r.Paths) > 0 {
			if deny {
				if !anyOutside && !anyMatch(r.Paths, c.Mentions, resolved) {
					continue
				}
			} else if !allMatch(r.Paths, c.Paths, resolved, outside) {
				continue
			}
		}
		if len(r.Commands) > 0 && !commandRule(deny, r.Commands, c) {
			continue
		}
		return Verdict{Allow: !deny, Rule: ruleName(i, r), Reason: "rule " + ruleName(i, r)}
	}
	return Verdict{Reason: ReasonNoRule}
}

func (p *Policy) resolve(path string) (string, error) {
	if p.Resolve == nil {
		return "", errors.New("no workspace")
	}
	return p.Resolve(path)
}

// anyMatch: some mentioned path matches a pattern.
func anyMatch(patterns, paths []string, resolved map[string]string) bool {
	for _, m := range paths {
		if rel, ok := resolved[m]; ok && anyGlob(patterns, rel) {
			return true
		}
	}
	return false
}

// allMatch: at least one declared path, each inside and matching.
func allMatch(patterns, paths []string, resolved map[string]string, outside map[string]bool) bool {
	if len(paths) == 0 {
		return false
	}
	for _, d := range paths {
		rel, ok := resolved[d]
		if !ok || outside[d] || !anyGlob(patterns, rel) {
			return false
		}
	}
	return true
}

func anyGlob(patterns []string, name string) bool {
	return slices.ContainsFunc(patterns, func(g string) bool { return Glob(g, name) })
}

// commandRule applies a rule's command patterns to every command line of
// the call, fail-closed: a deny rule matches when it matches any line, an
// allow rule only when it allows each.
func commandRule(deny bool, patterns []string, c *Call) bool {
	lines := c.Commands
	if len(lines) == 0 && c.Command != "" {
		lines = []string{c.Command}
	}
	if len(lines) == 0 {
		return deny && c.Kind == acp.ToolKindExecute
	}
	for _, line := range lines {
		// Only the blanks a plain line may hold are trimmed: a line ending
		// in "\r" or another control byte is not the line a rule names
		// (a shell keeps the "\r" in the last argument).
		if commandLineRule(deny, patterns, strings.Trim(line, " \t")) == deny {
			return deny
		}
	}
	return !deny
}

// commandLineRule applies a rule's command patterns to one line.
func commandLineRule(deny bool, patterns []string, line string) bool {
	if line == "" {
		return deny
	}
	if !PlainCommandLine(line) {
		if deny {
			return true
		}
		return slices.ContainsFunc(patterns, func(pat string) bool {
			pat = strings.TrimSpace(pat)
			return pat == line && !strings.ContainsAny(pat, "*?")
		})
	}
	words := strings.Fields(line)
	return slices.ContainsFunc(patterns, func(pat string) bool { return MatchCommand(strings.Fields(pat), words) })
}

// DecideFunc returns the Gate's decision function for p: each request is
// merged with what t kept of its tool call (t may be nil) and decided; a
// grant selects GrantOption's option, so that it works with Harn ("allow")
// and with plain ACP agents (their allow_once option) alike.
func (p *Policy) DecideFunc(t *Tracker) DecideFunc {
	return func(_ context.Context, req *acp.RequestPermissionRequest) (Decision, error) {
		d := p.Decide(NewCall(t, req, p.MaxPaths)).Decision()
		if d.Allow {
			d.OptionID, _ = GrantOption(req)
		}
		return d, nil
	}
}

// Workspace returns the lexical resolver of a workspace at root (an
// absolute, clean directory): a relative path is taken from root, an
// absolute one must lie under it, and "..", "~" and paths outside fail.
// It does not resolve links: a host that follows them checks again when
// it opens the file (see servers/host's file packages).
func Workspace(root string) func(string) (string, error) {
	root = filepath.Clean(root)
	return func(p string) (string, error) {
		if p == "" || strings.HasPrefix(p, "~") || strings.ContainsRune(p, 0) {
			return "", fmt.Errorf("path %q is outside the workspace", p)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		rel, err := filepath.Rel(root, filepath.Clean(p))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return "", fmt.Errorf("path %q is outside the workspace", p)
		}
		return filepath.ToSlash(rel), nil
	}
}

// Glob reports whether name, a slash-separated relative path, matches
// pattern: segments are matched with path.Match (*, ?, [...] within one
// segment) and a "**" segment matches any number of segments, none
// included. A malformed pattern matches nothing (CheckGlob reports it).
// It takes at most len(pattern's segments) × len(name's segments) segment
// matches, however many "**" the pattern has: both sides may come from
// the peer.
func Glob(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

// matchSegments matches greedily and, on a mismatch, goes back only to the
// last "**", which then takes one more segment. That is enough: the
// segments after it must match a run of name somewhere, and matching that
// run earliest leaves the most for the rest, so no earlier "**" need take
// more. (Backtracking into every "**" took time exponential in their
// number.)
func matchSegments(pat, name []string) bool {
	p, n := 0, 0
	star, resume := -1, 0 // the last "**" seen, and the first name segment it does not take
	for n < len(name) {
		switch {
		case p < len(pat) && pat[p] == "**":
			star, resume = p, n
			p++
		case p < len(pat) && segmentMatch(pat[p], name[n]):
			p, n = p+1, n+1
		case star >= 0:
			resume++
			p, n = star+1, resume
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == "**" {
		p++
	}
	return p == len(pat)
}

func segmentMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return ok && err == nil
}

// CheckGlob reports a malformed pattern.
func CheckGlob(pattern string) error {
	if pattern == "" {
		return errors.New("empty pattern")
	}
	for seg := range strings.SplitSeq(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", pattern, err)
		}
	}
	return nil
}

// CheckPathGlob reports a malformed path pattern, or one that could never
// match a workspace-relative path: absolute, or with an empty, "." or ".."
// segment.
func CheckPathGlob(pattern string) error {
	if err := CheckGlob(pattern); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(pattern, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("pattern %q: path patterns are relative to the workspace, with no empty, \".\" or \"..\" elements", pattern)
		}
	}
	return nil
}

// PlainCommandLine reports whether line consists of words of plain
// characters separated by spaces and tabs: ASCII letters and digits and
// - _ . / : + =, with no = starting a word (zsh expands =cmd). No common
// shell gives such a line any meaning but its words.
func PlainCommandLine(line string) bool {
	start := true
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

// MatchCommand matches argv (program first) against a pattern's words:
// the first word is the program exactly, each further word matches one
// argument (* any characters, ? one), and a last word "**" matches any
// remaining arguments.
func MatchCommand(pattern, argv []string) bool {
	if len(pattern) == 0 || len(argv) == 0 || pattern[0] != argv[0] {
		return false
	}
	rest, args := pattern[1:], argv[1:]
	for i, w := range rest {
		if w == "**" && i == len(rest)-1 {
			return true
		}
		if i >= len(args) || !Wildcard(w, args[i]) {
			return false
		}
	}
	return len(args) == len(rest)
}

// Wildcard matches s against a pattern in which * matches any characters
// (slashes too) and ? one; everything else is literal. Linear in practice
// (two pointers, backtracking to the last *), len(pat)*len(s) at worst.
func Wildcard(pat, s string) bool {
	p, r := []rune(pat), []rune(s)
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(r) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == r[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
