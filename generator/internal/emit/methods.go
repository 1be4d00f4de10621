package emit

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

const (
	pkgRPC      = "github.com/bridgekit/bridgekit/runtime/rpc"
	pkgFrame    = "github.com/bridgekit/bridgekit/runtime/frame"
	pkgEnvelope = "github.com/bridgekit/bridgekit/runtime/envelope"
)

// Methods emits the method catalogue as code: wire-name constants, the
// MethodInfo table, the protocol's connection options, and for each side
// that receives methods a handler struct (one typed func field per method
// and operation) and a peer (typed calls to that side).
//
// Handler structs rather than interfaces: a misspelled or mistyped handler
// is a compile error, what a side serves (and advertises) is exactly the
// fields that are set, adding a method to a catalogue adds a field and
// breaks no existing code, and the struct is an rpc.Handler that any
// rpc.Middleware can wrap. docs/handlers.md records the choice.
func Methods(pkg *ir.Package) (*jen.File, error) {
	f := newFile(pkg)
	f.PackageComment(strings.Join(docLines(packageDoc(pkg), 100), "\n"))
	emitConstants(f, pkg)
	emitCodes(f, pkg)
	emitInfos(f, pkg)
	if err := emitConn(f, pkg); err != nil {
		return nil, err
	}
	for _, side := range pkg.Sides {
		// Retired methods get no handler field (they are answered like unknown
		// ones); legacy-tolerated ones are served but never sent by a peer.
		var served, sent []*ir.Method
		for _, m := range pkg.Methods {
			if m.To.Name != side.Name || !isMethod(m) {
				continue
			}
			if m.Status.Served() {
				served = append(served, m)
			}
			if m.Status.Sent() {
				sent = append(sent, m)
			}
		}
		if len(served) > 0 {
			if err := emitHandlers(f, side.Go, side.Doc, served); err != nil {
				return nil, err
			}
			emitServed(f, side.Go, served)
			emitOperations(f, side.Go, served)
		}
		if len(sent) > 0 {
			emitPeer(f, side.Go, side.Doc, sent)
		}
	}
	return f, nil
}

// packageDoc is the package comment: what the protocol is and how its
// generated code is used.
func packageDoc(pkg *ir.Package) string {
	doc := fmt.Sprintf("Package %s is the generated Go binding of %s (%s, framing %s).", pkg.Name, pkg.Title, pkg.Source, pkg.Framing)
	if pkg.Doc != "" {
		doc += "\n\n" + pkg.Doc
	}
	switch {
	case len(pkg.Methods) > 0 && streamed(pkg):
		doc += "\n\nEach side is served by a <Side>Handlers struct of typed func fields and called through a <Side>Peer (docs/handlers.md); NewConn connects them; its doc says how requests are scheduled (one at a time unless rpc.Options.MaxConcurrentRequests says otherwise) and handlers reach their peer through their context (<Side>PeerFrom)."
	case len(pkg.Methods) > 0:
		doc += "\n\nEach side is served by a <Side>Handlers struct of typed func fields and called through a <Side>Peer (docs/handlers.md). The framing has no stream connection: a handler struct serves any caller of its Handle method, and a peer sends through any rpc.Sender."
	}
	return doc + fmt.Sprintf(" The types keep the wire rules of docs/generator.md. Reference: docs/reference/%s.md.", pkg.Name)
}

// streamed reports whether the package's framing is a stream that NewConn
// serves; the other framings (one document on stdout, one request per HTTP
// exchange) get no connection.
func streamed(pkg *ir.Package) bool {
	return pkg.Framing == ir.JSONRPC2NDJSON || pkg.Framing == ir.EnvelopeNDJSON
}

// isMethod reports whether m is something a side handles and a peer sends
// (a "response" entry documents a reply shape, not a method).
func isMethod(m *ir.Method) bool { return m.Kind != ir.Response }

func oneWay(m *ir.Method) bool { return m.Kind.OneWay() }

// servedOps are the operations of m that get a handler field (all but the
// retired ones).
func servedOps(m *ir.Method) []*ir.Operation {
	var out []*ir.Operation
	for _, op := range m.Operations.Items {
		if op.Status.Served() {
			out = append(out, op)
		}
	}
	return out
}

