package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/naming"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

type builder struct {
	files      map[string]*schema.File
	ov         *schema.Overrides
	overlays   map[string]*overlay   // by def pointer + "|" + member
	rebase     map[string]string     // schema files read in place of others (catalogue Extends)
	adds       map[string][]*overlay // members added by overlays, by def pointer, in catalogue order
	forbids    map[string][]*overlay // by def pointer
	extensions map[string]*overlay   // variants added to unions, by def pointer
	byPtr      map[string]*Ref
	nullDefs   map[string]bool // named definitions that admit null
	building   map[string]bool
	byName     map[string]*Type
	// imports maps the schema files of imported catalogues to their package;
	// importedNames holds the types built from them, by import path and name.
	imports       map[string]Import
	importedNames map[string]*Type
	// own are the catalogue's own schema files.
	own []string
	// dialect are the catalogue's overlays scoped to a contract whose
	// definition belongs to an imported catalogue (dialectOverlay).
	dialect []catalogue.Overlay
	errs    []string
}

type overlay struct {
	catalogue.Overlay
	used bool
	// imported: the overlay of an imported catalogue, applied to its types
	// here so that their shapes match, and never reported unused.
	imported bool
}

// Import is a catalogue whose generated package another one uses, with the
// Go import path of that package.
type Import struct {
	Catalogue *catalogue.Catalogue
	Path      string
}

// Build turns a catalogue, its expanded methods (catalogue.Expand) and its
// schema files into a Package. Overrides are consulted and marked used; the
// caller checks the unused ones across all packages.
func Build(cat *catalogue.Catalogue, methods []catalogue.Method, files map[string]*schema.File, ov *schema.Overrides) (*Package, error) {
	return BuildImporting(cat, methods, files, ov, nil)
}

// BuildImporting is Build for a catalogue that imports others (its
// Imports): imports are those catalogues and the ones they import in turn,
// whose schema files must be among files. A type built from one of their
// files is referred to in its own package, never generated here, and has
// the shape their overlays give it.
func BuildImporting(cat *catalogue.Catalogue, methods []catalogue.Method, files map[string]*schema.File, ov *schema.Overrides, imports []Import) (*Package, error) {
	if ov == nil {
		ov = &schema.Overrides{}
	}
	b := &builder{
		files: files, ov: ov, overlays: map[string]*overlay{}, adds: map[string][]*overlay{}, forbids: map[string][]*overlay{}, extensions: map[string]*overlay{},
		byPtr: map[string]*Ref{}, nullDefs: map[string]bool{}, building: map[string]bool{}, byName: map[string]*Type{},
		imports: map[string]Import{}, importedNames: map[string]*Type{}, own: cat.Schemas,
	}
	if cat.Extends != nil {
		b.rebase = cat.Extends.Rebase
		ov = ov.Rebased(cat.Extends.Rebase)
		b.ov = ov
	}
	addOverlays := func(list []catalogue.Overlay, imported bool, files []string) {
		for _, o := range list {
			if file, _, _ := strings.Cut(o.Def, "#"); o.Contract != "" && !slices.Contains(files, file) {
				// A dialect's rules for a protocol it extends: they never
				// shape that protocol's types (dialectOverlay).
				if !imported {
					b.dialect = append(b.dialect, o)
				}
				continue
			}
			if o.Contract != "" && len(o.Forbid) == 0 {
				b.fail("%s: overlay of %s scoped to contract %q: only forbidden members may be scoped to a contract in the catalogue's own definitions, whose Go types cannot depend on it", cat.File, o.Def, o.Contract)
				continue
			}
			ol := &overlay{Overlay: o, imported: imported}
			switch {
			case len(o.Forbid) > 0:
				b.forbids[o.Def] = append(b.forbids[o.Def], ol)
			case len(o.Variants) > 0:
				b.extensions[o.Def] = ol
			case o.Add:
				b.adds[o.Def] = append(b.adds[o.Def], ol)
			default:
				b.overlays[o.Def+"|"+o.Member] = ol
			}
		}
	}
	ownFiles := cat.Schemas
	if cat.Extends != nil {
		ownFiles = slices.Clone(ownFiles)
		for _, to := range cat.Extends.Rebase {
			ownFiles = append(ownFiles, to)
		}
	}
	addOverlays(cat.Overlays, false, ownFiles)
	for _, name := range cat.Imports {
		if !slices.ContainsFunc(imports, func(im Import) bool { return im.Catalogue.Package == name }) {
			b.fail("%s: imports %q, which no loaded catalogue generates", cat.File, name)
		}
	}
	for _, im := range imports {
		for _, f := range im.Catalogue.Schemas {
			if slices.Contains(cat.Schemas, f) {
				b.fail("%s: schema file %s is both listed and imported from %s", cat.File, f, im.Catalogue.Package)
			}
			b.imports[f] = im
		}
		addOverlays(im.Catalogue.Overlays, true, im.Catalogue.Schemas)
	}
	pkg := &Package{
		Name: cat.Package, Protocol: cat.Protocol, Title: cat.Title, Doc: cat.Doc,
		Framing: framing(cat.Framing), Source: cat.File, Inputs: slices.Clone(cat.Schemas),
	}
	if e := cat.Envelope; e != nil {
		pkg.Envelope = &Envelope{Protocol: e.Protocol, Version: e.Version}
	}
	if len(cat.Sides) != 2 {
		return nil, fmt.Errorf("a protocol has exactly two sides")
	}
	for i, s := range cat.Sides {
		pkg.Sides[i] = &Side{Name: s.Name, Go: s.Go, Doc: s.Doc}
	}
	// Every $def of every listed schema file becomes part of the package, in
	// file order, so that types exist even before a method uses them.
	for _, name := range cat.Schemas {
		f, ok := b.files[name]
		if !ok {
			b.fail("schema file %s is listed by the catalogue but was not loaded", name)
			continue
		}
		b.defs(f.Root, name+"#")
	}
	for _, m := range methods {
		mm := b.method(cat, pkg, m)
		mm.Index = len(pkg.Methods)
		pkg.Methods = append(pkg.Methods, mm)
	}
	var rules []dialectRule
	for _, o := range b.dialect {
		if r, ok := b.dialectOverlay(cat.File, pkg, o); ok {
			rules = append(rules, r)
		}
	}
	pkg.Errors = errorList(cat.Errors)
	pkg.Codes = b.codes(pkg.Errors, pkg.Methods)
	for i, m := range methods {
		if m.Cancels != nil {
			b.cancels(pkg, pkg.Methods[i], m.Cancels)
		}
	}
	for _, k := range sortedKeys(b.overlays) {
		if !b.overlays[k].used && !b.overlays[k].imported {
			o := b.overlays[k]
			b.fail("%s: overlay of member %q of %s matches no property", cat.File, o.Member, o.Def)
		}
	}
	for _, k := range sortedKeys(b.adds) {
		for _, o := range b.adds[k] {
			if !o.used && !o.imported {
				b.fail("%s: overlay adding member %q to %s matches no object definition", cat.File, o.Member, k)
			}
		}
	}
	for _, k := range sortedKeys(b.forbids) {
		for _, o := range b.forbids[k] {
			if !o.used && !o.imported {
				b.fail("%s: overlay forbidding members of %s matches no object definition", cat.File, k)
			}
		}
	}
	for _, k := range sortedKeys(b.extensions) {
		if !b.extensions[k].used && !b.extensions[k].imported {
			b.fail("%s: overlay adding variants to %s matches no union definition", cat.File, k)
		}
	}
	for _, t := range b.byName {
		pkg.Types = append(pkg.Types, t)
	}
	sort.Slice(pkg.Types, func(i, j int) bool { return pkg.Types[i].Name < pkg.Types[j].Name })
	for _, t := range pkg.Types {
		b.checkDefaults(t)
		b.represent(t)
	}
	for _, k := range sortedKeys(b.importedNames) {
		b.represent(b.importedNames[k]) // so an imported type has its package's shape
	}
	pkg.Contracts = contracts(pkg.Types)
	b.dialectRules(cat.File, pkg, rules)
	if len(b.errs) > 0 {
		slices.Sort(b.errs)
		return nil, fmt.Errorf("%s", strings.Join(slices.Compact(b.errs), "\n"))
	}
	return pkg, nil
}

// defs builds every $defs entry of s (nested ones too) unless excluded.
func (b *builder) defs(s *schema.Schema, ptr string) {
	for _, def := range s.DefOrder {
		p := ptr + "/$defs/" + def
		if b.ov.Excluded(p) {
			continue
		}
		b.ref(p, "")
		b.defs(s.Defs[def], p)
	}
}

func framing(f catalogue.Framing) Framing {
	switch f {
	case catalogue.EnvelopeNDJSON:
		return EnvelopeNDJSON
	case catalogue.StdoutJSON:
		return StdoutJSON
	case catalogue.JSONRPC2HTTP:
		return JSONRPC2HTTP
	}
	return JSONRPC2NDJSON
}

func kind(k catalogue.Kind) MethodKind {
	switch k {
	case catalogue.Notification:
		return Notification
	case catalogue.RequestOrNotification:
		return RequestOrNotification
	case catalogue.Event:
		return Event
	case catalogue.Response:
		return Response
	}
	return Request
}

func status(s catalogue.Status) Status {
	switch s {
	case catalogue.Experimental:
		return Experimental
	case catalogue.LegacyTolerated:
		return LegacyTolerated
	case catalogue.Retired:
		return Retired
	}
	return Stable
}

