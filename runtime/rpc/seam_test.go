package rpc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A Codec is framing and nothing else: connection behaviour belongs to the
// engine (Options.Screen, OnBadFrame, NextID, Ordered), so no type in
// clients/ or servers/ wraps a codec, by embedding one or by implementing
// the codec's methods itself.
func TestNoCodecWrappers(t *testing.T) {
	codecs := map[string]bool{"rpc": true, "jsonrpc": true, "envelope": true}
	methods := map[string]bool{"DecodeHead": true, "AppendHead": true, "AppendTail": true, "AppendError": true, "NullBody": true}
	checked := 0
	for _, root := range []string{"../../clients", "../../servers"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.StructType:
					for _, field := range n.Fields.List {
						typ := field.Type
						if star, ok := typ.(*ast.StarExpr); ok {
							typ = star.X
						}
						if sel, ok := typ.(*ast.SelectorExpr); ok && len(field.Names) == 0 && sel.Sel.Name == "Codec" {
							if x, ok := sel.X.(*ast.Ident); ok && codecs[x.Name] {
								t.Errorf("%s: a struct embeds %s.Codec", path, x.Name)
							}
						}
					}
				case *ast.FuncDecl:
					if n.Recv != nil && methods[n.Name.Name] {
						t.Errorf("%s: method %s implements a codec's method", path, n.Name.Name)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files checked: is the tree where the test thinks?", checked)
	}
}
