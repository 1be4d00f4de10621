package emit

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// Types emits every type whose emitter is jennifer: structs with strict or
// open decoding, unions, maps, aliases and enums.
func Types(pkg *ir.Package) *jen.File {
	f := newFile(pkg)
	for _, t := range pkg.Types {
		if t.Emitter != ir.EmitJennifer {
			continue
		}
		switch t.Kind {
		case ir.Struct:
			emitStruct(f, t)
		case ir.Union:
			emitUnion(f, t)
		case ir.MapType:
			emitMap(f, t)
		case ir.StringEnum, ir.IntEnum:
			emitEnum(f, t)
		}
		f.Line()
	}
	return f
}

// fieldType is the Go type of a struct field, following the presence rules in
// docs/generator.md: pointers (or nil-able types) for optional members and for
// null, wire.Nullable where absent and null must stay apart.
func fieldType(fl *ir.Field) jen.Code {
	base := goType(fl.Ref)
	switch {
	case fl.Ref.Kind == ir.Raw:
		return base // null is a value of its own
	case fl.Required && !fl.Nullable:
		return base
	case fl.Required && fl.Nullable, !fl.Required && !fl.Nullable:
		if nilable(fl.Ref) {
			return base
		}
		return jen.Op("*").Add(base)
	default:
		return jen.Qual(pkgWire, "Nullable").Types(base)
	}
}

// storage says how a field holds its value.
type storage int

const (
	direct   storage = iota // the value itself
	pointer                 // *T, nil = absent or null
	nilAble                 // nil-able T, nil = absent or null
	optional                // wire.Nullable[T]
)

func fieldStorage(fl *ir.Field) storage {
	switch {
	case fl.Ref.Kind == ir.Raw:
		if fl.Required {
			return direct
		}
		return nilAble
	case fl.Required && !fl.Nullable:
		return direct
	case fl.Required && fl.Nullable, !fl.Required && !fl.Nullable:
		if nilable(fl.Ref) {
			return nilAble
		}
		return pointer
	}
	return optional
}

func emitStruct(f *jen.File, t *ir.Type) {
	var fields []jen.Code
	for _, fl := range t.Fields {
		if fl.Const != nil {
			continue
		}
		tag := fl.JSON
		if !fl.Required {
			tag += ",omitempty"
		}
		c := jen.Id(fl.Go).Add(fieldType(fl)).Tag(map[string]string{"json": tag})
		fields = append(fields, fieldComments(fl.Doc)...)
		fields = append(fields, c)
	}
	if !t.Closed {
		fields = append(fields, jen.Comment("Extra keeps members the schema does not name, in arrival order."))
		fields = append(fields, jen.Id("Extra").Qual(pkgWire, "Extras").Tag(map[string]string{"json": "-"}))
	}
	rule := "Open: members the schema does not name are kept in Extra and written back."
	if t.Closed {
		rule = "Closed: members the schema does not name are rejected."
	}
	comment(f, typeDoc(t, rule))
	f.Type().Id(t.Name).Struct(fields...)
	f.Line()

	for _, fl := range t.Fields {
		emitDefaultGetter(f, t, fl)
	}
	for _, fl := range t.Fields {
		if fl.Ref.Pattern != "" {
			f.Var().Id(patternVar(t, fl)).Op("=").Qual("regexp", "MustCompile").Call(jen.Lit(fl.Ref.Pattern))
		}
	}
	emitStructUnmarshal(f, t)
	emitStructMarshal(f, t)
	emitV1(f, t.Name)
}

func patternVar(t *ir.Type, fl *ir.Field) string { return "pattern" + t.Name + fl.Go }

func emitDefaultGetter(f *jen.File, t *ir.Type, fl *ir.Field) {
	if fl.Default == nil || fieldStorage(fl) != pointer {
		return
	}
	var def jen.Code
	switch fl.Ref.Kind {
	case ir.Bool, ir.String, ir.Int, ir.Float:
		var v any
		if json.Unmarshal(fl.Default, &v) != nil {
			return
		}
		switch fl.Ref.Kind {
		case ir.Int:
			n, _ := v.(float64)
			def = jen.Lit(int64(n))
		case ir.Float:
			def = jen.Lit(v)
		default:
			def = jen.Lit(v)
		}
	default:
		return
	}
	f.Comment(fmt.Sprintf("Get%s returns %s, or its schema default %s when absent.", fl.Go, fl.Go, fl.Default))
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("Get"+fl.Go).Params().Add(goType(fl.Ref)).Block(
		jen.If(jen.Id("x").Op("==").Nil().Op("||").Id("x").Dot(fl.Go).Op("==").Nil()).Block(jen.Return(def)),
		jen.Return(jen.Op("*").Id("x").Dot(fl.Go)),
	)
	f.Line()
}

