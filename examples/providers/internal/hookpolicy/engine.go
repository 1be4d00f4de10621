package hookpolicy

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Engine evaluates hook invocations against a compiled policy. It is
// immutable and safe for concurrent use.
type Engine struct {
	def      DefaultDecision
	rules    []*compiled
	pathKeys map[string]bool
}

// ReasonCode says why a decision was taken.
type ReasonCode string

const (
	// RuleMatched: the rule named in Reason.RuleID matched.
	RuleMatched ReasonCode = "rule_matched"
	// DefaultApplied: no rule matched; the policy's default decided.
	DefaultApplied ReasonCode = "default"
)

// Match is the piece of input that satisfied a rule's condition, for
// reasons and logs.
type Match struct {
	// Kind is "tool", "path", "pattern", "field" or "" for a rule without
	// conditions.
	Kind string
	// Pattern is the rule's glob or expression that matched; Value what it
	// matched.
	Pattern, Value string
}

// Reason explains a decision.
type Reason struct {
	Code    ReasonCode
	RuleID  string // empty for DefaultApplied
	Message string // the rule's or default's reason, or a generated one
	Match   Match
}

// String is the reason as sent on the wire with a reject.
func (r Reason) String() string { return r.Message }

// Decision is the outcome of one hook invocation.
type Decision struct {
	Action Action
	Reason Reason
	// Patch is the hook's typed patch (*ToolCallPatch, ...) for a continue
	// that changes the input, nil otherwise.
	Patch Patch
}

// Result returns the hook's result object: {"decision":"continue"} with
// "patch" when there is one, or {"decision":"reject","reason":...}.
func (d *Decision) Result() (jsontext.Value, error) {
	type result struct {
		Decision Action `json:"decision"`
		Patch    Patch  `json:"patch,omitzero"`
		Reason   string `json:"reason,omitzero"`
	}
	r := result{Decision: d.Action}
	if d.Action == Reject {
		r.Reason = d.Reason.Message
	} else {
		r.Patch = d.Patch
	}
	return json.Marshal(r)
}

// Evaluate decides a hook invocation: input is the hook's input object
// (the payload's input member).
func (e *Engine) Evaluate(hook HookID, input jsontext.Value) (*Decision, error) {
	if !knownHook(hook) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownHook, hook)
	}
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil || in == nil {
		return nil, fmt.Errorf("%w: %s input is not a JSON object: %v", ErrInvalidInput, hook, err)
	}
	facts := e.facts(hook, in)
	for _, r := range e.rules {
		m, ok := r.matches(hook, in, facts)
		if !ok {
			continue
		}
		d := &Decision{Action: r.Decision, Reason: Reason{Code: RuleMatched, RuleID: r.ID, Message: r.Reason, Match: m}}
		if d.Reason.Message == "" {
			d.Reason.Message = describe(r.ID, r.Decision, m)
		}
		if r.Decision == Continue {
			p, err := r.patch(hook, in)
			if err != nil {
				return nil, err
			}
			d.Patch = p
		}
		return d, nil
	}
	msg := e.def.Reason
	if msg == "" {
		msg = "no policy rule matched; default " + string(e.def.Decision)
	}
	return &Decision{Action: e.def.Decision, Reason: Reason{Code: DefaultApplied, Message: msg}}, nil
}

func describe(id string, a Action, m Match) string {
	verb := "allowed"
	if a == Reject {
		verb = "rejected"
	}
	if m.Kind == "" {
		return fmt.Sprintf("%s by policy rule %s", verb, id)
	}
	return fmt.Sprintf("%s by policy rule %s: %s %q matches %q", verb, id, m.Kind, m.Value, m.Pattern)
}

// facts are what the conditions look at, extracted once per invocation.
type facts struct {
	tools   []string
	paths   []string
	strings []string
}

