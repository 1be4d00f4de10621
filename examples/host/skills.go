package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// skill is one skill file of the skills folder (see README.md, "Skills").
type skill struct {
	ID           string // its path in the folder: "deploy" for deploy.md or deploy/SKILL.md
	Name         string
	Description  string
	WhenToUse    string
	AllowedTools []string
	Paths        []string
	Model        string
	Extra        map[string]jsontext.Value // other front matter keys
	Body         string
}

// skillSet is the skills folder, loaded once.
type skillSet struct {
	dir    string   // the folder; "" for none
	list   []*skill // by ID
	byID   map[string]*skill
	byName map[string]*skill // the first skill of each name
}

// loadSkills reads every *.md file under dir ("" is no skills).
func loadSkills(dir string) (*skillSet, error) {
	set := &skillSet{dir: dir, byID: map[string]*skill{}, byName: map[string]*skill{}}
	if dir == "" {
		return set, nil
	}
	// WalkDir does not follow a symlink at its root: walk the folder the
	// path names.
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("skills %s is not a directory", dir)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".md") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		id := strings.TrimSuffix(rel, path.Ext(rel))
		if path.Base(rel) == "SKILL.md" {
			id = path.Dir(rel)
			if id == "." {
				return fmt.Errorf("skills %s: SKILL.md belongs in a folder named after the skill", dir)
			}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s, err := parseSkill(id, string(data))
		if err != nil {
			return fmt.Errorf("skill %s: %w", p, err)
		}
		if prev, dup := set.byID[id]; dup {
			return fmt.Errorf("skills %s: two files define skill %q (%s)", dir, id, prev.Name)
		}
		set.byID[id] = s
		set.list = append(set.list, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(set.list, func(a, b *skill) int { return strings.Compare(a.ID, b.ID) })
	for _, s := range set.list {
		if _, ok := set.byName[s.Name]; !ok {
			set.byName[s.Name] = s
		}
	}
	return set, nil
}

// parseSkill reads a skill file: optional front matter between "---"
// lines, then the body. Without front matter the name is the file's and
// the description its first line of prose.
func parseSkill(id, text string) (*skill, error) {
	s := &skill{ID: id, Name: path.Base(id), Body: text}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		end := strings.Index(rest, "\n---\n")
		if end < 0 {
			if !strings.HasSuffix(rest, "\n---") {
				return nil, fmt.Errorf("front matter is not closed by a --- line")
			}
			end = len(rest) - len("\n---")
		}
		fm, err := parseFrontMatter(rest[:end])
		if err != nil {
			return nil, err
		}
		s.Body = strings.TrimPrefix(rest[min(end+len("\n---\n"), len(rest)):], "\n")
		if err := s.apply(fm); err != nil {
			return nil, err
		}
	} else {
		s.Body = text
	}
	if s.Description == "" {
		for line := range strings.SplitSeq(s.Body, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				s.Description = line
				break
			}
		}
	}
	return s, nil
}

// apply sets the skill's fields from its front matter.
func (s *skill) apply(fm []fmEntry) error {
	for _, e := range fm {
		str := func() (string, error) {
			if e.list != nil {
				return "", fmt.Errorf("%s: want a single value, not a list", e.key)
			}
			return e.value, nil
		}
		var err error
		switch e.key {
		case "name":
			s.Name, err = str()
		case "description":
			s.Description, err = str()
		case "when_to_use", "when-to-use", "whenToUse":
			s.WhenToUse, err = str()
		case "model":
			s.Model, err = str()
		case "allowed_tools", "allowed-tools", "allowedTools":
			s.AllowedTools = e.items()
		case "paths":
			s.Paths = e.items()
		default:
			var v any = e.value
			if e.list != nil {
				v = e.list
			}
			raw, merr := json.Marshal(v)
			if merr != nil {
				return merr
			}
			if s.Extra == nil {
				s.Extra = map[string]jsontext.Value{}
			}
			s.Extra[e.key] = raw
		}
		if err != nil {
			return err
		}
	}
	if s.Name == "" {
		return fmt.Errorf("name is empty")
	}
	return nil
}

// fmEntry is one key of front matter: a scalar or a list.
type fmEntry struct {
	key   string
	value string
	list  []string
}

