package emit

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// Docs renders the Markdown method and type reference of a package.
func Docs(pkg *ir.Package) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- %s -->\n\n", Header(pkg.Source))
	fmt.Fprintf(&b, "# %s: method reference\n\n", pkg.Title)
	if pkg.Doc != "" {
		fmt.Fprintf(&b, "%s\n\n", pkg.Doc)
	}
	fmt.Fprintf(&b, "Go package: `github.com/bridgekit/bridgekit/gen/%s`. Framing: `%s`", pkg.Name, pkg.Framing)
	if e := pkg.Envelope; e != nil {
		fmt.Fprintf(&b, " (protocol `%s`, version %d)", e.Protocol, e.Version)
	}
	fmt.Fprintf(&b, ". Schemas: %s. Sides:\n\n", quoteAll(pkg.Inputs))
	for _, s := range pkg.Sides {
		fmt.Fprintf(&b, "- **%s** (`%s`): %s\n", s.Name, s.Go, s.Doc)
	}
	if len(pkg.Errors) > 0 {
		b.WriteString("\n## Errors any method can get\n\n")
		for _, e := range pkg.Errors {
			fmt.Fprintf(&b, "- `%s`: %s\n", e.Code.JSON(), oneLine(e.When))
		}
	}
	if len(pkg.Methods) == 0 {
		b.WriteString("\n## Methods\n\nNone: the catalogue describes documents, not a conversation.\n")
	} else {
		b.WriteString("\n## Methods\n\n| wire | Go | direction | kind | status |\n| --- | --- | --- | --- | --- |\n")
	}
	for _, m := range pkg.Methods {
		fmt.Fprintf(&b, "| [`%s`](#method-%s) | `%s` | %s → %s | %s | %s |\n", m.Wire+qualifierDoc(m), anchor(m.Go), m.Go, m.From.Name, m.To.Name, m.Kind, m.Status)
	}
	for _, m := range pkg.Methods {
		fmt.Fprintf(&b, "\n<a id=\"method-%s\"></a>\n\n### %s\n\n%s\n\n", anchor(m.Go), m.Wire+qualifierDoc(m), strings.TrimSpace(m.Doc))
		fmt.Fprintf(&b, "- Direction: %s → %s, %s; status %s.\n", m.From.Name, m.To.Name, m.Kind, m.Status)
		switch {
		case !m.Status.Served():
			b.WriteString("- Not served: retired, so no handler field; a side answers it like an unknown method (`-32601`) and never advertises it.\n")
		case !m.Status.Sent():
			fmt.Fprintf(&b, "- Handler: `%sHandlers.%s`; no peer method (bridgekit never sends a %s method).\n", m.To.Go, m.Go, m.Status)
		default:
			fmt.Fprintf(&b, "- Handler: `%sHandlers.%s`; peer: `%sPeer.%s`.\n", m.To.Go, m.Go, m.To.Go, m.Go)
		}
		if m.Preempt {
			b.WriteString("- Preempted: handled on the connection's control lane, never behind running handlers.\n")
		}
		fmt.Fprintf(&b, "- Params: %s\n", refDoc(m.Params, "none"))
		if !m.Kind.OneWay() {
			fmt.Fprintf(&b, "- Result: %s\n", refDoc(m.Result, "any JSON value"))
		}
		if m.FrameID != nil {
			fmt.Fprintf(&b, "- Frame id: the params' `%s`, when present.\n", m.FrameID.JSON)
		}
		if c := m.Cancels; c != nil {
			switch {
			case c.Key != nil:
				fmt.Fprintf(&b, "- Cancels: running `%s` requests whose `%s` equals this one's.\n", c.Method.Wire, c.Key.JSON)
			case c.ID != nil:
				fmt.Fprintf(&b, "- Cancels: the running request, of any method, whose id is in `%s`.\n", c.ID.JSON)
			default:
				fmt.Fprintf(&b, "- Cancels: every running `%s` request.\n", c.Method.Wire)
			}
		}
		if m.Source != "" {
			fmt.Fprintf(&b, "- Source: %s\n", m.Source)
		}
		writeErrors(&b, m.Errors)
		if m.Operations == nil {
			continue
		}
		sel := make([]string, len(m.Operations.Selector))
		for i, s := range m.Operations.Selector {
			sel[i] = "`" + s.JSON + "`"
		}
		fmt.Fprintf(&b, "\nOperations, selected by %s, with arguments in `%s`:\n\n", strings.Join(sel, " and "), m.Operations.Payload.JSON)
		b.WriteString("| operation | Go | args | result | advertised as | status |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, op := range m.Operations.Items {
			adv := "—"
			if op.Advertise != nil {
				adv = fmt.Sprintf("`%s: [%s]`", op.Advertise.Capability, op.Advertise.Op)
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", strings.Join(op.MatchValues, "/"), op.Go, refDoc(op.Args, "none"), refDoc(op.Result, "any JSON value"), adv, op.Status)
		}
		for _, op := range m.Operations.Items {
			var serve string
			switch {
			case !op.Status.Served():
				serve = "Retired: no handler field; answered like an unknown operation."
			case !op.Status.Sent() || !m.Status.Sent():
				serve = fmt.Sprintf("Handler: `%sHandlers.%s`; no peer method.", m.To.Go, op.Go)
			default:
				serve = fmt.Sprintf("Handler: `%sHandlers.%s`; peer: `%sPeer.%s`.", m.To.Go, op.Go, m.To.Go, op.Go)
			}
			fmt.Fprintf(&b, "\n#### %s\n\n%s %s\n\n", strings.Join(op.MatchValues, "/"), oneLine(op.Doc), serve)
			writeErrors(&b, op.Errors)
		}
	}
	writeDialect(&b, pkg)
	b.WriteString("\n## Types\n")
	for _, t := range sortedTypes(pkg.Types) {
		fmt.Fprintf(&b, "\n### type %s\n\n", t.Name)
		if t.Doc != "" {
			fmt.Fprintf(&b, "%s\n\n", t.Doc)
		}
		fmt.Fprintf(&b, "Schema: `%s`.\n", t.Pointer)
		switch t.Kind {
		case ir.Struct:
			if t.Closed {
				b.WriteString("Closed object: unknown members are rejected.\n\n")
			} else {
				b.WriteString("Open object: unknown members are kept (`Extra`) and written back.\n\n")
			}
			if len(t.Forbidden) > 0 {
				fmt.Fprintf(&b, "Forbidden members (rejected even though the object is open): %s.\n\n", quoteList(t.Forbidden, ", "))
			}
			for _, sc := range t.Scoped {
				fmt.Fprintf(&b, "Forbidden under the `%s` contract (`%s`), kept in `Extra` otherwise: %s.\n\n", sc.Contract, sc.Go, quoteList(sc.Members, ", "))
			}
			writeFields(&b, t.Fields)
		case ir.Enum:
			open := "Closed"
			if t.Open {
				open = "Open (other values are kept)"
			}
			var vs []string
			for _, v := range t.Values {
				if t.Base.Kind == ir.Int {
					vs = append(vs, fmt.Sprintf("`%d` (`%s`)", v.Int, v.Go))
				} else {
					vs = append(vs, fmt.Sprintf("`%s` (`%s`)", v.String, v.Go))
				}
			}
			fmt.Fprintf(&b, "%s %s enum: %s.\n", open, refDoc(t.Base, ""), strings.Join(vs, ", "))
		case ir.Scalar:
			fmt.Fprintf(&b, "A %s.\n", refDoc(t.Base, ""))
		case ir.MapType:
			fmt.Fprintf(&b, "Object whose every member is %s.\n", refDoc(t.Elem, ""))
		case ir.Union:
			var vs []string
			for _, v := range t.Variants {
				var when string
				switch {
				case t.Union == ir.ByKind:
					when = "a JSON " + kindWord(v.Kind)
				case v.Tag != "":
					when = fmt.Sprintf("`%s: %q`", t.Tag, v.Tag)
				case len(v.Keys) > 0:
					when = "with " + quoteList(v.Keys, " or ")
				case v.NullTag:
					when = fmt.Sprintf("by default (`%s` absent or null)", t.Tag)
				case v.Default:
					when = "by default"
				}
				vs = append(vs, fmt.Sprintf("%s → `%s %s` (%s)", when, v.Go, goTypeText(variantType(t, v)), refDoc(v.Ref, "")))
			}
			fmt.Fprintf(&b, "One of: %s.", strings.Join(vs, "; "))
			if t.Union == ir.ByTag {
				b.WriteString(" Other tags are kept verbatim in `Unknown`.")
			}
			if t.Union == ir.ByElement {
				b.WriteString(" Chosen by the first element; an empty array is the first.")
			}
			if t.Other != nil {
				fmt.Fprintf(&b, " Any other value (one that decodes as no variant) is kept verbatim in `%s jsontext.Value`.", t.Other.Go)
			}
			b.WriteString("\n")
			if len(t.Common) > 0 {
				b.WriteString("\nMembers of every variant:\n\n")
				writeFields(&b, t.Common)
			}
		}
	}
	return []byte(b.String())
}

