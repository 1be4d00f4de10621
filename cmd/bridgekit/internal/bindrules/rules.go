// Package bindrules holds the rules by which two recordings of one
// conversation are compared: replay compares what a command says with
// what was recorded, and the inspector's diff compares two sessions. Some
// values are the peers' to choose (session ids, tool call ids, UUIDs,
// request ids, times): two runs differ in them even when nothing else
// does, so a rule either ignores a member or binds it. A bound value is
// matched with the value at the same place on the other side the first
// time it is seen, and from then on it must stand for that value there:
// ids that differ consistently are no difference, ids that are mixed up
// are.
package bindrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// A Rule says how a member is compared: ignore it, or bind it (the value
// is one a peer chooses, such as a session id: the first time it is seen
// the recorded value is bound to the live one, and from then on the live
// value must be the bound one, and frames replay sends carry the live
// value instead of the recorded one).
//
// The built-in rules times and uuids need no pattern: times takes any two
// RFC 3339 date-times for equal, uuids binds every UUID-shaped string.
type Rule struct {
	Kind   string `json:"kind"`             // ignore, bind, times or uuids
	Method string `json:"method,omitempty"` // "" for any method
	// Pattern is a JSON pointer into the frame whose segments may be * (any
	// one member or index) or ** (any number of them).
	Pattern string   `json:"pattern,omitempty"`
	segs    []string // the pattern's segments
}

// Defaults are the rules replay and the inspector's diff start with: the
// identifiers an implementation chooses, the times it reads from its clock
// and the durations it measures.
var Defaults = []string{
	"bind **/sessionId", "bind **/session_id", "bind **/toolCallId", "bind **/terminalId",
	"bind **/messageId", "bind **/runId", "bind **/run_id",
	"ignore **/durationMs", "ignore **/executionDurationMs", "ignore **/elapsedMs", "ignore **/latencyMs",
	"times", "uuids",
}

// Parse reads "KIND [METHOD] PATTERN" (or a built-in rule's name alone).
func Parse(s string) (Rule, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Rule{}, errors.New("an empty rule")
	}
	r := Rule{Kind: f[0]}
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