func errorList(es []catalogue.Error) []Error {
	out := make([]Error, 0, len(es))
	for _, e := range es {
		var c ErrorCode
		if json.Unmarshal(e.Code, &c.Int) != nil {
			_ = json.Unmarshal(e.Code, &c.String)
		}
		out = append(out, Error{Code: c, When: e.When})
	}
	return out
}

// codes collects the string error codes the methods and their operations
// document, each once, with every place that documents it.
func (b *builder) codes(common []Error, ms []*Method) []*Code {
	var out []*Code
	byCode := map[string]*Code{}
	byGo := map[string]string{}
	add := func(where string, es []Error) {
		for _, e := range es {
			if e.Code.String == "" {
				continue
			}
			c := byCode[e.Code.String]
			if c == nil {
				c = &Code{Code: e.Code.String, Go: naming.Go(e.Code.String)}
				if prev, ok := byGo[c.Go]; ok {
					b.fail("error codes %q and %q have the same Go name %s", prev, c.Code, c.Go)
				}
				byGo[c.Go], byCode[c.Code] = c.Code, c
				out = append(out, c)
			}
			i := slices.IndexFunc(c.Uses, func(u CodeUse) bool { return u.When == e.When })
			if i < 0 {
				i = len(c.Uses)
				c.Uses = append(c.Uses, CodeUse{When: e.When})
			}
			c.Uses[i].Where = append(c.Uses[i].Where, where)
		}
	}
	add("any method", common)
	for _, m := range ms {
		where := m.Wire
		for _, q := range m.Qualifier {
			where += " (" + q.Value + ")"
		}
		add(where, m.Errors)
		if m.Operations != nil {
			for _, op := range m.Operations.Items {
				add(where+" "+strings.Join(op.MatchValues, "/"), op.Errors)
			}
		}
	}
	return out
}

func (b *builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Sprintf(format, args...))
}

func (b *builder) side(p *Package, name string) *Side {
	for _, s := range p.Sides {
		if s.Name == name {
			return s
		}
	}
	b.fail("no side %q", name)
	return &Side{Name: name}
}

func (b *builder) method(cat *catalogue.Catalogue, p *Package, m catalogue.Method) *Method {
	out := &Method{
		Wire: m.Wire, Go: m.Go, From: b.side(p, m.From), To: b.side(p, m.To), Kind: kind(m.Kind),
		Errors: errorList(m.Errors), Status: status(m.Status), Source: m.Source, Doc: m.Doc, Preempt: m.Preempt,
	}
	for _, k := range sortedKeys(m.Qualifier) {
		out.Qualifier = append(out.Qualifier, MemberValue{Member: k, Value: m.Qualifier[k]})
	}
	if m.Params != nil {
		out.Params = b.use(cat, m.Wire+" params", *m.Params)
	}
	if m.Result != nil {
		out.Result = b.use(cat, m.Wire+" result", *m.Result)
	}
	if m.FrameID != "" {
		if st := paramsStruct(out); st == nil {
			b.fail("%s: frame_id needs object params", m.Wire)
		} else if f := b.member(m.Wire, st, m.FrameID); f != nil {
			if f.Ref.Kind != String || f.Nullable {
				b.fail("%s: frame_id member %q must be a string", m.Wire, m.FrameID)
			}
			out.FrameID = f
		}
	}
	if m.Operations == nil {
		return out
	}
	st := paramsStruct(out)
	if st == nil {
		b.fail("%s: a method with operations needs object params", m.Wire)
		return out
	}
	ops := &Operations{}
	for _, s := range m.Operations.Selector {
		f := b.member(m.Wire, st, s)
		if f != nil && (f.Ref.Kind != String || !f.Required || f.Nullable) {
			b.fail("%s: selector member %q must be a required string", m.Wire, s)
		}
		ops.Selector = append(ops.Selector, f)
	}
	ops.Payload = b.member(m.Wire, st, m.Operations.Payload)
	if ops.Payload != nil && ops.Payload.Ref.Kind != Raw {
		b.fail("%s: payload member %q must be schemaless (any JSON) so operations can type it", m.Wire, m.Operations.Payload)
	}
	for _, o := range m.Operations.Items {
		op := &Operation{Go: o.Go, Errors: errorList(o.Errors), Status: status(o.Status), Source: o.Source, Doc: o.Doc}
		if o.Advertise != nil {
			op.Advertise = &Advertise{Capability: o.Advertise.Capability, Op: o.Advertise.Op}
		}
		for _, s := range m.Operations.Selector {
			op.MatchValues = append(op.MatchValues, o.Match[s])
		}
		if o.Args != nil {
			op.Args = b.use(cat, o.Go+" args", *o.Args)
		}
		if o.Result != nil {
			op.Result = b.use(cat, o.Go+" result", *o.Result)
		}
		ops.Items = append(ops.Items, op)
	}
	out.Operations = ops
	return out
}

func paramsStruct(m *Method) *Type {
	if m.Params != nil && m.Params.Kind == Named && m.Params.Named.Kind == Struct {
		return m.Params.Named
	}
	return nil
}

// member finds the params member called name.
func (b *builder) member(where string, st *Type, name string) *Field {
	for _, f := range st.Fields {
		if f.JSON == name {
			return f
		}
	}
	b.fail("%s: params have no member %q", where, name)
	return nil
}

func (b *builder) cancels(p *Package, m *Method, c *catalogue.Cancels) {
	where := m.Wire + ": cancels"
	out := &Cancels{}
	if c.ID != "" {
		if own := paramsStruct(m); own == nil {
			b.fail("%s: id needs object params", where)
		} else {
			out.ID = b.member(where, own, c.ID)
			m.Cancels = out
		}
		return
	}
	for _, t := range p.Methods {
		if t.Wire == c.Method && t.From == m.From && t.To == m.To {
			out.Method = t
		}
	}
	if out.Method == nil {
		b.fail("%s %q: no such request", where, c.Method)
		return
	}
	own, target := paramsStruct(m), paramsStruct(out.Method)
	if c.Key != "" && own == nil {
		b.fail("%s: key needs object params", where)
		return
	}
	if c.Key != "" {
		if target == nil {
			b.fail("%s: key needs %s to have object params", where, c.Method)
			return
		}
		out.Key, out.TargetKey = b.member(where, own, c.Key), b.member(where+" "+c.Method, target, c.Key)
		if out.Key != nil && out.TargetKey != nil && !sameShape(out.Key.Ref, out.TargetKey.Ref) {
			b.fail("%s: member %q has different types in %s and %s", where, c.Key, m.Wire, c.Method)
		}
	}
	m.Cancels = out
}

func sameShape(a, b *Ref) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Named:
		return a.Named == b.Named
	case Array, Map:
		return sameShape(a.Elem, b.Elem)
	}
	return true
}

// resolve finds the node a reference names. ref is "file#/$defs/x[/$defs/y]"
// (file relative to the referring file's directory) or "#/$defs/x" in the
// referring file. It returns the node and its canonical pointer.
func (b *builder) resolve(ref, from string) (*schema.Schema, string) {
	file, frag, _ := strings.Cut(ref, "#")
	fromFile, _, _ := strings.Cut(from, "#")
	switch {
	case file == "":
		file = fromFile
	case fromFile != "":
		file = path.Join(path.Dir(fromFile), file)
	}
	if to, ok := b.rebase[file]; ok {
		file = to // a file the catalogue reads in place of another (Extends)
	}
	f, ok := b.files[file]
	if !ok {
		b.fail("%s: $ref %q names a schema file that is not loaded", from, ref)
		return nil, ""
	}
	s := f.Root.Def(frag)
	if s == nil {
		b.fail("%s: $ref %q: no such $defs entry (a $ref must point at a $defs entry)", from, ref)
		return nil, ""
	}
	return s, s.Pointer
}

// use resolves a reference a method or operation makes: into one of the
// catalogue's own schema files or into a catalogue it imports itself.
func (b *builder) use(cat *catalogue.Catalogue, where, ptr string) *Ref {
	file, _, _ := strings.Cut(ptr, "#")
	im, imported := b.imports[file]
	if imported && !slices.Contains(cat.Imports, im.Catalogue.Package) || !imported && !slices.Contains(cat.Schemas, file) {
		b.fail("%s: %s is in neither the catalogue's schemas nor an imported catalogue's", where, ptr)
	}
	return b.ref(ptr, "")
}

// ref resolves a named definition to a Ref, building its type once.
func (b *builder) ref(ptr, from string) *Ref {
	s, key := b.resolve(ptr, from)
	if s == nil {
		return &Ref{Kind: Raw}
	}
	if b.ov.Excluded(key) {
		b.fail("%s: refers to %s, which spec/overrides.json excludes from generation", orDef(from, key), key)
		return &Ref{Kind: Raw}
	}
	if o, ok := b.ov.IsRaw(key); ok {
		return &Ref{Kind: Raw, Example: o.Example, Kinds: plainKinds(s)}
	}
	if r, ok := b.byPtr[key]; ok {
		return r
	}
	if b.building[key] {
		// A recursive reference: the type's Ref already exists once its node
		// is classified as a named type; other recursion is unsupported.
		b.fail("%s: recursive schema through a non-object definition", key)
		return &Ref{Kind: Raw}
	}
	b.building[key] = true
	defer delete(b.building, key)
	_, def := path.Split(key)
	r, nullable := b.node(s, naming.Go(def), true)
	if nullable {
		// A nullable definition (ACP v1's RequestId: null, integer or
		// string) is named without its null; every member that uses it is
		// nullable instead (refNull).
		b.nullDefs[key] = true
	}
	b.byPtr[key] = r
	return r
}

