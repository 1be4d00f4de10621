package emit

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// Methods emits the method catalogue as code: wire-name constants, the
// MethodInfo table, one small handler interface per method or operation, a
// dispatcher per receiving side, and a typed client per receiving side.
func Methods(pkg *ir.Package) *jen.File {
	f := newFile(pkg)
	emitConstants(f, pkg)
	emitInfos(f, pkg)
	for _, side := range pkg.Catalogue.Sides {
		var ms []*ir.Method
		for _, m := range pkg.Methods {
			if m.To == side.Name {
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			continue
		}
		for _, m := range ms {
			emitHandlers(f, m)
		}
		emitDispatch(f, side.Go, ms)
		emitImplemented(f, side.Go, ms)
		emitClient(f, side.Go, side.Doc, ms)
	}
	return f
}

func methodConst(m *ir.Method) string { return "Method" + m.Go }
func opConst(op *ir.Op) string        { return "Op" + op.Go }

func emitConstants(f *jen.File, pkg *ir.Package) {
	var defs []jen.Code
	for _, m := range pkg.Methods {
		defs = append(defs, jen.Comment(fmt.Sprintf("%s is %q (%s, %s -> %s, %s).", methodConst(m), m.Wire, m.Kind, m.From, m.To, m.Status)))
		defs = append(defs, jen.Id(methodConst(m)).Op("=").Lit(m.Wire))
	}
	f.Comment("Wire method names.")
	f.Const().Defs(defs...)
	f.Line()
	var ops []jen.Code
	for _, m := range pkg.Methods {
		if m.Ops == nil || len(m.Ops.Selector) != 1 {
			continue
		}
		for _, op := range m.Ops.Items {
			ops = append(ops, jen.Comment(fmt.Sprintf("%s is the %s operation %q.", opConst(op), m.Wire, op.MatchValues[0])))
			ops = append(ops, jen.Id(opConst(op)).Op("=").Lit(op.MatchValues[0]))
		}
	}
	if len(ops) > 0 {
		f.Comment("Operation names carried inside methods.")
		f.Const().Defs(ops...)
		f.Line()
	}
}

func emitInfos(f *jen.File, pkg *ir.Package) {
	var items []jen.Code
	for _, m := range pkg.Methods {
		d := jen.Dict{
			jen.Id("Wire"): jen.Lit(m.Wire), jen.Id("Go"): jen.Lit(m.Go), jen.Id("From"): jen.Lit(m.From),
			jen.Id("To"): jen.Lit(m.To), jen.Id("Kind"): jen.Lit(m.Kind), jen.Id("Status"): jen.Lit(m.Status),
		}
		if m.Ops != nil {
			var ops []jen.Code
			for _, op := range m.Ops.Items {
				var match []jen.Code
				for _, v := range op.MatchValues {
					match = append(match, jen.Lit(v))
				}
				od := jen.Dict{jen.Id("Match"): jen.Index().String().Values(match...), jen.Id("Go"): jen.Lit(op.Go), jen.Id("Status"): jen.Lit(op.Status)}
				if op.Advertise != nil {
					od[jen.Id("Capability")] = jen.Lit(op.Advertise.Capability)
					od[jen.Id("Op")] = jen.Lit(op.Advertise.Op)
				}
				ops = append(ops, jen.Values(od))
			}
			d[jen.Id("Operations")] = jen.Index().Qual(pkgWire, "OperationInfo").Values(ops...)
		}
		items = append(items, jen.Values(d))
	}
	f.Comment(fmt.Sprintf("Methods lists every method of %s in catalogue order.", pkg.Catalogue.Title))
	f.Var().Id("Methods").Op("=").Index().Qual(pkgWire, "MethodInfo").Values(items...)
	f.Line()
}

// paramType is how a handler receives a Ref: *T for structs and unions, T otherwise.
func paramType(r *ir.Ref) jen.Code {
	if pointerResult(r) {
		return jen.Op("*").Add(goType(r))
	}
	return goType(r)
}

// resultType is how a handler returns a result; nil Ref means any JSON.
func resultType(r *ir.Ref) jen.Code {
	if r == nil {
		return jen.Qual(pkgJSONText, "Value")
	}
	return paramType(r)
}

func isNotification(m *ir.Method) bool { return m.Kind == "notification" }

func emitHandlers(f *jen.File, m *ir.Method) {
	ctx := jen.Id("ctx").Qual("context", "Context")
	var params []jen.Code
	params = append(params, ctx)
	if m.Params != nil {
		params = append(params, jen.Id("params").Add(paramType(m.Params)))
	}
	var results jen.Code = jen.Error()
	if !isNotification(m) {
		results = jen.Params(resultType(m.Result), jen.Error())
	}
	iface := m.Go + "Handler"
	text := m.Doc
	if m.Ops != nil {
		text += " Implement it to serve operations that have no handler interface of their own; without it such calls get -32601."
	}
	comment(f, fmt.Sprintf("%s handles %s (%s, %s). %s", iface, m.Wire, m.Kind, m.Status, text))
	f.Type().Id(iface).Interface(jen.Id(m.Go).Params(params...).Add(results))
	f.Line()
	if m.Ops == nil {
		return
	}
	for _, op := range m.Ops.Items {
		oparams := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("call").Add(paramType(m.Params))}
		if op.Args != nil {
			oparams = append(oparams, jen.Id("args").Add(paramType(op.Args)))
		}
		name := op.Go + "Handler"
		comment(f, fmt.Sprintf("%s handles the %s operation %s (%s). %s call is the whole %s params; args are decoded and validated.", name, m.Wire, strings.Join(op.MatchValues, "/"), op.Status, op.Doc, m.Wire))
		f.Type().Id(name).Interface(jen.Id(op.Go).Params(oparams...).Params(resultType(op.Result), jen.Error()))
		f.Line()
	}
}

