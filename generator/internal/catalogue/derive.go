package catalogue

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/naming"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

// Expand returns every method of the catalogue: those derived from a schema's
// x-method/x-side annotations (see Derive), with the catalogue's annotations
// applied, followed by the listed ones; and checks them together. files holds
// the loaded schema files by name; readFile reads other files under
// spec/schemas (the derivation's meta file).
func (c *Catalogue) Expand(files map[string]*schema.File, readFile func(name string) ([]byte, error)) ([]Method, error) {
	var derived []Method
	if c.Derive != nil {
		var err error
		if derived, err = c.derive(files, readFile); err != nil {
			return nil, fmt.Errorf("derive: %w", err)
		}
	}
	if e := c.Extends; e != nil && e.Status != "" && c.Base != nil {
		own, err := c.Base.derive(files, readFile)
		if err != nil {
			return nil, fmt.Errorf("derive (base %s): %w", e.Catalogue, err)
		}
		inBase := map[string]bool{}
		for _, m := range own {
			inBase[m.Wire+"|"+m.From+">"+m.To] = true
		}
		for i, m := range derived {
			given := c.Annotations[m.Wire].Status != ""
			for xside, side := range c.Derive.Sides {
				if side == m.To && c.Annotations[m.Wire+"@"+xside].Status != "" {
					given = true
				}
			}
			if !inBase[m.Wire+"|"+m.From+">"+m.To] && !given {
				derived[i].Status = e.Status
			}
		}
	}
	all := append(derived, c.Methods...)
	if errs := c.checkMethods(all); len(errs) > 0 {
		return nil, fmt.Errorf("invalid catalogue:\n  %s", strings.Join(errs, "\n  "))
	}
	return all, nil
}

// route is where a routing definition lists a method's params or result.
type route struct {
	wire, side string // x-method, x-side
	def        string // the annotated $defs entry
	kind       Kind   // Request or Notification; "" for a result
	doc        string // the routing alternative's description
	router     string // the routing definition
	order      int    // position among routes of the same kind
}

