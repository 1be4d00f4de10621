package emit

import (
	"encoding/json"
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// Types emits every type of a package: structs, unions, enums, named scalars
// and maps, in name order, then the Readers and Writers they share.
func Types(pkg *ir.Package) *jen.File {
	f := newFile(pkg)
	g := &typeGen{f: f}
	for _, t := range sortedTypes(pkg.Types) {
		switch t.Kind {
		case ir.Struct:
			g.structType(t)
		case ir.Union:
			g.union(t)
		case ir.Enum:
			g.enum(t)
		case ir.Scalar:
			g.scalar(t)
		case ir.MapType:
			g.mapType(t)
		}
	}
	g.contracts(pkg)
	if len(g.codecs.decls) > 0 {
		f.Comment("Readers and writers of composite and constrained values, built once.")
		f.Var().Defs(g.codecs.decls...)
	}
	return f
}

type typeGen struct {
	f      *jen.File
	codecs codecs
}

func objVar(t *ir.Type) string   { return "obj" + t.Name }
func unionVar(t *ir.Type) string { return "union" + t.Name }

// objectDescriptor declares the wire.Object of a struct (or of a union's
// common members) and returns its name.
func (g *typeGen) objectDescriptor(t *ir.Type, name string, fields []*ir.Field) {
	d := jen.Dict{jen.Id("Type"): jen.Lit(t.Name)}
	var req []jen.Code
	for _, fl := range fields {
		if fl.Required {
			req = append(req, jen.Lit(fl.JSON))
		}
	}
	if len(req) > 0 {
		d[jen.Id("Required")] = jen.Index().String().Values(req...)
	}
	g.f.Var().Id(name).Op("=").Qual(pkgWire, "Object").Values(d)
	g.f.Line()
}

// structFields renders the fields of a struct (or a union's common members).
func structFields(fields []*ir.Field) []jen.Code {
	var out []jen.Code
	for _, fl := range fields {
		if fl.Const != nil && fl.Required {
			continue
		}
		doc := fl.Doc
		if fl.Const != nil {
			doc = joinDoc(doc, fmt.Sprintf("When present it is %s.", ir.Canonical(fl.Const)))
		}
		if fl.Default != nil {
			doc = joinDoc(doc, fmt.Sprintf("Schema default %s (see Get%s); never written for you.", ir.Canonical(fl.Default), fl.Go))
		}
		if fl.Represented != "" {
			doc = joinDoc(doc, fmt.Sprintf("Held as %s is, so the two share one Go type; this member is never null: decoding refuses null and encoding refuses wire.Null (wire.ErrNullValue).", fl.Represented))
		}
		out = append(out, fieldComments(doc)...)
		out = append(out, jen.Id(fl.Go).Add(fieldType(fl)))
	}
	return out
}

func joinDoc(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

func (g *typeGen) structType(t *ir.Type) {
	fields := structFields(t.Fields)
	rule := "Closed: members the schema does not name are rejected."
	if !t.Closed {
		rule = "Open: members the schema does not name are kept in Extra and written back."
		if len(t.Forbidden) > 0 {
			rule += fmt.Sprintf(" These members are forbidden (wire.ErrForbiddenMember): %s.", quoteList(t.Forbidden, ", "))
		}
		for _, sc := range t.Scoped {
			rule += fmt.Sprintf(" Under %s (the %q contract) these members are forbidden too (wire.ErrForbiddenMember); other decodes keep them in Extra: %s.", sc.Go, sc.Contract, quoteList(sc.Members, ", "))
		}
		fields = append(fields, jen.Comment("Extra keeps members the schema does not name, in arrival order."), jen.Id("Extra").Qual(pkgWire, "Extras"))
	}
	comment(g.f, typeDoc(t, rule))
	g.f.Type().Id(t.Name).Struct(fields...)
	g.f.Line()
	g.objectDescriptor(t, objVar(t), t.Fields)
	g.getters(t, t.Fields)
	g.f.Comment("UnmarshalJSONFrom decodes " + t.Name + ", checking required members, kinds and constraints.")
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
		jen.Id("r").Op(":=").Qual(pkgWire, "ReadObject").Call(jen.Id("dec"), jen.Op("&").Id(objVar(t))),
		jen.For(jen.Id("r").Dot("Next").Call()).Block(jen.Id("r").Dot("Done").Call(jen.Id("x").Dot("member").Call(jen.Op("&").Id("r")))),
		jen.Return(jen.Id("r").Dot("End").Call()),
	)
	g.f.Line()
	var fallback jen.Code = jen.Return(jen.Id("r").Dot("Extra").Call(jen.Op("&").Id("x").Dot("Extra")))
	if t.Closed {
		fallback = jen.Return(jen.Id("r").Dot("Unknown").Call())
	}
	g.memberSwitch(t, t.Fields, nil, fallback)
	g.f.Comment("MarshalJSONTo encodes " + t.Name + ", members in schema order" + map[bool]string{true: ".", false: ", then Extra."}[t.Closed])
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Id("w").Op(":=").Qual(pkgWire, "WriteObject").Call(jen.Id("enc")),
		jen.Id("x").Dot("members").Call(jen.Op("&").Id("w")),
		jen.Return(jen.Id("w").Dot("End").Call()),
	)
	g.f.Line()
	var writes []jen.Code
	for _, fl := range t.Fields {
		writes = append(writes, g.fieldWrite(t, fl))
	}
	switch {
	case !t.Closed && len(t.Forbidden) > 0:
		args := []jen.Code{jen.Id("x").Dot("Extra"), jen.Lit(t.Name)}
		for _, name := range t.Forbidden {
			args = append(args, jen.Lit(name))
		}
		writes = append(writes, jen.Id("w").Dot("ExtrasExcept").Call(args...))
	case !t.Closed:
		writes = append(writes, jen.Id("w").Dot("Extras").Call(jen.Id("x").Dot("Extra")))
	}
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("members").Params(jen.Id("w").Op("*").Qual(pkgWire, "ObjectWriter")).Block(writes...)
	g.f.Line()
	v1(g.f, t.Name)
}

