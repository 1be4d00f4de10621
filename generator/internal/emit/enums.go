package emit

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// enum emits a string or integer enum: a named type, one constant per known
// value in schema order (each with its own description), Known, and JSON
// methods that reject other values (closed enums, with wire.ErrConstraint)
// or keep them (open enums).
func (g *typeGen) enum(t *ir.Type) {
	base, read, write := jen.String(), "StringEnum", "WriteStringEnum"
	if t.Base.Kind == ir.Int {
		base, read, write = jen.Int64(), "IntEnum", "WriteIntEnum"
	}
	rule := "Closed: other values are rejected with wire.ErrConstraint, on decode and on encode."
	if t.Open {
		rule = "Open: values the schema does not list are kept; Known reports whether a value is listed."
	}
	comment(g.f, typeDoc(t, rule))
	g.f.Type().Id(t.Name).Add(base)
	g.f.Line()
	var consts, known []jen.Code
	for _, v := range t.Values {
		consts = append(consts, fieldComments(v.Doc)...)
		var lit jen.Code = jen.Lit(v.String)
		if t.Base.Kind == ir.Int {
			lit = jen.Lit(int(v.Int))
		}
		consts = append(consts, jen.Id(v.Go).Id(t.Name).Op("=").Add(lit))
		known = append(known, jen.Id(v.Go))
	}
	g.f.Comment(fmt.Sprintf("Known values of %s, in schema order.", t.Name))
	g.f.Const().Defs(consts...)
	g.f.Line()
	values := "values" + t.Name
	g.f.Var().Id(values).Op("=").Index().Id(t.Name).Values(known...)
	g.f.Line()
	g.f.Comment("Known reports whether x is one of the values the schema lists.")
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("Known").Params().Bool().Block(
		jen.Return(jen.Qual("slices", "Contains").Call(jen.Id(values), jen.Id("x"))),
	)
	g.f.Line()
	check := jen.List(jen.Id(values), jen.Lit(t.Open))
	g.f.Comment(fmt.Sprintf("UnmarshalJSONFrom decodes %s%s.", t.Name, map[bool]string{true: ", keeping any value", false: ", rejecting values the schema does not list"}[t.Open]))
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, read).Call(jen.Id("dec"), jen.Id("x"), jen.Lit(t.Name), check)),
	)
	g.f.Line()
	g.f.Comment(fmt.Sprintf("MarshalJSONTo encodes %s%s.", t.Name, map[bool]string{true: "", false: ", refusing values the schema does not list"}[t.Open]))
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, write).Call(jen.Id("enc"), jen.Id("x"), jen.Lit(t.Name), check)),
	)
	g.f.Line()
	v1(g.f, t.Name)
}