func ret(err jen.Code) jen.Code { return jen.Return(err) }

func wrapErr(t *ir.Type, member string) jen.Code {
	return jen.Qual(pkgWire, "Wrap").Call(jen.Lit(t.Name), jen.Lit(member), jen.Err())
}

// checks returns statements that validate v against r's constraints.
func checks(t *ir.Type, fl *ir.Field, r *ir.Ref, v jen.Code) []jen.Code {
	var out []jen.Code
	check := func(call jen.Code) {
		out = append(out, jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(ret(wrapErr(t, fl.JSON))))
	}
	if fl.Const != nil {
		var s string
		_ = json.Unmarshal(fl.Const, &s)
		check(jen.Qual(pkgWire, "Const").Call(v, jen.Lit(s)))
	}
	if r.MinLength != nil {
		check(jen.Qual(pkgWire, "MinLength").Call(v, jen.Lit(*r.MinLength)))
	}
	if r.MaxLength != nil {
		check(jen.Qual(pkgWire, "MaxLength").Call(v, jen.Lit(*r.MaxLength)))
	}
	if r.Minimum != nil {
		check(jen.Qual(pkgWire, "Minimum").Call(v, jen.Lit(*r.Minimum)))
	}
	if r.Maximum != nil {
		check(jen.Qual(pkgWire, "Maximum").Call(v, jen.Lit(*r.Maximum)))
	}
	if r.MinItems != nil {
		check(jen.Qual(pkgWire, "MinItems").Call(jen.Len(v), jen.Lit(*r.MinItems)))
	}
	if r.Pattern != "" {
		check(jen.Qual(pkgWire, "Pattern").Call(v, jen.Id(patternVar(t, fl))))
	}
	return out
}