func (c *Catalogue) derive(files map[string]*schema.File, readFile func(string) ([]byte, error)) ([]Method, error) {
	d := c.Derive
	f := files[d.Schema]
	if f == nil {
		return nil, fmt.Errorf("schema %s is not loaded", d.Schema)
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	annotated := map[string]bool{} // defs carrying x-method
	for _, name := range f.Root.DefOrder {
		if _, ok := f.Root.Defs[name].Annotation("x-method"); ok {
			annotated[name] = true
		}
	}
	routed := map[string]bool{}
	var routes []route
	collect := func(routers []string, member string, kind Kind) {
		for _, rn := range routers {
			rd := f.Root.Defs[rn]
			if rd == nil {
				bad("routing definition %s is not in %s", rn, d.Schema)
				continue
			}
			for _, alt := range routedAlternatives(rd, member) {
				def := strings.TrimPrefix(alt.ref, "#/$defs/")
				target := f.Root.Defs[def]
				if target == nil || def == alt.ref {
					bad("%s: %s routes to %q, which is not a $defs entry of the file", rn, member, alt.ref)
					continue
				}
				wire, hasWire := target.Annotation("x-method")
				side, hasSide := target.Annotation("x-side")
				if !hasWire {
					continue // an extension catch-all such as ExtRequest: no method of its own
				}
				if !hasSide {
					bad("%s has x-method %q but no x-side", def, wire)
					continue
				}
				routed[def] = true
				routes = append(routes, route{wire: wire, side: side, def: def, kind: kind, doc: alt.doc, router: rn, order: len(routes)})
			}
		}
	}
	collect(d.Requests, "params", Request)
	collect(d.Notifications, "params", Notification)
	collect(d.Responses, "result", "")
	for _, name := range f.Root.DefOrder {
		_, excused := d.Unrouted[name]
		switch {
		case annotated[name] && !routed[name] && !excused:
			bad("%s has x-method but no routing definition lists it", name)
		case excused && routed[name]:
			bad("unrouted: %s is listed by a routing definition", name)
		}
	}
	for _, name := range sortedKeys(d.Unrouted) {
		switch {
		case !annotated[name]:
			bad("unrouted: %s is not a $defs entry with x-method", name)
		case strings.TrimSpace(d.Unrouted[name]) == "":
			bad("unrouted: %s needs a reason", name)
		}
	}
	type entry struct {
		m     Method
		side  string
		order int
	}
	byWire := map[string]*entry{}
	var entries []*entry
	for _, r := range routes {
		serve, ok := d.Sides[r.side]
		if !ok {
			bad("%s: x-side %q is not mapped by derive.sides", r.def, r.side)
			continue
		}
		// A wire name may be served by each side (ACP's unstable
		// mcp/message: a request to the client, a notification to the
		// agent): one method per wire name and x-side.
		e := byWire[r.wire+"@"+r.side]
		if e == nil {
			e = &entry{side: r.side, order: -1}
			e.m = Method{Wire: r.wire, Go: naming.Go(r.wire), To: serve, From: c.other(serve), Errors: []Error{}, Status: Stable}
			byWire[r.wire+"@"+r.side] = e
			entries = append(entries, e)
		}
		ref := d.Schema + "#/$defs/" + r.def
		switch {
		case r.kind == "" && e.m.Result != nil, r.kind != "" && e.m.Params != nil:
			bad("%s: %s is routed twice as %s", r.router, r.wire, map[bool]string{true: "a result", false: "params"}[r.kind == ""])
		case r.kind == "":
			e.m.Result = &ref
		default:
			e.m.Params = &ref
			e.m.Kind = r.kind
			e.order = r.order
			e.m.Doc = r.doc
			e.m.Source = fmt.Sprintf("%s#/$defs/%s (x-method %s, x-side %s)", d.Schema, r.router, r.wire, r.side)
			if e.m.Doc == "" {
				e.m.Doc = f.Root.Defs[r.def].Description
			}
		}
	}
	for _, e := range entries {
		switch {
		case e.m.Params == nil:
			bad("%s has a result but no request routes its params", e.m.Wire)
		case e.m.Kind == Request && e.m.Result == nil:
			bad("request %s has no result definition", e.m.Wire)
		case e.m.Kind == Notification && e.m.Result != nil:
			bad("notification %s has a result definition", e.m.Wire)
		}
	}
	// Order: by serving side in catalogue order, requests before
	// notifications, then as the routing definitions list them.
	sideIndex := func(name string) int {
		return slices.IndexFunc(c.Sides, func(s Side) bool { return s.Name == name })
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if sa, sb := sideIndex(a.m.To), sideIndex(b.m.To); sa != sb {
			return sa < sb
		}
		if a.m.Kind != b.m.Kind {
			return a.m.Kind == Request
		}
		return a.order < b.order
	})
	if d.Meta != "" {
		bySide := map[string][]string{}
		for _, e := range entries {
			bySide[e.side] = append(bySide[e.side], e.m.Wire)
		}
		if err := c.checkMeta(readFile, bySide); err != nil {
			bad("%s", err)
		}
	}
	out := make([]Method, 0, len(entries))
	used := map[string]bool{}
	for _, e := range entries {
		m := e.m
		// "<wire>@<x-side>" annotates the method of one side where both
		// serve the wire name, and comes before "<wire>".
		key := m.Wire + "@" + e.side
		if _, ok := c.Annotations[key]; !ok {
			key = m.Wire
		}
		if a, ok := c.Annotations[key]; ok {
			used[key] = true
			if a.Go != "" {
				m.Go = a.Go
			}
			if a.Status != "" {
				m.Status = a.Status
			}
			if a.Doc != "" {
				m.Doc = a.Doc
			}
			if a.Source != "" {
				m.Source = a.Source
			}
			if a.Errors != nil {
				m.Errors = a.Errors
			}
			m.Cancels = a.Cancels
			m.Preempt = a.Preempt
		}
		out = append(out, m)
	}
	for _, w := range sortedKeys(c.Annotations) {
		if !used[w] {
			bad("annotation for %q matches no derived method", w)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n  "))
	}
	return out, nil
}

// checkMeta compares the derived wire names per x-side with the meta file's
// "<x-side>Methods" objects.
func (c *Catalogue) checkMeta(readFile func(string) ([]byte, error), derived map[string][]string) error {
	data, err := readFile(c.Derive.Meta)
	if err != nil {
		return err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("%s: %w", c.Derive.Meta, err)
	}
	for _, side := range sortedKeys(c.Derive.Sides) {
		var listed map[string]string
		if err := json.Unmarshal(meta[side+"Methods"], &listed); err != nil {
			return fmt.Errorf("%s: %sMethods: %v", c.Derive.Meta, side, err)
		}
		var want []string
		for _, w := range listed {
			want = append(want, w)
		}
		got := slices.Clone(derived[side])
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s lists %v for x-side %s, the schema's annotations give %v", c.Derive.Meta, want, side, got)
		}
	}
	return nil
}

// other returns the name of the side that is not name.
func (c *Catalogue) other(name string) string {
	for _, s := range c.Sides {
		if s.Name != name {
			return s.Name
		}
	}
	return ""
}

type alternative struct{ ref, doc string }

// routedAlternatives lists the $refs a routing definition gives for member
// (params or result), looking through anyOf/oneOf nesting, null alternatives,
// and single-$ref allOf wrappers, with the description nearest to each.
func routedAlternatives(rd *schema.Schema, member string) []alternative {
	var out []alternative
	var walk func(s *schema.Schema, doc string)
	walk = func(s *schema.Schema, doc string) {
		if s == nil {
			return
		}
		if s.Description != "" && doc == "" {
			doc = s.Description
		}
		if s.Ref != "" {
			out = append(out, alternative{s.Ref, doc})
			return
		}
		if len(s.AllOf) == 1 {
			d := s.Description
			walk(s.AllOf[0], d)
			return
		}
		for _, a := range append(slices.Clone(s.AnyOf), s.OneOf...) {
			walk(a, "")
		}
	}
	var visit func(s *schema.Schema)
	visit = func(s *schema.Schema) {
		for _, p := range s.Properties {
			if p.Name == member {
				walk(p.Schema, "")
			}
		}
		for _, a := range append(slices.Clone(s.AnyOf), s.OneOf...) {
			visit(a) // AgentResponse: anyOf of {result} and {error} objects
		}
	}
	visit(rd)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