// memberSwitch emits the member method: a switch on the member name over
// fields, then tail (variant dispatch of unions), then fallback.
func (g *typeGen) memberSwitch(t *ir.Type, fields []*ir.Field, tail []jen.Code, fallback jen.Code) {
	var cases []jen.Code
	for _, fl := range fields {
		cases = append(cases, jen.Case(jen.Lit(fl.JSON)).Block(jen.Return(g.fieldRead(t, fl))))
	}
	if len(t.Forbidden) > 0 && t.Kind == ir.Struct {
		var names []jen.Code
		for _, name := range t.Forbidden {
			names = append(names, jen.Lit(name))
		}
		cases = append(cases, jen.Case(names...).Block(jen.Return(jen.Id("r").Dot("Forbidden").Call())))
	}
	var body []jen.Code
	if len(cases) > 0 {
		body = append(body, jen.Switch(jen.String().Call(jen.Id("r").Dot("Name").Call())).Block(cases...))
	}
	body = append(body, tail...)
	body = append(body, fallback)
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("member").Params(jen.Id("r").Op("*").Qual(pkgWire, "ObjectReader")).Error().Block(body...)
	g.f.Line()
}

// constValue is a const member's value as a Go literal of its base type.
func constValue(fl *ir.Field) (jen.Code, jen.Code, jen.Code) {
	var s string
	if json.Unmarshal(fl.Const, &s) == nil {
		return jen.Lit(s), jen.Qual(pkgWire, "StringFrom"), jen.Qual(pkgWire, "StringTo")
	}
	var b bool
	if json.Unmarshal(fl.Const, &b) == nil {
		return jen.Lit(b), jen.Qual(pkgWire, "BoolFrom"), jen.Qual(pkgWire, "BoolTo")
	}
	var n int64
	_ = json.Unmarshal(fl.Const, &n)
	return jen.Lit(n), jen.Qual(pkgWire, "IntFrom"), jen.Qual(pkgWire, "IntTo")
}