func decodeInto(target jen.Code, raw jen.Code) jen.Code {
	return jen.If(jen.Err().Op(":=").Qual(pkgJSONRPC, "DecodeParams").Call(raw, target), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
}

func emitDispatch(f *jen.File, side string, ms []*ir.Method) {
	var cases []jen.Code
	for _, m := range ms {
		var body []jen.Code
		args := []jen.Code{jen.Id("ctx")}
		if m.Params != nil {
			body = append(body, jen.Var().Id("p").Add(goType(m.Params)), decodeInto(jen.Op("&").Id("p"), jen.Id("params")))
			if pointerResult(m.Params) {
				args = append(args, jen.Op("&").Id("p"))
			} else {
				args = append(args, jen.Id("p"))
			}
		}
		if m.Ops != nil {
			body = append(body, opSwitch(m)...)
			cases = append(cases, jen.Case(jen.Id(methodConst(m))).Block(body...))
			continue
		}
		call := jen.Id("hh").Dot(m.Go).Call(args...)
		var invoke jen.Code = jen.Return(call)
		if isNotification(m) {
			invoke = jen.Return(jen.Nil(), call)
		}
		body = append(body,
			jen.List(jen.Id("hh"), jen.Id("ok")).Op(":=").Id("h").Assert(jen.Id(m.Go+"Handler")),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Return(jen.Nil(), notFound(m))),
			invoke,
		)
		cases = append(cases, jen.Case(jen.Id(methodConst(m))).Block(body...))
	}
	cases = append(cases, jen.Default().Block(jen.Return(jen.Nil(), jen.Qual(pkgJSONRPC, "MethodNotFound").Call(jen.Id("method")))))
	name := "Dispatch" + side
	comment(f, fmt.Sprintf("%s routes one inbound %s method to h, which implements any subset of the %s handler interfaces. Params are decoded and validated first (failures are -32602); methods and operations h does not implement, and unknown methods, are -32601 errors that satisfy errors.Is(err, jsonrpc.ErrMethodNotFound). For notifications the result is nil.", name, strings.ToLower(side), strings.ToLower(side)))
	f.Func().Id(name).Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("h").Any(), jen.Id("method").String(), jen.Id("params").Qual(pkgJSONText, "Value")).Params(jen.Any(), jen.Error()).Block(
		jen.Switch(jen.Id("method")).Block(cases...),
	)
	f.Line()
}

func notFound(m *ir.Method) jen.Code {
	return jen.Qual(pkgJSONRPC, "MethodNotFound").Call(jen.Id(methodConst(m)))
}