// items is the entry as a list: a scalar is a one-item list ("" none).
func (e fmEntry) items() []string {
	if e.list != nil {
		return e.list
	}
	if e.value == "" {
		return []string{}
	}
	return []string{e.value}
}

// parseFrontMatter reads the small YAML subset skill files use: "key:
// value" lines, quoted scalars, inline lists "[a, b]", block lists of
// "- item" lines, folded (>) and literal (|) block scalars, and # comments.
func parseFrontMatter(text string) ([]fmEntry, error) {
	lines := strings.Split(text, "\n")
	var out []fmEntry
	seen := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, fmt.Errorf("front matter line %d: unexpected indentation: %q", i+1, line)
		}
		key, value, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t\"'") {
			return nil, fmt.Errorf("front matter line %d: want \"key: value\", got %q", i+1, line)
		}
		if seen[key] {
			return nil, fmt.Errorf("front matter line %d: %s is set twice", i+1, key)
		}
		seen[key] = true
		value = strings.TrimSpace(stripComment(value))
		e := fmEntry{key: key}
		// The lines indented under the key, for block lists and scalars.
		var block []string
		for i+1 < len(lines) && (lines[i+1] == "" || lines[i+1][0] == ' ' || lines[i+1][0] == '\t') {
			i++
			block = append(block, lines[i])
		}
		switch {
		case value == "|" || value == ">" || value == "|-" || value == ">-":
			e.value = blockScalar(block, value[0] == '>')
		case strings.HasPrefix(value, "["):
			if !strings.HasSuffix(value, "]") || len(block) > 0 && strings.TrimSpace(strings.Join(block, "")) != "" {
				return nil, fmt.Errorf("front matter line %d: an inline list must end on its line with ]", i+1)
			}
			e.list = []string{}
			for item := range strings.SplitSeq(value[1:len(value)-1], ",") {
				if item = strings.TrimSpace(item); item != "" {
					v, err := scalar(item)
					if err != nil {
						return nil, fmt.Errorf("front matter key %s: %w", key, err)
					}
					e.list = append(e.list, v)
				}
			}
		case value == "":
			for _, b := range block {
				b = strings.TrimSpace(stripComment(b))
				if b == "" {
					continue
				}
				item, ok := strings.CutPrefix(b, "-")
				if !ok {
					return nil, fmt.Errorf("front matter key %s: want \"- item\" lines under it, got %q", key, b)
				}
				v, err := scalar(strings.TrimSpace(item))
				if err != nil {
					return nil, fmt.Errorf("front matter key %s: %w", key, err)
				}
				e.list = append(e.list, v)
			}
		default:
			if strings.TrimSpace(strings.Join(block, "")) != "" {
				return nil, fmt.Errorf("front matter key %s: a value continues on the next line; use > or |", key)
			}
			v, err := scalar(value)
			if err != nil {
				return nil, fmt.Errorf("front matter key %s: %w", key, err)
			}
			e.value = v
		}
		out = append(out, e)
	}
	return out, nil
}

// scalar unquotes a YAML scalar ("double" with JSON escapes, 'single').
func scalar(s string) (string, error) {
	switch {
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		var v string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return "", fmt.Errorf("bad quoted string %s", s)
		}
		return v, nil
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	case strings.HasPrefix(s, "\"") || strings.HasPrefix(s, "'"):
		return "", fmt.Errorf("unterminated quoted string %s", s)
	}
	return s, nil
}

// stripComment removes a " #" comment outside quotes.
func stripComment(s string) string {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// blockScalar joins the indented lines of a | (literal) or > (folded)
// scalar.
func blockScalar(block []string, folded bool) string {
	indent := -1
	for _, b := range block {
		if strings.TrimSpace(b) == "" {
			continue
		}
		n := len(b) - len(strings.TrimLeft(b, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	var lines []string
	for _, b := range block {
		if len(b) >= indent && indent >= 0 {
			b = b[indent:]
		} else {
			b = strings.TrimSpace(b)
		}
		lines = append(lines, b)
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if !folded {
		return strings.Join(lines, "\n")
	}
	var out strings.Builder
	for i, l := range lines {
		switch {
		case i == 0, lines[i-1] == "" && l != "":
		case l == "":
			out.WriteString("\n")
		default:
			out.WriteString(" ")
		}
		out.WriteString(l)
	}
	return out.String()
}