// refNull is ref, also reporting whether the definition admits null.
func (b *builder) refNull(ptr, from string) (*Ref, bool) {
	r := b.ref(ptr, from)
	_, key := b.resolve(ptr, from)
	return r, b.nullDefs[key]
}

func orDef(from, key string) string {
	if from == "" {
		return key
	}
	return from
}

// shapeKeywords reports whether s has keywords that give it a shape of its
// own (beyond annotations such as description and title).
func shapeKeywords(s *schema.Schema) bool {
	return len(s.Types) > 0 || len(s.Properties) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || len(s.AllOf) > 0 ||
		len(s.Enum) > 0 || s.Const != nil || s.Items != nil || s.AdditionalProperties != nil || len(s.Required) > 0 ||
		s.Ref != "" || s.HasConstraints()
}

// wrapped returns the $ref of a simple allOf wrapper ({allOf: [{$ref}]} with
// at most annotations beside it), or "".
func wrapped(s *schema.Schema) string {
	if len(s.AllOf) != 1 || s.AllOf[0].Ref == "" || shapeKeywordsBeside(s.AllOf[0]) {
		return ""
	}
	c := *s
	c.AllOf = nil
	if shapeKeywords(&c) {
		return ""
	}
	return s.AllOf[0].Ref
}

// shapeKeywordsBeside reports whether a $ref node has shape keywords beside $ref.
func shapeKeywordsBeside(s *schema.Schema) bool {
	c := *s
	c.Ref = ""
	return shapeKeywords(&c)
}

// node classifies a schema node. name is the Go name a new type would get;
// named is set for $defs entries (free-form objects then get an open struct,
// scalars a named type).
func (b *builder) node(s *schema.Schema, name string, named bool) (*Ref, bool) {
	if s.Bool != nil {
		if !*s.Bool {
			b.fail("%s: the schema false is only allowed as additionalProperties", s.Pointer)
		}
		return &Ref{Kind: Raw}, false
	}
	if s.Not != nil || s.UnevaluatedProperties != nil {
		b.fail("%s: not and unevaluatedProperties are supported only on the catch-all alternative of a tagged union ({properties: {<tag>: {type: string}}, required: [<tag>], not: {anyOf: [every other alternative's {properties: {<tag>: {const}}, required: [<tag>]}]}})", s.Pointer)
		return &Ref{Kind: Raw}, false
	}
	if len(s.AllOf) > 0 {
		ref := wrapped(s)
		if ref == "" {
			b.fail("%s: allOf is supported as a single $ref wrapper (with description or title beside it), or as a union variant {allOf: [{$ref}], properties: {<tag>: {const}}, required: [<tag>]}", s.Pointer)
			return &Ref{Kind: Raw}, false
		}
		return b.refNull(ref, s.Pointer)
	}
	if s.Ref != "" {
		if shapeKeywordsBeside(s) {
			b.fail("%s: $ref with sibling type keywords is unsupported", s.Pointer)
		}
		return b.refNull(s.Ref, s.Pointer)
	}
	alts := append(slices.Clone(s.AnyOf), s.OneOf...)
	if o, ok := b.extensions[s.Pointer]; ok && len(alts) > 0 {
		// An overlay adds alternatives of ours to a vendored union.
		o.used = true
		for _, v := range o.Variants {
			alts = append(alts, &schema.Schema{Ref: v, Pointer: v})
		}
	}
	if len(alts) > 0 {
		if len(s.AnyOf) > 0 && len(s.OneOf) > 0 {
			b.fail("%s: anyOf together with oneOf is unsupported", s.Pointer)
		}
		return b.union(s, alts, name, named)
	}
	types := slices.Clone(s.Types)
	nullable := false
	if i := slices.Index(types, "null"); i >= 0 {
		nullable = true
		types = slices.Delete(types, i, i+1)
	}
	enum := s.Enum
	if i := slices.IndexFunc(enum, isNull); i >= 0 {
		nullable = true
		enum = slices.Delete(slices.Clone(enum), i, i+1)
	}
	if len(types) == 0 && len(enum) > 0 {
		types = []string{enumKind(enum)}
	}
	if len(types) == 0 && s.Const != nil {
		types = []string{enumKind([]json.RawMessage{s.Const})}
	}
	if len(types) > 1 {
		b.fail("%s: several types %v need anyOf with distinct JSON kinds", s.Pointer, s.Types)
		return &Ref{Kind: Raw}, nullable
	}
	if len(types) == 0 {
		if len(s.Properties) > 0 || s.AdditionalProperties != nil {
			types = []string{"object"}
		} else {
			if len(s.Required) > 0 {
				b.fail("%s: required without properties is unsupported", s.Pointer)
			}
			return &Ref{Kind: Raw}, nullable
		}
	}
	r := &Ref{Minimum: s.Minimum, Maximum: s.Maximum, MinLength: s.MinLength, MaxLength: s.MaxLength, MinItems: s.MinItems, Pattern: s.Pattern, Format: s.Format}
	switch types[0] {
	case "string":
		r.Kind = String
	case "boolean":
		r.Kind = Bool
	case "integer":
		r.Kind = Int
	case "number":
		r.Kind = Float
	case "array":
		r.Kind = Array
		if s.Items == nil {
			r.Elem = &Ref{Kind: Raw}
		} else {
			elem, null := b.node(s.Items, name+"Item", false)
			if null {
				b.fail("%s: nullable array items are unsupported", s.Items.Pointer)
			}
			r.Elem = elem
		}
	case "object":
		return b.object(s, name, named), nullable
	default:
		b.fail("%s: unsupported type %q", s.Pointer, types[0])
		return &Ref{Kind: Raw}, nullable
	}
	if len(enum) > 0 {
		if r.Kind != String && r.Kind != Int {
			b.fail("%s: enum on type %s is unsupported", s.Pointer, types[0])
			return r, nullable
		}
		return b.enum(s, name, r.Kind, enum), nullable
	}
	if s.Const != nil && r.Kind != String && r.Kind != Int && r.Kind != Bool {
		b.fail("%s: const is supported on string, integer and boolean members only", s.Pointer)
	}
	if named && s.Const == nil && r.Kind != Array {
		t := b.newType(s, name, Scalar)
		t.Base = r
		return &Ref{Kind: Named, Named: t}, nullable
	}
	return r, nullable
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func enumKind(vals []json.RawMessage) string {
	kind := ""
	for _, v := range vals {
		k := "string"
		switch t := string(bytes.TrimSpace(v)); {
		case t == "true" || t == "false":
			k = "boolean"
		case len(t) > 0 && t[0] != '"':
			k = "integer"
		}
		if kind != "" && kind != k {
			return "mixed"
		}
		kind = k
	}
	return kind
}

func (b *builder) object(s *schema.Schema, name string, named bool) *Ref {
	ap := s.AdditionalProperties
	if len(s.Properties) == 0 && ap != nil && ap.Bool == nil {
		elem, null := b.node(ap, name+"Value", false)
		if null {
			b.fail("%s: nullable map values are unsupported", ap.Pointer)
		}
		t := b.newType(s, name, MapType)
		t.Elem = elem
		return &Ref{Kind: Named, Named: t}
	}
	if len(s.Properties) == 0 && !ap.IsFalse() && !named {
		// An inline free-form object is kept verbatim; a named one becomes an
		// open struct (all members in Extra) so members can be added later
		// without changing its Go type.
		return &Ref{Kind: RawObject}
	}
	if ap != nil && ap.Bool == nil {
		b.fail("%s: typed additionalProperties next to properties is unsupported", s.Pointer)
	}
	t := b.newType(s, name, Struct)
	t.Closed = ap.IsFalse()
	t.Fields = b.fields(s, name, "", map[string]bool{"Extra": true})
	t.Forbidden, t.Scoped = b.forbidden(s, t.Fields)
	return &Ref{Kind: Named, Named: t}
}

// forbidden lists the members s forbids everywhere (properties whose schema
// is false, then those an overlay forbids without a contract), and those
// overlays forbid under a contract, by contract name. None may be a property
// of s or be forbidden twice.
func (b *builder) forbidden(s *schema.Schema, fields []*Field) (all []string, scoped []Scoped) {
	for _, p := range s.Properties {
		if p.Schema.IsFalse() {
			all = append(all, p.Name)
		}
	}
	names := slices.Clone(all)
	for _, o := range b.forbids[s.Pointer] {
		o.used = true
		var list []string
		for _, name := range o.Forbid {
			if slices.ContainsFunc(s.Properties, func(p schema.Property) bool { return p.Name == name }) {
				b.fail("%s: overlay forbids member %q, which the definition names", s.Pointer, name)
				continue
			}
			list = append(list, name)
			names = append(names, name)
		}
		switch i := slices.IndexFunc(scoped, func(c Scoped) bool { return c.Contract == o.Contract }); {
		case o.Contract == "":
			all = append(all, list...)
		case i >= 0:
			scoped[i].Members = append(scoped[i].Members, list...)
		default:
			scoped = append(scoped, Scoped{Contract: o.Contract, Go: "Contract" + naming.Go(o.Contract), Members: list})
		}
	}
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			b.fail("%s: member %q is forbidden twice", s.Pointer, name)
		}
	}
	return all, scoped
}