// fieldRead is the expression decoding one member's value.
func (g *typeGen) fieldRead(t *ir.Type, fl *ir.Field) jen.Code {
	r := jen.Id("r")
	p := jen.Op("&").Id("x").Dot(fl.Go)
	if fl.Const != nil {
		v, read, _ := constValue(fl)
		if fl.Required {
			return jen.Qual(pkgWire, "Const").Call(r, v, read)
		}
		return jen.Qual(pkgWire, "OptConst").Call(r, p, v, read)
	}
	read := g.codecs.reader(fl.Ref, t.Name+fl.Go)
	nullable := fl.Nullable && fl.Ref.Kind != ir.Raw
	switch fieldStorage(fl) {
	case pointer:
		if nullable {
			return jen.Qual(pkgWire, "NullPtr").Call(r, p, read)
		}
		return jen.Qual(pkgWire, "Ptr").Call(r, p, read)
	case nilAble:
		if nullable {
			return jen.Qual(pkgWire, "NullField").Call(r, p, read)
		}
	case optional:
		if fl.Represented != "" && !fl.Nullable {
			return jen.Qual(pkgWire, "OptValue").Call(r, p, read)
		}
		return jen.Qual(pkgWire, "Opt").Call(r, p, read)
	}
	return jen.Qual(pkgWire, "Field").Call(r, p, read)
}

// fieldWrite is the statement encoding one member.
func (g *typeGen) fieldWrite(t *ir.Type, fl *ir.Field) jen.Code {
	w, name, v := jen.Id("w"), jen.Lit(fl.JSON), jen.Id("x").Dot(fl.Go)
	if fl.Const != nil && fl.Required {
		val, _, write := constValue(fl)
		return jen.Qual(pkgWire, "PutConst").Call(w, name, val, write)
	}
	var write jen.Code
	if fl.Const != nil {
		_, _, write = constValue(fl)
	} else {
		write = g.codecs.writer(fl.Ref)
	}
	switch fieldStorage(fl) {
	case pointer:
		if fl.Required {
			return jen.Qual(pkgWire, "PutNullPtr").Call(w, name, v, write)
		}
		return jen.Qual(pkgWire, "PutPtr").Call(w, name, v, write)
	case nilAble:
		present := jen.Id("x").Dot(fl.Go).Op("!=").Nil()
		if fl.Required {
			return jen.Qual(pkgWire, "PutOrNull").Call(w, name, v, present, write)
		}
		return jen.Qual(pkgWire, "PutIf").Call(w, name, v, present, write)
	case optional:
		if fl.Represented != "" && !fl.Nullable {
			return jen.Qual(pkgWire, "PutOptValue").Call(w, jen.Lit(t.Name), name, v, write)
		}
		return jen.Qual(pkgWire, "PutOpt").Call(w, name, v, write)
	}
	return jen.Qual(pkgWire, "Put").Call(w, name, v, write)
}

// getters emits GetX for members with a schema default: the value when
// present, else the default. Defaults are never applied on decode nor written.
func (g *typeGen) getters(t *ir.Type, fields []*ir.Field) {
	for _, fl := range fields {
		if fl.Default == nil || fl.Const != nil {
			continue
		}
		st := fieldStorage(fl)
		if st == direct {
			continue // required: never absent
		}
		typ := goType(fl.Ref)
		var def jen.Code
		var v any
		_ = json.Unmarshal(fl.Default, &v)
		switch fl.Ref.Kind {
		case ir.Bool, ir.String:
			def = jen.Lit(v)
		case ir.Int:
			n, _ := v.(float64)
			def = jen.Int64().Call(jen.Lit(int64(n)))
		case ir.Float:
			n, _ := v.(float64)
			def = jen.Float64().Call(jen.Lit(n))
		default:
			def = jen.Qual(pkgWire, "Default").Types(typ).Call(jen.Lit(ir.Canonical(fl.Default)))
		}
		field := jen.Id("x").Dot(fl.Go)
		if fl.Ref.Kind == ir.Named && fl.Ref.Named.Kind == ir.Struct {
			g.structGetter(t, fl, st, typ, def)
			continue
		}
		var body []jen.Code
		switch st {
		case pointer:
			body = []jen.Code{jen.If(jen.Id("x").Op("!=").Nil().Op("&&").Add(field).Op("!=").Nil()).Block(jen.Return(jen.Op("*").Add(field)))}
		case nilAble:
			body = []jen.Code{jen.If(jen.Id("x").Op("!=").Nil().Op("&&").Add(field).Op("!=").Nil()).Block(jen.Return(field))}
		case optional:
			body = []jen.Code{jen.If(jen.Id("x").Op("!=").Nil().Op("&&").Op("!").Add(field).Dot("IsAbsent").Call()).Block(
				jen.List(jen.Id("v"), jen.Id("_")).Op(":=").Add(field).Dot("Get").Call(),
				jen.Return(jen.Id("v")),
			)}
		}
		body = append(body, jen.Return(def))
		what := "when absent"
		if st == optional && fl.Represented == "" {
			what = "when absent (null gives the zero value)"
		}
		g.f.Comment(fmt.Sprintf("Get%s returns %s, or its schema default %s %s.", fl.Go, fl.Go, ir.Canonical(fl.Default), what))
		g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("Get" + fl.Go).Params().Add(typ).Block(body...)
		g.f.Line()
	}
}

