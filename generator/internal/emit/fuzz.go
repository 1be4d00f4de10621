package emit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

const pkgWireTest = "github.com/bridgekit/bridgekit/runtime/wire/wiretest"

// Fuzz emits one fuzz target per generated type: any document that decodes
// must re-encode to one that decodes the same, stably. Each target is seeded
// with a valid document synthesised from the IR.
func Fuzz(pkg *ir.Package) *jen.File {
	f := jen.NewFile(pkg.Name)
	f.HeaderComment(Header(pkg.Catalogue.File))
	for _, t := range pkg.Types {
		seed, err := json.Marshal(example(&ir.Ref{Kind: ir.Named, Named: t}, 0))
		if err != nil {
			panic(err)
		}
		f.Comment(fmt.Sprintf("Fuzz%s checks that every %s that decodes re-encodes stably.", t.Name, t.Name))
		f.Func().Id("Fuzz"+t.Name).Params(jen.Id("f").Op("*").Qual("testing", "F")).Block(
			jen.Qual(pkgWireTest, "Seed").Types(jen.Id(t.Name)).Call(jen.Id("f"), jen.Lit(string(seed))),
			jen.Id("f").Dot("Fuzz").Call(jen.Qual(pkgWireTest, "RoundTrip").Types(jen.Id(t.Name))),
		)
		f.Line()
	}
	return f
}

// example synthesises a valid JSON value for r.
func example(r *ir.Ref, depth int) any {
	switch r.Kind {
	case ir.String:
		n := 1
		if r.MinLength != nil && *r.MinLength > n {
			n = *r.MinLength
		}
		return strings.Repeat("x", n)
	case ir.Bool:
		return true
	case ir.Int, ir.Float:
		if r.Minimum != nil {
			return *r.Minimum
		}
		return 1
	case ir.Raw, ir.RawObject:
		return map[string]any{"raw": []any{1, "two", nil}}
	case ir.Array:
		return []any{example(r.Elem, depth+1)}
	case ir.Map:
		return map[string]any{"k": example(r.Elem, depth+1)}
	}
	t := r.Named
	switch t.Kind {
	case ir.StringEnum:
		return t.Strings[0]
	case ir.IntEnum:
		return t.Ints[0]
	case ir.MapType:
		return map[string]any{"k": example(t.Elem, depth+1)}
	case ir.Union:
		return example(t.Variants[0].Ref, depth+1)
	}
	obj := map[string]any{}
	for _, fl := range t.Fields {
		switch {
		case fl.Const != nil:
			var v any
			_ = json.Unmarshal(fl.Const, &v)
			obj[fl.JSON] = v
		case fl.Ref.Pattern != "":
			// A pattern cannot be satisfied in general: leave optional members
			// out, and let the decoder's rejection still exercise the target.
			if fl.Required {
				obj[fl.JSON] = ""
			}
		case depth > 3 && !fl.Required:
		default:
			obj[fl.JSON] = example(fl.Ref, depth+1)
		}
	}
	if !t.Closed {
		obj["vendor_extension"] = map[string]any{"kept": true}
	}
	return obj
}
