package emit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

const pkgWireTest = "github.com/bridgekit/bridgekit/runtime/wire/wiretest"

// Fuzz emits one table-driven fuzz target for the whole package: the input
// names a type, and the document must decode, re-encode, decode again and
// encode to the same bytes (wiretest.Fuzz). The table seeds each type with a
// valid document synthesised from the IR; testdata/<package>/seed_examples.json
// adds the package's golden documents. However many types a package has, it
// is one target, so fuzzing stays cheap.
func Fuzz(pkg *ir.Package) *jen.File {
	f := jen.NewFile(pkg.Name)
	f.HeaderComment(Header(pkg.Source))
	var rows []jen.Code
	for _, t := range sortedTypes(pkg.Types) {
		d := jen.Dict{
			jen.Id("Name"):   jen.Lit(t.Name),
			jen.Id("New"):    jen.Func().Params().Any().Block(jen.Return(jen.New(jen.Id(t.Name)))),
			jen.Id("Schema"): jen.Lit(t.Pointer),
		}
		if v, ok := example(&ir.Ref{Kind: ir.Named, Named: t}, 0); ok {
			seed, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			d[jen.Id("Seeds")] = jen.Index().String().Values(jen.Lit(string(seed)))
		}
		rows = append(rows, jen.Values(d))
	}
	f.Comment(fmt.Sprintf("fuzzTypes lists every type of package %s for FuzzTypes.", pkg.Name))
	f.Var().Id("fuzzTypes").Op("=").Index().Qual(pkgWireTest, "Type").Values(rows...)
	f.Line()
	f.Comment("FuzzTypes checks that every document that decodes into one of the package's types re-encodes stably.")
	f.Func().Id("FuzzTypes").Params(jen.Id("f").Op("*").Qual("testing", "F")).Block(
		jen.Qual(pkgWireTest, "Fuzz").Call(jen.Id("f"), jen.Id("fuzzTypes"), jen.Lit("../../testdata/"+pkg.Name+"/seed_examples.json")),
	)
	return f
}

// example synthesises a valid JSON value for r; ok is false when it cannot
// (a required member with a pattern, which a generator cannot satisfy in
// general).
func example(r *ir.Ref, depth int) (any, bool) {
	switch r.Kind {
	case ir.String:
		if r.Pattern != "" {
			return nil, false
		}
		n := 1
		if r.MinLength != nil && *r.MinLength > n {
			n = *r.MinLength
		}
		return strings.Repeat("x", n), true
	case ir.Bool:
		return true, true
	case ir.Int, ir.Float:
		n := 1.0
		if r.Minimum != nil {
			n = *r.Minimum
		} else if r.Maximum != nil && *r.Maximum < n {
			n = *r.Maximum
		}
		return n, true
	case ir.Raw, ir.RawObject:
		if r.Example != nil {
			return r.Example, true
		}
		return map[string]any{"raw": []any{1, "two", nil}}, true
	case ir.Array:
		e, ok := example(r.Elem, depth+1)
		if !ok {
			return []any{}, r.MinItems == nil || *r.MinItems == 0
		}
		return []any{e}, true
	case ir.Map:
		e, ok := example(r.Elem, depth+1)
		if !ok {
			return map[string]any{}, true
		}
		return map[string]any{"k": e}, true
	}
	t := r.Named
	switch t.Kind {
	case ir.Enum:
		if t.Base.Kind == ir.Int {
			return t.Values[0].Int, true
		}
		return t.Values[0].String, true
	case ir.Scalar:
		return example(t.Base, depth)
	case ir.MapType:
		return example(&ir.Ref{Kind: ir.Map, Elem: t.Elem}, depth)
	case ir.Union:
		v := t.Variants[0]
		for _, c := range t.Variants {
			if !c.Default {
				v = c
				break
			}
		}
		if t.Union == ir.ByKind {
			return example(v.Ref, depth+1)
		}
		var obj map[string]any
		if v.Nested {
			e, ok := example(v.Ref, depth+1)
			if !ok {
				return nil, false
			}
			obj = e.(map[string]any)
		} else if o, ok := object(v.Struct().Fields, v.Struct().Closed, depth); ok {
			obj = o
		} else {
			return nil, false
		}
		common, ok := object(t.Common, true, depth)
		if !ok {
			return nil, false
		}
		for k, c := range common {
			obj[k] = c
		}
		if v.Tag != "" {
			obj[t.Tag] = v.Tag
		}
		if t.Union == ir.ByElement {
			return []any{obj}, true
		}
		return obj, true
	}
	return object(t.Fields, t.Closed, depth)
}

func object(fields []*ir.Field, closed bool, depth int) (map[string]any, bool) {
	obj := map[string]any{}
	for _, fl := range fields {
		switch {
		case fl.Const != nil:
			var v any
			_ = json.Unmarshal(fl.Const, &v)
			obj[fl.JSON] = v
		case depth > 3 && !fl.Required:
		default:
			v, ok := example(fl.Ref, depth+1)
			if !ok && fl.Required {
				return nil, false
			}
			if ok {
				obj[fl.JSON] = v
			}
		}
	}
	if !closed {
		obj["vendor_extension"] = map[string]any{"kept": true}
	}
	return obj, true
}
