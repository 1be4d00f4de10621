package knowledge

import (
	"slices"
	"strings"
	"testing"
)

type wantChunk struct {
	headings   string // joined with " > "
	start, end int
	text       string
}

func chunksOf(p parsed) []wantChunk {
	var out []wantChunk
	for _, c := range p.chunks {
		out = append(out, wantChunk{strings.Join(c.Headings, " > "), c.StartLine, c.EndLine, c.Text})
	}
	return out
}

func TestParseMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		title     string
		want      []wantChunk
	}{
		{"empty", "", "f", nil},
		{"only blank lines", "\n\n  \n", "f", nil},
		{"preamble without headings", "one\ntwo\n\nthree\n", "f", []wantChunk{{"", 1, 4, "one\ntwo\n\nthree"}}},
		{"atx headings nest and reset", "# A\npa\n## B\npb\n### C\npc\n## D\npd\n", "A", []wantChunk{
			{"A", 2, 2, "pa"}, {"A > B", 4, 4, "pb"}, {"A > B > C", 6, 6, "pc"}, {"A > D", 8, 8, "pd"}}},
		{"closing hashes and skipped levels", "### Deep ###\nx\n# Top #\ny\n", "Top", []wantChunk{{"Deep", 2, 2, "x"}, {"Top", 4, 4, "y"}}},
		{"not headings", "#hashtag\n    # indented code\n####### seven\n", "f", []wantChunk{{"", 1, 3, "#hashtag\n    # indented code\n####### seven"}}},
		{"setext", "Title\n=====\nbody\n\nSub\n---\nmore\n", "Title", []wantChunk{{"Title", 3, 3, "body"}, {"Title > Sub", 7, 7, "more"}}},
		{"thematic break is not a heading", "para\n\n---\n\nnext\n", "f", []wantChunk{{"", 1, 5, "para\n\nnext"}}},
		{"fenced code keeps hash lines", "# H\n```sh\n# comment\n\nx\n```\nafter\n", "H", []wantChunk{{"H", 2, 7, "```sh\n# comment\n\nx\n```\n\nafter"}}},
		{"tilde fence needs same char to close", "~~~\n```\n# no\n~~~\n", "f", []wantChunk{{"", 1, 4, "~~~\n```\n# no\n~~~"}}},
		{"unclosed fence runs to the end", "# H\n```\ncode\n# still code\n", "H", []wantChunk{{"H", 2, 4, "```\ncode\n# still code"}}},
		{"front matter title and lines", "---\ntitle: \"Front\"\ntags: x\n---\n# Head\nbody\n", "Front", []wantChunk{{"Head", 6, 6, "body"}}},
		{"unclosed front matter is a thematic break", "---\ntitle: x\n", "f", []wantChunk{{"", 2, 2, "title: x"}}},
		{"crlf", "# H\r\nline\r\n", "H", []wantChunk{{"H", 2, 2, "line"}}},
		{"heading without body gives no chunk", "# A\n## B\ntext\n# C\n", "A", []wantChunk{{"A > B", 3, 3, "text"}}},
		{"empty heading", "#\nx\n", "(untitled)", []wantChunk{{"(untitled)", 2, 2, "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := parseMarkdown("dir/f.md", tc.src, 1500)
			if p.title != tc.title {
				t.Errorf("title %q, want %q", p.title, tc.title)
			}
			if got := chunksOf(p); !slices.Equal(got, tc.want) {
				t.Errorf("chunks\n got %+v\nwant %+v", got, tc.want)
			}
			for _, c := range p.chunks {
				if c.Path != "dir/f.md" || c.SourceID != c.Path || c.Title != p.title || !strings.HasPrefix(c.ID, "c_") {
					t.Errorf("chunk fields %+v", c)
				}
			}
		})
	}
}