// contracts gathers the package's own types' scoped forbidden members by
// contract, contracts by name, types by name.
func contracts(types []*Type) []*Contract {
	var out []*Contract
	for _, t := range types {
		if t.Import != "" {
			continue
		}
		for _, sc := range t.Scoped {
			i := slices.IndexFunc(out, func(c *Contract) bool { return c.Name == sc.Contract })
			if i < 0 {
				out = append(out, &Contract{Name: sc.Contract, Go: sc.Go})
				i = len(out) - 1
			}
			out[i].Rules = append(out[i].Rules, ContractRule{Type: t, Members: sc.Members})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// dialectRule is what a contract forbids in a type of an imported package,
// or the variants it adds to a union of one.
type dialectRule struct {
	contract string
	rule     ContractRule
	variants []ContractVariants
}

// dialectOverlay checks an overlay of the catalogue scoped to a contract
// whose definition belongs to an imported catalogue: a dialect's rules for
// the protocol it extends (Harn's for ACP). None changes the imported Go
// type. Forbidden members become a rule of the package's contract; a
// retyped member must exist and its schema build; added variants must be
// told apart by the union's tag, with tags the union does not have.
func (b *builder) dialectOverlay(file string, pkg *Package, o catalogue.Overlay) (dialectRule, bool) {
	def, _, _ := strings.Cut(o.Def, "#")
	if _, ok := b.imports[def]; !ok {
		b.fail("%s: overlay of %s scoped to contract %q: %s is neither a schema file of the catalogue nor one of an imported catalogue", file, o.Def, o.Contract, def)
		return dialectRule{}, false
	}
	r := b.ref(o.Def, "")
	t := r.Named
	if r.Kind != Named || t == nil {
		b.fail("%s: overlay of %s scoped to contract %q: the definition is not a generated type", file, o.Def, o.Contract)
		return dialectRule{}, false
	}
	pkg.Dialect = append(pkg.Dialect, &DialectOverlay{Contract: o.Contract, Type: t, Member: o.Member, Forbid: slices.Clone(o.Forbid), Reason: o.Reason})
	d := pkg.Dialect[len(pkg.Dialect)-1]
	switch {
	case len(o.Forbid) > 0:
		if t.Kind != Struct || t.Closed {
			b.fail("%s: overlay of %s scoped to contract %q forbids members of a type that is not an open object", file, o.Def, o.Contract)
			return dialectRule{}, false
		}
		for i, name := range o.Forbid {
			switch {
			case slices.ContainsFunc(t.Fields, func(f *Field) bool { return f.JSON == name }):
				b.fail("%s: overlay of %s scoped to contract %q forbids member %q, which the definition names", file, o.Def, o.Contract, name)
			case slices.Contains(t.Forbidden, name) || slices.Contains(o.Forbid[:i], name):
				b.fail("%s: overlay of %s scoped to contract %q: member %q is forbidden twice", file, o.Def, o.Contract, name)
			}
		}
		return dialectRule{contract: o.Contract, rule: ContractRule{Type: t, Members: slices.Clone(o.Forbid)}}, true
	case o.Member != "":
		if !slices.ContainsFunc(t.Fields, func(f *Field) bool { return f.JSON == o.Member }) {
			b.fail("%s: overlay of member %q of %s scoped to contract %q matches no property", file, o.Member, o.Def, o.Contract)
		}
		d.Schema = b.ref(o.Schema, "")
	case len(o.Variants) > 0:
		if t.Kind != Union || t.Union != ByTag {
			b.fail("%s: overlay adding variants to %s scoped to contract %q: the definition is not a union told apart by a tag", file, o.Def, o.Contract)
			return dialectRule{}, false
		}
		tags := map[string]string{}
		for _, v := range t.Variants {
			tags[v.Tag] = t.Name
		}
		var out []ContractVariants
		for _, v := range o.Variants {
			vr := b.ref(v, "")
			d.Variants = append(d.Variants, vr)
			if vr.Kind != Named || vr.Named.Import != "" {
				b.fail("%s: variant %s added to %s scoped to contract %q is not a type of the catalogue's own", file, v, o.Def, o.Contract)
				continue
			}
			cv := ContractVariants{Union: t, Type: vr.Named}
			for _, tag := range b.variantTags(vr, t.Tag) {
				if tag == "" {
					b.fail("%s: variant %s added to %s scoped to contract %q does not fix %s's tag %q", file, v, o.Def, o.Contract, t.Name, t.Tag)
					continue
				}
				if owner, dup := tags[tag]; dup {
					b.fail("%s: variant %s added to %s scoped to contract %q: tag %q is already %s's", file, v, o.Def, o.Contract, tag, owner)
				}
				tags[tag] = v
				cv.Tags = append(cv.Tags, tag)
			}
			out = append(out, cv)
		}
		return dialectRule{contract: o.Contract, variants: out}, true
	}
	return dialectRule{}, false
}

// variantTags returns the values a variant added to a union fixes its tag
// member to: a struct's const, or every variant's of a union told apart by
// the same tag ("" for one that fixes none).
func (b *builder) variantTags(r *Ref, tag string) []string {
	t := r.Named
	if r.Kind != Named || t == nil {
		return []string{""}
	}
	switch {
	case t.Kind == Union && t.Union == ByTag && t.Tag == tag:
		var out []string
		for _, v := range t.Variants {
			out = append(out, v.Tag)
		}
		return out
	case t.Kind == Struct:
		for _, f := range t.Fields {
			var c string
			if f.JSON == tag && json.Unmarshal(f.Const, &c) == nil {
				return []string{c}
			}
		}
	}
	return []string{""}
}

// dialectRules adds the rules of the catalogue's contracts for types of
// imported packages to pkg.Contracts. A contract names a type by its Go
// name (wire.Object's), so no other type the package decodes may share it.
func (b *builder) dialectRules(file string, pkg *Package, rules []dialectRule) {
	for _, dr := range rules {
		i := slices.IndexFunc(pkg.Contracts, func(c *Contract) bool { return c.Name == dr.contract })
		if i < 0 {
			pkg.Contracts = append(pkg.Contracts, &Contract{Name: dr.contract, Go: "Contract" + naming.Go(dr.contract)})
			i = len(pkg.Contracts) - 1
		}
		if dr.variants != nil {
			// The dialect's union may share the extended union's name: it
			// knows every tag the contract adds, so none reaches its
			// Unknown, and the rule never applies to it.
			pkg.Contracts[i].Variants = append(pkg.Contracts[i].Variants, dr.variants...)
			continue
		}
		t := dr.rule.Type
		clash := func(o *Type) bool { return o != t && o.Name == t.Name }
		if slices.ContainsFunc(pkg.Types, clash) || slices.ContainsFunc(slices.Collect(maps.Values(b.importedNames)), clash) {
			b.fail("%s: contract %q forbids members of %s, and the package decodes another type of that name, which the rule would reach too", file, dr.contract, t.Name)
		}
		pkg.Contracts[i].Rules = append(pkg.Contracts[i].Rules, dr.rule)
	}
	sort.Slice(pkg.Contracts, func(i, j int) bool { return pkg.Contracts[i].Name < pkg.Contracts[j].Name })
}

// fields builds the members of an object schema. skip names a member left
// out (a union's tag); reserved lists Go names the type already uses.
func (b *builder) fields(s *schema.Schema, name, skip string, reserved map[string]bool) []*Field {
	var out []*Field
	required := 0
	goNames := map[string]string{}
	for _, p := range s.Properties {
		if p.Name == skip {
			continue
		}
		fptr := s.Pointer + "/properties/" + p.Name
		if p.Name == "" {
			b.fail("%s: a member with an empty name is unsupported", fptr)
			continue
		}
		if p.Schema.IsFalse() {
			continue // a forbidden member (see forbidden)
		}
		f := &Field{JSON: p.Name, Go: naming.Go(p.Name), Doc: strings.TrimSpace(p.Schema.Description), Required: slices.Contains(s.Required, p.Name), Pointer: fptr}
		if o, ok := b.ov.Field(fptr); ok {
			f.Go = o.Go
		}
		if f.Doc == "" {
			if ref := refOf(p.Schema); ref != "" {
				if def, _ := b.resolve(ref, p.Schema.Pointer); def != nil {
					f.Doc = strings.TrimSpace(def.Description)
				}
			}
		}
		if o, ok := b.overlays[s.Pointer+"|"+p.Name]; ok {
			o.used = true
			f.Ref = b.ref(o.Schema, "")
			f.Nullable = allowsNull(p.Schema)
		} else {
			f.Ref, f.Nullable = b.node(p.Schema, name+f.Go, false)
		}
		f.Default = p.Schema.Default
		if p.Schema.Const != nil {
			f.Const = p.Schema.Const
		}
		if f.Required {
			required++
		}
		if reserved[f.Go] {
			b.fail("%s: member name collides with the generated %s; add a field override", fptr, f.Go)
		}
		if prev, ok := goNames[f.Go]; ok {
			b.fail("%s: Go name %s is already used by member %q; add a field override", fptr, f.Go, prev)
		}
		goNames[f.Go] = p.Name
		out = append(out, f)
	}
	for _, o := range b.adds[s.Pointer] {
		o.used = true
		fptr := s.Pointer + "/properties/" + o.Member
		if slices.ContainsFunc(s.Properties, func(p schema.Property) bool { return p.Name == o.Member }) {
			b.fail("%s: an overlay adds member %q, which the definition names; retype it instead", s.Pointer, o.Member)
			continue
		}
		if slices.ContainsFunc(b.forbids[s.Pointer], func(f *overlay) bool { return slices.Contains(f.Forbid, o.Member) }) {
			b.fail("%s: an overlay adds member %q, which another forbids", s.Pointer, o.Member)
		}
		f := &Field{JSON: o.Member, Go: naming.Go(o.Member), Pointer: fptr, Nullable: true, Ref: b.ref(o.Schema, "")}
		if def, _ := b.resolve(o.Schema, ""); def != nil {
			f.Doc = strings.TrimSpace(def.Description)
		}
		f.Doc = strings.TrimSpace(f.Doc + "\n\nAdded by bridgekit's overlay (" + o.Schema + "): " + o.Reason)
		if o, ok := b.ov.Field(fptr); ok {
			f.Go = o.Go
		}
		if reserved[f.Go] || goNames[f.Go] != "" {
			b.fail("%s: added member %q collides with Go name %s; add a field override", s.Pointer, o.Member, f.Go)
		}
		goNames[f.Go] = o.Member
		out = append(out, f)
	}
	if required > 64 {
		b.fail("%s: more than 64 required members", s.Pointer)
	}
	return out
}

// refOf returns the $ref a member points at directly or through a simple
// allOf wrapper or a nullable anyOf.
func refOf(s *schema.Schema) string {
	if s.Ref != "" {
		return s.Ref
	}
	if r := wrapped(s); r != "" {
		return r
	}
	for _, a := range append(slices.Clone(s.AnyOf), s.OneOf...) {
		if a.Ref != "" {
			return a.Ref
		}
	}
	return ""
}

// allowsNull reports whether a schema admits null syntactically.
func allowsNull(s *schema.Schema) bool {
	if slices.Contains(s.Types, "null") || slices.ContainsFunc(s.Enum, isNull) {
		return true
	}
	for _, a := range append(slices.Clone(s.AnyOf), s.OneOf...) {
		if len(a.Types) == 1 && a.Types[0] == "null" {
			return true
		}
	}
	return false
}

// constOnly reports whether s is one enum value: a const with at most type,
// description, title and format beside it.
func constOnly(s *schema.Schema) bool {
	if s.Const == nil || s.Ref != "" || len(s.Properties) > 0 || len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) > 0 || len(s.Enum) > 0 || s.HasConstraints() {
		return false
	}
	return len(s.Types) == 0 || len(s.Types) == 1 && (s.Types[0] == "string" || s.Types[0] == "integer")
}

// nullOnly reports whether s admits null and nothing else ({type: null}).
func nullOnly(s *schema.Schema) bool {
	return len(s.Types) == 1 && s.Types[0] == "null" && s.Const == nil && s.Ref == "" && len(s.Properties) == 0 &&
		len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) == 0 && len(s.Enum) == 0
}

// plainScalar reports whether s is a bare string or integer type: an open
// enum's "any other value" branch.
func plainScalar(s *schema.Schema) (string, bool) {
	if s.Const != nil || s.Ref != "" || len(s.Properties) > 0 || len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) > 0 || len(s.Enum) > 0 || s.HasConstraints() || s.Items != nil {
		return "", false
	}
	if len(s.Types) == 1 && (s.Types[0] == "string" || s.Types[0] == "integer") {
		return s.Types[0], true
	}
	return "", false
}