// structGetter emits GetX for a struct member with a schema default. It
// returns a pointer, so that getters chain (caps.GetFs().GetReadTextFile():
// the struct's methods have pointer receivers, which a returned value could
// not call): the member itself when present, else a fresh copy of the
// default, never nil.
func (g *typeGen) structGetter(t *ir.Type, fl *ir.Field, st storage, typ, def jen.Code) {
	field := jen.Id("x").Dot(fl.Go)
	present := jen.Id("x").Op("!=").Nil().Op("&&").Add(field).Op("!=").Nil()
	var body []jen.Code
	switch st {
	case pointer, nilAble:
		body = []jen.Code{jen.If(present).Block(jen.Return(field))}
	case optional:
		body = []jen.Code{jen.If(jen.Id("x").Op("!=").Nil().Op("&&").Op("!").Add(field).Dot("IsAbsent").Call()).Block(
			jen.List(jen.Id("v"), jen.Id("_")).Op(":=").Add(field).Dot("Get").Call(),
			jen.Return(jen.Op("&").Id("v")),
		)}
	}
	body = append(body, jen.Id("d").Op(":=").Add(def), jen.Return(jen.Op("&").Id("d")))
	what := "when absent"
	if st == optional && fl.Represented == "" {
		what = "when absent (a copy of the value when set; null gives the zero value)"
	}
	g.f.Comment(fmt.Sprintf("Get%s returns %s, or a fresh copy of its schema default %s %s; never nil, so getters chain.", fl.Go, fl.Go, ir.Canonical(fl.Default), what))
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("Get" + fl.Go).Params().Op("*").Add(typ).Block(body...)
	g.f.Line()
}

// v1 adds encoding/json (v1) methods that delegate to the v2 ones, so the
// types keep their wire rules whichever JSON package a caller uses.
func v1(f *jen.File, name string) {
	f.Comment("MarshalJSON implements encoding/json.Marshaler with the rules of MarshalJSONTo.")
	f.Func().Params(jen.Id("x").Id(name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Qual(pkgWire, "Marshal").Call(jen.Id("x"))),
	)
	f.Line()
	f.Comment("UnmarshalJSON implements encoding/json.Unmarshaler with the rules of UnmarshalJSONFrom.")
	f.Func().Params(jen.Id("x").Op("*").Id(name)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Return(jen.Qual(pkgWire, "Unmarshal").Call(jen.Id("data"), jen.Id("x"))),
	)
	f.Line()
}

// scalar emits a named string, integer, number or boolean.
func (g *typeGen) scalar(t *ir.Type) {
	base := goType(&ir.Ref{Kind: t.Base.Kind})
	comment(g.f, typeDoc(t, scalarRule(t.Base)))
	g.f.Type().Id(t.Name).Add(base)
	g.f.Line()
	read := g.codecs.reader(t.Base, t.Name)
	g.f.Comment("UnmarshalJSONFrom decodes " + t.Name + ", checking its kind" + map[bool]string{true: " and constraints.", false: "."}[t.Base.HasConstraints()])
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, "Scalar").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Parens(jen.Op("*").Add(base)).Call(jen.Id("x")), read)),
	)
	g.f.Line()
	g.f.Comment("MarshalJSONTo encodes " + t.Name + ".")
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Return(jen.Add(g.codecs.writer(&ir.Ref{Kind: t.Base.Kind})).Call(jen.Add(base).Call(jen.Id("x")), jen.Id("enc"))),
	)
	g.f.Line()
	v1(g.f, t.Name)
}

func scalarRule(r *ir.Ref) string {
	words := map[ir.RefKind]string{ir.String: "A JSON string", ir.Int: "A JSON integer", ir.Float: "A JSON number", ir.Bool: "A JSON boolean"}
	s := words[r.Kind]
	if r.Format != "" {
		s += fmt.Sprintf(" (format %s)", r.Format)
	}
	if r.HasConstraints() {
		return s + "; constraints are checked on decode."
	}
	return s + "."
}

