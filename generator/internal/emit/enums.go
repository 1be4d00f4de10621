package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"

	gjs "github.com/atombender/go-jsonschema/pkg/generator"
	"github.com/atombender/go-jsonschema/pkg/schemas"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// Enums emits the plain string enums with go-jsonschema, the one shape it
// handles soundly (a named string type, one constant per value, and an
// UnmarshalJSON that rejects other values). It returns nil when the package
// has none. The output is checked: it must declare exactly the IR's type and
// constant names, or generation fails.
func Enums(pkg *ir.Package) ([]byte, error) {
	defs := map[string]any{}
	var want []string
	for _, t := range pkg.Types {
		if t.Emitter != ir.EmitGoJSONSchema {
			continue
		}
		if t.Kind != ir.StringEnum {
			return nil, fmt.Errorf("%s: go-jsonschema emits only string enums here, not %s", t.Pointer, t.Name)
		}
		defs[t.Name] = map[string]any{"type": "string", "enum": t.Strings, "description": t.Doc}
		want = append(want, t.Name)
		for _, v := range t.Strings {
			want = append(want, t.Name+goName(v))
		}
	}
	if len(defs) == 0 {
		return nil, nil
	}
	doc, err := json.Marshal(map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs})
	if err != nil {
		return nil, err
	}
	sch, err := schemas.FromJSONReader(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("go-jsonschema: %w", err)
	}
	const out = "enums_gen.go"
	var warnings []string
	g, err := gjs.New(gjs.Config{
		DefaultPackageName: pkg.Name,
		DefaultOutputName:  out,
		Tags:               []string{"json"},
		Capitalizations:    []string{"ID", "URL", "URI", "JSON", "HTTP", "API", "MCP", "ACP", "VM"},
		Warner:             func(s string) { warnings = append(warnings, s) },
	})
	if err != nil {
		return nil, err
	}
	if err := g.AddFile(pkg.Name+"_enums.json", sch); err != nil {
		return nil, fmt.Errorf("go-jsonschema: %w", err)
	}
	srcs, err := g.Sources()
	if err != nil {
		return nil, fmt.Errorf("go-jsonschema: %w", err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("go-jsonschema warned: %s", strings.Join(warnings, "; "))
	}
	src, ok := srcs[out]
	if !ok || len(srcs) != 1 {
		return nil, fmt.Errorf("go-jsonschema produced %d files, want %s only", len(srcs), out)
	}
	if err := checkDeclared(src, want); err != nil {
		return nil, err
	}
	// Replace go-jsonschema's own header with ours so every generated file
	// names its source the same way.
	_, body, found := bytes.Cut(src, []byte("\n"))
	if !found || !bytes.HasPrefix(src, []byte("// Code generated")) {
		return nil, fmt.Errorf("go-jsonschema output lacks its generated-code header")
	}
	header := "// " + Header(pkg.Catalogue.File) + "\n// Enum types below are emitted by github.com/atombender/go-jsonschema.\n"
	return FormatSource(out, append([]byte(header), body...))
}

// checkDeclared parses src and compares its top-level type and const names with want.
func checkDeclared(src []byte, want []string) error {
	f, err := parser.ParseFile(token.NewFileSet(), "enums.go", src, 0)
	if err != nil {
		return fmt.Errorf("go-jsonschema output does not parse: %w", err)
	}
	var got []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || (gd.Tok != token.TYPE && gd.Tok != token.CONST) {
			continue
		}
		for _, s := range gd.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				got = append(got, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					got = append(got, n.Name)
				}
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("go-jsonschema declared %v, the IR expects %v", got, want)
	}
	return nil
}