// openByDefault reports whether a string enum keeps values it does not
// list: every one does (the protocols bridgekit speaks add values in later
// versions, and ACP's rule is that a receiver ignores what it does not
// know), unless spec/overrides.json's closed table names it with the
// protocol's reason. Integer enums stay as their schema says.
func (b *builder) openByDefault(s *schema.Schema, base RefKind) bool {
	if base != String {
		return false
	}
	_, closed := b.ov.Closed(s.Pointer)
	return !closed
}

// enum builds an enum from an enum keyword.
func (b *builder) enum(s *schema.Schema, name string, base RefKind, values []json.RawMessage) *Ref {
	t := b.newType(s, name, Enum)
	t.Base = &Ref{Kind: base}
	t.Open = b.openByDefault(s, base)
	for _, v := range values {
		b.enumValue(t, v, "", "", s.Pointer)
	}
	b.checkEnumNames(t)
	return &Ref{Kind: Named, Named: t}
}

func (b *builder) enumValue(t *Type, v json.RawMessage, title, doc, ptr string) {
	ev := &EnumValue{Doc: strings.TrimSpace(doc)}
	label := title
	if t.Base.Kind == String {
		if json.Unmarshal(v, &ev.String) != nil {
			b.fail("%s: enum value %s is not a string", ptr, v)
		}
		if label == "" {
			label = ev.String
		}
	} else {
		if json.Unmarshal(v, &ev.Int) != nil {
			b.fail("%s: enum value %s is not an integer", ptr, v)
		}
		if label == "" {
			// Untitled integers keep their digits: Level2, CodeMinus32601.
			ev.Go = t.Name + strings.ReplaceAll(fmt.Sprint(ev.Int), "-", "Minus")
		}
	}
	if ev.Go == "" {
		ev.Go = t.Name + naming.Go(label)
	}
	t.Values = append(t.Values, ev)
}

func (b *builder) checkEnumNames(t *Type) {
	seen := map[string]bool{}
	for _, v := range t.Values {
		if seen[v.Go] {
			b.fail("%s: enum constants collide on the name %s", t.Pointer, v.Go)
		}
		seen[v.Go] = true
	}
}

// alt is one object alternative of a union, resolved.
type alt struct {
	src      *schema.Schema // the alternative as written
	target   *schema.Schema // the object schema it decodes into
	ref      string         // the $ref of target, or "" for an inline object
	nested   bool           // target is a union of objects, chosen by a tag const beside the wrapper
	consts   map[string]string
	nulls    []string // optional members it types as null alone: a tag it has no value for
	props    []string
	required []string
	title    string
	doc      string
}

// objectAlt resolves an alternative that is an object: a $ref, an allOf
// wrapper of a $ref (optionally adding a tag const), or an inline object.
func (b *builder) objectAlt(a *schema.Schema) (*alt, bool) {
	out := &alt{src: a, consts: map[string]string{}, title: a.Title, doc: strings.TrimSpace(a.Description)}
	add := func(s *schema.Schema) {
		for _, p := range s.Properties {
			if !slices.Contains(out.props, p.Name) {
				out.props = append(out.props, p.Name)
			}
			var v string
			if p.Schema.Const != nil && slices.Contains(s.Required, p.Name) && json.Unmarshal(p.Schema.Const, &v) == nil {
				out.consts[p.Name] = v
			}
			if nullOnly(p.Schema) && !slices.Contains(s.Required, p.Name) {
				out.nulls = append(out.nulls, p.Name)
			}
		}
		for _, r := range s.Required {
			if !slices.Contains(out.required, r) {
				out.required = append(out.required, r)
			}
		}
	}
	switch {
	case a.Ref != "" && !shapeKeywordsBeside(a):
		out.ref = a.Ref
	case len(a.AllOf) == 1 && a.AllOf[0].Ref != "" && !shapeKeywordsBeside(a.AllOf[0]):
		// {allOf: [{$ref}]} or the variant pattern with a tag const beside it.
		w := *a
		w.AllOf, w.Properties, w.Required, w.Types = nil, nil, nil, nil
		if shapeKeywords(&w) || len(a.Types) > 1 || len(a.Types) == 1 && a.Types[0] != "object" {
			return nil, false
		}
		for _, p := range a.Properties {
			if !constOnly(p.Schema) {
				return nil, false
			}
		}
		out.ref = a.AllOf[0].Ref
		add(a)
	default:
		if a.Ref != "" || len(a.AllOf) > 0 || len(a.AnyOf)+len(a.OneOf) > 0 {
			return nil, false
		}
		if !(len(a.Types) == 1 && a.Types[0] == "object" || len(a.Types) == 0 && len(a.Properties) > 0) || len(a.Properties) == 0 {
			return nil, false
		}
		out.target = a
		add(a)
		return out, true
	}
	target, _ := b.resolve(out.ref, a.Pointer)
	if target == nil {
		return nil, false
	}
	if r := wrapped(target); r != "" {
		return nil, false
	}
	if len(target.AnyOf)+len(target.OneOf) > 0 && len(out.consts) > 0 {
		// A wrapper that fixes this union's tag around a union of its own:
		// a nested variant (the inner union chooses among its variants).
		out.target, out.nested = target, true
		if out.doc == "" {
			out.doc = strings.TrimSpace(target.Description)
		}
		return out, true
	}
	if !(len(target.Types) == 1 && target.Types[0] == "object" || len(target.Types) == 0 && len(target.Properties) > 0) {
		return nil, false
	}
	out.target = target
	add(target)
	if out.doc == "" {
		out.doc = strings.TrimSpace(target.Description)
	}
	return out, true
}

// union classifies anyOf/oneOf: an enum of consts (closed, or open with a
// plain branch), a nullable single alternative, a union of objects (by tag or
// by required members, with an optional default), a union of arrays of such
// objects, or a union by JSON kind.
func (b *builder) union(s *schema.Schema, alts []*schema.Schema, name string, named bool) (*Ref, bool) {
	nullable := false
	var rest []*schema.Schema
	for _, a := range alts {
		if isNullSchema(a) {
			nullable = true
			continue
		}
		rest = append(rest, a)
	}
	if len(rest) == 0 {
		b.fail("%s: a union of null only is unsupported", s.Pointer)
		return &Ref{Kind: Raw}, nullable
	}
	rest = b.dropCatchAll(s, rest)
	if rest, other := b.anyValueAlt(s, rest); other != nil {
		r, null := b.unionOf(s, rest, name, named, nullable)
		if t := r.Named; r.Kind != Named || t == nil || t.Kind != Union || t.Union == ByElement || t.Other != nil {
			b.fail("%s: an alternative that takes any value is supported beside objects or values of other JSON kinds only", s.Pointer)
			return &Ref{Kind: Raw}, nullable
		}
		for _, v := range r.Named.Variants {
			if v.Go == other.Go {
				b.fail("%s: the any-value alternative's name %s is a variant's", s.Pointer, other.Go)
			}
		}
		r.Named.Other = other
		return r, null
	}
	return b.unionOf(s, rest, name, named, nullable)
}

