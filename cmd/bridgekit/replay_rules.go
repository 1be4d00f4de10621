package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// A replayRule says how replay compares a member: ignore it, or bind it
// (the value is one the command chooses, such as a session id: the first
// time it is seen the recorded value is bound to the live one, and from
// then on the live value must be the bound one, and frames replay sends
// carry the live value instead of the recorded one).
//
// The built-in rules times and uuids need no pattern: times takes any two
// RFC 3339 date-times for equal, uuids binds every UUID-shaped string.
type replayRule struct {
	Kind   string `json:"kind"`             // ignore, bind, times or uuids
	Method string `json:"method,omitempty"` // "" for any method
	// Pattern is a JSON pointer into the frame whose segments may be * (any
	// one member or index) or ** (any number of them).
	Pattern string   `json:"pattern,omitempty"`
	segs    []string // the pattern's segments
}

// defaultReplayRules are the rules replay starts with (--no-default-rules
// drops them): the identifiers an implementation chooses, the times it
// reads from its clock and the durations it measures.
var defaultReplayRules = []string{
	"bind **/sessionId", "bind **/session_id", "bind **/toolCallId", "bind **/terminalId",
	"bind **/messageId", "bind **/runId", "bind **/run_id",
	"ignore **/durationMs", "ignore **/executionDurationMs", "ignore **/elapsedMs", "ignore **/latencyMs",
	"times", "uuids",
}

// parseReplayRule reads "KIND [METHOD] PATTERN" (or a built-in rule's
// name alone).
func parseReplayRule(s string) (replayRule, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return replayRule{}, errors.New("an empty rule")
	}
	r := replayRule{Kind: f[0]}
	switch r.Kind {
	case "times", "uuids":
		if len(f) != 1 {
			return r, fmt.Errorf("rule %q takes no pattern", r.Kind)
		}
		return r, nil
	case "ignore", "bind":
	default:
		return r, fmt.Errorf("rule %q: the kind is ignore, bind, times or uuids", s)
	}
	switch len(f) {
	case 2:
		r.Pattern = f[1]
	case 3:
		r.Method, r.Pattern = f[1], f[2]
	default:
		return r, fmt.Errorf("rule %q: want %s [METHOD] POINTER", s, r.Kind)
	}
	p := r.Pattern
	if strings.HasPrefix(p, "**") {
		p = "/" + p
	}
	if !strings.HasPrefix(p, "/") {
		return r, fmt.Errorf("rule %q: the pattern is a JSON pointer (/params/x, **/x)", s)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		r.segs = append(r.segs, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
	}
	return r, nil
}

func (r replayRule) String() string {
	f := []string{r.Kind}
	for _, x := range []string{r.Method, r.Pattern} {
		if x != "" {
			f = append(f, x)
		}
	}
	return strings.Join(f, " ")
}

// matches reports whether the rule's pattern matches the pointer path in a
// frame of method.
func (r replayRule) matches(method string, path []string) bool {
	if r.Method != "" && r.Method != method {
		return false
	}
	return matchSegs(r.segs, path)
}

func matchSegs(pat, path []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(path); i++ {
				if matchSegs(pat[1:], path[i:]) {
					return true
				}
			}
			return false
		}
		if len(path) == 0 || pat[0] != "*" && pat[0] != path[0] {
			return false
		}
		pat, path = pat[1:], path[1:]
	}
	return len(path) == 0
}

// replayRules is the rule set of one replay and the bindings it has made.
type replayRules struct {
	rules   []replayRule
	times   bool
	uuids   bool
	bound   map[string]string // recorded value -> live value
	boundTo map[string]string // live value -> recorded value
}

func newReplayRules(rules []replayRule) *replayRules {
	rs := &replayRules{bound: map[string]string{}, boundTo: map[string]string{}}
	for _, r := range rules {
		switch r.Kind {
		case "times":
			rs.times = true
		case "uuids":
			rs.uuids = true
		default:
			rs.rules = append(rs.rules, r)
		}
	}
	return rs
}

func (rs *replayRules) ignored(method string, path []string) bool {
	for _, r := range rs.rules {
		if r.Kind == "ignore" && r.matches(method, path) {
			return true
		}
	}
	return false
}

// binds reports whether the string s at path is a value the command
// chooses.
func (rs *replayRules) binds(method string, path []string, s string) bool {
	if rs.uuids && uuidShape.MatchString(s) {
		return true
	}
	for _, r := range rs.rules {
		if r.Kind == "bind" && r.matches(method, path) {
			return true
		}
	}
	return false
}

var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// bind binds recorded to live, or checks an earlier binding; it returns
// what is wrong, or "".
func (rs *replayRules) bind(recorded, live string) string {
	if b, ok := rs.bound[recorded]; ok {
		if b != live {
			return fmt.Sprintf("recorded %q stands for %q in this replay, got %q", recorded, b, live)
		}
		return ""
	}
	if r, ok := rs.boundTo[live]; ok {
		return fmt.Sprintf("%q already stands for recorded %q, not %q", live, r, recorded)
	}
	rs.bound[recorded], rs.boundTo[live] = live, recorded
	return ""
}

// rewrite returns line with every bound value at a binding member
// replaced by its live value, and the top-level id by id when id is not
// nil. It returns line itself when nothing changes; otherwise the result
// is compact JSON with members in their recorded order.
func (rs *replayRules) rewrite(method string, line []byte, id []byte) ([]byte, error) {
	if len(rs.bound) == 0 && id == nil {
		return line, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(line))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	changed := false
	for {
		kind := dec.PeekKind()
		if kind == 0 {
			break
		}
		depth := dec.StackDepth()
		parent, n := dec.StackIndex(depth)
		isValue := depth == 0 || parent == '[' || n%2 == 1
		if isValue && id != nil && depth == 1 && parent == '{' && string(dec.StackPointer().LastToken()) == "id" {
			if _, err := dec.ReadValue(); err != nil {
				return nil, err
			}
			if err := enc.WriteValue(id); err != nil {
				return nil, err
			}
			changed = true
			continue
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		if kind == '"' && isValue {
			s := tok.String()
			if live, ok := rs.bound[s]; ok && rs.binds(method, pointerPath(dec.StackPointer()), s) {
				tok, changed = jsontext.String(live), true
			}
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, err
		}
	}
	if !changed {
		return line, nil
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

func pointerPath(p jsontext.Pointer) []string {
	var out []string
	for t := range p.Tokens() {
		out = append(out, t)
	}
	return out
}
