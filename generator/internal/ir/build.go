package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/naming"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

// Overrides is the hand-kept table of naming and emitter choices, keyed by
// schema location (file#/pointer). Every entry must match a node the build
// visits; an unused entry fails the build so the table cannot rot.
type Overrides struct {
	Types  map[string]TypeOverride  `json:"types"`
	Fields map[string]FieldOverride `json:"fields"`
}

// TypeOverride renames a generated type or picks its emitter.
type TypeOverride struct {
	Go      string `json:"go,omitempty"`
	Emitter string `json:"emitter,omitempty"`
	Reason  string `json:"reason"`
}

// FieldOverride renames a struct field.
type FieldOverride struct {
	Go     string `json:"go"`
	Reason string `json:"reason"`
}

type builder struct {
	files    map[string]*schema.File
	ov       *Overrides
	used     map[string]bool
	byPtr    map[string]*Ref
	building map[string]bool
	byName   map[string]*Type
	errs     []string
}

// Build turns a catalogue and its schema files into a Package.
func Build(cat *catalogue.Catalogue, files []*schema.File, ov *Overrides) (*Package, error) {
	if ov == nil {
		ov = &Overrides{}
	}
	b := &builder{
		files: map[string]*schema.File{}, ov: ov, used: map[string]bool{},
		byPtr: map[string]*Ref{}, building: map[string]bool{}, byName: map[string]*Type{},
	}
	for _, f := range files {
		b.files[f.Name] = f
	}
	pkg := &Package{Name: cat.Package, Catalogue: cat}
	// Every $def of every listed schema file becomes part of the package, in file order,
	// so that types exist even before a method uses them.
	for _, name := range cat.Schemas {
		f, ok := b.files[name]
		if !ok {
			b.fail("schema file %s is listed by the catalogue but was not loaded", name)
			continue
		}
		for _, def := range f.Root.DefOrder {
			b.ref(f.Name+"#/$defs/"+def, "")
		}
	}
	for i, m := range cat.Methods {
		mm := b.method(cat, m)
		mm.Index = i
		pkg.Methods = append(pkg.Methods, mm)
	}
	for _, t := range b.byName {
		pkg.Types = append(pkg.Types, t)
	}
	sort.Slice(pkg.Types, func(i, j int) bool { return pkg.Types[i].Name < pkg.Types[j].Name })
	for k := range ov.Types {
		if !b.used["type:"+k] {
			b.fail("override for type %s matches no schema node", k)
		}
	}
	for k := range ov.Fields {
		if !b.used["field:"+k] {
			b.fail("override for field %s matches no schema property", k)
		}
	}
	if len(b.errs) > 0 {
		slices.Sort(b.errs)
		return nil, fmt.Errorf("%s", strings.Join(slices.Compact(b.errs), "\n"))
	}
	return pkg, nil
}

func (b *builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Sprintf(format, args...))
}

func (b *builder) method(cat *catalogue.Catalogue, m catalogue.Method) *Method {
	out := &Method{Method: m, FromSide: cat.Side(m.From), ToSide: cat.Side(m.To)}
	if m.Params != nil {
		out.Params = b.ref(*m.Params, "")
	}
	if m.Result != nil {
		out.Result = b.ref(*m.Result, "")
	}
	if m.Operations == nil {
		return out
	}
	ops := &Ops{}
	var st *Type
	if out.Params != nil && out.Params.Kind == Named && out.Params.Named.Kind == Struct {
		st = out.Params.Named
	} else {
		b.fail("%s: a method with operations needs object params", m.Wire)
		return out
	}
	field := func(name string) *Field {
		for _, f := range st.Fields {
			if f.JSON == name {
				return f
			}
		}
		b.fail("%s: params have no member %q", m.Wire, name)
		return nil
	}
	for _, s := range m.Operations.Selector {
		f := field(s)
		if f != nil && (f.Ref.Kind != String || !f.Required || f.Nullable) {
			b.fail("%s: selector member %q must be a required string", m.Wire, s)
		}
		ops.Selector = append(ops.Selector, f)
	}
	ops.Payload = field(m.Operations.Payload)
	if ops.Payload != nil && ops.Payload.Ref.Kind != Raw {
		b.fail("%s: payload member %q must be schemaless (any JSON) so operations can type it", m.Wire, m.Operations.Payload)
	}
	for _, o := range m.Operations.Items {
		op := &Op{Operation: o}
		for _, s := range m.Operations.Selector {
			op.MatchValues = append(op.MatchValues, o.Match[s])
		}
		if o.Args != nil {
			op.Args = b.ref(*o.Args, "")
		}
		if o.Result != nil {
			op.Result = b.ref(*o.Result, "")
		}
		ops.Items = append(ops.Items, op)
	}
	out.Ops = ops
	return out
}