func emitStructUnmarshal(f *jen.File, t *ir.Type) {
	var required uint64
	var requiredNames []jen.Code
	for _, fl := range t.Fields {
		if fl.Bit >= 0 {
			required |= 1 << fl.Bit
			requiredNames = append(requiredNames, jen.Lit(fl.JSON))
		}
	}
	namesVar := "required" + t.Name
	if required != 0 {
		f.Var().Id(namesVar).Op("=").Index().String().Values(requiredNames...)
	}
	body := []jen.Code{
		jen.If(jen.Err().Op(":=").Qual(pkgWire, "BeginObject").Call(jen.Id("dec"), jen.Lit(t.Name)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
	}
	if required != 0 {
		body = append(body, jen.Var().Id("seen").Uint64())
	}
	var cases []jen.Code
	for _, fl := range t.Fields {
		cases = append(cases, jen.Case(jen.Lit(fl.JSON)).Block(fieldRead(t, fl)...))
	}
	if t.Closed {
		cases = append(cases, jen.Default().Block(jen.Return(jen.Qual(pkgWire, "Unknown").Call(jen.Lit(t.Name), jen.Id("name")))))
	} else {
		cases = append(cases, jen.Default().Block(
			jen.If(jen.Err().Op(":=").Id("x").Dot("Extra").Dot("Read").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Id("name")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		))
	}
	loop := []jen.Code{
		jen.List(jen.Id("name"), jen.Err()).Op(":=").Qual(pkgWire, "ReadName").Call(jen.Id("dec"), jen.Lit(t.Name)),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
	}
	if len(t.Fields) == 0 && t.Closed {
		loop = append(loop, jen.Return(jen.Qual(pkgWire, "Unknown").Call(jen.Lit(t.Name), jen.Id("name"))))
	} else {
		loop = append(loop, jen.Switch(jen.String().Call(jen.Id("name"))).Block(cases...))
	}
	body = append(body, jen.For(jen.Qual(pkgWire, "More").Call(jen.Id("dec"))).Block(loop...))
	body = append(body, jen.If(jen.Err().Op(":=").Qual(pkgWire, "EndObject").Call(jen.Id("dec"), jen.Lit(t.Name)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
	if required != 0 {
		mask := jen.Lit(required)
		body = append(body, jen.If(jen.Id("seen").Op("&").Add(mask).Op("!=").Add(mask)).Block(
			jen.Return(jen.Qual(pkgWire, "Missing").Call(jen.Lit(t.Name), jen.Id("seen"), mask, jen.Id(namesVar))),
		))
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Comment("UnmarshalJSONFrom decodes " + t.Name + " from dec, enforcing the schema's required members, kinds and constraints.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(body...)
	f.Line()
}

// fieldRead is the body of one member's case in UnmarshalJSONFrom.
func fieldRead(t *ir.Type, fl *ir.Field) []jen.Code {
	var out []jen.Code
	if fl.Bit >= 0 {
		out = append(out, jen.Id("seen").Op("|=").Lit(uint64(1)<<fl.Bit))
	}
	st := fieldStorage(fl)
	readInto := func(assign func(v jen.Code) jen.Code) []jen.Code {
		stmts := []jen.Code{
			jen.List(jen.Id("v"), jen.Err()).Op(":=").Add(readValue(fl.Ref)),
			jen.If(jen.Err().Op("!=").Nil()).Block(ret(wrapErr(t, fl.JSON))),
		}
		stmts = append(stmts, checks(t, fl, fl.Ref, jen.Id("v"))...)
		if fl.Const == nil {
			stmts = append(stmts, assign(jen.Id("v")))
		}
		return stmts
	}
	field := jen.Id("x").Dot(fl.Go)
	nullable := fl.Nullable && fl.Ref.Kind != ir.Raw
	var value []jen.Code
	switch st {
	case direct, nilAble:
		value = readInto(func(v jen.Code) jen.Code { return jen.Id("x").Dot(fl.Go).Op("=").Add(v) })
	case pointer:
		value = readInto(func(v jen.Code) jen.Code { return jen.Id("x").Dot(fl.Go).Op("=").Op("&").Add(v) })
	case optional:
		value = readInto(func(v jen.Code) jen.Code {
			return jen.Id("x").Dot(fl.Go).Op("=").Qual(pkgWire, "Some").Call(v)
		})
	}
	if !nullable {
		return append(out, value...)
	}
	var setNull jen.Code
	if st == optional {
		setNull = jen.Id("x").Dot(fl.Go).Op("=").Qual(pkgWire, "Null").Types(goType(fl.Ref)).Call()
	} else {
		setNull = jen.Add(field).Op("=").Nil()
	}
	out = append(out, jen.If(jen.Id("dec").Dot("PeekKind").Call().Op("==").LitRune('n')).Block(
		jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("dec").Dot("ReadToken").Call(), jen.Err().Op("!=").Nil()).Block(ret(wrapErr(t, fl.JSON))),
		setNull,
		jen.Break(),
	))
	return append(out, value...)
}

func writeName(name string) jen.Code {
	return jen.If(jen.Err().Op(":=").Id("enc").Dot("WriteToken").Call(jen.Qual(pkgJSONText, "String").Call(jen.Lit(name))), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))
}

func checked(call jen.Code) jen.Code {
	return jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))
}

func emitStructMarshal(f *jen.File, t *ir.Type) {
	body := []jen.Code{checked(jen.Id("enc").Dot("WriteToken").Call(jen.Qual(pkgJSONText, "BeginObject")))}
	for _, fl := range t.Fields {
		field := jen.Id("x").Dot(fl.Go)
		if fl.Const != nil {
			var s string
			_ = json.Unmarshal(fl.Const, &s)
			body = append(body, writeName(fl.JSON), checked(jen.Qual(pkgWire, "WriteString").Call(jen.Id("enc"), jen.Lit(s))))
			continue
		}
		st := fieldStorage(fl)
		switch {
		case st == direct:
			body = append(body, writeName(fl.JSON), checked(writeValue(fl.Ref, field)))
		case st == pointer && fl.Required: // required and nullable
			body = append(body, writeName(fl.JSON), jen.If(field.Clone().Op("==").Nil()).Block(
				checked(jen.Id("enc").Dot("WriteToken").Call(jen.Qual(pkgJSONText, "Null"))),
			).Else().Block(checked(writeValue(fl.Ref, jen.Parens(jen.Op("*").Add(field.Clone()))))))
		case st == pointer:
			body = append(body, jen.If(field.Clone().Op("!=").Nil()).Block(writeName(fl.JSON), checked(writeValue(fl.Ref, jen.Parens(jen.Op("*").Add(field.Clone()))))))
		case st == nilAble && fl.Required: // nil means null
			body = append(body, writeName(fl.JSON), jen.If(field.Clone().Op("==").Nil()).Block(
				checked(jen.Id("enc").Dot("WriteToken").Call(jen.Qual(pkgJSONText, "Null"))),
			).Else().Block(checked(writeValue(fl.Ref, field.Clone()))))
		case st == nilAble:
			body = append(body, jen.If(field.Clone().Op("!=").Nil()).Block(writeName(fl.JSON), checked(writeValue(fl.Ref, field.Clone()))))
		case st == optional:
			body = append(body, jen.If(jen.List(jen.Id("v"), jen.Id("ok")).Op(":=").Add(field.Clone()).Dot("Get").Call(), jen.Id("ok")).Block(
				writeName(fl.JSON), checked(writeValue(fl.Ref, jen.Id("v"))),
			).Else().If(field.Clone().Dot("IsNull").Call()).Block(
				writeName(fl.JSON), checked(jen.Id("enc").Dot("WriteToken").Call(jen.Qual(pkgJSONText, "Null"))),
			))
		}
	}
	if !t.Closed {
		body = append(body, checked(jen.Id("x").Dot("Extra").Dot("Encode").Call(jen.Id("enc"))))
	}
	body = append(body, jen.Return(jen.Id("enc").Dot("WriteToken").Call(jen.Qual(pkgJSONText, "EndObject"))))
	f.Comment("MarshalJSONTo encodes " + t.Name + " with members in schema order" + map[bool]string{true: ".", false: ", then Extra."}[t.Closed])
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(body...)
	f.Line()
}

// emitV1 adds encoding/json (v1) methods that delegate to the v2 ones, so the
// types keep their wire rules whichever JSON package a caller uses.
func emitV1(f *jen.File, name string) {
	f.Comment("MarshalJSON implements encoding/json.Marshaler with the same rules as MarshalJSONTo.")
	f.Func().Params(jen.Id("x").Id(name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Qual(pkgJSON, "Marshal").Call(jen.Id("x"), jen.Qual(pkgWire, "Fidelity"))),
	)
	f.Line()
	f.Comment("UnmarshalJSON implements encoding/json.Unmarshaler with the same rules as UnmarshalJSONFrom.")
	f.Func().Params(jen.Id("x").Op("*").Id(name)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Return(jen.Qual(pkgJSON, "Unmarshal").Call(jen.Id("data"), jen.Id("x"))),
	)
	f.Line()
}

func variantType(v *ir.Variant) jen.Code {
	if nilable(v.Ref) {
		return goType(v.Ref)
	}
	return jen.Op("*").Add(goType(v.Ref))
}

func emitUnion(f *jen.File, t *ir.Type) {
	if t.Discriminator != "" {
		emitTaggedUnion(f, t)
		return
	}
	var fields, cases, marshal []jen.Code
	var kinds []string
	for _, v := range t.Variants {
		fields = append(fields, jen.Comment(fmt.Sprintf("%s is set when the value is a JSON %s.", v.Go, kindWord(v.Kind))))
		fields = append(fields, jen.Id(v.Go).Add(variantType(v)))
		kinds = append(kinds, kindWord(v.Kind))
		var kindCase jen.Code = jen.LitRune(rune(v.Kind))
		if v.Kind == 't' {
			kindCase = jen.List(jen.LitRune('t'), jen.LitRune('f'))
		}
		assign := jen.Id("x").Dot(v.Go).Op("=").Id("v")
		if !nilable(v.Ref) {
			assign = jen.Id("x").Dot(v.Go).Op("=").Op("&").Id("v")
		}
		cases = append(cases, jen.Case(kindCase).Block(
			jen.List(jen.Id("v"), jen.Err()).Op(":=").Add(readValue(v.Ref)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(wrapErr(t, ""))),
			assign,
		))
		value := jen.Id("x").Dot(v.Go)
		if !nilable(v.Ref) {
			value = jen.Parens(jen.Op("*").Id("x").Dot(v.Go))
		}
		marshal = append(marshal, jen.Case(jen.Id("x").Dot(v.Go).Op("!=").Nil()).Block(jen.Return(writeValue(v.Ref, value))))
	}
	want := fmt.Sprint(kinds)
	cases = append(cases, jen.Default().Block(jen.Return(jen.Qual(pkgWire, "KindError").Call(jen.Id("dec"), jen.Lit(t.Name), jen.Lit(want)))))
	comment(f, typeDoc(t, "The JSON kind of the value selects the variant; exactly one field is set."))
	f.Type().Id(t.Name).Struct(fields...)
	f.Line()
	f.Comment("UnmarshalJSONFrom decodes the variant that matches the value's JSON kind.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
		jen.Switch(jen.Id("dec").Dot("PeekKind").Call()).Block(cases...),
		jen.Return(jen.Nil()),
	)
	f.Line()
	emitUnionMarshal(f, t, "MarshalJSONTo encodes the variant that is set.", marshal)
}

// emitUnionMarshal emits MarshalJSONTo as a switch over the set variant
// (cases), failing with ErrNoVariant when none is, and the v1 methods.
func emitUnionMarshal(f *jen.File, t *ir.Type, comment string, cases []jen.Code) {
	cases = append(cases, jen.Default().Block(jen.Return(jen.Op("&").Qual(pkgWire, "DecodeError").Values(jen.Dict{
		jen.Id("Type"): jen.Lit(t.Name), jen.Id("Err"): jen.Qual(pkgWire, "ErrNoVariant"),
	}))))
	f.Comment(comment)
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Switch().Block(cases...),
	)
	f.Line()
	emitV1(f, t.Name)
}

func kindWord(k byte) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't':
		return "boolean"
	}
	return strconv.Quote(string(k))
}

func emitMap(f *jen.File, t *ir.Type) {
	comment(f, typeDoc(t, "Members are written in sorted key order."))
	f.Type().Id(t.Name).Map(jen.String()).Add(goType(t.Elem))
	f.Line()
	f.Comment("UnmarshalJSONFrom decodes every member with the value schema.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.List(jen.Id("v"), jen.Err()).Op(":=").Qual(pkgWire, "Map").Call(jen.Id("dec"), reader(t.Elem)),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(wrapErr(t, ""))),
		jen.Op("*").Id("x").Op("=").Id("v"),
		jen.Return(jen.Nil()),
	)
	f.Line()
	f.Comment("MarshalJSONTo encodes the members in sorted key order.")
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, "WriteMap").Call(jen.Id("enc"), jen.Id("x"), writer(t.Elem))),
	)
	f.Line()
	emitV1(f, t.Name)
}

