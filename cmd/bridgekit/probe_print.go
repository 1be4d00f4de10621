package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// printProbe prints one probe as text: a label column, then what was
// found.
func printProbe(w io.Writer, r *probeResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(label, format string, a ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label, fmt.Sprintf(format, a...))
	}
	list := func(label string, items []string) {
		if len(items) == 0 {
			line(label, "none")
			return
		}
		for i, it := range items {
			if i > 0 {
				label = ""
			}
			line(label, "%s", it)
		}
	}
	if len(r.Command) > 0 {
		line("command", "%s", strings.Join(r.Command, " "))
	}
	for _, l := range r.Before {
		line(l[0], "%s", l[1])
	}
	if !r.OK {
		line("error", "%s", r.Error)
		if r.Stderr != "" {
			list("stderr", strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n"))
		}
		tw.Flush()
		return
	}
	line("kind", "%s", kindText(r.Kind))
	line("agent", "%s", agentText(r.AgentInfo))
	line("protocol version", "%s", string(r.ProtocolVersion))
	var caps []string
	for _, c := range r.Flat {
		caps = append(caps, c.Path+": "+c.Value)
	}
	list("capabilities", caps)
	var auth []string
	for _, a := range r.AuthMethods {
		auth = append(auth, authText(a, true))
	}
	list("auth methods", auth)
	if s := r.Session; s != nil {
		if s.Error != "" {
			line("session", "session/new failed: %s", s.Error)
		} else {
			line("session", "%s", cmp.Or(s.Where, "opened in an empty temporary directory"))
			list("modes", choicesText(s.Modes, s.CurrentMode))
			list("models", choicesText(s.Models, s.CurrentModel))
			var opts []string
			for _, c := range s.ConfigOptions {
				opts = append(opts, configText(c))
			}
			list("config options", opts)
			if len(s.Commands) > 0 {
				line("commands", "%s", strings.Join(s.Commands, ", "))
			}
		}
	}
	list("Harn extensions", harnLines(r.Harn))
	if r.HarnResult != nil {
		list("Harn (result)", harnLines(r.HarnResult))
	}
	if len(r.Called) > 0 {
		line("called back", "%s (requests answered \"method not found\")", strings.Join(r.Called, ", "))
	}
	if len(r.Notified) > 0 {
		line("notified", "%s (notifications, which need no answer)", strings.Join(r.Notified, ", "))
	}
	if len(r.Problems) > 0 {
		var ps []string
		for _, p := range r.Problems {
			ps = append(ps, p.Method+" "+p.Pointer+": "+p.Message)
		}
		list("problems", ps)
	}
	tw.Flush()
}

func kindText(k string) string {
	if k == "harn-runtime" {
		return "Harn runtime (ACP agent with Harn's extension contract)"
	}
	return "ACP agent"
}

func agentText(info json.RawMessage) string {
	var m struct {
		Name    string `json:"name"`
		Title   string `json:"title"`
		Version string `json:"version"`
	}
	if info == nil || json.Unmarshal(info, &m) != nil {
		return "(no agentInfo)"
	}
	s := strings.TrimSpace(m.Name + " " + m.Version)
	if m.Title != "" && m.Title != m.Name {
		s += " (" + m.Title + ")"
	}
	return s
}

// authText describes an auth method; long adds its name and description.
func authText(a authMethod, long bool) string {
	var b strings.Builder
	if long {
		fmt.Fprintf(&b, "%s  %q [%s", a.ID, a.Name, a.Type)
		if !a.Typed {
			b.WriteString(", kept raw: gen/acp has no type for it")
		}
		b.WriteString("]")
	} else {
		b.WriteString(a.Type)
	}
	var needs []string
	for _, v := range a.Vars {
		n := v.Name
		var attrs []string
		if v.Secret {
			attrs = append(attrs, "secret")
		}
		if v.Optional {
			attrs = append(attrs, "optional")
		}
		if len(attrs) > 0 {
			n += " (" + strings.Join(attrs, ", ") + ")"
		}
		needs = append(needs, n)
	}
	if len(needs) > 0 {
		b.WriteString(" needs " + strings.Join(needs, ", "))
	}
	if len(a.Args) > 0 {
		b.WriteString(" args " + strings.Join(a.Args, " "))
	}
	if len(a.Env) > 0 {
		b.WriteString(" sets " + strings.Join(a.Env, ", "))
	}
	if long && a.Description != "" {
		b.WriteString(": " + a.Description)
	}
	if long && a.Link != "" {
		b.WriteString(" <" + a.Link + ">")
	}
	return b.String()
}

func choicesText(cs []choice, current string) []string {
	var out []string
	for _, c := range cs {
		s := c.ID
		if c.ID == current {
			s += "*"
		}
		if c.Name != "" && c.Name != c.ID {
			s += "  " + c.Name
		}
		if c.Description != "" {
			s += ": " + c.Description
		}
		out = append(out, s)
	}
	return out
}

func choiceIDs(cs []choice, current string) string {
	if len(cs) == 0 {
		return "-"
	}
	var ids []string
	for _, c := range cs {
		if c.ID == current {
			ids = append(ids, c.ID+"*")
		} else {
			ids = append(ids, c.ID)
		}
	}
	return strings.Join(ids, ", ")
}