// anyValueAlt removes from rest the alternative that takes any value (no
// schema keyword but annotations, or true) and describes it; nil when there
// is none. ACP v2 closes its open unions with one ("Other"). Two are an
// error.
func (b *builder) anyValueAlt(s *schema.Schema, rest []*schema.Schema) ([]*schema.Schema, *Other) {
	var other *Other
	out := rest[:0:0]
	for _, a := range rest {
		if !takesAnything(a) {
			out = append(out, a)
			continue
		}
		if other != nil {
			b.fail("%s: two alternatives take any value", s.Pointer)
		}
		other = &Other{Go: "Other", Doc: strings.TrimSpace(a.Description)}
		if a.Title != "" {
			other.Go = naming.Go(a.Title)
		}
	}
	if other != nil && len(out) == 0 {
		b.fail("%s: a union of an any-value alternative alone is unsupported", s.Pointer)
		return rest, nil
	}
	return out, other
}

// takesAnything reports whether a schema accepts every JSON value: true, or
// a node with no keyword but annotations.
func takesAnything(a *schema.Schema) bool {
	if a.Bool != nil {
		return *a.Bool
	}
	return !shapeKeywords(a) && a.Not == nil && a.UnevaluatedProperties == nil
}

// unionOf builds the union of alternatives rest (see union).
func (b *builder) unionOf(s *schema.Schema, rest []*schema.Schema, name string, named, nullable bool) (*Ref, bool) {
	if r, ok := b.constUnion(s, rest, name); ok {
		return r, nullable
	}
	if len(s.Properties) > 0 || len(s.Required) > 0 {
		return b.objectUnion(s, rest, name, nullable)
	}
	if len(rest) == 1 {
		if _, isObj := b.objectAlt(rest[0]); isObj && named {
			// A named one-variant union keeps its name and its variant's
			// name, so variants can be added later without changing the API.
			return b.objectUnion(s, rest, name, nullable)
		}
		r, null := b.node(rest[0], name, named)
		return r, nullable || null
	}
	objects := true
	for _, a := range rest {
		if _, ok := b.objectAlt(a); !ok {
			objects = false
		}
	}
	if objects {
		return b.objectUnion(s, rest, name, nullable)
	}
	if r, ok := b.elementUnion(s, rest, name); ok {
		return r, nullable
	}
	return b.kindUnion(s, rest, name, nullable)
}

// dropCatchAll removes the catch-all alternative of a tagged union (ACP v1
// writes one as its "other" variant): an object whose tag member is any
// string, required, and which excludes with not exactly the tag consts of
// the other alternatives. A generated tagged union keeps such objects in
// Unknown, so the alternative adds no variant; anything it says beside the
// tag (unevaluatedProperties, nested scopes) describes what Unknown holds.
// A not of any other shape is left in place and fails in node.
func (b *builder) dropCatchAll(s *schema.Schema, rest []*schema.Schema) []*schema.Schema {
	for i, a := range rest {
		if a.Not == nil {
			continue
		}
		tag, excluded, ok := catchAllTag(a)
		if !ok {
			return rest
		}
		others := slices.Delete(slices.Clone(rest), i, i+1)
		var consts []string
		for _, o := range others {
			x, isObj := b.objectAlt(o)
			if !isObj {
				return rest
			}
			if v, has := x.consts[tag]; has {
				consts = append(consts, v)
			}
		}
		slices.Sort(consts)
		slices.Sort(excluded)
		if !slices.Equal(consts, excluded) {
			b.fail("%s: the catch-all alternative excludes %v, but the other alternatives fix %s to %v", a.Pointer, excluded, tag, consts)
			return others
		}
		return others
	}
	return rest
}

// catchAllTag reports the tag of a catch-all alternative and the consts its
// not excludes: an object whose tag member is a required plain string and
// whose not names, in each of its alternatives, that member alone, fixed
// to a const (ACP v1's catch-all, and v2's "other" alternatives, which
// also name the members any variant has: kept, with the rest, in the
// union's Unknown).
func catchAllTag(a *schema.Schema) (string, []string, bool) {
	n := a.Not
	if n == nil || len(n.AnyOf) == 0 || len(n.OneOf)+len(n.AllOf) > 0 || n.Ref != "" || len(n.Properties) > 0 || n.Not != nil {
		return "", nil, false
	}
	tag := ""
	var out []string
	for _, e := range n.AnyOf {
		var v string
		if len(e.Properties) != 1 || len(e.Required) != 1 || e.Required[0] != e.Properties[0].Name ||
			!constOnly(e.Properties[0].Schema) || json.Unmarshal(e.Properties[0].Schema.Const, &v) != nil ||
			tag != "" && e.Properties[0].Name != tag {
			return "", nil, false
		}
		tag = e.Properties[0].Name
		out = append(out, v)
	}
	i := slices.IndexFunc(a.Properties, func(p schema.Property) bool { return p.Name == tag })
	if i < 0 || !slices.Contains(a.Required, tag) {
		return "", nil, false
	}
	if k, ok := plainScalar(a.Properties[i].Schema); !ok || k != "string" {
		return "", nil, false
	}
	if u := a.UnevaluatedProperties; u != nil && (u.Bool == nil || !*u.Bool) {
		return "", nil, false
	}
	return tag, out, true
}

// constUnion builds an enum from alternatives that are all consts, or consts
// and one plain string/integer type (an open enum, anyOf only).
func (b *builder) constUnion(s *schema.Schema, rest []*schema.Schema, name string) (*Ref, bool) {
	var consts []*schema.Schema
	plain := ""
	var plainAlt *schema.Schema
	for _, a := range rest {
		if constOnly(a) {
			consts = append(consts, a)
			continue
		}
		if k, ok := plainScalar(a); ok && plain == "" {
			plain, plainAlt = k, a
			continue
		}
		return nil, false
	}
	if len(consts) == 0 {
		return nil, false
	}
	var vals []json.RawMessage
	for _, c := range consts {
		vals = append(vals, c.Const)
	}
	kind := enumKind(vals)
	if kind == "mixed" || plain != "" && plain != kind {
		b.fail("%s: enum alternatives mix strings and integers", s.Pointer)
		return &Ref{Kind: Raw}, true
	}
	if plain != "" && len(s.OneOf) > 0 {
		b.fail("%s: oneOf of consts and a plain %s is contradictory (a listed value matches two alternatives); use anyOf", s.Pointer, plain)
		return &Ref{Kind: Raw}, true
	}
	base := String
	if kind == "integer" {
		base = Int
	}
	t := b.newType(s, name, Enum)
	t.Base = &Ref{Kind: base}
	t.Open = plainAlt != nil || b.openByDefault(s, base)
	for _, c := range consts {
		b.enumValue(t, c.Const, c.Title, c.Description, c.Pointer)
	}
	if plainAlt != nil && plainAlt.Description != "" {
		t.Doc = strings.TrimSpace(t.Doc + "\n\nOther values: " + strings.TrimSpace(plainAlt.Description))
	}
	b.checkEnumNames(t)
	return &Ref{Kind: Named, Named: t}, true
}

// objectUnion builds a union of objects chosen by a tag member or by
// required members, with members common to every variant (the union's own
// properties) and at most one default variant.
func (b *builder) objectUnion(s *schema.Schema, rest []*schema.Schema, name string, nullable bool) (*Ref, bool) {
	var as []*alt
	for i, a := range rest {
		x, ok := b.objectAlt(a)
		if !ok {
			b.fail("%s: alternative %d of a union with common members must be an object", s.Pointer, i)
			return &Ref{Kind: Raw}, nullable
		}
		as = append(as, x)
	}
	t := b.newType(s, name, Union)
	tag, keys, def, ok := b.chooser(s, as)
	if !ok {
		return &Ref{Kind: Named, Named: t}, nullable
	}
	if tag != "" {
		t.Union, t.Tag = ByTag, tag
	} else {
		t.Union = ByMembers
	}
	reserved := map[string]bool{"Unknown": tag != "", "Tag": tag != ""}
	t.Closed = s.AdditionalProperties.IsFalse()
	t.Common = b.fields(s, name, tag, reserved)
	if all, scoped := b.forbidden(s, t.Common); len(all)+len(scoped) > 0 {
		b.fail("%s: forbidden members of a union's common part are unsupported; forbid them in its variants", s.Pointer)
	}
	for _, f := range t.Common {
		reserved[f.Go] = true
	}
	t.Variants = b.variants(t, as, tag, keys, def, name, reserved)
	return &Ref{Kind: Named, Named: t}, nullable
}

