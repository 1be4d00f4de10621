package scaffold

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// HandlerStub renders a Go file of package pkg with a handler func for the
// field the change added to gen/<Package>'s <Side>Handlers, read from the
// generated code under root (so run the generator first): the field's own
// signature, answering an empty result, and a doc comment saying how to set
// the field. The module path of the generated package is root's go.mod's.
func HandlerStub(root string, ch *Change, pkg string) ([]byte, error) {
	genFile := filepath.Join(root, "gen", ch.Package, "methods_gen.go")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, genFile, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	structName := ch.Side + "Handlers"
	var ft *ast.FuncType
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != structName {
			return ft == nil
		}
		if st, ok := ts.Type.(*ast.StructType); ok {
			for _, fld := range st.Fields.List {
				for _, nm := range fld.Names {
					if nm.Name == ch.Go {
						ft, _ = fld.Type.(*ast.FuncType)
					}
				}
			}
		}
		return false
	})
	if ft == nil {
		return nil, fmt.Errorf("%s: %s has no func field %s: regenerate first", genFile, structName, ch.Go)
	}
	imports := map[string]string{} // name -> path, of the generated file
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	used := map[string]string{ch.Package: modulePath(root) + "/gen/" + ch.Package}
	typ := func(e ast.Expr) (string, error) { return typeString(e, ch.Package, imports, used) }

	var params []string
	names := paramNames(len(ft.Params.List))
	for i, p := range ft.Params.List {
		t, err := typ(p.Type)
		if err != nil {
			return nil, err
		}
		params = append(params, names[i]+" "+t)
	}
	var results []string
	var body []string
	for _, r := range ft.Results.List {
		t, err := typ(r.Type)
		if err != nil {
			return nil, err
		}
		results = append(results, t)
	}
	switch len(results) {
	case 1: // a notification: func(ctx, params) error
		body = append(body, "return nil")
	case 2:
		if strings.HasPrefix(results[0], "*") {
			body = append(body, "return &"+results[0][1:]+"{}, nil")
		} else {
			body = append(body, "var res "+results[0], "return res, nil")
		}
	default:
		return nil, fmt.Errorf("%s.%s: unexpected signature", structName, ch.Go)
	}
	fn := unexported(ch.Go)
	what := ch.Wire
	if ch.Operation != "" {
		what = "the " + ch.Wire + " operation " + ch.Operation
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "package %s\n\nimport (\n", pkg)
	paths := make([]string, 0, len(used))
	for _, p := range used {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, func(a, b string) int {
		if ia, ib := isStd(a), isStd(b); ia != ib {
			if ia {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	std := true
	for _, p := range paths {
		if std && !isStd(p) {
			std = false
			b.WriteString("\n") // the standard library's imports first, then the others
		}
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	fmt.Fprintf(&b, ")\n\n")
	fmt.Fprintf(&b, "// %s serves %s (%s.%s.%s). Set it with\n//\n//\th.%s = %s\n//\n", fn, what, ch.Package, structName, ch.Go, ch.Go, fn)
	fmt.Fprintf(&b, "// and describe the params and result in spec/schemas/%s, then regenerate.\n", ch.Schema)
	fmt.Fprintf(&b, "func %s(%s) (%s) {\n\t%s\n}\n", fn, strings.Join(params, ", "), strings.Join(results, ", "), strings.Join(body, "\n\t"))
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("handler stub: %w", err)
	}
	return out, nil
}

// paramNames names a handler's parameters: ctx, then params (a method's)
// or call and args (an operation's).
func paramNames(n int) []string {
	switch n {
	case 2:
		return []string{"ctx", "params"}
	case 3:
		return []string{"ctx", "call", "args"}
	}
	out := []string{"ctx"}
	for i := 1; i < n; i++ {
		out = append(out, fmt.Sprintf("p%d", i))
	}
	return out
}

// typeString renders a type of the generated file as seen from another
// package: its own types qualified with pkg, imported packages recorded in used.
func typeString(e ast.Expr, pkg string, imports, used map[string]string) (string, error) {
	switch t := e.(type) {
	case *ast.Ident:
		if t.IsExported() {
			return pkg + "." + t.Name, nil
		}
		return t.Name, nil // a predeclared type (error, string)
	case *ast.StarExpr:
		s, err := typeString(t.X, pkg, imports, used)
		return "*" + s, err
	case *ast.ArrayType:
		s, err := typeString(t.Elt, pkg, imports, used)
		return "[]" + s, err
	case *ast.MapType:
		k, err := typeString(t.Key, pkg, imports, used)
		if err != nil {
			return "", err
		}
		v, err := typeString(t.Value, pkg, imports, used)
		return "map[" + k + "]" + v, err
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		if !ok || imports[x.Name] == "" {
			return "", fmt.Errorf("handler stub: unexpected type %T", t.X)
		}
		used[x.Name] = imports[x.Name]
		return x.Name + "." + t.Sel.Name, nil
	}
	return "", fmt.Errorf("handler stub: unexpected type %T", e)
}

func unexported(name string) string {
	r := []rune(name)
	i := 0
	for i < len(r) && unicode.IsUpper(r[i]) && (i == 0 || i+1 == len(r) || unicode.IsUpper(r[i+1])) {
		r[i] = unicode.ToLower(r[i])
		i++
	}
	return string(r)
}

// modulePath reads root's go.mod module line.
func modulePath(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
				return strings.Trim(strings.TrimSpace(rest), `"`)
			}
		}
	}
	return "github.com/bridgekit/bridgekit"
}

// isStd reports whether an import path is the standard library's.
func isStd(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}
