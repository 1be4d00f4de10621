package emit

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

func (g *typeGen) union(t *ir.Type) {
	switch t.Union {
	case ir.ByKind:
		g.kindUnion(t)
	case ir.ByElement:
		g.elementUnion(t)
	default:
		g.objectUnion(t)
	}
}

// variantNote says when a variant is chosen.
func variantNote(t *ir.Type, v *ir.Variant) string {
	switch {
	case v.Tag != "":
		return fmt.Sprintf("Set when %s is %q.", t.Tag, v.Tag)
	case v.NullTag:
		return fmt.Sprintf("Set when %s is absent or null (the default variant; a null %s is kept in its Extra).", t.Tag, t.Tag)
	case v.Default && t.Tag != "":
		return fmt.Sprintf("Set when %s is absent (the default variant).", t.Tag)
	case v.Default && len(v.Keys) == 0 && len(t.Variants) == 1:
		return "The only variant this version knows."
	case v.Default:
		return "Set when no member of another variant is present (the default variant)."
	case len(v.Keys) > 0:
		return fmt.Sprintf("Set when %s is present.", quoteList(v.Keys, " or "))
	}
	return ""
}

func quoteList(ss []string, sep string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, sep)
}

// unionDescriptor declares the wire.Union of an object union (or of a union
// of arrays, over its elements).
func (g *typeGen) unionDescriptor(t *ir.Type) {
	var vs []jen.Code
	for _, v := range t.Variants {
		d := jen.Dict{}
		if v.Nested {
			// Its own union decodes the members the tag leaves (wire.Nested).
			d[jen.Id("Nested")] = jen.True()
		} else {
			d[jen.Id("Object")] = jen.Op("&").Id(objVar(v.Struct()))
		}
		if v.NullTag {
			d[jen.Id("NullTag")] = jen.True()
		}
		if v.Tag != "" {
			d[jen.Id("Tag")] = jen.Lit(v.Tag)
		}
		if len(v.Keys) > 0 {
			var ks []jen.Code
			for _, k := range v.Keys {
				ks = append(ks, jen.Lit(k))
			}
			d[jen.Id("Keys")] = jen.Index().String().Values(ks...)
		}
		if v.Default {
			d[jen.Id("Default")] = jen.True()
		}
		vs = append(vs, jen.Values(d))
	}
	d := jen.Dict{jen.Id("Type"): jen.Lit(t.Name), jen.Id("Variants"): jen.Index().Qual(pkgWire, "Variant").Values(vs...)}
	if t.Tag != "" {
		d[jen.Id("Tag")] = jen.Lit(t.Tag)
	}
	if len(t.Common) > 0 {
		d[jen.Id("Common")] = jen.Op("&").Id(objVar(t))
	}
	g.f.Var().Id(unionVar(t)).Op("=").Qual(pkgWire, "Union").Values(d)
	g.f.Line()
}

