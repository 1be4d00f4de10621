package repotest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A snippet is one fenced Go block of a Markdown file. How it is checked
// depends on what it is (docs/architecture.md, "Snippets in the docs"):
//
//   - a block whose first line is a package clause is a whole file, built
//     as a package of its own;
//   - a block right after <!-- snippet: excerpt PATH --> is a quotation of
//     PATH and must appear in it line for line (indentation aside);
//   - any other block is a function body, built after the prelude of a
//     <!-- snippet: body ... --> comment right before it: Go imports and
//     declarations that give the names it uses. Unused imports and
//     variables are allowed in a body, nothing else.
type snippet struct {
	file    string // the Markdown file, relative to the repository
	line    int    // the block's first line
	code    string
	excerpt string // excerpt: the quoted file
	prelude string // body: its imports and declarations
}

var (
	excerptMarker = regexp.MustCompile(`^<!-- snippet: excerpt (\S+) -->$`)
	bodyEnd       = regexp.MustCompile(`(?s)^(.*?)-->\s*$`)
)

// snippets returns the fenced Go blocks of a Markdown document.
func snippets(file, doc string) []snippet {
	var out []snippet
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		s := snippet{file: file, line: i + 2}
		before := strings.Join(lines[:i], "\n")
		if i > 0 {
			if m := excerptMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				s.excerpt = m[1]
			}
		}
		// The last body marker, if nothing but blank lines follows it.
		if at := strings.LastIndex(before, "<!-- snippet: body\n"); at >= 0 {
			if m := bodyEnd.FindStringSubmatch(before[at+len("<!-- snippet: body\n"):]); m != nil && !strings.Contains(m[1], "-->") {
				s.prelude = m[1]
			}
		}
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, lines[i])
		}
		s.code = strings.Join(code, "\n") + "\n"
		out = append(out, s)
	}
	return out
}

// source is the Go file a snippet builds as, or "" for an excerpt.
func (s snippet) source() string {
	switch {
	case s.excerpt != "":
		return ""
	case strings.HasPrefix(strings.TrimSpace(s.code), "package "):
		return s.code
	}
	var imports, decls []string
	for _, l := range strings.Split(s.prelude, "\n") {
		if strings.HasPrefix(l, "import ") {
			imports = append(imports, l)
		} else {
			decls = append(decls, l)
		}
	}
	return fmt.Sprintf("package snippet\n\n%s\n\n%s\n\nfunc _() {\n%s}\n", strings.Join(imports, "\n"), strings.Join(decls, "\n"), s.code)
}

// checkExcerpt reports whether the snippet's lines appear, in order and
// together, in the file it quotes.
func checkExcerpt(root string, s snippet) error {
	b, err := os.ReadFile(filepath.Join(root, s.excerpt))
	if err != nil {
		return err
	}
	norm := func(text string) []string {
		var out []string
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	want, have := norm(s.code), norm(string(b))
	for i := 0; i+len(want) <= len(have); i++ {
		if strings.Join(have[i:i+len(want)], "\n") == strings.Join(want, "\n") {
			return nil
		}
	}
	return fmt.Errorf("the excerpt is not in %s (the file changed: quote it again)", s.excerpt)
}

// buildSnippets builds every snippet in a module that requires bridgekit
// from root, and returns, per snippet, what the compiler said of it.
func buildSnippets(t *testing.T, root string, list []snippet) map[int]string {
	t.Helper()
	dir := t.TempDir()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The snippets' module has bridgekit's requirements, and bridgekit
	// itself from root.
	mod := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(gomod), "module snippets")
	mod += fmt.Sprintf("\nrequire github.com/bridgekit/bridgekit v0.0.0\n\nreplace github.com/bridgekit/bridgekit => %s\n", root)
	write(t, filepath.Join(dir, "go.mod"), mod)
	if sum, err := os.ReadFile(filepath.Join(root, "go.sum")); err == nil {
		write(t, filepath.Join(dir, "go.sum"), string(sum))
	}
	for i, s := range list {
		if src := s.source(); src != "" {
			write(t, filepath.Join(dir, fmt.Sprintf("s%03d", i), "snippet.go"), src)
		}
	}
	cmd := exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, _ := cmd.CombinedOutput()
	errs := map[int]string{}
	loc := regexp.MustCompile(`^(?:\./)?s(\d{3})/snippet\.go:`)
	for _, l := range strings.Split(string(out), "\n") {
		m := loc.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#") {
				errs[-1] += l + "\n"
			}
			continue
		}
		// A body may leave a prelude's import or variable unused.
		if strings.Contains(l, "imported and not used") || strings.Contains(l, "declared and not used") {
			continue
		}
		var n int
		fmt.Sscanf(m[1], "%d", &n)
		errs[n] += l + "\n"
	}
	return errs
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// docs are the Markdown files whose snippets are checked.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "docs/reference/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	return files
}

