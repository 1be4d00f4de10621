package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A parsed Markdown file: its title and its chunks, in order.
type parsed struct {
	title  string
	chunks []Chunk
}

// block is a run of lines that is never split between chunks unless it is
// larger than a chunk by itself: a paragraph, a list, a table, a fenced
// code block.
type block struct {
	start, end int // 1-based, inclusive
	text       string
}

type section struct {
	headings []string
	blocks   []block
}

// parseMarkdown cuts src into chunks. Headings (ATX "# ..." and setext
// underlines) open sections; blank lines separate blocks; fenced code
// blocks are kept whole and their "#" lines are not headings; YAML front
// matter is skipped and its title: used. Blocks of a section are grouped
// into chunks of at most maxBytes; a larger block is cut at line
// boundaries, and a longer line at a space.
func parseMarkdown(path, src string, maxBytes int) parsed {
	src = strings.ToValidUTF8(src, "\uFFFD")
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var p parsed
	first := 0
	if title, end, ok := frontMatter(lines); ok {
		p.title, first = title, end
	}

	var (
		stack    [6]string // current heading at each level
		sections = []section{{}}
		para     []string
		paraFrom int
		fence    string // the opening fence while inside a fenced block
		code     []string
		codeFrom int
		firstH1  string
		firstH   string
	)
	cur := func() *section { return &sections[len(sections)-1] }
	flushPara := func() {
		if len(para) > 0 {
			cur().blocks = append(cur().blocks, block{paraFrom, paraFrom + len(para) - 1, strings.Join(para, "\n")})
			para = para[:0]
		}
	}
	openSection := func(level int, text string) {
		if text == "" {
			text = "(untitled)"
		}
		if level == 1 && firstH1 == "" {
			firstH1 = text
		}
		if firstH == "" {
			firstH = text
		}
		stack[level-1] = text
		for i := level; i < len(stack); i++ {
			stack[i] = ""
		}
		var hs []string
		for _, h := range stack[:level] {
			if h != "" {
				hs = append(hs, h)
			}
		}
		sections = append(sections, section{headings: hs})
	}
	for i := first; i < len(lines); i++ {
		line, n := lines[i], i+1
		if fence != "" {
			code = append(code, line)
			if closesFence(line, fence) {
				cur().blocks = append(cur().blocks, block{codeFrom, n, strings.Join(code, "\n")})
				fence, code = "", code[:0]
			}
			continue
		}
		if f, ok := opensFence(line); ok {
			flushPara()
			fence, code, codeFrom = f, append(code[:0], line), n
			continue
		}
		if level, text, ok := atxHeading(line); ok {
			flushPara()
			openSection(level, text)
			continue
		}
		if level, ok := setextUnderline(line); ok && len(para) > 0 {
			text := strings.TrimSpace(strings.Join(para, " "))
			para = para[:0]
			openSection(level, text)
			continue
		}
		if strings.TrimSpace(line) == "" || thematicBreak(line) {
			flushPara()
			continue
		}
		if len(para) == 0 {
			paraFrom = n
		}
		para = append(para, line)
	}
	flushPara()
	if fence != "" { // unclosed fence: the rest of the file is code
		cur().blocks = append(cur().blocks, block{codeFrom, codeFrom + len(code) - 1, strings.Join(code, "\n")})
	}

	switch {
	case p.title != "":
	case firstH1 != "":
		p.title = firstH1
	case firstH != "":
		p.title = firstH
	default:
		base := path[strings.LastIndex(path, "/")+1:]
		if dot := strings.LastIndex(base, "."); dot > 0 {
			base = base[:dot]
		}
		p.title = base
	}

	seen := map[string]int{}
	for _, s := range sections {
		for _, c := range groupBlocks(s.blocks, maxBytes) {
			c.Path, c.SourceID, c.Title = path, path, p.title
			c.Headings = s.headings
			c.ID = chunkID(path, s.headings, c.Text, seen)
			p.chunks = append(p.chunks, c)
		}
	}
	return p
}

// chunkID derives an id from what the chunk is, not where it is: editing
// one paragraph or inserting lines above it leaves the ids of the other
// chunks unchanged. Identical chunks under the same heading get -2, -3,
// ... in order of appearance.
func chunkID(path string, headings []string, text string, seen map[string]int) string {
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(headings, "\x1f")))
	h.Write([]byte{0})
	h.Write([]byte(text))
	id := "c_" + hex.EncodeToString(h.Sum(nil))[:16]
	seen[id]++
	if k := seen[id]; k > 1 {
		id += "-" + strconv.Itoa(k)
	}
	return id
}

