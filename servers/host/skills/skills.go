// Package skills serves a Harn host's skills from a folder of skill
// files: skills/list, skills/fetch and skill/match (Set.Register).
//
// Every *.md file under the folder is a skill. Its id is its path in the
// folder without ".md" (review.md is "review", ops/review.md is
// "ops/review"), or the folder's path for a file named SKILL.md
// (ship/SKILL.md is "ship"). Optional front matter between "---" lines
// sets name (default: the id's last element), description (default: the
// body's first line of prose), when_to_use, allowed_tools, paths
// (workspace path patterns) and model; other keys are passed on in the
// manifest. The front matter is the YAML subset such files use: key:
// value, quoted values, [a, b] and "- item" lists, > and | blocks, #
// comments. The rest of the file is the body.
//
// skill/match ranks the runtime's candidates with Okapi BM25 (Rank): k1
// 1.2, b 0.75, over each candidate's name (counted 3 times), description
// and when_to_use (twice each) and, for a candidate the Set has a skill of
// the same name, the skill's body. Words are lower-cased, stop words
// dropped and common English suffixes stripped; a working file that
// matches one of the candidate's paths adds 1.0. Candidates that score are
// returned best first (ties by name), scores rounded to 4 decimals, with
// the matched words in the reason: the same request always gets the same
// answer.
package skills

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Skill is one skill file of the skills folder.
type Skill struct {
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

// Set is the skills folder, loaded once; read-only after Load.
type Set struct {
	Dir    string   // the folder; "" for none
	List   []*Skill // by ID
	ByID   map[string]*Skill
	ByName map[string]*Skill // the first skill of each name
}

// The bounds of a skills folder, which can come with a repository the
// host did not write: a skill file of more than MaxFileBytes, or a folder
// of more than MaxTotalBytes of skill files, fails Load.
const (
	MaxFileBytes  = 1 << 20
	MaxTotalBytes = 64 << 20
)

// Load reads every *.md file under dir ("" is no skills). A *.md entry
// that is not a regular file (a link to a device, a FIFO), or that is
// larger than the bounds above, fails it, naming the file.
func Load(dir string) (*Set, error) {
	set := &Set{Dir: dir, ByID: map[string]*Skill{}, ByName: map[string]*Skill{}}
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
	total := 0
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
		data, err := readSkill(p, MaxTotalBytes-total)
		if err != nil {
			return err
		}
		total += len(data)
		s, err := Parse(id, string(data))
		if err != nil {
			return fmt.Errorf("skill %s: %w", p, err)
		}
		if prev, dup := set.ByID[id]; dup {
			return fmt.Errorf("skills %s: two files define skill %q (%s)", dir, id, prev.Name)
		}
		set.ByID[id] = s
		set.List = append(set.List, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(set.List, func(a, b *Skill) int { return strings.Compare(a.ID, b.ID) })
	for _, s := range set.List {
		if _, ok := set.ByName[s.Name]; !ok {
			set.ByName[s.Name] = s
		}
	}
	return set, nil
}

// readSkill reads the skill file p, a regular file (a link is followed)
// of at most MaxFileBytes and left bytes.
func readSkill(p string, left int) ([]byte, error) {
	// Stat before opening: opening a FIFO would wait for a writer.
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("skill %s is not a regular file (%s)", p, fi.Mode().Type())
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("skill %s is not a regular file (%s)", p, fi.Mode().Type())
	}
	limit := min(MaxFileBytes, left)
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	switch {
	case err != nil:
		return nil, err
	case len(data) > limit && limit == MaxFileBytes:
		return nil, fmt.Errorf("skill %s is larger than %d bytes", p, MaxFileBytes)
	case len(data) > limit:
		return nil, fmt.Errorf("skill %s: the skills folder holds more than %d bytes of skill files", p, MaxTotalBytes)
	}
	return data, nil
}

// Parse reads a skill file: optional front matter between "---"
// lines, then the body. Without front matter the name is the file's and
// the description its first line of prose.
func Parse(id, text string) (*Skill, error) {
	s := &Skill{ID: id, Name: path.Base(id), Body: text}
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
func (s *Skill) apply(fm []fmEntry) error {
	for _, e := range fm {
		str := func() (string, error) {
			if e.List != nil {
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
			if e.List != nil {
				v = e.List
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
	List  []string
}

// items is the entry as a list: a scalar is a one-item list ("" none).
func (e fmEntry) items() []string {
	if e.List != nil {
		return e.List
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
			e.List = []string{}
			for item := range strings.SplitSeq(value[1:len(value)-1], ",") {
				if item = strings.TrimSpace(item); item != "" {
					v, err := scalar(item)
					if err != nil {
						return nil, fmt.Errorf("front matter key %s: %w", key, err)
					}
					e.List = append(e.List, v)
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
				e.List = append(e.List, v)
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