// Every Go snippet of the README and docs/ compiles (or, quoted, is still
// what it quotes).
func TestDocSnippets(t *testing.T) {
	root := repoRoot(t)
	var list []snippet
	for _, f := range docs(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, snippets(f, string(b))...)
	}
	if len(list) < 5 {
		t.Fatalf("found %d Go snippets in the docs; the extraction is broken", len(list))
	}
	for _, s := range list {
		if s.excerpt != "" {
			if err := checkExcerpt(root, s); err != nil {
				t.Errorf("%s:%d: %v", s.file, s.line, err)
			}
		}
	}
	errs := buildSnippets(t, root, list)
	for i, s := range list {
		if e := errs[i]; e != "" {
			t.Errorf("%s:%d: the snippet does not compile:\n%s\n%s", s.file, s.line, e, s.source())
		}
	}
	if e := errs[-1]; e != "" {
		t.Errorf("building the snippets: %s", e)
	}
}

// The check fails on a broken snippet of each kind, and passes the same
// snippets unbroken.
func TestDocSnippetsCatchBreakage(t *testing.T) {
	root := repoRoot(t)
	doc := "# t\n\n```go\npackage main\n\nfunc main() { undefinedThing() }\n```\n\n" +
		"<!-- snippet: body\nimport \"github.com/bridgekit/bridgekit/gen/acp\"\nimport \"context\"\n-->\n\n```go\nvar p *acp.AgentPeer\n_, _ = p.NoSuchMethod(context.Background())\n```\n\n" +
		"<!-- snippet: body\nimport \"github.com/bridgekit/bridgekit/gen/acp\"\n-->\n\n```go\nb := acp.TextBlock(\"fine\")\n_ = b\n```\n\n" +
		"```go\nh.Missing = 1 // no prelude: h is undefined\n```\n\n" +
		"<!-- snippet: excerpt runtime/rpc/message.go -->\n```go\ntype Middleware func(next Handler) Handler\n```\n\n" +
		"<!-- snippet: excerpt runtime/rpc/message.go -->\n```go\ntype Middleware func(next Handler) Handler // changed\n```\n"
	list := snippets("broken.md", doc)
	if len(list) != 6 || list[1].prelude == "" || list[4].excerpt != "runtime/rpc/message.go" {
		t.Fatalf("extracted %+v", list)
	}
	errs := buildSnippets(t, root, list)
	for i, broken := range []bool{true, true, false, true} {
		if got := errs[i] != ""; got != broken {
			t.Errorf("snippet %d: compile errors %q, want broken=%v\n%s", i, errs[i], broken, list[i].source())
		}
	}
	if err := checkExcerpt(root, list[4]); err != nil {
		t.Errorf("a true excerpt: %v", err)
	}
	if err := checkExcerpt(root, list[5]); err == nil {
		t.Error("a changed excerpt passed")
	}
}

// repoRoot is the repository's root (this package is internal/repotest).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}