func writeFields(b *strings.Builder, fields []*ir.Field) {
	if len(fields) == 0 {
		return
	}
	b.WriteString("| member | Go field | Go type | schema type | required | notes |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, fl := range fields {
		var notes []string
		if fl.Nullable {
			notes = append(notes, "nullable")
		}
		if fl.Represented != "" {
			notes = append(notes, "held as `"+fl.Represented+"` (`wire.Nullable`), never null")
		}
		if fl.Default != nil {
			notes = append(notes, "default `"+ir.Canonical(fl.Default)+"`")
		}
		if fl.Const != nil {
			notes = append(notes, "always `"+ir.Canonical(fl.Const)+"`")
		}
		if fl.Doc != "" {
			notes = append(notes, strings.ReplaceAll(oneLine(fl.Doc), "|", "\\|"))
		}
		req := "no"
		if fl.Required {
			req = "yes"
		}
		goField, goTyp := "`"+fl.Go+"`", "`"+goTypeText(fieldType(fl))+"`"
		if fl.Const != nil && fl.Required {
			goField, goTyp = "—", "— (not stored)"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", fl.JSON, goField, goTyp, refDoc(fl.Ref, ""), req, strings.Join(notes, "; "))
	}
}

// oneLine joins a description's lines for a Markdown paragraph or table cell.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func qualifierDoc(m *ir.Method) string {
	if len(m.Qualifier) == 0 {
		return ""
	}
	var q []string
	for _, mv := range m.Qualifier {
		q = append(q, mv.Member+"="+mv.Value)
	}
	return " (" + strings.Join(q, ", ") + ")"
}