func (e *Engine) facts(hook HookID, in map[string]any) facts {
	var f facts
	switch hook {
	case BeforeToolCall:
		if t, ok := in["tool"].(string); ok {
			f.tools = append(f.tools, t)
		}
	case BeforeToolSelection:
		cands, _ := in["candidates"].([]any)
		for _, c := range cands {
			if m, ok := c.(map[string]any); ok {
				if id, ok := m["canonical_id"].(string); ok {
					f.tools = append(f.tools, id)
				}
			}
		}
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case string:
			f.strings = append(f.strings, x)
			if e.pathKeys[key] {
				f.paths = append(f.paths, x)
			}
		case []any:
			for _, el := range x {
				walk(key, el)
			}
		case map[string]any:
			for k, el := range x {
				walk(k, el)
			}
		}
	}
	walk("", in)
	return f
}

func (r *compiled) matches(hook HookID, in map[string]any, f facts) (Match, bool) {
	if r.hooks != nil && !r.hooks[hook] {
		return Match{}, false
	}
	var m Match
	if len(r.Tools) > 0 {
		var ok bool
		if m, ok = firstGlob("tool", r.Tools, f.tools, wildcard); !ok {
			return Match{}, false
		}
	}
	if len(r.Paths) > 0 {
		var clean []string
		for _, p := range f.paths {
			clean = append(clean, cleanPath(p))
		}
		pm, ok := firstGlob("path", r.Paths, clean, pathGlob)
		if !ok {
			return Match{}, false
		}
		m = pm
	}
	if len(r.patterns) > 0 {
		found := false
		for _, re := range r.patterns {
			for _, s := range f.strings {
				if loc := re.FindStringIndex(s); loc != nil {
					m, found = Match{Kind: "pattern", Pattern: re.String(), Value: s[loc[0]:loc[1]]}, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return Match{}, false
		}
	}
	for _, field := range slices.Sorted(maps.Keys(r.Fields)) {
		glob := r.Fields[field]
		vals := lookup(in, strings.Split(field, "."))
		fm, ok := firstGlob("field", []string{glob}, vals, wildcard)
		if !ok {
			return Match{}, false
		}
		fm.Value = field + "=" + fm.Value
		m = fm
	}
	return m, true
}

func firstGlob(kind string, globs, values []string, match func(glob, s string) bool) (Match, bool) {
	for _, g := range globs {
		for _, v := range values {
			if match(g, v) {
				return Match{Kind: kind, Pattern: g, Value: v}, true
			}
		}
	}
	return Match{}, false
}

// lookup returns the scalar values at a dot path, descending objects and
// every element of arrays, formatted as text.
func lookup(v any, segs []string) []string {
	switch x := v.(type) {
	case []any:
		var out []string
		for _, el := range x {
			out = append(out, lookup(el, segs)...)
		}
		return out
	case map[string]any:
		if len(segs) == 0 {
			return nil
		}
		child, ok := x[segs[0]]
		if !ok {
			return nil
		}
		return lookup(child, segs[1:])
	}
	if len(segs) > 0 {
		return nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}
	case float64:
		return []string{strconv.FormatFloat(x, 'g', -1, 64)}
	case bool:
		return []string{strconv.FormatBool(x)}
	case nil:
		return []string{"null"}
	}
	return nil
}

// wildcard matches s against a glob where "*" is any run of characters
// (including "/") and "?" any one character.
func wildcard(glob, s string) bool {
	g, t := []rune(glob), []rune(s)
	gi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case gi < len(g) && (g[gi] == '?' || g[gi] == t[ti]):
			gi++
			ti++
		case gi < len(g) && g[gi] == '*':
			star, mark = gi, ti
			gi++
		case star >= 0:
			gi, mark = star+1, mark+1
			ti = mark
		default:
			return false
		}
	}
	for gi < len(g) && g[gi] == '*' {
		gi++
	}
	return gi == len(g)
}

// pathGlob matches a cleaned slash path: "**" is any number of segments
// (including none), other segments match one segment by path.Match.
func pathGlob(glob, p string) bool {
	return matchSegs(strings.Split(cleanPath(glob), "/"), strings.Split(p, "/"))
}

func matchSegs(g, s []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(s); i++ {
				if matchSegs(g[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], s[0]); err != nil || !ok {
			return false
		}
		g, s = g[1:], s[1:]
	}
	return len(s) == 0
}

// cleanPath cleans a path to slash form, keeping it absolute or relative
// as it was ("./a/../b" is "b", "/x/./y" is "/x/y").
func cleanPath(p string) string {
	return path.Clean(strings.ReplaceAll(p, "\\", "/"))
}
