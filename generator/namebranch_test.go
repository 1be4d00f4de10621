package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// allowed lists the literals, by file, that name something else than the
// spec's definition or method of the same spelling.
var allowed = map[string]bool{
	"main.go generate": true, // bridgekit-gen's subcommand (AgentPM's harness has a method "generate")
}

// TestNoBranchOnSchemaNames keeps special cases in data (the catalogues and
// spec/overrides.json): no Go file of the generator compares a value with
// the name of a schema definition, a schema file, a catalogue's protocol
// or package, or a method, in an ==/!= comparison, a switch case, or a
// strings.HasPrefix/HasSuffix/Contains/EqualFold or slices.Contains call.
// A generator that gained `if name == "SessionUpdate"` (or a case for
// "acp-v2") fails here; the change belongs in the spec's data.
func TestNoBranchOnSchemaNames(t *testing.T) {
	names := specNames(t, "../spec")
	if len(names) < 500 {
		t.Fatalf("only %d names read from spec/: the walk is broken", len(names))
	}
	var found []string
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, lit := range branchLiterals(f) {
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				continue
			}
			if allowed[filepath.ToSlash(path)+" "+s] {
				continue
			}
			if strings.Contains(s, "#/$defs/") {
				found = append(found, fset.Position(lit.Pos()).String()+": branches on the definition "+strconv.Quote(s))
			} else if why, ok := names[s]; ok {
				found = append(found, fset.Position(lit.Pos()).String()+": branches on "+strconv.Quote(s)+" ("+why+")")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("only %d generator files parsed", files)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// The check finds the branches it is for.
func TestNoBranchOnSchemaNamesFinds(t *testing.T) {
	src := `package p
func f(name, m string) bool {
	if name == "SessionUpdate" { return true }
	switch m { case "session/prompt": return true }
	return strings.HasPrefix(name, "Harn") || "x" != name
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range branchLiterals(f) {
		got = append(got, l.Value)
	}
	if want := `"SessionUpdate" "session/prompt" "Harn" "x"`; strings.Join(got, " ") != want {
		t.Fatalf("found %s, want %s", got, want)
	}
}

// branchLiterals returns the string literals f branches on.
func branchLiterals(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	add := func(e ast.Expr) {
		if l, ok := ast.Unparen(e).(*ast.BasicLit); ok && l.Kind == token.STRING {
			out = append(out, l)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				add(n.X)
				add(n.Y)
			}
		case *ast.SwitchStmt:
			if n.Tag != nil {
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						add(e)
					}
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					switch pkg.Name + "." + sel.Sel.Name {
					case "strings.HasPrefix", "strings.HasSuffix", "strings.Contains", "strings.EqualFold", "slices.Contains":
						for _, a := range n.Args {
							add(a)
						}
					}
				}
			}
		}
		return true
	})
	return out
}

// specNames maps every name the spec gives to what it names: the $defs of
// every schema file, the files themselves, and every catalogue's protocol,
// package, Go names and methods.
func specNames(t *testing.T, spec string) map[string]string {
	names := map[string]string{}
	err := filepath.WalkDir(spec, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(spec, path)
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "schemas"+string(filepath.Separator)):
			names[filepath.ToSlash(strings.TrimPrefix(rel, "schemas"+string(filepath.Separator)))] = "a schema file"
			for k := range mapOf(doc["$defs"]) {
				names[k] = "a definition of " + filepath.ToSlash(rel)
			}
		case strings.HasPrefix(rel, "catalogue"+string(filepath.Separator)):
			for _, k := range []string{"protocol", "package"} {
				if s, ok := doc[k].(string); ok {
					names[s] = "the " + k + " of " + filepath.ToSlash(rel)
				}
			}
			collectMethods(doc, names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// collectMethods records every "method" value and every "go" name in a
// catalogue.
func collectMethods(v any, names map[string]string, file string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "method" || k == "go") && s != "" {
				names[s] = "a " + k + " of " + file
			}
			collectMethods(x, names, file)
		}
	case []any:
		for _, x := range v {
			collectMethods(x, names, file)
		}
	}
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