// objectUnion emits a union of objects told apart by a tag member or by
// required members, streamed in one pass by wire.ReadUnion.
func (g *typeGen) objectUnion(t *ir.Type) {
	fields := structFields(t.Common)
	for _, v := range t.Variants {
		fields = append(fields, fieldComments(joinDoc(v.Doc, variantNote(t, v)))...)
		fields = append(fields, jen.Id(v.Go).Add(variantType(t, v)))
	}
	var rule string
	if t.Union == ir.ByTag {
		rule = fmt.Sprintf("The member %q selects the variant; exactly one variant field is set, or Unknown for a value this version does not know (kept verbatim, never decoded as another variant).", t.Tag)
		fields = append(fields,
			jen.Comment(fmt.Sprintf("Unknown holds, verbatim, an object whose %s names no variant this version knows.", t.Tag)),
			jen.Id("Unknown").Qual(pkgJSONText, "Value"))
	} else {
		rule = "The members present select the variant; exactly one variant field is set."
	}
	if len(t.Common) > 0 {
		rule += " The members before the variants belong to every variant."
	}
	fields, rule = otherField(t, fields, rule)
	comment(g.f, typeDoc(t, rule))
	g.f.Type().Id(t.Name).Struct(fields...)
	g.f.Line()
	if len(t.Common) > 0 {
		g.objectDescriptor(t, objVar(t), t.Common)
		g.getters(t, t.Common)
	}
	g.unionDescriptor(t)
	if t.Union == ir.ByTag {
		var cases []jen.Code
		for _, v := range t.Variants {
			if v.Tag != "" {
				cases = append(cases, jen.Case(jen.Id("x").Dot(v.Go).Op("!=").Nil()).Block(jen.Return(jen.Lit(v.Tag))))
			}
		}
		var body []jen.Code
		if len(cases) > 0 {
			body = append(body, jen.Switch().Block(cases...))
		}
		body = append(body, jen.Return(jen.Qual(pkgWire, "UnknownTag").Call(jen.Id("x").Dot("Unknown"), jen.Lit(t.Tag))))
		g.f.Comment(fmt.Sprintf("Tag returns %s: the set variant's, or the one Unknown carries (\"\" for none, or for the default variant).", t.Tag))
		g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("Tag").Params().String().Block(body...)
		g.f.Line()
	}
	end := []jen.Code{jen.Return(jen.Id("r").Dot("End").Call())}
	if t.Union == ir.ByTag {
		end = []jen.Code{jen.Return(jen.Id("r").Dot("EndUnion").Call(jen.Op("&").Id("x").Dot("Unknown")))}
		var nested []jen.Code
		for i, v := range t.Variants {
			if v.Nested {
				nested = append(nested, jen.Case(jen.Lit(i)).Block(jen.Return(
					jen.Id("r").Dot("EndNested").Call(jen.Qual(pkgWire, "New").Call(jen.Op("&").Id("x").Dot(v.Go))))))
			}
		}
		if len(nested) > 0 {
			// A nested variant's members were kept (r.Keep); its own
			// union decodes them once the object has ended.
			end = append([]jen.Code{jen.Switch(jen.Id("r").Dot("Variant").Call()).Block(nested...)}, end...)
		}
	}
	g.f.Comment(fmt.Sprintf("%s decodes %s in one pass, streaming members into the variant once it is chosen.", unmarshalName(t), t.Name))
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id(unmarshalName(t)).Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		append([]jen.Code{
			jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
			jen.Id("r").Op(":=").Qual(pkgWire, "ReadUnion").Call(jen.Id("dec"), jen.Op("&").Id(unionVar(t))),
			jen.For(jen.Id("r").Dot("Next").Call()).Block(jen.Id("r").Dot("Done").Call(jen.Id("x").Dot("member").Call(jen.Op("&").Id("r")))),
		}, end...)...,
	)
	g.f.Line()
	var vcases []jen.Code
	for i, v := range t.Variants {
		if v.Nested {
			vcases = append(vcases, jen.Case(jen.Lit(i)).Block(jen.Return(jen.Id("r").Dot("Keep").Call())))
			continue
		}
		vcases = append(vcases, jen.Case(jen.Lit(i)).Block(jen.Return(jen.Qual(pkgWire, "New").Call(jen.Op("&").Id("x").Dot(v.Go)).Dot("member").Call(jen.Id("r")))))
	}
	tail := []jen.Code{jen.Switch(jen.Id("r").Dot("Variant").Call()).Block(vcases...)}
	g.memberSwitch(t, t.Common, tail, jen.Return(jen.Nil()))
	var cases []jen.Code
	for _, v := range t.Variants {
		var body []jen.Code
		if v.Tag != "" {
			body = append(body, jen.Id("w").Dot("Tag").Call(jen.Lit(t.Tag), jen.Lit(v.Tag)))
		}
		if len(t.Common) > 0 {
			body = append(body, jen.Id("x").Dot("members").Call(jen.Op("&").Id("w")))
		}
		if v.Nested {
			body = append(body, jen.Qual(pkgWire, "PutMembers").Call(jen.Op("&").Id("w"), jen.Id("x").Dot(v.Go)))
		} else {
			body = append(body, jen.Id("x").Dot(v.Go).Dot("members").Call(jen.Op("&").Id("w")))
		}
		cases = append(cases, jen.Case(jen.Id("x").Dot(v.Go).Op("!=").Nil()).Block(body...))
	}
	if t.Union == ir.ByTag {
		cases = append(cases, jen.Default().Block(jen.Return(jen.Qual(pkgWire, "WriteUnknown").Call(jen.Id("enc"), jen.Lit(t.Name), jen.Id("x").Dot("Unknown")))))
	} else {
		cases = append(cases, jen.Default().Block(jen.Return(jen.Qual(pkgWire, "NoVariant").Call(jen.Lit(t.Name)))))
	}
	g.otherUnmarshal(t)
	g.f.Comment("MarshalJSONTo encodes the variant that is set" + map[bool]string{true: ", its tag first, or Unknown as it arrived.", false: "."}[t.Union == ir.ByTag] + otherNote(t))
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		append(otherMarshal(t),
			jen.Id("w").Op(":=").Qual(pkgWire, "WriteObject").Call(jen.Id("enc")),
			jen.Switch().Block(cases...),
			jen.Return(jen.Id("w").Dot("End").Call()),
		)...,
	)
	g.f.Line()
	if len(t.Common) > 0 {
		var writes []jen.Code
		for _, fl := range t.Common {
			writes = append(writes, g.fieldWrite(t, fl))
		}
		g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("members").Params(jen.Id("w").Op("*").Qual(pkgWire, "ObjectWriter")).Block(writes...)
		g.f.Line()
	}
	v1(g.f, t.Name)
}