// chooser finds how a union's object alternatives are told apart: a tag
// member (from an override, the discriminator annotation, or the one member
// every tagged alternative fixes with a distinct string const), else the
// required members only one alternative has. At most one alternative may be
// chosen by default: the one without a tag, or without such members.
func (b *builder) chooser(s *schema.Schema, as []*alt) (tag string, keys [][]string, def int, ok bool) {
	def = -1
	forced := false
	if o, has := b.ov.Union(s.Pointer); has {
		tag, forced = o.Tag, true
	} else if s.Discriminator != "" {
		tag = s.Discriminator
	} else {
		var candidates []string
		for _, a := range as {
			for c := range a.consts {
				if !slices.Contains(candidates, c) {
					candidates = append(candidates, c)
				}
			}
		}
		slices.Sort(candidates)
		for _, c := range candidates {
			if b.tagFits(as, c, false) {
				tag = c
				break
			}
		}
	}
	if tag != "" {
		if !b.tagFits(as, tag, forced) {
			b.fail("%s: member %q does not tell the alternatives apart: each needs a distinct string const for it, and at most one may lack the member (the default)", s.Pointer, tag)
			return "", nil, -1, false
		}
		for i, a := range as {
			if _, has := a.consts[tag]; !has {
				def = i
			}
		}
		return tag, make([][]string, len(as)), def, true
	}
	keys = make([][]string, len(as))
	if len(as) == 1 {
		return "", keys, 0, true
	}
	for i, a := range as {
		for _, r := range a.required {
			unique := true
			for j, o := range as {
				if j != i && slices.Contains(o.props, r) {
					unique = false
				}
			}
			if unique {
				keys[i] = append(keys[i], r)
			}
		}
		if len(keys[i]) == 0 {
			if def >= 0 {
				b.fail("%s: object alternatives need a tag member (a required string const) or required members that only one of them has; at most one may have neither (the default)", s.Pointer)
				return "", nil, -1, false
			}
			def = i
		}
	}
	return "", keys, def, true
}

// tagFits reports whether every alternative fixes member tag to a distinct
// string, except at most one that lacks the member entirely (the default).
// Unless forced (an override names the tag), one alternative at least must
// fix it.
func (b *builder) tagFits(as []*alt, tag string, forced bool) bool {
	seen := map[string]bool{}
	lacking := 0
	for _, a := range as {
		v, has := a.consts[tag]
		switch {
		case !has && slices.Contains(a.props, tag) && !slices.Contains(a.nulls, tag):
			return false
		case !has:
			lacking++
		case seen[v]:
			return false
		}
		seen[v] = true
	}
	return lacking <= 1 && (lacking < len(as) || forced)
}

// isNullSchema reports whether s is {type: null}, annotations aside.
func isNullSchema(s *schema.Schema) bool {
	if len(s.Types) != 1 || s.Types[0] != "null" {
		return false
	}
	c := *s
	c.Types = nil
	return !shapeKeywords(&c)
}

// variants builds the variants of an object union (or of the elements of a
// ByElement union).
func (b *builder) variants(t *Type, as []*alt, tag string, keys [][]string, def int, name string, reserved map[string]bool) []*Variant {
	var out []*Variant
	for i, a := range as {
		v := &Variant{Kind: '{', Doc: a.doc, Keys: keys[i], Default: i == def, NullTag: i == def && tag != "" && slices.Contains(a.nulls, tag)}
		switch {
		case tag != "" && a.consts[tag] != "":
			v.Tag = a.consts[tag]
			v.Go = naming.Go(v.Tag)
		case a.title != "":
			v.Go = naming.Go(a.title)
		case a.ref != "":
			_, p := b.resolve(a.ref, a.src.Pointer)
			_, d := path.Split(p)
			v.Go = naming.Go(d)
		case len(v.Keys) > 0:
			v.Go = naming.Go(v.Keys[0])
		case v.Default:
			v.Go = "Other"
		default:
			b.fail("%s: alternative %d needs a title (or a tag) to name its variant", t.Pointer, i)
			continue
		}
		if a.nested {
			v.Ref, v.Nested = b.ref(a.ref, a.src.Pointer), true
			if in := v.Ref.Named; v.Ref.Kind != Named || in.Kind != Union || in.Union != ByTag && in.Union != ByMembers || in.Tag == tag || v.Tag == "" {
				b.fail("%s: alternative %d wraps a union that is not one of objects with a tag of its own, chosen by this union's tag", t.Pointer, i)
				continue
			}
		} else if a.ref != "" {
			v.Ref = b.ref(a.ref, a.src.Pointer)
		} else {
			st := b.newType(a.target, name+v.Go, Struct)
			st.Closed = a.target.AdditionalProperties.IsFalse()
			st.Fields = b.fields(a.target, name+v.Go, tag, map[string]bool{"Extra": true})
			st.Forbidden, st.Scoped = b.forbidden(a.target, st.Fields)
			v.Ref = &Ref{Kind: Named, Named: st}
		}
		if v.Ref.Kind != Named || v.Ref.Named.Kind != Struct && !v.Nested {
			b.fail("%s: alternative %d must be an object with properties", t.Pointer, i)
			continue
		}
		if v.Ref.Named.Import != t.Import {
			b.fail("%s: alternative %d is a type of %s; a union's variants must be types of its own package", t.Pointer, i, v.Ref.Named.Import)
			continue
		}
		if reserved[v.Go] && v.Tag != "" && !reserved[v.Go+t.Name] {
			// A tag named like the union's own Unknown or Tag (ACP's
			// "unknown" state): the variant takes the union's name after it.
			v.Go += t.Name
		}
		if reserved[v.Go] {
			b.fail("%s: variant %s collides with a member or method of the union; add a title", t.Pointer, v.Go)
		}
		reserved[v.Go] = true
		out = append(out, v)
	}
	return out
}

// elementUnion builds a union of arrays whose element objects are told apart
// like an object union's alternatives.
func (b *builder) elementUnion(s *schema.Schema, rest []*schema.Schema, name string) (*Ref, bool) {
	var as []*alt
	var minItems []*int
	for _, a := range rest {
		if !(len(a.Types) == 1 && a.Types[0] == "array") || a.Items == nil ||
			a.Minimum != nil || a.Maximum != nil || a.MinLength != nil || a.MaxLength != nil || a.Pattern != "" {
			return nil, false
		}
		minItems = append(minItems, a.MinItems)
		x, ok := b.objectAlt(a.Items)
		if !ok {
			return nil, false
		}
		x.title, x.doc = a.Title, strings.TrimSpace(a.Description)
		as = append(as, x)
	}
	t := b.newType(s, name, Union)
	t.Union = ByElement
	tag, keys, def, ok := b.chooser(s, as)
	if !ok {
		return &Ref{Kind: Named, Named: t}, true
	}
	t.Tag = tag
	if tag != "" {
		b.fail("%s: a union of arrays of tagged elements is unsupported; tell the elements apart by required members", s.Pointer)
	}
	t.Variants = b.variants(t, as, tag, keys, def, name+"Item", map[string]bool{})
	for i, v := range t.Variants {
		v.Ref = &Ref{Kind: Array, Elem: v.Ref}
		if i < len(minItems) {
			v.Ref.MinItems = minItems[i] // checked once the whole array is read
		}
		v.Kind = '['
	}
	return &Ref{Kind: Named, Named: t}, true
}

// kindUnion builds a union whose alternatives differ in JSON kind. Several
// object alternatives form an object union of their own (told apart by a tag
// or by required members), several arrays of objects a union of arrays; that
// union is then the variant of its kind.
func (b *builder) kindUnion(s *schema.Schema, rest []*schema.Schema, name string, nullable bool) (*Ref, bool) {
	t := b.newType(s, name, Union)
	t.Union = ByKind
	type group struct {
		kind byte
		alts []*schema.Schema
	}
	var groups []*group
	for _, a := range rest {
		k := b.syntacticKind(a)
		if k == 0 {
			b.fail("%s: cannot tell the JSON kind of alternative %s", s.Pointer, a.Pointer)
			continue
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.kind == k })
		if i < 0 {
			groups = append(groups, &group{kind: k})
			i = len(groups) - 1
		}
		groups[i].alts = append(groups[i].alts, a)
	}
	for _, g := range groups {
		word := kindName(g.kind)
		var r *Ref
		var doc, title string
		if g.kind == '0' && len(g.alts) == 2 {
			// {integer} beside {number}: every integer is a number, so the
			// number alternative takes both (float64; integers beyond 2^53
			// lose precision).
			if i := numberOverInteger(g.alts); i >= 0 {
				g.alts = g.alts[i : i+1]
			}
		}
		if len(g.alts) == 1 {
			a := g.alts[0]
			var null bool
			r, null = b.node(a, name+word, false)
			nullable = nullable || null
			doc, title = strings.TrimSpace(a.Description), a.Title
		} else {
			sub := &schema.Schema{Pointer: fmt.Sprintf("%s(%s alternatives)", s.Pointer, kindWordOf(g.kind))}
			var null bool
			switch g.kind {
			case '{':
				r, null = b.objectUnion(sub, g.alts, name+word, false)
			case '[':
				var ok bool
				if r, ok = b.elementUnion(sub, g.alts, name+word); !ok {
					b.fail("%s: several array alternatives need objects items told apart by required members", s.Pointer)
					continue
				}
			default:
				b.fail("%s: union alternatives must differ in JSON kind (object, array, string, number, boolean), or be objects told apart by a tag or by required members", s.Pointer)
				continue
			}
			nullable = nullable || null
		}
		if k, _ := jsonKind(r); k != g.kind {
			b.fail("%s: alternative of kind %s builds a %s", s.Pointer, kindWordOf(g.kind), kindWordOf(k))
			continue
		}
		goName := word
		if title != "" {
			goName = naming.Go(title)
		}
		t.Variants = append(t.Variants, &Variant{Kind: g.kind, Go: goName, Ref: r, Doc: doc})
	}
	return &Ref{Kind: Named, Named: t}, nullable
}

// numberOverInteger returns the index of the plain number alternative of
// two plain scalar alternatives integer and number, or -1.
func numberOverInteger(alts []*schema.Schema) int {
	kinds := [2]string{}
	for i, a := range alts {
		if a.Const != nil || a.Ref != "" || len(a.AnyOf)+len(a.OneOf)+len(a.AllOf) > 0 || len(a.Enum) > 0 || a.HasConstraints() || len(a.Types) != 1 {
			return -1
		}
		kinds[i] = a.Types[0]
	}
	switch kinds {
	case [2]string{"integer", "number"}:
		return 1
	case [2]string{"number", "integer"}:
		return 0
	}
	return -1
}