func emitEnum(f *jen.File, t *ir.Type) {
	base, read, write := jen.String(), "String", "WriteString"
	if t.Kind == ir.IntEnum {
		base, read, write = jen.Int64(), "Int", "WriteInt"
	}
	comment(f, typeDoc(t, "Closed: other values are rejected."))
	f.Type().Id(t.Name).Add(base)
	var consts, cases []jen.Code
	if t.Kind == ir.IntEnum {
		for _, v := range t.Ints {
			name := t.Name + strconv.FormatInt(v, 10)
			consts = append(consts, jen.Id(name).Id(t.Name).Op("=").Lit(int(v)))
			cases = append(cases, jen.Lit(v))
		}
	} else {
		for _, v := range t.Strings {
			consts = append(consts, jen.Id(t.Name+goName(v)).Id(t.Name).Op("=").Lit(v))
			cases = append(cases, jen.Lit(v))
		}
	}
	f.Const().Defs(consts...)
	f.Line()
	f.Comment("UnmarshalJSONFrom accepts only the enumerated values.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.List(jen.Id("v"), jen.Err()).Op(":=").Qual(pkgWire, read).Call(jen.Id("dec")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(wrapErr(t, ""))),
		jen.Switch(jen.Id("v")).Block(
			jen.Case(cases...).Block(jen.Op("*").Id("x").Op("=").Id(t.Name).Call(jen.Id("v")), jen.Return(jen.Nil())),
		),
		jen.Return(jen.Qual(pkgWire, "Errorf").Call(jen.Lit(t.Name), jen.Lit(""), jen.Qual(pkgWire, "ErrConstraint"), jen.Lit("%v is not an allowed value"), jen.Id("v"))),
	)
	f.Line()
	f.Comment("MarshalJSONTo encodes the value.")
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSONTo").Params(jen.Id("enc").Op("*").Qual(pkgJSONText, "Encoder")).Error().Block(
		jen.Return(jen.Qual(pkgWire, write).Call(jen.Id("enc"), jen.Add(base).Call(jen.Id("x")))),
	)
	f.Line()
}