// mapType emits an object whose members all share one schema.
func (g *typeGen) mapType(t *ir.Type) {
	goMap := jen.Map(jen.String()).Add(goType(t.Elem))
	comment(g.f, typeDoc(t, "Members are written in sorted key order."))
	g.f.Type().Id(t.Name).Add(goMap)
	g.f.Line()
	m := &ir.Ref{Kind: ir.Map, Elem: t.Elem}
	g.f.Comment("UnmarshalJSONFrom decodes every member with the value schema.")
	g.f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, "Scalar").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Parens(jen.Op("*").Add(goMap.Clone())).Call(jen.Id("x")), g.codecs.reader(m, t.Name))),
	)
	g.f.Line()
	g.f.Comment("MarshalJSONTo encodes the members in sorted key order.")
	g.f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, "WriteMapOf").Call(jen.Id("x"), jen.Id("enc"), g.codecs.writer(t.Elem))),
	)
	g.f.Line()
	v1(g.f, t.Name)
}

// contracts declares the package's contracts (wire.Contract), each with
// the members it forbids per type, and Contracts listing them.
func (g *typeGen) contracts(pkg *ir.Package) {
	if len(pkg.Contracts) == 0 {
		return
	}
	var list []jen.Code
	for _, c := range pkg.Contracts {
		var rules []jen.Code
		var doc []string
		for _, r := range c.Rules {
			var members []jen.Code
			for _, m := range r.Members {
				members = append(members, jen.Lit(m))
			}
			rules = append(rules, jen.Values(jen.Dict{
				jen.Id("Type"):    jen.Lit(r.Type.Name),
				jen.Id("Schema"):  jen.Lit(r.Type.Pointer),
				jen.Id("Members"): jen.Index().String().Values(members...),
			}))
			name := r.Type.Name
			if r.Type.Import != "" {
				name = r.Type.ImportName + "." + name
			}
			doc = append(doc, fmt.Sprintf("%s: %s", name, quoteList(r.Members, ", ")))
		}
		text := fmt.Sprintf("%s is the %q contract of the catalogue's overlays: decoding under it (%s.Options(), or rpc.Options.DecodeOptions on a connection) rejects with wire.ErrForbiddenMember the members it forbids, which every other decode keeps in Extra. A rule names its type by Go name and applies to every object of that name the decode reaches. It forbids, per type: %s.", c.Go, c.Name, c.Go, joinList(doc))
		if len(rules) == 0 {
			text = fmt.Sprintf("%s is the %q contract of the catalogue's overlays, applied by decoding under it (%s.Options(), or rpc.Options.DecodeOptions on a connection).", c.Go, c.Name, c.Go)
		}
		var variants []jen.Code
		for _, v := range c.Variants {
			var tags []jen.Code
			for _, tag := range v.Tags {
				tags = append(tags, jen.Lit(tag))
			}
			variants = append(variants, jen.Qual(pkgWire, "Variants").Values(jen.Dict{
				jen.Id("Type"):   jen.Lit(v.Union.Name),
				jen.Id("Schema"): jen.Lit(v.Union.Pointer),
				jen.Id("Tags"):   jen.Index().String().Values(tags...),
				jen.Id("New"): jen.Func().Params().Qual(pkgJSON, "UnmarshalerFrom").Block(
					jen.Return(jen.New(jen.Id(v.Type.Name)))),
			}))
			text += fmt.Sprintf(" An object of %s.%s whose %s is one of %s (which %s keeps in Unknown) must decode as %s.", v.Union.ImportName, v.Union.Name, v.Union.Tag, quoteList(v.Tags, ", "), v.Union.ImportName, v.Type.Name)
		}
		comment(g.f, text)
		args := append([]jen.Code{jen.Lit(c.Name)}, jen.Index().Qual(pkgWire, "Forbid").Values(rules...).Op("..."))
		decl := jen.Qual(pkgWire, "NewContract").Call(args...)
		if len(variants) > 0 {
			decl = decl.Dot("Extend").Call(variants...)
		}
		g.f.Var().Id(c.Go).Op("=").Add(decl)
		g.f.Line()
		list = append(list, jen.Id(c.Go))
	}
	g.f.Comment("Contracts lists the package's contracts, by name.")
	g.f.Var().Id("Contracts").Op("=").Index().Op("*").Qual(pkgWire, "Contract").Values(list...)
	g.f.Line()
}

func joinList(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}