func methodConst(m *ir.Method) string { return "Method" + m.Go }
func opConst(op *ir.Operation) string { return "Op" + op.Go }

// qualifier returns the one envelope member value that qualifies m, if any.
func qualifier(m *ir.Method) (string, error) {
	switch len(m.Qualifier) {
	case 0:
		return "", nil
	case 1:
		return m.Qualifier[0].Value, nil
	}
	return "", fmt.Errorf("%s: a method can be qualified by one envelope member, not %d", m.Wire, len(m.Qualifier))
}

func emitConstants(f *jen.File, pkg *ir.Package) {
	var defs []jen.Code
	for _, m := range pkg.Methods {
		defs = append(defs, jen.Comment(fmt.Sprintf("%s is %q (%s, %s -> %s, %s).", methodConst(m), m.Wire, m.Kind, m.From.Name, m.To.Name, m.Status)))
		defs = append(defs, jen.Id(methodConst(m)).Op("=").Lit(m.Wire))
	}
	if len(defs) > 0 {
		f.Comment("Wire method names.")
		f.Const().Defs(defs...)
		f.Line()
	}
	var ops []jen.Code
	for _, m := range pkg.Methods {
		if m.Operations == nil || len(m.Operations.Selector) != 1 {
			continue
		}
		for _, op := range m.Operations.Items {
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

// emitCodes emits one *rpc.Error per documented string error code. They
// compare by code (rpc.Error.Is matches Name), so errors.Is(err, ErrX) holds
// for an error frame with that code whatever its message; a handler returns
// one, or an *rpc.Error with the same Name and a message of its own.
func emitCodes(f *jen.File, pkg *ir.Package) {
	if len(pkg.Codes) == 0 {
		return
	}
	var defs []jen.Code
	for _, c := range pkg.Codes {
		var uses []string
		for _, u := range c.Uses {
			uses = append(uses, fmt.Sprintf("%s: %s", strings.Join(u.Where, ", "), u.When))
		}
		defs = append(defs, fieldComments(fmt.Sprintf("Err%s is the error code %q. %s.", c.Go, c.Code, strings.Join(uses, "; ")))...)
		defs = append(defs, jen.Id("Err"+c.Go).Op("=").Op("&").Qual(pkgRPC, "Error").Values(jen.Dict{jen.Id("Name"): jen.Lit(c.Code)}))
	}
	comment(f, fmt.Sprintf("The error codes %s documents, as errors that compare by code: errors.Is(err, ErrX) holds for an error with that code whatever its message. A handler returns one, or an *rpc.Error with the same Name and a message of its own, to answer with that code.", pkg.Title))
	f.Var().Defs(defs...)
	f.Line()
	var all []jen.Code
	for _, c := range pkg.Codes {
		all = append(all, jen.Id("Err"+c.Go))
	}
	f.Comment("ErrorCodes lists the documented error codes, in catalogue order.")
	f.Var().Id("ErrorCodes").Op("=").Index().Op("*").Qual(pkgRPC, "Error").Values(all...)
	f.Line()
}

func emitInfos(f *jen.File, pkg *ir.Package) {
	var items []jen.Code
	for _, m := range pkg.Methods {
		d := jen.Dict{
			jen.Id("Wire"): jen.Lit(m.Wire), jen.Id("Go"): jen.Lit(m.Go), jen.Id("From"): jen.Lit(m.From.Name),
			jen.Id("To"): jen.Lit(m.To.Name), jen.Id("Kind"): jen.Lit(m.Kind.String()), jen.Id("Status"): jen.Lit(m.Status.String()),
		}
		if q, _ := qualifier(m); q != "" {
			d[jen.Id("Qualifier")] = jen.Lit(q)
		}
		if m.Operations != nil {
			var ops []jen.Code
			for _, op := range m.Operations.Items {
				var match []jen.Code
				for _, v := range op.MatchValues {
					match = append(match, jen.Lit(v))
				}
				od := jen.Dict{jen.Id("Match"): jen.Index().String().Values(match...), jen.Id("Go"): jen.Lit(op.Go), jen.Id("Status"): jen.Lit(op.Status.String())}
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
	f.Comment(fmt.Sprintf("Methods lists every method of %s in catalogue order.", pkg.Title))
	f.Var().Id("Methods").Op("=").Index().Qual(pkgWire, "MethodInfo").Values(items...)
	f.Line()
}

// emitConn emits what a connection speaking the protocol needs: its codec,
// its cancel rules and method names, and NewConn. A protocol framed as one
// JSON document on stdout, or one request per HTTP exchange, has no
// connection: its handlers and peers work with any rpc.Sender and caller.
func emitConn(f *jen.File, pkg *ir.Package) error {
	var names []jen.Code
	seen := map[string]bool{}
	for _, m := range pkg.Methods {
		q, err := qualifier(m)
		if err != nil {
			return err
		}
		for _, n := range []string{m.Wire, q} {
			if n != "" && !seen[n] {
				seen[n] = true
				names = append(names, jen.Lit(n))
			}
		}
	}
	var preempt []jen.Code
	for _, m := range pkg.Methods {
		if m.Preempt {
			preempt = append(preempt, jen.Id(methodConst(m)))
		}
	}
	var rules []jen.Code
	for _, m := range pkg.Methods {
		c := m.Cancels
		if c == nil {
			continue
		}
		d := jen.Dict{jen.Id("Method"): jen.Id(methodConst(m))}
		if !m.Kind.OneWay() {
			d[jen.Id("Kind")] = jen.Qual(pkgRPC, "KindRequest")
		}
		switch {
		case c.ID != nil:
			d[jen.Id("ByID")] = jen.Lit(c.ID.JSON)
		default:
			d[jen.Id("Target")] = jen.Id(methodConst(c.Method))
			if c.Key != nil {
				d[jen.Id("Key")] = jen.Lit(c.Key.JSON)
			}
		}
		rules = append(rules, jen.Values(d))
	}
	if !streamed(pkg) {
		return nil
	}
	var codec jen.Code
	var codecParams []jen.Code
	var codecDoc string
	switch pkg.Framing {
	case ir.JSONRPC2NDJSON:
		codec = jen.Return(jen.New(jen.Qual(pkgJSONRPC, "Codec")))
		codecDoc = "NewCodec returns the framing of " + pkg.Title + " (JSON-RPC 2.0) for one connection."
	case ir.EnvelopeNDJSON:
		codecParams = []jen.Code{jen.Id("idPrefix"), jen.Id("role").String()}
		codec = jen.Return(jen.Qual(pkgEnvelope, "NewCodec").Call(
			jen.Qual(pkgEnvelope, "MustLookup").Call(jen.Lit(pkg.Envelope.Protocol), jen.Lit(pkg.Envelope.Version)),
			jen.Id("idPrefix"), jen.Id("role")))
		codecDoc = fmt.Sprintf("NewCodec returns the framing of %s (%s v%d envelopes) for one connection: outbound request ids are idPrefix and a number; role is the service role written on frames that answer a request too malformed to read (see envelope.NewCodec).", pkg.Title, pkg.Envelope.Protocol, pkg.Envelope.Version)
	default:
		return nil
	}
	f.Comment("MethodNames lists every method name (and qualifier) of the catalogue, so that a connection interns them (rpc.Options.Methods).")
	f.Var().Id("MethodNames").Op("=").Index().String().Values(names...)
	f.Line()
	f.Comment("CancelRules are the protocol's cancel messages (rpc.Options.Cancels).")
	f.Var().Id("CancelRules").Op("=").Index().Qual(pkgRPC, "CancelRule").Values(rules...)
	f.Line()
	var preemptArg jen.Code = jen.Nil()
	if len(preempt) > 0 {
		f.Comment("PreemptMethods are handled on the connection's control lane, never behind running handlers (rpc.Options.Preempt).")
		f.Var().Id("PreemptMethods").Op("=").Index().String().Values(preempt...)
		f.Line()
		preemptArg = jen.Id("PreemptMethods")
	}
	comment(f, codecDoc)
	f.Func().Id("NewCodec").Params(codecParams...).Qual(pkgRPC, "Codec").Block(codec)
	f.Line()
	what := "cancel rules and method names"
	if len(preempt) > 0 {
		what = "cancel rules, preempted methods and method names"
	}
	comment(f, fmt.Sprintf("ConnOptions returns a copy of opts (which may be nil) with the %s of %s added.", what, pkg.Title))
	f.Func().Id("ConnOptions").Params(jen.Id("opts").Op("*").Qual(pkgRPC, "Options")).Op("*").Qual(pkgRPC, "Options").Block(
		jen.Return(jen.Qual(pkgRPC, "WithOptions").Call(jen.Id("opts"), jen.Id("CancelRules"), preemptArg, jen.Id("MethodNames"))),
	)
	f.Line()
	newCodec := jen.Id("NewCodec").Call()
	if pkg.Framing == ir.EnvelopeNDJSON {
		newCodec = jen.Id("NewCodec").Call(jen.Lit(""), jen.Lit(""))
	}
	comment(f, fmt.Sprintf("NewConn starts a connection speaking %s on r and w, serving h (a side's handler struct, possibly wrapped in middleware; nil serves nothing), with the protocol's cancel rules. opts may be nil. For other codec settings use rpc.NewConn with NewCodec and ConnOptions.\n\nRequests are handled one at a time, in arrival order, unless opts.MaxConcurrentRequests is above 1: by default one long request holds up every other request of the connection, so a side whose requests run long (an agent's prompts) sets it. Cancel messages need no free slot: they are applied as they arrive and end the cancelled handler's context. Handlers reach their peer through their context (<Side>PeerFrom); opts.Middleware wraps every method.", pkg.Title))
	f.Func().Id("NewConn").Params(jen.Id("r").Qual("io", "Reader"), jen.Id("w").Qual("io", "Writer"), jen.Id("h").Qual(pkgRPC, "Handler"), jen.Id("opts").Op("*").Qual(pkgRPC, "Options")).Op("*").Qual(pkgRPC, "Conn").Block(
		jen.Return(jen.Qual(pkgRPC, "NewConn").Call(jen.Id("r"), jen.Id("w"), newCodec, jen.Id("h"), jen.Id("ConnOptions").Call(jen.Id("opts")))),
	)
	f.Line()
	comment(f, "NewTransportConn is NewConn over the frame transport t (a WebSocket, an HTTP stream, frame.Pipe, ndjson.NewTransport): the connection reads and writes whole frames through t, which does the framing, and closes t on Close.")
	f.Func().Id("NewTransportConn").Params(jen.Id("t").Qual(pkgFrame, "Transport"), jen.Id("h").Qual(pkgRPC, "Handler"), jen.Id("opts").Op("*").Qual(pkgRPC, "Options")).Op("*").Qual(pkgRPC, "Conn").Block(
		jen.Return(jen.Qual(pkgRPC, "NewTransportConn").Call(jen.Id("t"), newCodec, jen.Id("h"), jen.Id("ConnOptions").Call(jen.Id("opts")))),
	)
	f.Line()
	return nil
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

// handlerFunc is the type of a method's field in its side's handler struct.
func handlerFunc(m *ir.Method) jen.Code {
	params := []jen.Code{jen.Qual("context", "Context")}
	if m.Params != nil {
		params = append(params, paramType(m.Params))
	}
	if oneWay(m) {
		return jen.Func().Params(params...).Error()
	}
	return jen.Func().Params(params...).Params(resultType(m.Result), jen.Error())
}

func opFunc(m *ir.Method, op *ir.Operation) jen.Code {
	params := []jen.Code{jen.Qual("context", "Context"), paramType(m.Params)}
	if op.Args != nil {
		params = append(params, paramType(op.Args))
	}
	return jen.Func().Params(params...).Params(resultType(op.Result), jen.Error())
}

func emitHandlers(f *jen.File, side, sideDoc string, ms []*ir.Method) error {
	name := side + "Handlers"
	var fields []jen.Code
	for _, m := range ms {
		doc := fmt.Sprintf("%s handles %s (%s, %s). %s", m.Go, m.Wire, m.Kind, m.Status, m.Doc)
		if m.Operations != nil {
			doc += " It serves the operations that have no field of their own (or none is set)."
		}
		fields = append(fields, fieldComments(doc)...)
		fields = append(fields, jen.Id(m.Go).Add(handlerFunc(m)))
		if m.Operations == nil {
			continue
		}
		for _, op := range servedOps(m) {
			doc := fmt.Sprintf("%s handles the %s operation %s (%s); it receives the whole %s params and the decoded args. %s", op.Go, m.Wire, strings.Join(op.MatchValues, "/"), op.Status, m.Wire, op.Doc)
			fields = append(fields, fieldComments(doc)...)
			fields = append(fields, jen.Id(op.Go).Add(opFunc(m, op)))
		}
	}
	fields = append(fields, fieldComments("Fallback, if set, handles every method (and operation) that no field above serves, for example extension methods.")...)
	fields = append(fields, jen.Id("Fallback").Qual(pkgRPC, "Handler"))
	comment(f, fmt.Sprintf("%s serves the methods the %s side receives. %s Set the fields of the methods it serves: the others are answered with rpc.ErrMethodNotFound (or passed to Fallback) and never advertised. A *%s is an rpc.Handler; wrap it with rpc.Middleware to intercept every method.", name, strings.ToLower(side), sideDoc, name))
	f.Type().Id(name).Struct(fields...)
	f.Line()

	var cases []jen.Code
	byWire := map[string][]*ir.Method{}
	var order []string
	for _, m := range ms {
		if _, ok := byWire[m.Wire]; !ok {
			order = append(order, m.Wire)
		}
		byWire[m.Wire] = append(byWire[m.Wire], m)
	}
	for _, wire := range order {
		group := byWire[wire]
		var body []jen.Code
		qualified := false
		for _, m := range group {
			q, err := qualifier(m)
			if err != nil {
				return err
			}
			qualified = qualified || q != ""
		}
		if !qualified {
			if len(group) > 1 {
				return fmt.Errorf("%s: %d methods to the %s side share this wire name without a qualifier", wire, len(group), side)
			}
			body = serveMethod(group[0])
		} else {
			var qcases []jen.Code
			for _, m := range group {
				q, _ := qualifier(m)
				qcases = append(qcases, jen.Case(jen.Lit(q)).Block(serveMethod(m)...))
			}
			body = []jen.Code{jen.Switch(jen.Id("req").Dot("Qualifier")).Block(qcases...)}
		}
		cases = append(cases, jen.Case(jen.Id(methodConst(group[0]))).Block(body...))
	}
	comment(f, fmt.Sprintf("Handle implements rpc.Handler: it decodes and validates the params of the method (and operation) req names and calls its field. Params that do not fit are answered with rpc.ErrInvalidParams; methods and operations with no field set go to Fallback, or are answered with rpc.ErrMethodNotFound."))
	f.Func().Params(jen.Id("h").Op("*").Id(name)).Id("Handle").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("req").Op("*").Qual(pkgRPC, "Request")).Params(jen.Any(), jen.Error()).Block(
		jen.Switch(jen.Id("req").Dot("Method")).Block(cases...),
		jen.If(jen.Id("h").Dot("Fallback").Op("!=").Nil()).Block(jen.Return(jen.Id("h").Dot("Fallback").Dot("Handle").Call(jen.Id("ctx"), jen.Id("req")))),
		jen.Return(jen.Nil(), jen.Qual(pkgRPC, "MethodNotFound").Call(jen.Id("req").Dot("Method"))),
	)
	f.Line()
	return nil
}

func decodeInto(target jen.Code, raw jen.Code) jen.Code {
	// With the connection's decode options (rpc.Options.DecodeOptions): a
	// flavour's contract applies to operations' arguments too.
	return jen.If(jen.Err().Op(":=").Qual(pkgRPC, "DecodeParams").Call(raw, target, jen.Id("req").Dot("Options")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
}

// argRef is how a decoded value v of r is passed to a handler.
func argRef(r *ir.Ref, v string) jen.Code {
	if pointerResult(r) {
		return jen.Op("&").Id(v)
	}
	return jen.Id(v)
}

// serveMethod is the body of one method's case in Handle; it falls
// through to Fallback when the method's field is not set.
func serveMethod(m *ir.Method) []jen.Code {
	if m.Operations != nil {
		return serveOps(m)
	}
	var body []jen.Code
	args := []jen.Code{jen.Id("ctx")}
	if m.Params != nil {
		body = append(body, jen.Var().Id("p").Add(goType(m.Params)), decodeInto(jen.Op("&").Id("p"), jen.Id("req").Dot("Params")))
		args = append(args, argRef(m.Params, "p"))
	}
	call := jen.Id("h").Dot(m.Go).Call(args...)
	if oneWay(m) {
		body = append(body, jen.Return(jen.Nil(), call))
	} else {
		body = append(body, jen.Return(call))
	}
	return []jen.Code{jen.If(jen.Id("h").Dot(m.Go).Op("!=").Nil()).Block(body...)}
}

// opKey renders the expression that selects an operation.
func opKey(m *ir.Method) jen.Code {
	if len(m.Operations.Selector) == 1 {
		return jen.Id("p").Dot(m.Operations.Selector[0].Go)
	}
	var parts []jen.Code
	for i, s := range m.Operations.Selector {
		if i > 0 {
			parts = append(parts, jen.Lit("/"))
		}
		parts = append(parts, jen.Id("p").Dot(s.Go))
	}
	return jen.Qual("strings", "Join").Call(jen.Index().String().Values(parts...), jen.Lit(""))
}

func serveOps(m *ir.Method) []jen.Code {
	served := []jen.Code{jen.Id("h").Dot(m.Go).Op("!=").Nil()}
	var cases []jen.Code
	for _, op := range servedOps(m) {
		served = append(served, jen.Id("h").Dot(op.Go).Op("!=").Nil())
		body := []jen.Code{}
		args := []jen.Code{jen.Id("ctx"), jen.Op("&").Id("p")}
		if op.Args != nil {
			body = append(body, jen.Var().Id("a").Add(goType(op.Args)), decodeInto(jen.Op("&").Id("a"), jen.Id("p").Dot(m.Operations.Payload.Go)))
			args = append(args, argRef(op.Args, "a"))
		}
		body = append(body, jen.Return(jen.Id("h").Dot(op.Go).Call(args...)))
		var key jen.Code = jen.Lit(strings.Join(op.MatchValues, "/"))
		if len(m.Operations.Selector) == 1 {
			key = jen.Id(opConst(op))
		}
		cases = append(cases, jen.Case(key).Block(jen.If(jen.Id("h").Dot(op.Go).Op("!=").Nil()).Block(body...)))
	}
	any := served[0]
	for _, s := range served[1:] {
		any = jen.Add(any).Op("||").Add(s)
	}
	return []jen.Code{jen.If(any).Block(
		jen.Var().Id("p").Add(goType(m.Params)),
		decodeInto(jen.Op("&").Id("p"), jen.Id("req").Dot("Params")),
		jen.Switch(opKey(m)).Block(cases...),
		jen.If(jen.Id("h").Dot(m.Go).Op("!=").Nil()).Block(jen.Return(jen.Id("h").Dot(m.Go).Call(jen.Id("ctx"), jen.Op("&").Id("p")))),
		jen.If(jen.Id("h").Dot("Fallback").Op("!=").Nil()).Block(jen.Return(jen.Id("h").Dot("Fallback").Dot("Handle").Call(jen.Id("ctx"), jen.Id("req")))),
		jen.Return(jen.Nil(), jen.Qual(pkgRPC, "UnsupportedOperation").Call(jen.Id("req").Dot("Method"), opKey(m))),
	)}
}

// emitServed emits the method that lists the methods whose fields a
// handler struct sets, which is what a side can claim to serve.
func emitServed(f *jen.File, side string, ms []*ir.Method) {
	stmts := []jen.Code{jen.Var().Id("out").Index().Qual(pkgWire, "MethodInfo")}
	for _, m := range ms {
		stmts = append(stmts, jen.If(jen.Id("h").Dot(m.Go).Op("!=").Nil()).Block(
			jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("Methods").Index(jen.Lit(m.Index))),
		))
	}
	stmts = append(stmts, jen.Return(jen.Id("out")))
	name := side + "Handlers"
	comment(f, "Served lists the methods whose own fields are set, in catalogue order: what this side can claim to serve (Operations lists the operations carried inside methods).")
	f.Func().Params(jen.Id("h").Op("*").Id(name)).Id("Served").Params().Index().Qual(pkgWire, "MethodInfo").Block(stmts...)
	f.Line()
}

// emitOperations emits the method that lists the operations a handler
// struct serves, which capability queries advertise.
func emitOperations(f *jen.File, side string, ms []*ir.Method) {
	var stmts []jen.Code
	for _, m := range ms {
		if m.Operations == nil {
			continue
		}
		for i, op := range m.Operations.Items {
			if !op.Status.Served() {
				continue
			}
			stmts = append(stmts, jen.If(jen.Id("h").Dot(op.Go).Op("!=").Nil()).Block(
				jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("Methods").Index(jen.Lit(m.Index)).Dot("Operations").Index(jen.Lit(i))),
			))
		}
	}
	if len(stmts) == 0 {
		return
	}
	name := side + "Handlers"
	comment(f, "Operations lists the operations whose fields are set, in catalogue order: what a capability query should advertise.")
	body := append([]jen.Code{jen.Var().Id("out").Index().Qual(pkgWire, "OperationInfo")}, stmts...)
	body = append(body, jen.Return(jen.Id("out")))
	f.Func().Params(jen.Id("h").Op("*").Id(name)).Id("Operations").Params().Index().Qual(pkgWire, "OperationInfo").Block(body...)
	f.Line()
}

func emitPeer(f *jen.File, side, sideDoc string, ms []*ir.Method) {
	name := side + "Peer"
	comment(f, fmt.Sprintf("%s calls the methods that the %s side serves, through any rpc.Sender such as *rpc.Conn. That side: %s", name, strings.ToLower(side), sideDoc))
	f.Type().Id(name).Struct(jen.Id("s").Qual(pkgRPC, "Sender"))
	f.Line()
	f.Comment(fmt.Sprintf("New%s returns a %s that sends through s.", name, name))
	f.Func().Id("New" + name).Params(jen.Id("s").Qual(pkgRPC, "Sender")).Op("*").Id(name).Block(jen.Return(jen.Op("&").Id(name).Values(jen.Dict{jen.Id("s"): jen.Id("s")})))
	f.Line()
	f.Comment(fmt.Sprintf("%sFrom returns a %s that calls the peer of the connection handling the request whose context is ctx (rpc.SenderFrom), or nil when ctx is not a handler's. A handler reaches its peer this way with no wiring after the connection starts, so there is no race with a request that arrives at once.", name, name))
	f.Func().Id(name+"From").Params(jen.Id("ctx").Qual("context", "Context")).Op("*").Id(name).Block(
		jen.If(jen.Id("s").Op(":=").Qual(pkgRPC, "SenderFrom").Call(jen.Id("ctx")), jen.Id("s").Op("!=").Nil()).Block(jen.Return(jen.Id("New"+name).Call(jen.Id("s")))),
		jen.Return(jen.Nil()),
	)
	f.Line()
	for _, m := range ms {
		emitPeerMethod(f, name, m)
		if m.Operations != nil {
			for _, op := range m.Operations.Items {
				if op.Status.Sent() {
					emitPeerOp(f, name, m, op)
				}
			}
		}
	}
}

// outbound is the rpc.Outbound literal for m with params.
func outbound(m *ir.Method, params jen.Code) jen.Code {
	d := jen.Dict{jen.Id("Method"): jen.Id(methodConst(m)), jen.Id("Params"): params}
	if q, _ := qualifier(m); q != "" {
		d[jen.Id("Qualifier")] = jen.Lit(q)
	}
	if oneWay(m) {
		d[jen.Id("Kind")] = jen.Qual(pkgRPC, "KindNotification")
	}
	return jen.Qual(pkgRPC, "Outbound").Values(d)
}

func callResult(m *ir.Method, r *ir.Ref, params jen.Code) []jen.Code {
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
		jen.If(jen.Err().Op(":=").Id("p").Dot("s").Dot("Send").Call(jen.Id("ctx"), outbound(m, params), jen.Op("&").Id("res")), jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Err())),
		jen.Return(ret, jen.Nil()),
	}
}

func emitPeerMethod(f *jen.File, peer string, m *ir.Method) {
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context")}
	var send jen.Code = jen.Nil()
	if m.Params != nil {
		params = append(params, jen.Id("params").Add(paramType(m.Params)))
		send = jen.Id("params")
	}
	verb := "sends the request"
	if oneWay(m) {
		verb = "sends the notification"
	}
	doc := fmt.Sprintf("%s %s %s. %s", m.Go, verb, m.Wire, m.Doc)
	if m.FrameID != nil {
		doc += fmt.Sprintf(" The frame carries params' %s as its id, when there is one.", m.FrameID.JSON)
	}
	comment(f, doc)
	if oneWay(m) && m.FrameID != nil {
		// The frame carries the member's value as its id.
		fid := jen.Id("params").Dot(m.FrameID.Go)
		set := jen.Id("o").Dot("ID").Op("=").Qual(pkgRPC, "StringID").Call(fid)
		cond := jen.Id("params").Op("!=").Nil()
		if fieldStorage(m.FrameID) == pointer {
			set = jen.Id("o").Dot("ID").Op("=").Qual(pkgRPC, "StringID").Call(jen.Op("*").Add(fid))
			cond = jen.Add(cond).Op("&&").Add(fid).Op("!=").Nil()
		}
		f.Func().Params(jen.Id("p").Op("*").Id(peer)).Id(m.Go).Params(params...).Error().Block(
			jen.Id("o").Op(":=").Add(outbound(m, send)),
			jen.If(cond).Block(set),
			jen.Return(jen.Id("p").Dot("s").Dot("Send").Call(jen.Id("ctx"), jen.Id("o"), jen.Nil())),
		)
	} else if oneWay(m) {
		f.Func().Params(jen.Id("p").Op("*").Id(peer)).Id(m.Go).Params(params...).Error().Block(
			jen.Return(jen.Id("p").Dot("s").Dot("Send").Call(jen.Id("ctx"), outbound(m, send), jen.Nil())),
		)
	} else {
		f.Func().Params(jen.Id("p").Op("*").Id(peer)).Id(m.Go).Params(params...).Params(resultType(m.Result), jen.Error()).Block(callResult(m, m.Result, send)...)
	}
	f.Line()
}

func emitPeerOp(f *jen.File, peer string, m *ir.Method, op *ir.Operation) {
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("call").Add(paramType(m.Params))}
	body := []jen.Code{
		jen.Var().Id("c").Add(goType(m.Params)),
		jen.If(jen.Id("call").Op("!=").Nil()).Block(jen.Id("c").Op("=").Op("*").Id("call")),
	}
	for i, s := range m.Operations.Selector {
		var v jen.Code = jen.Lit(op.MatchValues[i])
		if len(m.Operations.Selector) == 1 {
			v = jen.Id(opConst(op))
		}
		body = append(body, jen.Id("c").Dot(s.Go).Op("=").Add(v))
	}
	if op.Args != nil {
		params = append(params, jen.Id("args").Add(paramType(op.Args)))
		var arg jen.Code = jen.Id("args")
		body = append(body,
			jen.List(jen.Id("raw"), jen.Err()).Op(":=").Qual(pkgJSON, "Marshal").Call(arg, jen.Qual(pkgWire, "Fidelity")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.If(jen.String().Call(jen.Id("raw")).Op("==").Lit("null")).Block(jen.Id("raw").Op("=").Qual(pkgJSONText, "Value").Call(jen.Lit("{}"))),
			jen.Id("c").Dot(m.Operations.Payload.Go).Op("=").Id("raw"),
		)
	} else {
		body = append(body, jen.Id("c").Dot(m.Operations.Payload.Go).Op("=").Qual(pkgJSONText, "Value").Call(jen.Lit("{}")))
	}
	body = append(body, callResult(m, op.Result, jen.Op("&").Id("c"))...)
	comment(f, fmt.Sprintf("%s calls the %s operation %s. call may carry the other %s params (nil for none); the selector and payload members are set here. %s", op.Go, m.Wire, strings.Join(op.MatchValues, "/"), m.Wire, op.Doc))
	f.Func().Params(jen.Id("p").Op("*").Id(peer)).Id(op.Go).Params(params...).Params(resultType(op.Result), jen.Error()).Block(body...)
	f.Line()
}
