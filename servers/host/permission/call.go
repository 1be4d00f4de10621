package permission

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxPaths is how many distinct path-like strings a Call collects
// unless the Policy says otherwise; past it the call is Overflow and every
// Policy denies it.
const DefaultMaxPaths = 4096

// maxPathLen is the longest string taken for a path (PATH_MAX); a longer
// one names no file.
const maxPathLen = 4096

// Call is what a decision sees of one tool call: the request's ToolCall
// merged over the state a Tracker kept for its toolCallId from the
// session/update notifications before it (the request's own fields win;
// paths are the union of all). NewCall builds it.
type Call struct {
	SessionID  acp.SessionID
	ToolCallID acp.ToolCallID
	// Tool is Harn's _meta.harn.toolName, else the title.
	Tool  string
	Title string
	// Kind is the tool kind, "" when neither the request nor an earlier
	// update gave one.
	Kind acp.ToolKind
	// Paths are the paths the call declares it touches: its locations,
	// its diffs' paths, and the strings of raw-input members whose names
	// say they hold a path (path, file_path, paths, target, source,
	// destination, cwd, ...), at any depth. Allow rules with paths must
	// match every one of them.
	Paths []string
	// Mentions are Paths plus every path-like string anywhere in the raw
	// input, under any member name and inside longer strings (a command
	// line's words): what deny rules with paths look at.
	Mentions []string
	// Command is the command line of an execute call, from the raw
	// input's "command" or "cmd" member (a string, or an array of words
	// then joined with spaces) and "args"/"argv"/"arguments", all members
	// of one object at the top or one level down; "" when it has none.
	// It is the request's own when it has one, else the latest tracked.
	// A raw input that names its command ambiguously (two such objects,
	// a member twice, "command" and "cmd" both, or a value other than a
	// string or an array of strings) is Overflow: a tool that kept the
	// other member would run a command nobody checked.
	Command string
	// Commands are the distinct command lines of the request and of every
	// tracked update (each repeats the whole command), in order. An
	// allow rule with commands must allow each; a deny rule matches when
	// it matches any.
	Commands []string
	// Overflow says that the call names more than the Policy's MaxPaths
	// path-like strings, that its tracked state was dropped for its size,
	// or that its raw input is unreadable or names its command
	// ambiguously: it is denied unread.
	Overflow bool
	// Request is the request decided.
	Request *acp.RequestPermissionRequest
}

// collector gathers a Call's paths in linear time, deduplicated.
type collector struct {
	max      int
	paths    []string
	mentions []string
	seenP    map[string]bool
	seenM    map[string]bool
	overflow bool
	command  []string // of the raw input being read
	commands []string // one line per raw input that has one, distinct
	seenC    map[string]bool
	last     string // the line of the latest raw input that has one
}

func newCollector(max int) *collector {
	if max <= 0 {
		max = DefaultMaxPaths
	}
	return &collector{max: max, seenP: map[string]bool{}, seenM: map[string]bool{}, seenC: map[string]bool{}}
}

func (c *collector) mention(p string) {
	if c.overflow || p == "" || len(p) > maxPathLen || c.seenM[p] {
		return
	}
	if len(c.seenM) >= c.max {
		c.overflow = true
		return
	}
	c.seenM[p] = true
	c.mentions = append(c.mentions, p)
}

func (c *collector) declare(p string) {
	if p == "" || strings.ContainsAny(p, "\n\r\x00") || len(p) > maxPathLen {
		c.words(p)
		return
	}
	c.mention(p)
	if strings.ContainsAny(p, " \t") {
		c.words(p) // a deny rule sees its words too
	}
	if c.overflow || c.seenP[p] {
		return
	}
	c.seenP[p] = true
	c.paths = append(c.paths, p)
}

// words adds the path-like words of a free-form string.
func (c *collector) words(s string) {
	for w := range strings.FieldsSeq(s) {
		if c.overflow {
			return
		}
		w = strings.Trim(w, "\"'`()[]{}<>,;|&")
		if i := strings.IndexByte(w, '='); i >= 0 { // --out=/etc/x, KEY=/path
			c.word(w[:i])
			w = w[i+1:]
		}
		c.word(w)
	}
}

func (c *collector) word(w string) {
	if pathLike(w) {
		c.mention(w)
	}
}