// groupBlocks packs consecutive blocks into chunks of at most maxBytes of
// text, cutting blocks that are larger by themselves.
func groupBlocks(blocks []block, maxBytes int) []Chunk {
	var out []Chunk
	var cur *Chunk
	add := func(b block) {
		if cur != nil && len(cur.Text)+2+len(b.text) <= maxBytes {
			cur.Text += "\n\n" + b.text
			cur.EndLine = b.end
			return
		}
		out = append(out, Chunk{StartLine: b.start, EndLine: b.end, Text: b.text})
		cur = &out[len(out)-1]
	}
	for _, b := range blocks {
		if len(b.text) <= maxBytes {
			add(b)
			continue
		}
		for _, piece := range splitBlock(b, maxBytes) {
			add(piece)
			cur = nil // a piece of a cut block fills its own chunk
		}
	}
	return out
}

// splitBlock cuts a block into pieces of at most maxBytes at line
// boundaries; a line longer than maxBytes is cut at the last space before
// the limit (or at a rune boundary when it has none).
func splitBlock(b block, maxBytes int) []block {
	var out []block
	var text []string
	size, from := 0, b.start
	emit := func(end int) {
		if len(text) > 0 {
			out = append(out, block{from, end, strings.Join(text, "\n")})
			text, size = nil, 0
		}
	}
	for i, line := range strings.Split(b.text, "\n") {
		n := b.start + i
		for len(line) > maxBytes {
			emit(n - 1)
			cut := strings.LastIndexByte(line[:maxBytes], ' ')
			if cut <= 0 {
				cut = maxBytes
				for cut > 0 && !utf8.RuneStart(line[cut]) {
					cut--
				}
			}
			out = append(out, block{n, n, strings.TrimRight(line[:cut], " ")})
			line = strings.TrimLeft(line[cut:], " ")
		}
		if size > 0 && size+1+len(line) > maxBytes {
			emit(n - 1)
		}
		if len(text) == 0 {
			from = n
		}
		if line != "" || len(text) > 0 {
			text = append(text, line)
			size += len(line) + 1
		}
	}
	emit(b.end)
	return out
}

// frontMatter recognises YAML front matter ("---" on the first line, up to
// a closing "---" or "..."), returning its title: value and the index of
// the first line after it.
func frontMatter(lines []string) (title string, next int, ok bool) {
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return "", 0, false
	}
	for i := 1; i < len(lines) && i < 500; i++ {
		l := strings.TrimSpace(lines[i])
		if l == "---" || l == "..." {
			return title, i + 1, true
		}
		if v, found := strings.CutPrefix(lines[i], "title:"); found && title == "" {
			title = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return "", 0, false
}

// indent returns line without up to three leading spaces, and false when
// it is indented four or more (an indented code line, not a marker).
func indent(line string) (string, bool) {
	for i := 0; i < 4; i++ {
		if i == len(line) || line[i] != ' ' {
			return line[i:], true
		}
	}
	return line, false
}

func atxHeading(line string) (level int, text string, ok bool) {
	l, ok := indent(line)
	if !ok {
		return 0, "", false
	}
	for level < len(l) && l[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(l) && l[level] != ' ' && l[level] != '\t') {
		return 0, "", false
	}
	text = strings.TrimSpace(l[level:])
	// An optional closing sequence of #s, preceded by a space.
	if t := strings.TrimRight(text, "#"); t != text && (t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		text = strings.TrimSpace(t)
	}
	return level, text, true
}

func setextUnderline(line string) (level int, ok bool) {
	l, ok := indent(line)
	if !ok {
		return 0, false
	}
	l = strings.TrimRight(l, " \t")
	switch {
	case l == "":
		return 0, false
	case strings.Trim(l, "=") == "":
		return 1, true
	case strings.Trim(l, "-") == "":
		return 2, true
	}
	return 0, false
}

func opensFence(line string) (string, bool) {
	l, ok := indent(line)
	if !ok || len(l) < 3 || (l[0] != '`' && l[0] != '~') {
		return "", false
	}
	n := 0
	for n < len(l) && l[n] == l[0] {
		n++
	}
	if n < 3 || (l[0] == '`' && strings.Contains(l[n:], "`")) {
		return "", false
	}
	return l[:n], true
}

func closesFence(line, fence string) bool {
	l, ok := indent(line)
	if !ok {
		return false
	}
	l = strings.TrimRight(l, " \t")
	return len(l) >= len(fence) && strings.Trim(l, fence[:1]) == ""
}

// thematicBreak recognises "---", "***", "___" (three or more, spaces
// allowed between); a "---" under a paragraph was already taken as a
// setext underline.
func thematicBreak(line string) bool {
	l, ok := indent(line)
	if !ok {
		return false
	}
	l = strings.ReplaceAll(strings.ReplaceAll(l, " ", ""), "\t", "")
	return len(l) >= 3 && (l[0] == '-' || l[0] == '*' || l[0] == '_') && strings.Trim(l, l[:1]) == ""
}