func configText(c configOption) string {
	s := c.ID
	var attrs []string
	for _, a := range []string{c.Category, c.Type} {
		if a != "" {
			attrs = append(attrs, a)
		}
	}
	if len(attrs) > 0 {
		s += " (" + strings.Join(attrs, ", ") + ")"
	}
	var vals []string
	for _, v := range c.Values {
		if v == c.Current {
			v += "*"
		}
		vals = append(vals, v)
	}
	if len(vals) > 0 {
		s += ": " + strings.Join(vals, ", ")
	} else if c.Current != "" {
		s += ": " + c.Current
	}
	return s
}

// harnLines lists the members of Harn's _meta.harn, one a line.
func harnLines(h json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(h, &m) != nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+": "+harnValue(m[k]))
	}
	return out
}

// harnValue shows an object of lists (hostCapabilityOperations) as
// key: items; other values as scalarText does.
func harnValue(v json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) == nil && len(obj) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			parts = append(parts, k+" "+scalarText(obj[k]))
		}
		return strings.Join(parts, "; ")
	}
	return scalarText(v)
}

// matrixRow is one row of the comparison matrix: what each probe shows
// for it ("-" for nothing).
type matrixRow struct {
	Row    string   `json:"row"`
	Values []string `json:"values"`
}

// probeMatrix lays several probes side by side: one row per thing any of
// them shows.
func probeMatrix(rs []*probeResult) []matrixRow {
	var rows []matrixRow
	add := func(name string, value func(*probeResult) string) {
		row := matrixRow{Row: name}
		for _, r := range rs {
			v := "-"
			if r.OK {
				v = value(r)
			} else if name == "error" {
				v = r.Error
			}
			row.Values = append(row.Values, v)
		}
		rows = append(rows, row)
	}
	if slices.ContainsFunc(rs, func(r *probeResult) bool { return !r.OK }) {
		add("error", func(*probeResult) string { return "-" })
	}
	add("kind", func(r *probeResult) string { return r.Kind })
	add("agent", func(r *probeResult) string { return agentText(r.AgentInfo) })
	add("protocol version", func(r *probeResult) string { return string(r.ProtocolVersion) })
	union := func(keys func(*probeResult) []string) []string {
		var out []string
		for _, r := range rs {
			for _, k := range keys(r) {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, path := range union(func(r *probeResult) []string {
		var ks []string
		for _, c := range r.Flat {
			ks = append(ks, c.Path)
		}
		return ks
	}) {
		add(path, func(r *probeResult) string {
			for _, c := range r.Flat {
				if c.Path == path {
					return c.Value
				}
			}
			return "-"
		})
	}
	for _, id := range union(func(r *probeResult) []string {
		var ks []string
		for _, a := range r.AuthMethods {
			ks = append(ks, a.ID)
		}
		return ks
	}) {
		add("auth "+id, func(r *probeResult) string {
			for _, a := range r.AuthMethods {
				if a.ID == id {
					return authText(a, false)
				}
			}
			return "-"
		})
	}
	session := func(f func(*probeSession) string) func(*probeResult) string {
		return func(r *probeResult) string {
			switch {
			case r.Session == nil:
				return "-"
			case r.Session.Error != "":
				return "(session/new failed)"
			}
			return f(r.Session)
		}
	}
	add("modes", session(func(s *probeSession) string { return choiceIDs(s.Modes, s.CurrentMode) }))
	add("models", session(func(s *probeSession) string { return choiceIDs(s.Models, s.CurrentModel) }))
	for _, id := range union(func(r *probeResult) []string {
		var ks []string
		if r.Session != nil {
			for _, c := range r.Session.ConfigOptions {
				ks = append(ks, c.ID)
			}
		}
		return ks
	}) {
		add("config "+id, session(func(s *probeSession) string {
			for _, c := range s.ConfigOptions {
				if c.ID == id {
					return strings.TrimPrefix(configText(c), c.ID+" ")
				}
			}
			return "-"
		}))
	}
	harnKeys := func(r *probeResult) []string {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r.Harn, &m)
		return slices.Collect(maps.Keys(m))
	}
	for _, k := range union(harnKeys) {
		add("harn "+k, func(r *probeResult) string {
			var m map[string]json.RawMessage
			if json.Unmarshal(r.Harn, &m) != nil || m[k] == nil {
				return "-"
			}
			return harnValue(m[k])
		})
	}
	add("called back", func(r *probeResult) string {
		if len(r.Called) == 0 {
			return "-"
		}
		return strings.Join(r.Called, ", ")
	})
	add("problems", func(r *probeResult) string {
		if len(r.Problems) == 0 {
			return "-"
		}
		return fmt.Sprint(len(r.Problems))
	})
	return rows
}

// printMatrix prints several probes as a matrix, one column each, then
// which command each column is and their problems.
func printMatrix(w io.Writer, rs []*probeResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{""}
	for _, r := range rs {
		head = append(head, r.Label)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range probeMatrix(rs) {
		fmt.Fprintln(tw, row.Row+"\t"+strings.Join(row.Values, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rs {
		fmt.Fprintf(w, "%s: %s\n", r.Label, strings.Join(r.Command, " "))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  problem: %s %s: %s\n", p.Method, p.Pointer, p.Message)
		}
		if r.Session != nil && r.Session.Error != "" {
			fmt.Fprintf(w, "  session/new failed: %s\n", r.Session.Error)
		}
	}
}