// elementUnion emits a union of arrays told apart by their first element.
func (g *typeGen) elementUnion(t *ir.Type) {
	var fields []jen.Code
	for _, v := range t.Variants {
		note := variantNote(t, v)
		if len(v.Keys) > 0 {
			note = fmt.Sprintf("Set when the first element has %s.", quoteList(v.Keys, " or "))
		}
		fields = append(fields, fieldComments(joinDoc(v.Doc, note))...)
		fields = append(fields, jen.Id(v.Go).Add(variantType(t, v)))
	}
	comment(g.f, typeDoc(t, "A JSON array whose first element's members select the variant; an empty array is the first variant. Exactly one field is non-nil."))
	g.f.Type().Id(t.Name).Struct(fields...)
	g.f.Line()
	g.unionDescriptor(t)
	var rest, first, marshal []jen.Code
	for i, v := range t.Variants {
		elem := v.Ref.Elem
		restOf := jen.Qual(pkgWire, "RestOf").Call(jen.Op("&").Id("r"), jen.Op("&").Id("x").Dot(v.Go), g.codecs.reader(elem, t.Name+v.Go))
		if n := v.Ref.MinItems; n != nil {
			rest = append(rest, jen.Case(jen.Lit(i)).Block(
				jen.If(jen.Err().Op(":=").Add(restOf), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Return(jen.Qual(pkgWire, "MinItems").Call(jen.Lit(t.Name), jen.Len(jen.Id("x").Dot(v.Go)), jen.Lit(*n)))))
		} else {
			rest = append(rest, jen.Case(jen.Lit(i)).Block(jen.Return(restOf)))
		}
		first = append(first, jen.Case(jen.Lit(i)).Block(jen.Return(jen.Qual(pkgWire, "First").Call(jen.Op("&").Id("x").Dot(v.Go)).Dot("member").Call(jen.Id("r")))))
		marshal = append(marshal, jen.Case(jen.Id("x").Dot(v.Go).Op("!=").Nil()).Block(jen.Return(jen.Qual(pkgWire, "WriteList").Call(jen.Id("x").Dot(v.Go), jen.Id("enc"), g.codecs.writer(elem)))))
	}
	g.f.Comment("UnmarshalJSONFrom decodes " + t.Name + " in one pass: the first element chooses, the rest follow.")
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
		jen.Id("r").Op(":=").Qual(pkgWire, "ReadFirstElement").Call(jen.Id("dec"), jen.Op("&").Id(unionVar(t))),
		jen.For(jen.Id("r").Dot("Next").Call()).Block(jen.Id("r").Dot("Done").Call(jen.Id("x").Dot("member").Call(jen.Op("&").Id("r")))),
		jen.Switch(jen.Id("r").Dot("Variant").Call()).Block(rest...),
		jen.Return(jen.Id("r").Dot("End").Call()),
	)
	g.f.Line()
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("member").Params(jen.Id("r").Op("*").Qual(pkgWire, "ObjectReader")).Error().Block(
		jen.Switch(jen.Id("r").Dot("Variant").Call()).Block(first...),
		jen.Return(jen.Nil()),
	)
	g.f.Line()
	g.f.Comment("MarshalJSONTo encodes the variant that is set.")
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Switch().Block(marshal...),
		jen.Return(jen.Qual(pkgWire, "NoVariant").Call(jen.Lit(t.Name))),
	)
	g.f.Line()
	v1(g.f, t.Name)
}

