package harnvm

import (
	"bytes"
	"errors"
	"math"
	"slices"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Tolerant readers of host answers. A Harn runtime accepts, for the host's
// tools, skills and skill matches, more shapes than the canonical one
// (catalogue §1.4, §1.6, §1.7) and normalises them; these readers do the
// same for a runtime written in Go, from the raw result, into the
// generated gen/harn types. The generated HostPeer methods decode only what
// the schemas describe; the Client's ListTools, ListSkills, FetchSkill and
// MatchSkills read through these instead.

// ErrResponseShape is matched by the readers' errors: the host's answer has
// none of the shapes Harn accepts.
var ErrResponseShape = errors.New("harnvm: host response has an unexpected shape")

// ShapeError is a host answer a reader refuses. Its message is Harn's.
type ShapeError struct {
	// Method is the bridge method whose answer it is.
	Method string
	// Detail is Harn's wording, after the method name.
	Detail string
}

func (e *ShapeError) Error() string { return e.Method + ": " + e.Detail }

// Is matches ErrResponseShape.
func (e *ShapeError) Is(target error) bool { return target == ErrResponseShape }

func shapeErr(method, detail string) error { return &ShapeError{Method: method, Detail: detail} }

// Default values Harn fills in when a host leaves them out.
const (
	// DefaultMatchScore is a skill match's score when the host gives none.
	DefaultMatchScore = 1.0
	// DefaultMatchReason is a skill match's reason when the host gives
	// none.
	DefaultMatchReason = "host match"
)

// members decodes a JSON object into its members, in order. ok is false
// for anything but an object (or an object with a duplicate member).
func members(raw []byte) (map[string]jsontext.Value, bool) {
	if jsontext.Value(raw).Kind() != '{' {
		return nil, false
	}
	var m map[string]jsontext.Value
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// elements decodes a JSON array into its elements.
func elements(raw jsontext.Value) ([]jsontext.Value, bool) {
	if raw.Kind() != '[' {
		return nil, false
	}
	var list []jsontext.Value
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	return list, true
}

// str reads a string member; ok is false when it is absent or not a
// string.
func str(m map[string]jsontext.Value, name string) (string, bool) {
	v, ok := m[name]
	if !ok || v.Kind() != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// stringList reads a member that is an array of strings, skipping elements
// that are not strings; ok is false when it is absent or not an array.
func stringList(m map[string]jsontext.Value, name string) ([]string, bool) {
	list, ok := elements(m[name])
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		var s string
		if v.Kind() == '"' && json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
	}
	return out, true
}

// ReadTools reads a host/tools/list result as Harn does: {tools: [...]}
// (canonical), a bare array, or {result: {tools: [...]}}. Every tool must be
// an object with a non-empty string name; it is normalised to exactly
// name, description (description, else the compatibility name
// short_description, else ""), schema (the first of schema, parameters and
// input_schema that is an object, else null) and deprecated (false unless
// true). Any other shape is a *ShapeError with Harn's message.
func ReadTools(result []byte) ([]harn.HostTool, error) {
	const method = harn.MethodHostToolsList
	var list jsontext.Value
	switch raw := jsontext.Value(result); raw.Kind() {
	case '[':
		list = raw
	case '{':
		m, ok := members(raw)
		if !ok {
			return nil, shapeErr(method, "unexpected response shape")
		}
		if tools, ok := m["tools"]; ok {
			list = tools
		} else if inner, ok := members(m["result"]); ok {
			list = inner["tools"]
		}
		if list == nil {
			return nil, shapeErr(method, "unexpected response shape")
		}
	default:
		return nil, shapeErr(method, "host response must be an array or { tools: [...] }")
	}
	items, ok := elements(list)
	if !ok {
		return nil, shapeErr(method, "host response must be an array or { tools: [...] }")
	}
	out := make([]harn.HostTool, 0, len(items))
	for _, item := range items {
		m, ok := members(item)
		if !ok {
			return nil, shapeErr(method, "every tool must be an object")
		}
		name, ok := str(m, "name")
		if !ok || name == "" {
			return nil, shapeErr(method, "every tool must include a string `name`")
		}
		desc, ok := str(m, "description")
		if !ok {
			desc, _ = str(m, "short_description")
		}
		schema := jsontext.Value("null")
		for _, key := range []string{"schema", "parameters", "input_schema"} {
			if v := m[key]; v.Kind() == '{' {
				schema = v
				break
			}
		}
		deprecated := m["deprecated"].Kind() == 't'
		out = append(out, harn.HostTool{Name: name, Description: &desc, Schema: schema, Deprecated: &deprecated})
	}
	return out, nil
}

// ReadSkills reads a skills/list result as Harn does: an array of
// SkillManifestRef objects, or {skills: [...]}. Each entry must be an
// object; its id, name, description and source are kept when they are
// strings (and the id non-empty), with the other members in Extra.
func ReadSkills(result []byte) ([]harn.SkillManifestRef, error) {
	const method = harn.MethodSkillsList
	var list jsontext.Value
	switch raw := jsontext.Value(result); raw.Kind() {
	case '[':
		list = raw
	case '{':
		m, ok := members(raw)
		if !ok || m["skills"] == nil {
			return nil, shapeErr(method, "unexpected response shape")
		}
		list = m["skills"]
	default:
		return nil, shapeErr(method, "host response must be an array or { skills: [...] }")
	}
	items, ok := elements(list)
	if !ok {
		return nil, shapeErr(method, "host response must be an array or { skills: [...] }")
	}
	out := make([]harn.SkillManifestRef, 0, len(items))
	for _, item := range items {
		m, ok := members(item)
		if !ok {
			return nil, shapeErr(method, "unexpected response shape")
		}
		var ref harn.SkillManifestRef
		for _, f := range []struct {
			name string
			dst  **string
		}{{"id", &ref.ID}, {"name", &ref.Name}, {"description", &ref.Description}, {"source", &ref.Source}} {
			if s, ok := str(m, f.name); ok && (s != "" || f.name != "id") {
				*f.dst = &s
			}
		}
		ref.Extra = extras(item, "id", "name", "description", "source")
		out = append(out, ref)
	}
	return out, nil
}

// extras returns the members of the object raw other than names, in
// arrival order.
func extras(raw jsontext.Value, names ...string) wire.Extras {
	var out wire.Extras
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		if !slices.Contains(names, name) {
			out = append(out, wire.Member{Name: name, Value: v.Clone()})
		}
	}
	return out
}

// skillManifestMembers are the members of a skill's manifest.
var skillManifestMembers = []string{"when_to_use", "allowed_tools", "paths", "model"}

// ReadSkill reads a skills/fetch result as Harn does: {name, description,
// body, manifest: {when_to_use, allowed_tools, paths, model}}, where the
// host may put the manifest's members at the top level instead. The result
// always has its manifest under Manifest, merged from both places (a
// nested member wins), with allowed_tools and paths empty rather than
// absent; the flattened members are not repeated at the top level. Members
// of the wrong type are treated as absent, other members are kept in
// Extra. A result that is not an object is a *ShapeError.
func ReadSkill(result []byte) (*harn.Skill, error) {
	const method = harn.MethodSkillsFetch
	top, ok := members(result)
	if !ok {
		return nil, shapeErr(method, "unexpected response shape")
	}
	var s harn.Skill
	for _, f := range []struct {
		name string
		dst  **string
	}{{"name", &s.Name}, {"description", &s.Description}, {"body", &s.Body}} {
		if v, ok := str(top, f.name); ok {
			*f.dst = &v
		}
	}
	nested, _ := members(top["manifest"])
	man := &harn.SkillManifest{AllowedTools: []string{}, Paths: []string{}}
	for _, from := range []map[string]jsontext.Value{top, nested} { // nested last: it wins
		if v, ok := str(from, "when_to_use"); ok {
			man.WhenToUse = &v
		}
		if v, ok := str(from, "model"); ok {
			man.Model = &v
		}
		if v, ok := stringList(from, "allowed_tools"); ok {
			man.AllowedTools = v
		}
		if v, ok := stringList(from, "paths"); ok {
			man.Paths = v
		}
	}
	if nested != nil {
		man.Extra = extras(top["manifest"], skillManifestMembers...)
	}
	s.Manifest = man
	s.Extra = extras(result, append([]string{"name", "description", "body", "manifest"}, skillManifestMembers...)...)
	return &s, nil
}

// ReadSkillMatches reads a skill/match result as Harn does: {matches: [...]}
// (canonical), a bare array, {skills: [...]} or {result: {matches: [...]}}.
// Entries without a non-empty string name are skipped, and so are names
// that are not among candidates (unless candidates is nil); a name given
// twice keeps its best entry. Score defaults to DefaultMatchScore (a
// negative score counts as 0) and reason to DefaultMatchReason; both are
// always set in the result, which is ordered by score, highest first (ties
// in the host's order). Any other shape is a *ShapeError.
func ReadSkillMatches(result []byte, candidates []harn.SkillCandidate) ([]harn.SkillMatch, error) {
	const method = harn.MethodSkillMatch
	var list jsontext.Value
	switch raw := jsontext.Value(result); raw.Kind() {
	case '[':
		list = raw
	case '{':
		m, ok := members(raw)
		if !ok {
			return nil, shapeErr(method, "unexpected response shape")
		}
		switch {
		case m["matches"] != nil:
			list = m["matches"]
		case m["skills"] != nil:
			list = m["skills"]
		default:
			if inner, ok := members(m["result"]); ok {
				list = inner["matches"]
			}
		}
	}
	items, ok := elements(list)
	if !ok {
		return nil, shapeErr(method, "host response must be an array or { matches: [...] }")
	}
	out := make([]harn.SkillMatch, 0, len(items))
	for _, item := range items {
		m, ok := members(item)
		if !ok {
			continue
		}
		name, ok := str(m, "name")
		if !ok || name == "" {
			continue
		}
		if candidates != nil && !slices.ContainsFunc(candidates, func(c harn.SkillCandidate) bool { return c.Name == name }) {
			continue
		}
		score := DefaultMatchScore
		if v := m["score"]; v.Kind() == '0' {
			var f float64
			if json.Unmarshal(v, &f) == nil && !math.IsNaN(f) {
				score = max(f, 0)
			}
		}
		reason, ok := str(m, "reason")
		if !ok {
			reason = DefaultMatchReason
		}
		if i := slices.IndexFunc(out, func(o harn.SkillMatch) bool { return o.Name == name }); i >= 0 {
			if *out[i].Score < score {
				out[i].Score, out[i].Reason = &score, &reason
			}
			continue
		}
		out = append(out, harn.SkillMatch{Name: name, Score: &score, Reason: &reason, Extra: extras(item, "name", "score", "reason")})
	}
	slices.SortStableFunc(out, func(a, b harn.SkillMatch) int {
		switch {
		case *a.Score > *b.Score:
			return -1
		case *a.Score < *b.Score:
			return 1
		}
		return 0
	})
	return out, nil
}