// syntacticKind tells the JSON kind an alternative accepts: from a $ref's
// built type, or from an inline node's keywords. 0 when it cannot.
func (b *builder) syntacticKind(a *schema.Schema) byte {
	if ref := refOf(a); ref != "" && (a.Ref != "" || wrapped(a) != "") {
		k, _ := jsonKind(b.ref(ref, a.Pointer))
		return k
	}
	types := slices.DeleteFunc(slices.Clone(a.Types), func(t string) bool { return t == "null" })
	if len(types) == 0 {
		switch {
		case len(a.Properties) > 0 || a.AdditionalProperties != nil:
			types = []string{"object"}
		case a.Items != nil:
			types = []string{"array"}
		case len(a.Enum) > 0 || a.Const != nil:
			vals := slices.Clone(a.Enum)
			if a.Const != nil {
				vals = append(vals, a.Const)
			}
			types = []string{enumKind(slices.DeleteFunc(vals, isNull))}
		}
	}
	if len(types) != 1 {
		return 0
	}
	return map[string]byte{"object": '{', "array": '[', "string": '"', "integer": '0', "number": '0', "boolean": 't'}[types[0]]
}

func kindName(k byte) string {
	return map[byte]string{'{': "Object", '[': "List", '"': "String", '0': "Number", 't': "Bool"}[k]
}

func kindWordOf(k byte) string {
	return map[byte]string{'{': "object", '[': "array", '"': "string", '0': "number", 't': "boolean"}[k]
}

func jsonKind(r *Ref) (byte, string) {
	switch r.Kind {
	case String:
		return '"', "String"
	case Bool:
		return 't', "Bool"
	case Int, Float:
		return '0', "Number"
	case Array:
		return '[', "List"
	case RawObject:
		return '{', "Object"
	case Named:
		t := r.Named
		switch t.Kind {
		case Struct, MapType:
			return '{', "Object"
		case Union:
			if t.Union == ByElement {
				return '[', "List"
			}
			if t.Union != ByKind {
				return '{', "Object"
			}
		case Enum, Scalar:
			return jsonKind(t.Base)
		}
	}
	return 0, ""
}

func (b *builder) newType(s *schema.Schema, name string, kind TypeKind) *Type {
	t := &Type{Name: name, Doc: strings.TrimSpace(s.Description), Pointer: s.Pointer, Kind: kind}
	if o, ok := b.ov.Type(s.Pointer); ok {
		t.Name = o.Go
	}
	names, key := b.byName, t.Name
	file, _, _ := strings.Cut(s.Pointer, "#")
	if im, ok := b.imports[file]; ok {
		t.Import, t.ImportName = im.Path, im.Catalogue.Package
		names, key = b.importedNames, im.Path+"."+t.Name
	} else if !slices.Contains(b.own, file) {
		b.fail("%s: a type of %s, which is neither one of the catalogue's schemas nor an imported catalogue's; import its catalogue", s.Pointer, file)
	}
	if prev, ok := names[key]; ok {
		b.fail("%s: Go type name %s is already used by %s; add a type override", s.Pointer, t.Name, prev.Pointer)
	}
	names[key] = t
	return t
}

// represent applies spec/overrides.json's represent entry of t, if any: each
// member it lists takes the representation of the same member of the entry's
// other definition (wire.Nullable[T]), after checking that this changes
// nothing but the member's presence representation.
func (b *builder) represent(t *Type) {
	o, key, ok := b.ov.Representation(t.Pointer)
	if !ok {
		return
	}
	where := "spec/overrides.json: represent entry " + key
	if t.Kind != Struct {
		b.fail("%s: %s is not an object with properties", where, t.Name)
		return
	}
	as := b.ref(o.As, t.Pointer)
	if as.Kind != Named || as.Named.Kind != Struct {
		b.fail("%s: as %q is not an object definition with properties", where, o.As)
		return
	}
	other := as.Named
	for _, m := range o.Members {
		f, of := fieldNamed(t.Fields, m), fieldNamed(other.Fields, m)
		switch {
		case f == nil || of == nil:
			b.fail("%s: member %q is not a property of both %s and %s", where, m, t.Name, other.Name)
		case f.Required || of.Required:
			b.fail("%s: member %q must be optional in both %s and %s", where, m, t.Name, other.Name)
		case f.Const != nil || of.Const != nil || f.Ref.Kind == Raw || of.Ref.Kind == Raw:
			b.fail("%s: member %q is a const or raw JSON, whose representation does not depend on null", where, m)
		case f.Nullable || !of.Nullable:
			b.fail("%s: member %q already has %s.%s's representation (nullable in both or in neither); the entry changes nothing", where, m, other.Name, m)
		case !sameGoType(f.Ref, of.Ref):
			b.fail("%s: member %q has another Go type in %s than in %s", where, m, t.Name, other.Name)
		default:
			f.Represented = other.Name + "." + m
		}
	}
}

func fieldNamed(fs []*Field, json string) *Field {
	for _, f := range fs {
		if f.JSON == json {
			return f
		}
	}
	return nil
}

// sameGoType reports whether two references have the same Go type; their
// constraints, which each member's decoder checks, may differ.
func sameGoType(a, b *Ref) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Named == b.Named && sameGoType(a.Elem, b.Elem)
}

// checkDefaults checks that every default fits its member's type, so the
// generated GetX accessors cannot fail.
func (b *builder) checkDefaults(t *Type) {
	for _, f := range append(slices.Clone(t.Fields), t.Common...) {
		if f.Default == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(f.Default, &v); err != nil {
			b.fail("%s: default is not JSON", f.Pointer)
			continue
		}
		if err := fits(f.Ref, v, f.Nullable); err != "" {
			b.fail("%s: default %s does not fit: %s", f.Pointer, Canonical(f.Default), err)
		}
	}
}

// fits reports ("" for yes) whether a decoded JSON value fits r.
func fits(r *Ref, v any, nullable bool) string {
	if v == nil {
		if nullable || r.Kind == Raw {
			return ""
		}
		return "null"
	}
	switch r.Kind {
	case String:
		if _, ok := v.(string); !ok {
			return "want a string"
		}
	case Bool:
		if _, ok := v.(bool); !ok {
			return "want a boolean"
		}
	case Int, Float:
		n, ok := v.(float64)
		if !ok || r.Kind == Int && n != float64(int64(n)) {
			return "want a number"
		}
	case RawObject:
		if _, ok := v.(map[string]any); !ok {
			return "want an object"
		}
	case Array:
		a, ok := v.([]any)
		if !ok {
			return "want an array"
		}
		for _, e := range a {
			if err := fits(r.Elem, e, false); err != "" {
				return err
			}
		}
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return "want an object"
		}
		for _, e := range m {
			if err := fits(r.Elem, e, false); err != "" {
				return err
			}
		}
	case Named:
		t := r.Named
		switch t.Kind {
		case Struct:
			m, ok := v.(map[string]any)
			if !ok {
				return "want an object"
			}
			for _, f := range t.Fields {
				mv, has := m[f.JSON]
				if !has {
					if f.Required {
						return "lacks " + f.JSON
					}
					continue
				}
				if err := fits(f.Ref, mv, f.Nullable); err != "" {
					return f.JSON + ": " + err
				}
			}
			if t.Closed {
				for k := range m {
					if !slices.ContainsFunc(t.Fields, func(f *Field) bool { return f.JSON == k }) {
						return "unknown member " + k
					}
				}
			}
			for _, k := range t.Forbidden {
				if _, has := m[k]; has {
					return "forbidden member " + k
				}
			}
		case Enum, Scalar:
			if err := fits(t.Base, v, false); err != "" {
				return err
			}
			if t.Kind == Enum && !t.Open && !slices.ContainsFunc(t.Values, func(e *EnumValue) bool {
				s, isStr := v.(string)
				n, _ := v.(float64)
				return isStr && e.String == s || !isStr && float64(e.Int) == n
			}) {
				return "not an allowed value"
			}
		case MapType:
			return fits(&Ref{Kind: Map, Elem: t.Elem}, v, false)
		}
	}
	return ""
}

// Canonical re-encodes JSON for comparisons in tests and docs.
func Canonical(v json.RawMessage) string {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return string(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(x)
	return strings.TrimSpace(buf.String())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// plainKinds returns the JSON kinds s allows when it is only a list of
// plain kinds: a type list, or an anyOf/oneOf of alternatives that each
// name kinds and nothing else (descriptions, titles and formats aside).
// Otherwise nil.
func plainKinds(s *schema.Schema) []string {
	plain := func(a *schema.Schema) bool {
		return a.Ref == "" && len(a.Properties) == 0 && len(a.Required) == 0 && a.AdditionalProperties == nil && a.Items == nil &&
			a.Enum == nil && a.Const == nil && len(a.AnyOf)+len(a.OneOf)+len(a.AllOf) == 0 && !a.HasConstraintsOrNot()
	}
	var out []string
	add := func(a *schema.Schema) bool {
		if len(a.Types) == 0 || !plain(a) {
			return false
		}
		for _, t := range a.Types {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		return true
	}
	alts := append(slices.Clone(s.AnyOf), s.OneOf...)
	switch {
	case len(alts) == 0 && add(s):
	case len(alts) > 0 && len(s.Types) == 0 && len(s.Properties) == 0:
		for _, a := range alts {
			if !add(a) {
				return nil
			}
		}
	default:
		return nil
	}
	slices.Sort(out)
	return out
}