func TestChunkSizeLimit(t *testing.T) {
	var src strings.Builder
	src.WriteString("# H\n")
	for i := range 40 {
		src.WriteString(strings.Repeat("word ", 10) + "\n") // 51 bytes a line
		if i%4 == 3 {
			src.WriteString("\n")
		}
	}
	src.WriteString(strings.Repeat("x", 500) + "\n")                    // one long line, no space
	src.WriteString(strings.Repeat("é", 10) + strings.Repeat("y", 300)) // cut at a rune boundary
	const limit = 128
	p := parseMarkdown("f.md", src.String(), limit)
	if len(p.chunks) < 10 {
		t.Fatalf("only %d chunks", len(p.chunks))
	}
	prevEnd := 1
	for _, c := range p.chunks {
		if len(c.Text) > limit {
			t.Errorf("chunk of %d bytes: %q", len(c.Text), c.Text)
		}
		if !strings.Contains(c.Text, "word") && !strings.ContainsAny(c.Text, "xyé") {
			t.Errorf("odd chunk %q", c.Text)
		}
		if c.StartLine < prevEnd || c.EndLine < c.StartLine {
			t.Errorf("lines %d-%d after %d", c.StartLine, c.EndLine, prevEnd)
		}
		prevEnd = c.StartLine
		if !strings.HasPrefix(strings.ToValidUTF8(c.Text, "!"), c.Text) {
			t.Errorf("invalid UTF-8 in %q", c.Text)
		}
	}
	// Text is not lost: the cut pieces hold every non-space byte.
	var all strings.Builder
	for _, c := range p.chunks {
		all.WriteString(c.Text)
	}
	squeeze := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "# H", "")), "") }
	if squeeze(all.String()) != squeeze(src.String()) {
		t.Error("chunks do not add up to the file")
	}
}

// Chunk ids depend on content: editing one paragraph or moving text down
// leaves the other ids as they were.
func TestChunkIDsAreStable(t *testing.T) {
	ids := func(src string) []string {
		var out []string
		for _, c := range parseMarkdown("f.md", src, 30).chunks {
			out = append(out, c.ID)
		}
		return out
	}
	base := "# A\nfirst paragraph here\n\nsecond paragraph here\n\nthird paragraph here\n"
	a := ids(base)
	if len(a) != 3 || a[0] == a[1] {
		t.Fatalf("ids %q", a)
	}
	if b := ids(base); !slices.Equal(a, b) {
		t.Fatal("not deterministic")
	}
	shifted := ids("\n\n\n" + base)
	if !slices.Equal(a, shifted) {
		t.Fatalf("moving lines changed ids: %q vs %q", a, shifted)
	}
	edited := ids(strings.Replace(base, "second", "2nd", 1))
	if edited[0] != a[0] || edited[2] != a[2] || edited[1] == a[1] {
		t.Fatalf("edit changed the wrong ids: %q vs %q", a, edited)
	}
	dup := ids("# A\nsame\n\n" + strings.Repeat("x", 30) + "\n\nsame\n")
	if len(dup) != 3 || dup[2] != dup[0]+"-2" {
		t.Fatalf("duplicate ids %q", dup)
	}
	otherFile := parseMarkdown("g.md", base, 30).chunks[0].ID
	if otherFile == a[0] {
		t.Fatal("same text in another file has the same id")
	}
}

func FuzzParseMarkdown(f *testing.F) {
	f.Add("---\ntitle: t\n---\n# A\n```\n# b\n```\nSub\n---\ntext\r\n", 64)
	f.Add("~~~~\n", 100)
	f.Fuzz(func(t *testing.T, src string, limit int) {
		if limit < 64 || limit > 4096 {
			return
		}
		p := parseMarkdown("f.md", src, limit)
		lines := strings.Count(src, "\n") + 1
		seen := map[string]bool{}
		for _, c := range p.chunks {
			if len(c.Text) > limit || c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > lines || seen[c.ID] {
				t.Fatalf("bad chunk %+v (limit %d, %d lines)", c, limit, lines)
			}
			seen[c.ID] = true
		}
	})
}