// ParseAll parses each of specs.
func ParseAll(specs []string) ([]Rule, error) {
	var out []Rule
	for _, s := range specs {
		r, err := Parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (r Rule) String() string {
	f := []string{r.Kind}
	for _, x := range []string{r.Method, r.Pattern} {
		if x != "" {
			f = append(f, x)
		}
	}
	return strings.Join(f, " ")
}

// Matches reports whether the rule's pattern matches the pointer path in a
// frame of method.
func (r Rule) Matches(method string, path []string) bool {
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

// A Set is the rule set of one comparison and the bindings it has made.
// It is not safe for concurrent use.
type Set struct {
	Rules   []Rule // ignore and bind rules
	Times   bool
	UUIDs   bool
	bound   map[string]string // recorded value -> live value
	boundTo map[string]string // live value -> recorded value
	order   []string          // the recorded values, in the order bound
	// sides names the two sides in what Bind says ("recorded" and "live"
	// unless Sides was called).
	sides [2]string
}

// NewSet returns a Set of rules, with no bindings yet.
func NewSet(rules []Rule) *Set {
	rs := &Set{bound: map[string]string{}, boundTo: map[string]string{}, sides: [2]string{"recorded", "live"}}
	for _, r := range rules {
		switch r.Kind {
		case "times":
			rs.Times = true
		case "uuids":
			rs.UUIDs = true
		default:
			rs.Rules = append(rs.Rules, r)
		}
	}
	return rs
}

// Strings lists the rules in effect, as Parse reads them.
func (rs *Set) Strings() []string {
	var out []string
	for _, r := range rs.Rules {
		out = append(out, r.String())
	}
	if rs.Times {
		out = append(out, "times")
	}
	if rs.UUIDs {
		out = append(out, "uuids")
	}
	return out
}

// Ignored reports whether the member at path of a frame of method is
// ignored.
func (rs *Set) Ignored(method string, path []string) bool {
	for _, r := range rs.Rules {
		if r.Kind == "ignore" && r.Matches(method, path) {
			return true
		}
	}
	return false
}

// Binds reports whether the string s at path is a value a peer chooses.
func (rs *Set) Binds(method string, path []string, s string) bool {
	if rs.UUIDs && uuidShape.MatchString(s) {
		return true
	}
	for _, r := range rs.Rules {
		if r.Kind == "bind" && r.Matches(method, path) {
			return true
		}
	}
	return false
}

var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsUUID reports whether s has a UUID's shape.
func IsUUID(s string) bool { return uuidShape.MatchString(s) }

// IsTime reports whether s is an RFC 3339 date-time.
func IsTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// Sides names the two sides compared (replay's are "recorded" and
// "live") in what Bind says.
func (rs *Set) Sides(recorded, live string) { rs.sides = [2]string{recorded, live} }

// Bind binds recorded to live, or checks an earlier binding; it returns
// what is wrong, or "".
func (rs *Set) Bind(recorded, live string) string {
	if b, ok := rs.bound[recorded]; ok {
		if b != live {
			if rs.sides[0] == "recorded" {
				return fmt.Sprintf("recorded %q stands for %q in this replay, got %q", recorded, b, live)
			}
			return fmt.Sprintf("%s's %q stands for %s's %q, got %q", rs.sides[0], recorded, rs.sides[1], b, live)
		}
		return ""
	}
	if r, ok := rs.boundTo[live]; ok {
		return fmt.Sprintf("%q already stands for %s %q, not %q", live, rs.sides[0], r, recorded)
	}
	rs.bound[recorded], rs.boundTo[live] = live, recorded
	rs.order = append(rs.order, recorded)
	return ""
}

// A Binding is a recorded value bound to a live one.
type Binding struct {
	Recorded string `json:"a"`
	Live     string `json:"b"`
}

// Bindings lists the bindings made, in the order they were made.
func (rs *Set) Bindings() []Binding {
	out := make([]Binding, 0, len(rs.order))
	for _, r := range rs.order {
		out = append(out, Binding{r, rs.bound[r]})
	}
	return out
}

// Rewrite returns line with every bound value at a binding member
// replaced by its live value, and the top-level id by id when id is not
// nil. It returns line itself when nothing changes; otherwise the result
// is compact JSON with members in their recorded order.
func (rs *Set) Rewrite(method string, line []byte, id []byte) ([]byte, error) {
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
			if live, ok := rs.bound[s]; ok && rs.Binds(method, pointerPath(dec.StackPointer()), s) {
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

// Pointer returns path as a JSON pointer.
func Pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// Decode decodes one JSON value with its numbers kept as json.Number.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// What a Difference is.
const (
	Differs = "differs" // the values differ (Message says how when it is set)
	Missing = "missing" // the member is only on the recorded side
	Extra   = "extra"   // the member is only on the live side
)

// A Difference is one place where two documents differ.
type Difference struct {
	Path []string
	Kind string // Differs, Missing or Extra
	// Recorded and Live are the values (the one there is, for Missing and
	// Extra); Message, when set, says what is wrong instead of the values
	// (a binding broken, a length).
	Recorded, Live any
	Message        string
}

// Compare reports, in a stable order, where live differs from recorded,
// both decoded by Decode, in a frame of method, under the rules of rs
// (binding the values they bind as it goes).
func (rs *Set) Compare(method string, path []string, recorded, live any, report func(Difference)) {
	if rs.Ignored(method, path) {
		return
	}
	differs := func(msg string) {
		report(Difference{Path: path, Kind: Differs, Recorded: recorded, Live: live, Message: msg})
	}
	switch r := recorded.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			differs("")
			return
		}
		for _, k := range slices.Sorted(maps.Keys(r)) {
			sub := append(path[:len(path):len(path)], k)
			lv, ok := l[k]
			if !ok {
				if !rs.Ignored(method, sub) {
					report(Difference{Path: sub, Kind: Missing, Recorded: r[k]})
				}
				continue
			}
			rs.Compare(method, sub, r[k], lv, report)
		}
		for _, k := range slices.Sorted(maps.Keys(l)) {
			if _, ok := r[k]; !ok {
				sub := append(path[:len(path):len(path)], k)
				if !rs.Ignored(method, sub) {
					report(Difference{Path: sub, Kind: Extra, Live: l[k]})
				}
			}
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			differs("")
			return
		}
		for i := range min(len(r), len(l)) {
			rs.Compare(method, append(path[:len(path):len(path)], fmt.Sprint(i)), r[i], l[i], report)
		}
		if len(r) != len(l) {
			differs(fmt.Sprintf("%d items, recorded %d", len(l), len(r)))
		}
	case string:
		l, ok := live.(string)
		switch {
		case !ok:
			differs("")
		case rs.Binds(method, path, r):
			if msg := rs.Bind(r, l); msg != "" {
				differs(msg)
			}
		case r == l:
		case rs.Times && IsTime(r) && IsTime(l):
		default:
			differs("")
		}
	case json.Number:
		l, ok := live.(json.Number)
		if !ok || !numbersEqual(r, l) {
			differs("")
		}
	default: // bool, nil
		if recorded != live {
			differs("")
		}
	}
}

func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	fa, ea := a.Float64()
	fb, eb := b.Float64()
	return ea == nil && eb == nil && fa == fb
}