// emitTaggedUnion emits a union of objects selected by a discriminator
// member. A tag this version does not know is kept verbatim in Unknown and
// written back unchanged: it is never decoded as another variant.
func emitTaggedUnion(f *jen.File, t *ir.Type) {
	var fields, cases, marshal []jen.Code
	for _, v := range t.Variants {
		fields = append(fields, jen.Comment(fmt.Sprintf("%s is set when %s is %q.", v.Go, t.Discriminator, v.Tag)))
		fields = append(fields, jen.Id(v.Go).Op("*").Add(goType(v.Ref)))
		cases = append(cases, jen.Case(jen.Lit(v.Tag)).Block(
			jen.Id("x").Dot(v.Go).Op("=").New(goType(v.Ref)),
			jen.Return(wrapCall(t, jen.Qual(pkgJSON, "Unmarshal").Call(jen.Id("raw"), jen.Id("x").Dot(v.Go)))),
		))
		marshal = append(marshal, jen.Case(jen.Id("x").Dot(v.Go).Op("!=").Nil()).Block(jen.Return(jen.Id("x").Dot(v.Go).Dot("MarshalJSONTo").Call(jen.Id("enc")))))
	}
	fields = append(fields,
		jen.Comment(fmt.Sprintf("Unknown holds, verbatim, a value whose %s names no variant known to this version.", t.Discriminator)),
		jen.Id("Unknown").Qual(pkgJSONText, "Value"),
	)
	cases = append(cases, jen.Default().Block(
		jen.Id("x").Dot("Unknown").Op("=").Qual("bytes", "Clone").Call(jen.Id("raw")),
		jen.Return(jen.Nil()),
	))
	comment(f, typeDoc(t, fmt.Sprintf("The member %q selects the variant; exactly one field is set, Unknown for values this version does not know.", t.Discriminator)))
	f.Type().Id(t.Name).Struct(fields...)
	f.Line()
	f.Comment(fmt.Sprintf("Tag returns the value of %s: the set variant's, or the one Unknown carries (empty if none is set).", t.Discriminator))
	var tagCases []jen.Code
	for _, v := range t.Variants {
		tagCases = append(tagCases, jen.Case(jen.Id("x").Dot(v.Go).Op("!=").Nil()).Block(jen.Return(jen.Lit(v.Tag))))
	}
	tagCases = append(tagCases, jen.Case(jen.Id("x").Dot("Unknown").Op("!=").Nil()).Block(
		jen.List(jen.Id("tag"), jen.Id("_")).Op(":=").Qual(pkgWire, "Tag").Call(jen.Id("x").Dot("Unknown"), jen.Lit(t.Name), jen.Lit(t.Discriminator)),
		jen.Return(jen.Id("tag")),
	))
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("Tag").Params().String().Block(jen.Switch().Block(tagCases...), jen.Return(jen.Lit("")))
	f.Line()
	f.Comment("UnmarshalJSONFrom decodes the variant that " + t.Discriminator + " names, or keeps an unknown one verbatim.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSONFrom").Params(jen.Id("dec").Op("*").Qual(pkgJSONText, "Decoder")).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
		jen.List(jen.Id("raw"), jen.Err()).Op(":=").Id("dec").Dot("ReadValue").Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(wrapErr(t, ""))),
		jen.List(jen.Id("tag"), jen.Err()).Op(":=").Qual(pkgWire, "Tag").Call(jen.Id("raw"), jen.Lit(t.Name), jen.Lit(t.Discriminator)),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Switch(jen.Id("tag")).Block(cases...),
	)
	f.Line()
	marshal = append(marshal,
		jen.Case(jen.Id("x").Dot("Unknown").Op("!=").Nil()).Block(jen.Return(jen.Qual(pkgWire, "WriteRaw").Call(jen.Id("enc"), jen.Id("x").Dot("Unknown")))),
	)
	emitUnionMarshal(f, t, "MarshalJSONTo encodes the variant that is set, or Unknown as it arrived.", marshal)
}

// wrapCall is wire.Wrap(type, "", call).
func wrapCall(t *ir.Type, call jen.Code) jen.Code {
	return jen.Qual(pkgWire, "Wrap").Call(jen.Lit(t.Name), jen.Lit(""), call)
}