// lookup finds the node a reference names. ref is "file#/$defs/x" or "#/$defs/x"
// relative to from.
func (b *builder) lookup(ref, from string) (*schema.Schema, string) {
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" {
		file, _, _ = strings.Cut(from, "#")
	}
	f, ok := b.files[file]
	if !ok {
		b.fail("%s: $ref %q names a schema file that is not loaded", from, ref)
		return nil, ""
	}
	def, ok := strings.CutPrefix(frag, "/$defs/")
	if !ok || strings.Contains(def, "/") {
		b.fail("%s: $ref %q must point at a top-level $defs entry", from, ref)
		return nil, ""
	}
	s, ok := f.Root.Defs[def]
	if !ok {
		b.fail("%s: $ref %q: no such $defs entry", from, ref)
		return nil, ""
	}
	return s, def
}

// ref resolves a named definition to a Ref, building its type once.
func (b *builder) ref(ptr, from string) *Ref {
	s, def := b.lookup(ptr, from)
	if s == nil {
		return &Ref{Kind: Raw}
	}
	key := s.Pointer
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
	r, nullable := b.node(s, naming.Go(def), true)
	if nullable {
		b.fail("%s: a nullable definition cannot be named; make the members that use it nullable", key)
	}
	b.byPtr[key] = r
	return r
}

// node classifies a schema node. name is the Go name a new type would get; named
// is set for $defs entries (free-form objects then get an alias type).
func (b *builder) node(s *schema.Schema, name string, named bool) (*Ref, bool) {
	if s.Bool != nil {
		if !*s.Bool {
			b.fail("%s: the schema false is only allowed as additionalProperties", s.Pointer)
		}
		return &Ref{Kind: Raw}, false
	}
	if s.Ref != "" {
		if len(s.Types) > 0 || len(s.Properties) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || len(s.Enum) > 0 {
			b.fail("%s: $ref with sibling type keywords is unsupported", s.Pointer)
		}
		return b.ref(s.Ref, s.Pointer), false
	}
	if alts := append(slices.Clone(s.AnyOf), s.OneOf...); len(alts) > 0 {
		if len(s.AnyOf) > 0 && len(s.OneOf) > 0 {
			b.fail("%s: anyOf together with oneOf is unsupported", s.Pointer)
		}
		return b.union(s, alts, name)
	}
	types := slices.Clone(s.Types)
	nullable := false
	if i := slices.Index(types, "null"); i >= 0 {
		nullable = true
		types = slices.Delete(types, i, i+1)
	}
	if len(types) == 0 && len(s.Enum) > 0 {
		types = []string{enumKind(s.Enum)}
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
			return &Ref{Kind: Raw}, nullable
		}
	}
	r := &Ref{Minimum: s.Minimum, Maximum: s.Maximum, MinLength: s.MinLength, MaxLength: s.MaxLength, MinItems: s.MinItems, Pattern: s.Pattern}
	switch types[0] {
	case "string":
		r.Kind = String
		if len(s.Enum) > 0 {
			return b.enum(s, name, StringEnum), nullable
		}
	case "boolean":
		r.Kind = Bool
	case "integer":
		r.Kind = Int
		if len(s.Enum) > 0 {
			return b.enum(s, name, IntEnum), nullable
		}
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
			if elem.HasConstraints() || elem.Kind == Array || elem.Kind == Map {
				b.fail("%s: array items must be unconstrained scalars or named types", s.Items.Pointer)
			}
			r.Elem = elem
		}
	case "object":
		return b.object(s, name, named), nullable
	default:
		b.fail("%s: unsupported type %q", s.Pointer, types[0])
		r.Kind = Raw
	}
	if len(s.Enum) > 0 {
		b.fail("%s: enum on type %s is unsupported", s.Pointer, types[0])
	}
	if s.Const != nil && r.Kind != String {
		b.fail("%s: const is supported on required string members only", s.Pointer)
	}
	return r, nullable
}