// opKey renders the expression that selects an operation.
func opKey(m *ir.Method) jen.Code {
	if len(m.Ops.Selector) == 1 {
		return jen.Id("p").Dot(m.Ops.Selector[0].Go)
	}
	var parts []jen.Code
	for i, s := range m.Ops.Selector {
		if i > 0 {
			parts = append(parts, jen.Lit("/"))
		}
		parts = append(parts, jen.Id("p").Dot(s.Go))
	}
	return jen.Qual("strings", "Join").Call(jen.Index().String().Values(parts...), jen.Lit(""))
}

func opSwitch(m *ir.Method) []jen.Code {
	var cases []jen.Code
	for _, op := range m.Ops.Items {
		args := []jen.Code{jen.Id("ctx"), jen.Op("&").Id("p")}
		body := []jen.Code{}
		if op.Args != nil {
			body = append(body, jen.Var().Id("a").Add(goType(op.Args)), decodeInto(jen.Op("&").Id("a"), jen.Id("p").Dot(m.Ops.Payload.Go)))
			if pointerResult(op.Args) {
				args = append(args, jen.Op("&").Id("a"))
			} else {
				args = append(args, jen.Id("a"))
			}
		}
		body = append(body, jen.Return(jen.Id("oh").Dot(op.Go).Call(args...)))
		var key jen.Code
		if len(m.Ops.Selector) == 1 {
			key = jen.Id(opConst(op))
		} else {
			key = jen.Lit(strings.Join(op.MatchValues, "/"))
		}
		cases = append(cases, jen.Case(key).Block(
			jen.If(jen.List(jen.Id("oh"), jen.Id("ok")).Op(":=").Id("h").Assert(jen.Id(op.Go+"Handler")), jen.Id("ok")).Block(body...),
		))
	}
	fallback := jen.If(jen.List(jen.Id("hh"), jen.Id("ok")).Op(":=").Id("h").Assert(jen.Id(m.Go+"Handler")), jen.Id("ok")).Block(
		jen.Return(jen.Id("hh").Dot(m.Go).Call(jen.Id("ctx"), jen.Op("&").Id("p"))),
	)
	return []jen.Code{
		jen.Switch(opKey(m)).Block(cases...),
		fallback,
		jen.Return(jen.Nil(), jen.Qual(pkgJSONRPC, "UnsupportedOperation").Call(jen.Id(methodConst(m)), opKey(m))),
	}
}

func emitImplemented(f *jen.File, side string, ms []*ir.Method) {
	var stmts []jen.Code
	any := false
	for _, m := range ms {
		if m.Ops == nil {
			continue
		}
		for i, op := range m.Ops.Items {
			any = true
			stmts = append(stmts, jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("h").Assert(jen.Id(op.Go+"Handler")), jen.Id("ok")).Block(
				jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("Methods").Index(jen.Lit(m.Index)).Dot("Operations").Index(jen.Lit(i))),
			))
		}
	}
	if !any {
		return
	}
	name := "Implemented" + side + "Operations"
	comment(f, fmt.Sprintf("%s lists the operations whose handler interfaces h implements, in catalogue order; servers advertise exactly these.", name))
	body := append([]jen.Code{jen.Var().Id("out").Index().Qual(pkgWire, "OperationInfo")}, stmts...)
	body = append(body, jen.Return(jen.Id("out")))
	f.Func().Id(name).Params(jen.Id("h").Any()).Index().Qual(pkgWire, "OperationInfo").Block(body...)
	f.Line()
}

func emitClient(f *jen.File, side, sideDoc string, ms []*ir.Method) {
	name := side + "Client"
	comment(f, fmt.Sprintf("%s calls the methods that the %s side serves, over any jsonrpc.Caller such as *jsonrpc.Conn. That side: %s", name, strings.ToLower(side), sideDoc))
	f.Type().Id(name).Struct(jen.Id("conn").Qual(pkgJSONRPC, "Caller"))
	f.Line()
	f.Comment(fmt.Sprintf("New%s returns a %s that sends through conn.", name, name))
	f.Func().Id("New" + name).Params(jen.Id("conn").Qual(pkgJSONRPC, "Caller")).Op("*").Id(name).Block(jen.Return(jen.Op("&").Id(name).Values(jen.Dict{jen.Id("conn"): jen.Id("conn")})))
	f.Line()
	for _, m := range ms {
		emitClientMethod(f, name, m)
		if m.Ops != nil {
			for _, op := range m.Ops.Items {
				emitClientOp(f, name, m, op)
			}
		}
	}
}

