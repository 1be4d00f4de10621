package codegen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"

	invopop "github.com/invopop/jsonschema"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
)

// CatalogueSchema publishes the catalogue format as a JSON Schema
// (docs/reference/catalogue.schema.json), reflected by invopop/jsonschema
// from the Go types the loader decodes catalogues into, with their doc
// comments as descriptions. The loader reads the same json tags, so the
// schema and the loader cannot drift apart; a generator test validates every
// catalogue against it.
func CatalogueSchema() ([]byte, error) {
	comments, err := goComments(catalogue.Source)
	if err != nil {
		return nil, err
	}
	enums := map[reflect.Type][]any{
		reflect.TypeFor[catalogue.Kind]():    anys(catalogue.Kinds),
		reflect.TypeFor[catalogue.Status]():  anys(catalogue.Statuses),
		reflect.TypeFor[catalogue.Framing](): anys(catalogue.Framings),
	}
	r := &invopop.Reflector{
		ExpandedStruct: true,
		Mapper: func(t reflect.Type) *invopop.Schema {
			if vs, ok := enums[t]; ok {
				return &invopop.Schema{Type: "string", Enum: vs, Description: comments[t.Name()]}
			}
			if t == reflect.TypeFor[[]byte]() || t.String() == "json.RawMessage" {
				return &invopop.Schema{Description: "an integer (JSON-RPC) or a non-empty string (protocol code)",
					AnyOf: []*invopop.Schema{{Type: "integer"}, {Type: "string", MinLength: ptr(uint64(1))}}}
			}
			return nil
		},
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return comments[t.Name()]
			}
			return comments[t.Name()+"."+field]
		},
	}
	s := r.Reflect(&catalogue.Catalogue{})
	s.ID = "https://bridgekit.dev/schemas/catalogue.schema.json"
	s.Title = "bridgekit method catalogue"
	allowNull(s, reflect.TypeFor[catalogue.Catalogue]())
	for name, def := range s.Definitions {
		if t := typeNamed(name); t != nil {
			allowNull(def, t)
		}
	}
	return CanonicalJSON(s)
}

func ptr[T any](v T) *T { return &v }

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// typeNamed finds a catalogue type by name among those the format uses.
func typeNamed(name string) reflect.Type {
	for _, t := range []reflect.Type{
		reflect.TypeFor[catalogue.Catalogue](), reflect.TypeFor[catalogue.Side](), reflect.TypeFor[catalogue.Method](),
		reflect.TypeFor[catalogue.Operations](), reflect.TypeFor[catalogue.Operation](), reflect.TypeFor[catalogue.Advertise](),
		reflect.TypeFor[catalogue.Error](), reflect.TypeFor[catalogue.Envelope](), reflect.TypeFor[catalogue.Derive](),
		reflect.TypeFor[catalogue.Annotation](), reflect.TypeFor[catalogue.Cancels](), reflect.TypeFor[catalogue.Overlay](),
		reflect.TypeFor[catalogue.Extends](),
	} {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// allowNull lets the required pointer members of a struct (params and result
// of a method, args and result of an operation) be null, as the loader does.
func allowNull(s *invopop.Schema, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Pointer || slices.Contains(strings.Split(opts, ","), "omitempty") || name == "" || name == "-" {
			continue
		}
		if p, ok := s.Properties.Get(name); ok {
			s.Properties.Set(name, &invopop.Schema{AnyOf: []*invopop.Schema{p, {Type: "null"}}, Description: p.Description})
			p.Description = ""
		}
	}
}

// goComments maps "Type" and "Type.Field" to their doc comments in src.
func goComments(src string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "catalogue.go", src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("catalogue source: %w", err)
	}
	out := map[string]string{}
	clean := func(g *ast.CommentGroup) string {
		if g == nil {
			return ""
		}
		return strings.Join(strings.Fields(g.Text()), " ")
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, sp := range gd.Specs {
			ts := sp.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil {
				doc = gd.Doc
			}
			out[ts.Name.Name] = clean(doc)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				for _, n := range fl.Names {
					out[ts.Name.Name+"."+n.Name] = clean(fl.Doc)
				}
			}
		}
	}
	return out, nil
}