func enumKind(vals []json.RawMessage) string {
	kind := ""
	for _, v := range vals {
		k := "string"
		if len(v) > 0 && v[0] != '"' {
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
		if null || elem.HasConstraints() || elem.Kind == Array || elem.Kind == Map {
			b.fail("%s: map values must be unconstrained, non-null scalars or named types", ap.Pointer)
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
	r := &Ref{Kind: Named, Named: t}
	bit := 0
	for _, p := range s.Properties {
		f := &Field{JSON: p.Name, Go: naming.Go(p.Name), Doc: p.Schema.Description, Required: slices.Contains(s.Required, p.Name), Bit: -1}
		fptr := s.Pointer + "/properties/" + p.Name
		if o, ok := b.ov.Fields[fptr]; ok {
			f.Go = o.Go
			b.used["field:"+fptr] = true
		}
		if p.Schema.Ref != "" && p.Schema.Description == "" {
			if def, _ := b.lookup(p.Schema.Ref, p.Schema.Pointer); def != nil {
				f.Doc = def.Description
			}
		}
		f.Ref, f.Nullable = b.node(p.Schema, name+f.Go, false)
		f.Default = p.Schema.Default
		if p.Schema.Const != nil {
			if f.Required {
				f.Const = p.Schema.Const
			} else {
				b.fail("%s: const on an optional member is unsupported", fptr)
			}
		}
		if f.Required {
			f.Bit = bit
			bit++
		}
		if f.Go == "Extra" {
			b.fail("%s: member name collides with the Extra field; add a field override", fptr)
		}
		t.Fields = append(t.Fields, f)
	}
	if bit > 64 {
		b.fail("%s: more than 64 required members", s.Pointer)
	}
	for _, req := range s.Required {
		if !slices.ContainsFunc(s.Properties, func(p schema.Property) bool { return p.Name == req }) {
			b.fail("%s: required member %q is not a property", s.Pointer, req)
		}
	}
	return r
}

func (b *builder) enum(s *schema.Schema, name string, kind TypeKind) *Ref {
	t := b.newType(s, name, kind)
	for _, v := range s.Enum {
		if kind == StringEnum {
			var str string
			if json.Unmarshal(v, &str) != nil {
				b.fail("%s: enum value %s is not a string", s.Pointer, v)
			}
			t.Strings = append(t.Strings, str)
		} else {
			var n int64
			if json.Unmarshal(v, &n) != nil {
				b.fail("%s: enum value %s is not an integer", s.Pointer, v)
			}
			t.Ints = append(t.Ints, n)
		}
	}
	if kind == StringEnum && t.Emitter == "" {
		t.Emitter = EmitGoJSONSchema
	}
	return &Ref{Kind: Named, Named: t}
}

func (b *builder) union(s *schema.Schema, alts []*schema.Schema, name string) (*Ref, bool) {
	nullable := false
	var rest []*schema.Schema
	for _, a := range alts {
		if len(a.Types) == 1 && a.Types[0] == "null" && a.Ref == "" {
			nullable = true
			continue
		}
		rest = append(rest, a)
	}
	if len(rest) == 1 {
		r, null := b.node(rest[0], name, false)
		return r, nullable || null
	}
	if prop, tags := b.discriminator(rest); prop != "" {
		return b.taggedUnion(s, rest, name, prop, tags), nullable
	}
	t := b.newType(s, name, Union)
	seen := map[byte]bool{}
	for _, a := range rest {
		r, null := b.node(a, name+"Variant", false)
		if null {
			nullable = true
		}
		k, goName := jsonKind(r)
		if k == 0 || seen[k] {
			b.fail("%s: union alternatives must differ in JSON kind (object, array, string, number, boolean), or all be objects with a required string const member that tells them apart", s.Pointer)
			continue
		}
		seen[k] = true
		if r.Kind == Named && r.Named.Name == name+"Variant" {
			b.fail("%s: inline object alternatives need a $defs name", s.Pointer)
		}
		t.Variants = append(t.Variants, &Variant{Kind: k, Go: goName, Ref: r})
	}
	return &Ref{Kind: Named, Named: t}, nullable
}

// discriminator finds the member that tells object alternatives apart: one
// that every alternative requires with a distinct string const. It returns
// the member name and each alternative's tag, or "" when there is none.
func (b *builder) discriminator(alts []*schema.Schema) (string, []string) {
	if len(alts) < 2 {
		return "", nil
	}
	var candidates []string
	consts := make([]map[string]string, len(alts))
	for i, a := range alts {
		if a.Ref != "" {
			a, _ = b.lookup(a.Ref, a.Pointer)
		}
		if a == nil || len(a.Properties) == 0 {
			return "", nil
		}
		consts[i] = map[string]string{}
		for _, p := range a.Properties {
			var v string
			if p.Schema.Const != nil && slices.Contains(a.Required, p.Name) && json.Unmarshal(p.Schema.Const, &v) == nil {
				consts[i][p.Name] = v
			}
		}
		if i == 0 {
			for k := range consts[0] {
				candidates = append(candidates, k)
			}
		}
	}
	slices.Sort(candidates)
	for _, prop := range candidates {
		tags := make([]string, len(alts))
		seen := map[string]bool{}
		ok := true
		for i := range alts {
			v, has := consts[i][prop]
			if !has || seen[v] {
				ok = false
				break
			}
			seen[v] = true
			tags[i] = v
		}
		if ok {
			return prop, tags
		}
	}
	return "", nil
}

// taggedUnion builds a union of objects selected by the discriminator member
// prop. Values whose tag names no alternative are kept verbatim (Unknown).
func (b *builder) taggedUnion(s *schema.Schema, alts []*schema.Schema, name, prop string, tags []string) *Ref {
	t := b.newType(s, name, Union)
	t.Discriminator = prop
	for i, a := range alts {
		r, null := b.node(a, name+naming.Go(tags[i]), false)
		if null || r.Kind != Named || r.Named.Kind != Struct {
			b.fail("%s: alternative %d of a discriminated union must be a non-null object", s.Pointer, i)
			continue
		}
		t.Variants = append(t.Variants, &Variant{Kind: '{', Go: naming.Go(tags[i]), Ref: r, Tag: tags[i]})
	}
	return &Ref{Kind: Named, Named: t}
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
		switch r.Named.Kind {
		case Struct, MapType:
			return '{', "Object"
		case StringEnum:
			return '"', "String"
		case IntEnum:
			return '0', "Number"
		}
	}
	return 0, ""
}

func (b *builder) newType(s *schema.Schema, name string, kind TypeKind) *Type {
	t := &Type{Name: name, Doc: strings.TrimSpace(s.Description), Pointer: s.Pointer, Kind: kind}
	if o, ok := b.ov.Types[s.Pointer]; ok {
		b.used["type:"+s.Pointer] = true
		if o.Go != "" {
			t.Name = o.Go
		}
		t.Emitter = o.Emitter
	}
	if t.Emitter == "" && kind != StringEnum {
		t.Emitter = EmitJennifer
	}
	if prev, ok := b.byName[t.Name]; ok {
		b.fail("%s: Go type name %s is already used by %s; add a type override", s.Pointer, t.Name, prev.Pointer)
	}
	b.byName[t.Name] = t
	return t
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