// pathLike reports whether a word could name a file: it has a separator,
// starts with ~ or ., or looks like name.ext.
func pathLike(w string) bool {
	if w == "" || len(w) > maxPathLen || !utf8.ValidString(w) {
		return false
	}
	if strings.ContainsAny(w, `/\`) || w[0] == '~' || w[0] == '.' {
		return strings.Trim(w, `/\.`) != "" || w == "." || w == ".." || strings.HasPrefix(w, "/")
	}
	dot := strings.LastIndexByte(w, '.')
	return dot > 0 && dot < len(w)-1
}

// pathKey reports whether a raw-input member's name says it holds paths.
func pathKey(name string) bool {
	n := strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', ' ':
			return -1
		}
		return r
	}, strings.ToLower(name))
	if strings.Contains(n, "content") || strings.Contains(n, "text") {
		return false
	}
	switch n {
	case "source", "src", "destination", "dest", "dst", "target", "cwd", "location", "root", "from", "to", "glob", "pattern":
		return true
	}
	return strings.Contains(n, "path") || strings.Contains(n, "file") || strings.Contains(n, "dir") || strings.Contains(n, "folder")
}

// rawInput walks a raw input document once, collecting paths and its
// command line: each document's own (the tracked updates and the request
// each repeat the whole command), kept once.
func (c *collector) rawInput(doc jsontext.Value) {
	if len(doc) == 0 {
		return
	}
	c.command = nil
	defer func() {
		if len(c.command) == 0 {
			return
		}
		c.last = strings.Join(c.command, " ")
		if !c.seenC[c.last] {
			c.seenC[c.last] = true
			c.commands = append(c.commands, c.last)
		}
	}()
	dec := jsontext.NewDecoder(bytes.NewReader(doc), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	// names has one entry per open container: for an object, the name of
	// the member being read; for an array, the name it sits under. objects
	// has one too: the object's number, or for an array its object's.
	var names []string
	var objects []int
	opened := 0
	top := func() (string, int) {
		if len(names) == 0 {
			return "", 0
		}
		return names[len(names)-1], objects[len(objects)-1]
	}
	var cmd commandMembers
	for !c.overflow {
		tok, err := dec.ReadToken()
		if err != nil {
			if err != io.EOF || dec.StackDepth() != 0 {
				c.overflow = true // unreadable: nothing in it can be checked
			}
			return
		}
		depth := dec.StackDepth()
		holder, object := top()
		inCommand := cmd.holds(holder, object)
		switch k := tok.Kind(); k {
		case '{', '[':
			if inCommand && (k == '{' || depth != cmd.depth+1) {
				c.overflow = true // an object or a nested array as a command
				return
			}
			if k == '{' {
				opened++
				object = opened
			}
			names, objects = append(names, holder), append(objects, object)
			continue
		case '}', ']':
			names, objects = names[:max(len(names)-1, 0)], objects[:max(len(objects)-1, 0)]
			continue
		case '"':
		default:
			if inCommand {
				c.overflow = true // a number, boolean or null as a command word
				return
			}
			continue
		}
		if kind, n := dec.StackIndex(depth); kind == '{' && n%2 == 1 {
			name := tok.String()
			names[len(names)-1] = name
			if depth <= 2 && !cmd.add(name, object, depth) {
				c.overflow = true // the command named twice
				return
			}
			continue
		}
		s := tok.String()
		if pathKey(holder) {
			c.declare(s)
		} else {
			c.words(s)
		}
		if inCommand {
			c.command = append(c.command, s)
		}
	}
}

// commandMembers are the members of a raw input that make up its command
// line: a program ("command", "cmd") and its arguments ("args", "argv",
// "arguments"), each at most once, in one object at depth 1 or 2.
type commandMembers struct {
	object           int // the object holding them, 0 before the first
	depth            int // its depth
	program, argList bool
}

// commandRole says whether a member name is a program (1), arguments (2)
// or neither (0).
func commandRole(name string) int {
	switch strings.ToLower(name) {
	case "command", "cmd":
		return 1
	case "args", "argv", "arguments":
		return 2
	}
	return 0
}

// add records the member name of object, at depth, and reports false when
// it makes the command ambiguous.
func (m *commandMembers) add(name string, object, depth int) bool {
	role := commandRole(name)
	if role == 0 {
		return true
	}
	if m.object != 0 && m.object != object || role == 1 && m.program || role == 2 && m.argList {
		return false
	}
	m.object, m.depth = object, depth
	m.program = m.program || role == 1
	m.argList = m.argList || role == 2
	return true
}

// holds reports whether a value under the member holder of object is
// part of the command line.
func (m *commandMembers) holds(holder string, object int) bool {
	return m.object != 0 && object == m.object && commandRole(holder) != 0
}
