// Command enginesize counts the size of bridgekit's connection engine beside the JSON-RPC engines it is
// compared with, for docs/architecture.md: non-blank lines, decision points (if, for, case and select) and go
// statements of each package's non-test Go files. The peers' sources come from the module cache, fetched
// with `go mod download -json MODULE@VERSION`.
//
//	cd bench && go run ./cmd/enginesize                               # the table, in Markdown
//	cd bench && go run ./cmd/enginesize -doc ../docs/architecture.md  # into the doc, between its markers
//
// -root names bridgekit's checkout (default ..).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The peers, at the versions counted. x/exp/jsonrpc2 is the version bench/ compares with; the MCP Go SDK
// keeps its engine in internal/jsonrpc2.
var peers = []struct {
	name, module, version, dir string
}{
	{"golang.org/x/exp/jsonrpc2", "golang.org/x/exp/jsonrpc2", "v0.0.0-20260709172345-9ea1abe57597", "."},
	{"MCP go-sdk internal/jsonrpc2", "github.com/modelcontextprotocol/go-sdk", "v1.8.0", "internal/jsonrpc2"},
}

// parts are bridgekit's packages, by what they are.
var parts = []struct {
	name string
	dirs []string
}{
	{"engine: runtime/rpc", []string{"runtime/rpc"}},
	{"NDJSON transport: runtime/ndjson", []string{"runtime/ndjson"}},
	{"codecs: runtime/jsonrpc, runtime/envelope, runtime/internal/jsonscan", []string{"runtime/jsonrpc", "runtime/envelope", "runtime/internal/jsonscan"}},
}

// size is what is counted.
type size struct{ files, lines, decisions, gos int }

func (s *size) add(t size) {
	s.files += t.files
	s.lines += t.lines
	s.decisions += t.decisions
	s.gos += t.gos
}

// The markers of the table in docs/architecture.md.
const (
	beginMarker = "<!-- enginesize:begin -->\n"
	endMarker   = "<!-- enginesize:end -->"
)

func main() {
	root := flag.String("root", "..", "bridgekit's checkout")
	doc := flag.String("doc", "", "write the table into this file, between its markers, instead of to stdout")
	flag.Parse()
	var sb strings.Builder
	sb.WriteString("| | files | non-blank lines | decision points (if/for/case/select) | `go` statements |\n|---|---|---|---|---|\n")
	sb.WriteString(ownRows(*root))
	for _, p := range peers {
		dir, err := download(p.module, p.version)
		if err != nil {
			fail(err)
		}
		sb.WriteString(row(fmt.Sprintf("%s (%s)", p.name, p.version), count(filepath.Join(dir, p.dir))))
	}
	if *doc == "" {
		fmt.Print(sb.String())
		return
	}
	text, err := os.ReadFile(*doc)
	if err != nil {
		fail(err)
	}
	i, j := strings.Index(string(text), beginMarker), strings.Index(string(text), endMarker)
	if i < 0 || j < i {
		fail(fmt.Errorf("%s has no %q ... %q markers", *doc, beginMarker, endMarker))
	}
	out := string(text[:i+len(beginMarker)]) + sb.String() + string(text[j:])
	if err := os.WriteFile(*doc, []byte(out), 0o644); err != nil {
		fail(err)
	}
}

// ownRows are the rows of bridgekit's packages, under the checkout root.
func ownRows(root string) string {
	var sb strings.Builder
	var total size
	for _, p := range parts {
		var s size
		for _, d := range p.dirs {
			s.add(count(filepath.Join(root, d)))
		}
		total.add(s)
		sb.WriteString(row("bridgekit "+p.name, s))
	}
	sb.WriteString(row("**bridgekit: engine, codecs and NDJSON transport**", total))
	sb.WriteString(row("bridgekit transport seam and in-memory pair: runtime/frame", count(filepath.Join(root, "runtime/frame"))))
	return sb.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "enginesize:", err)
	os.Exit(1)
}

func row(name string, s size) string {
	return fmt.Sprintf("| %s | %d | %s | %d | %d |\n", name, s.files, thousands(s.lines), s.decisions, s.gos)
}

func thousands(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d,%03d", n/1000, n%1000)
}

// download returns the directory of module@version in the module cache, fetching it if need be.
func download(module, version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s", module, version, err, m.Error)
	}
	return m.Dir, nil
}

// count counts the non-test Go files of the package in dir.
func count(dir string) size {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		fail(fmt.Errorf("no Go files in %s", dir))
	}
	var s size
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			fail(err)
		}
		s.files++
		for _, l := range bytes.Split(src, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				s.lines++
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt, *ast.SelectStmt:
				s.decisions++
			case *ast.CaseClause:
				if n.List != nil { // a case, not default
					s.decisions++
				}
			case *ast.CommClause:
				if n.Comm != nil {
					s.decisions++
				}
			case *ast.GoStmt:
				s.gos++
			}
			return true
		})
	}
	return s
}