// kindUnion emits a union whose variant the value's JSON kind selects.
func (g *typeGen) kindUnion(t *ir.Type) {
	var fields, cases, marshal []jen.Code
	var words []string
	for _, v := range t.Variants {
		fields = append(fields, fieldComments(joinDoc(v.Doc, fmt.Sprintf("Set when the value is a JSON %s.", kindWord(v.Kind))))...)
		field := jen.Id("x").Dot(v.Go)
		read := g.codecs.reader(v.Ref, t.Name+v.Go)
		write := g.codecs.writer(v.Ref)
		var decode, value jen.Code
		fields = append(fields, jen.Id(v.Go).Add(variantType(t, v)))
		if nilable(v.Ref) {
			decode = jen.Qual(pkgWire, "Scalar").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Op("&").Add(field), read)
			value = field.Clone()
		} else {
			decode = jen.Qual(pkgWire, "Choose").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Op("&").Add(field), read)
			value = jen.Op("*").Add(field.Clone())
		}
		var kindCase jen.Code = jen.LitRune(rune(v.Kind))
		if v.Kind == 't' {
			kindCase = jen.List(jen.LitRune('t'), jen.LitRune('f'))
		}
		cases = append(cases, jen.Case(kindCase).Block(jen.Return(decode)))
		marshal = append(marshal, jen.Case(field.Clone().Op("!=").Nil()).Block(jen.Return(jen.Add(write).Call(value, jen.Id("enc")))))
		words = append(words, kindWord(v.Kind))
	}
	fields, rule := otherField(t, fields, "The JSON kind of the value selects the variant; exactly one field is set.")
	comment(g.f, typeDoc(t, rule))
	g.f.Type().Id(t.Name).Struct(fields...)
	g.f.Line()
	g.f.Comment(unmarshalName(t) + " decodes the variant that matches the value's JSON kind.")
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id(unmarshalName(t)).Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
		jen.Switch(jen.Id("dec").Dot("PeekKind").Call()).Block(cases...),
		jen.Return(jen.Qual(pkgWire, "KindError").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Lit(strings.Join(words, " or ")))),
	)
	g.f.Line()
	g.otherUnmarshal(t)
	g.f.Comment("MarshalJSONTo encodes the variant that is set." + otherNote(t))
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		append(otherMarshal(t),
			jen.Switch().Block(marshal...),
			jen.Return(jen.Qual(pkgWire, "NoVariant").Call(jen.Lit(t.Name))),
		)...,
	)
	g.f.Line()
	v1(g.f, t.Name)
}

// variantType is the Go type of the field of union t that holds variant v:
// a pointer, or the value itself where nil already means "not this one"
// (an array, a map, raw JSON).
func variantType(t *ir.Type, v *ir.Variant) jen.Code {
	if t.Union == ir.ByElement || t.Union == ir.ByKind && nilable(v.Ref) {
		return goType(v.Ref)
	}
	return jen.Op("*").Add(goType(v.Ref))
}

// otherField adds to a union that takes any other value (t.Other) the field
// that keeps such a value, and says so in the type's rule.
func otherField(t *ir.Type, fields []jen.Code, rule string) ([]jen.Code, string) {
	if t.Other == nil {
		return fields, rule
	}
	note := fmt.Sprintf("%s holds, verbatim, any other value: one that decodes as no variant (the schema takes any value). Set it alone.", t.Other.Go)
	fields = append(fields, fieldComments(joinDoc(t.Other.Doc, note))...)
	fields = append(fields, jen.Id(t.Other.Go).Qual(pkgJSONText, "Value"))
	return fields, rule + fmt.Sprintf(" A value that decodes as no variant is kept in %s.", t.Other.Go)
}

// unmarshalName is the name of a union's own decoder: UnmarshalJSONFrom, or,
// for a union that takes any other value, the decoder of its variants that
// UnmarshalJSONFrom tries first.
func unmarshalName(t *ir.Type) string {
	if t.Other != nil {
		return "unmarshalVariant"
	}
	return "UnmarshalJSONFrom"
}

// otherUnmarshal emits the UnmarshalJSONFrom of a union that takes any other
// value: its variants first, else the value verbatim.
func (g *typeGen) otherUnmarshal(t *ir.Type) {
	if t.Other == nil {
		return
	}
	g.f.Comment(fmt.Sprintf("UnmarshalJSONFrom decodes a variant of %s, or keeps the value verbatim in %s when it decodes as none.", t.Name, t.Other.Go))
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, "OrOther").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Id("x").Dot("unmarshalVariant"),
			jen.Func().Params().Block(jen.Op("*").Id("x").Op("=").Id(t.Name).Values()), jen.Op("&").Id("x").Dot(t.Other.Go))),
	)
	g.f.Line()
}

// otherMarshal writes a union's any-other value first, when it is set.
func otherMarshal(t *ir.Type) []jen.Code {
	if t.Other == nil {
		return nil
	}
	return []jen.Code{jen.If(jen.Id("x").Dot(t.Other.Go).Op("!=").Nil()).Block(jen.Return(jen.Id("enc").Dot("WriteValue").Call(jen.Id("x").Dot(t.Other.Go))))}
}

func otherNote(t *ir.Type) string {
	if t.Other == nil {
		return ""
	}
	return fmt.Sprintf(" %s, when set, is written as it is.", t.Other.Go)
}
