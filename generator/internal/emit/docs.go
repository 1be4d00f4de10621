package emit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/ir"
)

// Docs renders the Markdown method and type reference of a package.
func Docs(pkg *ir.Package) []byte {
	var b strings.Builder
	c := pkg.Catalogue
	fmt.Fprintf(&b, "<!-- %s -->\n\n", Header(c.File))
	fmt.Fprintf(&b, "# %s: method reference\n\n", c.Title)
	fmt.Fprintf(&b, "%s\n\n", c.Doc)
	fmt.Fprintf(&b, "Go package: `github.com/bridgekit/bridgekit/gen/%s`. Framing: `%s`. Sides:\n\n", pkg.Name, c.Framing)
	for _, s := range c.Sides {
		fmt.Fprintf(&b, "- **%s** (`%s`): %s\n", s.Name, s.Go, s.Doc)
	}
	b.WriteString("\n## Methods\n\n| wire | Go | direction | kind | status |\n| --- | --- | --- | --- | --- |\n")
	for _, m := range pkg.Methods {
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s → %s | %s | %s |\n", m.Wire, anchor(m.Wire), m.Go, m.From, m.To, m.Kind, m.Status)
	}
	for _, m := range pkg.Methods {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", m.Wire, m.Doc)
		fmt.Fprintf(&b, "- Direction: %s → %s, %s; status %s.\n", m.From, m.To, m.Kind, m.Status)
		fmt.Fprintf(&b, "- Handler: `%sHandler`; client: `%sClient.%s`.\n", m.Go, m.ToSide.Go, m.Go)
		fmt.Fprintf(&b, "- Params: %s\n", refDoc(m.Params, "none"))
		if m.Kind != "notification" {
			fmt.Fprintf(&b, "- Result: %s\n", refDoc(m.Result, "any JSON value"))
		}
		if m.Source != "" {
			fmt.Fprintf(&b, "- Source: %s\n", m.Source)
		}
		writeErrors(&b, m.Errors)
		if m.Ops == nil {
			continue
		}
		sel := make([]string, len(m.Ops.Selector))
		for i, s := range m.Ops.Selector {
			sel[i] = "`" + s.JSON + "`"
		}
		fmt.Fprintf(&b, "\nOperations, selected by %s, with arguments in `%s`:\n\n", strings.Join(sel, " and "), m.Ops.Payload.JSON)
		b.WriteString("| operation | Go | args | result | advertised as | status |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, op := range m.Ops.Items {
			adv := "—"
			if op.Advertise != nil {
				adv = fmt.Sprintf("`%s: [%s]`", op.Advertise.Capability, op.Advertise.Op)
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", strings.Join(op.MatchValues, "/"), op.Go, refDoc(op.Args, "none"), refDoc(op.Result, "any JSON value"), adv, op.Status)
		}
		for _, op := range m.Ops.Items {
			fmt.Fprintf(&b, "\n#### %s\n\n%s Handler: `%sHandler`; client: `%sClient.%s`.\n\n", strings.Join(op.MatchValues, "/"), op.Doc, op.Go, m.ToSide.Go, op.Go)
			writeErrors(&b, op.Errors)
		}
	}
	b.WriteString("\n## Types\n")
	types := append([]*ir.Type(nil), pkg.Types...)
	sort.Slice(types, func(i, j int) bool { return types[i].Name < types[j].Name })
	for _, t := range types {
		fmt.Fprintf(&b, "\n### type %s\n\n", t.Name)
		if t.Doc != "" {
			fmt.Fprintf(&b, "%s\n\n", t.Doc)
		}
		fmt.Fprintf(&b, "Schema: `%s`. Emitted by %s.\n", t.Pointer, t.Emitter)
		switch t.Kind {
		case ir.Struct:
			if t.Closed {
				b.WriteString("Closed object: unknown members are rejected.\n\n")
			} else {
				b.WriteString("Open object: unknown members are kept (`Extra`) and written back.\n\n")
			}
			if len(t.Fields) == 0 {
				continue
			}
			b.WriteString("| member | Go field | type | required | notes |\n| --- | --- | --- | --- | --- |\n")
			for _, fl := range t.Fields {
				var notes []string
				if fl.Nullable {
					notes = append(notes, "nullable")
				}
				if fl.Default != nil {
					notes = append(notes, "default `"+ir.Canonical(fl.Default)+"`")
				}
				if fl.Const != nil {
					notes = append(notes, "always `"+ir.Canonical(fl.Const)+"`")
				}
				if fl.Doc != "" {
					notes = append(notes, strings.ReplaceAll(fl.Doc, "|", "\\|"))
				}
				req := "no"
				if fl.Required {
					req = "yes"
				}
				fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", fl.JSON, fl.Go, refDoc(fl.Ref, ""), req, strings.Join(notes, "; "))
			}
		case ir.StringEnum:
			fmt.Fprintf(&b, "String enum: %s.\n", quoteAll(t.Strings))
		case ir.IntEnum:
			fmt.Fprintf(&b, "Integer enum: %v.\n", t.Ints)
		case ir.MapType:
			fmt.Fprintf(&b, "Object whose every member is %s.\n", refDoc(t.Elem, ""))
		case ir.Union:
			if t.Discriminator != "" {
				var vs []string
				for _, v := range t.Variants {
					vs = append(vs, fmt.Sprintf("`%s` → %s", v.Tag, refDoc(v.Ref, "")))
				}
				fmt.Fprintf(&b, "Selected by the member `%s`: %s. Other values are kept verbatim in `Unknown`.\n", t.Discriminator, strings.Join(vs, "; "))
				continue
			}
			var vs []string
			for _, v := range t.Variants {
				vs = append(vs, fmt.Sprintf("a JSON %s (`%s`: %s)", kindWord(v.Kind), v.Go, refDoc(v.Ref, "")))
			}
			fmt.Fprintf(&b, "One of: %s.\n", strings.Join(vs, "; or "))
		}
	}
	return []byte(b.String())
}

func writeErrors(b *strings.Builder, errs []catalogueError) {
	if len(errs) == 0 {
		return
	}
	b.WriteString("- Errors:\n")
	for _, e := range errs {
		fmt.Fprintf(b, "  - `%s`: %s\n", e.Code, e.When)
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
	case ir.RawObject:
		s = "any JSON object"
	case ir.Array:
		s = "array of " + refDoc(r.Elem, "")
	case ir.Map:
		s = "object of " + refDoc(r.Elem, "")
	case ir.Named:
		s = fmt.Sprintf("[`%s`](#type-%s)", r.Named.Name, strings.ToLower(r.Named.Name))
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