func writeErrors(b *strings.Builder, errs []ir.Error) {
	if len(errs) == 0 {
		return
	}
	b.WriteString("- Errors:\n")
	for _, e := range errs {
		fmt.Fprintf(b, "  - `%s`: %s\n", e.Code.JSON(), oneLine(e.When))
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

func anchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func refDoc(r *ir.Ref, none string) string {
	if r == nil {
		return none
	}
	var s string
	switch r.Kind {
	case ir.String:
		s = "string"
	case ir.Bool:
		s = "boolean"
	case ir.Int:
		s = "integer"
	case ir.Float:
		s = "number"
	case ir.Raw:
		s = "any JSON"
		if len(r.Kinds) > 0 {
			s = "raw JSON, kept as sent: " + strings.Join(r.Kinds, ", ")
		}
	case ir.RawObject:
		s = "any JSON object"
	case ir.Array:
		s = "array of " + refDoc(r.Elem, "")
	case ir.Map:
		s = "object of " + refDoc(r.Elem, "")
	case ir.Named:
		if t := r.Named; t.Import != "" {
			s = fmt.Sprintf("[`%s.%s`](%s.md#type-%s)", t.ImportName, t.Name, t.ImportName, strings.ToLower(t.Name))
		} else {
			s = fmt.Sprintf("[`%s`](#type-%s)", t.Name, strings.ToLower(t.Name))
		}
	}
	if r.Format != "" {
		s += " (format " + r.Format + ")"
	}
	var cons []string
	if r.MinLength != nil {
		cons = append(cons, fmt.Sprintf("min length %d", *r.MinLength))
	}
	if r.MaxLength != nil {
		cons = append(cons, fmt.Sprintf("max length %d", *r.MaxLength))
	}
	if r.Minimum != nil {
		cons = append(cons, fmt.Sprintf("≥ %v", *r.Minimum))
	}
	if r.Maximum != nil {
		cons = append(cons, fmt.Sprintf("≤ %v", *r.Maximum))
	}
	if r.Pattern != "" {
		cons = append(cons, "pattern `"+r.Pattern+"`")
	}
	if len(cons) > 0 {
		s += " (" + strings.Join(cons, ", ") + ")"
	}
	return s
}

// writeDialect lists the catalogue's overlays scoped to a contract on types
// of imported packages: what the dialect adds to the protocol it extends,
// which leaves that protocol's Go types unchanged.
func writeDialect(b *strings.Builder, pkg *ir.Package) {
	if len(pkg.Dialect) == 0 {
		return
	}
	b.WriteString("\n## The protocols this one extends, under its contracts\n\n")
	b.WriteString("Overlays scoped to a contract on the types of an imported package: they leave those Go types as they are (a member stays as its own package types it, a variant lands in `Unknown`), the spec applies them under the contract, and a decode under the contract (`Contract<Name>.Options()`, which a connection of this dialect sets) applies the forbidden members and the added variants.\n\n")
	b.WriteString("| contract | type | what | reason |\n| --- | --- | --- | --- |\n")
	for _, d := range pkg.Dialect {
		typ := d.Type.Name
		if d.Type.Import != "" {
			typ = fmt.Sprintf("[`%s.%s`](%s.md#type-%s)", d.Type.ImportName, d.Type.Name, d.Type.ImportName, strings.ToLower(d.Type.Name))
		}
		var what string
		switch {
		case len(d.Forbid) > 0:
			what = "forbids " + quoteList(d.Forbid, ", ")
		case d.Member != "":
			what = fmt.Sprintf("types `%s` as %s", d.Member, refDoc(d.Schema, ""))
		default:
			var vs []string
			for _, v := range d.Variants {
				vs = append(vs, refDoc(v, ""))
			}
			what = "adds the variants " + strings.Join(vs, ", ")
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", d.Contract, typ, what, oneLine(d.Reason))
	}
}

// goTypeText renders a Go type as a reader of the package writes it: its
// own types bare, others qualified by their package name
// (wire.Nullable[acp.ContentBlock]).
func goTypeText(c jen.Code) string {
	return strings.ReplaceAll(fmt.Sprintf("%#v", jen.Null().Add(c)), "|", "\\|")
}