// defaultParams makes a nil params pointer an empty value, so the wire always carries an object.
func defaultParams(r *ir.Ref, id string) jen.Code {
	if !pointerResult(r) {
		return jen.Null()
	}
	return jen.If(jen.Id(id).Op("==").Nil()).Block(jen.Id(id).Op("=").Op("&").Add(goType(r)).Values())
}

func callResult(m string, r *ir.Ref, params jen.Code) []jen.Code {
	var zero jen.Code = jen.Nil()
	var ret jen.Code = jen.Id("res")
	if pointerResult(r) {
		ret = jen.Op("&").Id("res")
	}
	var resType jen.Code = jen.Qual(pkgJSONText, "Value")
	if r != nil {
		resType = goType(r)
	}
	if r != nil && !pointerResult(r) && !nilable(r) {
		zero = jen.Id("res")
	}
	return []jen.Code{
		jen.Var().Id("res").Add(resType),
		jen.If(jen.Err().Op(":=").Id("c").Dot("conn").Dot("Call").Call(jen.Id("ctx"), jen.Id(m), params, jen.Op("&").Id("res")), jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Err())),
		jen.Return(ret, jen.Nil()),
	}
}

func emitClientMethod(f *jen.File, client string, m *ir.Method) {
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context")}
	var send jen.Code = jen.Nil()
	var body []jen.Code
	if m.Params != nil {
		params = append(params, jen.Id("params").Add(paramType(m.Params)))
		send = jen.Id("params")
		body = append(body, defaultParams(m.Params, "params"))
	}
	verb := "sends the request"
	if isNotification(m) {
		verb = "sends the notification"
	}
	comment(f, fmt.Sprintf("%s %s %s. %s", m.Go, verb, m.Wire, m.Doc))
	if isNotification(m) {
		body = append(body, jen.Return(jen.Id("c").Dot("conn").Dot("Notify").Call(jen.Id("ctx"), jen.Id(methodConst(m)), send)))
		f.Func().Params(jen.Id("c").Op("*").Id(client)).Id(m.Go).Params(params...).Error().Block(body...)
	} else {
		body = append(body, callResult(methodConst(m), m.Result, send)...)
		f.Func().Params(jen.Id("c").Op("*").Id(client)).Id(m.Go).Params(params...).Params(resultType(m.Result), jen.Error()).Block(body...)
	}
	f.Line()
}

func emitClientOp(f *jen.File, client string, m *ir.Method, op *ir.Op) {
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("call").Add(paramType(m.Params))}
	body := []jen.Code{
		jen.Var().Id("p").Add(goType(m.Params)),
		jen.If(jen.Id("call").Op("!=").Nil()).Block(jen.Id("p").Op("=").Op("*").Id("call")),
	}
	for i, s := range m.Ops.Selector {
		var v jen.Code = jen.Lit(op.MatchValues[i])
		if len(m.Ops.Selector) == 1 {
			v = jen.Id(opConst(op))
		}
		body = append(body, jen.Id("p").Dot(s.Go).Op("=").Add(v))
	}
	if op.Args != nil {
		params = append(params, jen.Id("args").Add(paramType(op.Args)))
		body = append(body,
			defaultParams(op.Args, "args"),
			jen.List(jen.Id("raw"), jen.Err()).Op(":=").Qual(pkgJSON, "Marshal").Call(jen.Id("args"), jen.Qual(pkgWire, "Fidelity")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Id("p").Dot(m.Ops.Payload.Go).Op("=").Id("raw"),
		)
	} else {
		body = append(body, jen.Id("p").Dot(m.Ops.Payload.Go).Op("=").Qual(pkgJSONText, "Value").Call(jen.Lit("{}")))
	}
	body = append(body, callResult(methodConst(m), op.Result, jen.Op("&").Id("p"))...)
	comment(f, fmt.Sprintf("%s calls the %s operation %s. call may carry the other %s params (nil for none); the selector and payload members are set here. %s", op.Go, m.Wire, strings.Join(op.MatchValues, "/"), m.Wire, op.Doc))
	f.Func().Params(jen.Id("c").Op("*").Id(client)).Id(op.Go).Params(params...).Params(resultType(op.Result), jen.Error()).Block(body...)
	f.Line()
}
