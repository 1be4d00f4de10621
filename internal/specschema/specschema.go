// Package specschema compiles bridgekit's spec as the generator reads it,
// for a JSON Schema validator (santhosh-tekuri/jsonschema): the files under
// spec/schemas with the overlays of every catalogue in spec/catalogue
// applied (a retyped member, forbidden members as "name": false, variants
// added to a union), and ACP's rule for a tagged union's default variant
// made explicit. It is rebuilt here independently of the generator, so
// that tests (internal/schematest) and `bridgekit validate` judge
// documents by the schema rather than by the generated decoders.
//
// The package is internal so that its validator dependency never reaches
// an SDK user's build.
package specschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	pathpkg "path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Base is the URL the spec's schema files are registered under; their own
// $id is dropped so that relative references resolve between the files as
// the generator resolves them (relative to spec/schemas).
const Base = "https://spec.invalid/"

// Spec is a compiled spec. Its methods are safe for concurrent use.
type Spec struct {
	mu       sync.Mutex
	c        *jsonschema.Compiler
	docs     map[string]any // the loaded files, as guard left them
	compiled map[string]*jsonschema.Schema
}

// Load reads the schema files and catalogues of fsys, a spec directory
// (holding schemas/ and catalogue/), applies the catalogues' overlays to
// the schema files they name, and prepares a compiler.
func Load(fsys fs.FS) (*Spec, error) { return load(fsys, nil, "") }

// LoadUnder is Load with the members that overlays forbid under contract
// (Harn's, on a Harn connection) forbidden too: the spec a decode under
// that contract answers to.
func LoadUnder(fsys fs.FS, contract string) (*Spec, error) { return load(fsys, nil, contract) }

// LoadRetargeted is Load, with every overlay of a definition in file from
// applied also to the definition of the same name in file to: the spec of
// an older version of a vendored schema as bridgekit's overlays extend it
// (acp/v1/schema.json's Harn overlays on acp/v0.12.2/schema.json).
func LoadRetargeted(fsys fs.FS, from, to string) (*Spec, error) {
	return load(fsys, map[string]string{from: to}, "")
}

func load(fsys fs.FS, retarget map[string]string, contract string) (*Spec, error) {
	docs := map[string]any{}
	err := fs.WalkDir(fsys, "schemas", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("spec/%s: %w", p, err)
		}
		if m, ok := doc.(map[string]any); ok {
			delete(m, "$id")
		}
		docs[strings.TrimPrefix(p, "schemas/")] = doc
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		discriminate(doc, doc)
		guard(doc)
	}
	cats, _ := fs.Glob(fsys, "catalogue/*.json")
	slices.Sort(cats)
	for _, p := range cats {
		if err := applyOverlays(fsys, p, docs, retarget, contract); err != nil {
			return nil, err
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for name, doc := range docs {
		if err := c.AddResource(Base+name, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return &Spec{c: c, docs: docs, compiled: map[string]*jsonschema.Schema{}}, nil
}

// discriminate applies, everywhere in doc, the rule by which ACP's tagged
// unions choose their default variant and which an anyOf alone does not
// say: the variant without a tag (McpServer's stdio, AuthMethod's agent) is
// the one chosen when the tag member is absent. In plain JSON Schema an
// object tagged "terminal" whose terminal members are wrong still matches
// the open default variant; the decoders, like ACP's own, choose by the tag.
// So the default alternative gets not: {required: [tag]}. A union qualifies
// when every alternative but one fixes the same member to a const (inline,
// beside its allOf wrapper) and that one has no such member, itself or in
// the definition it wraps.
func discriminate(node any, root any) {
	switch n := node.(type) {
	case []any:
		for _, e := range n {
			discriminate(e, root)
		}
	case map[string]any:
		for _, k := range []string{"anyOf", "oneOf"} {
			if alts, ok := n[k].([]any); ok {
				markDefault(alts, root)
			}
		}
		for _, v := range n {
			discriminate(v, root)
		}
	}
}

// unionTag returns the member that the alternatives of a union fix to a
// const (the same member in each that fixes one), or "".
func unionTag(alts []any) string {
	tag := ""
	for _, a := range alts {
		m, ok := a.(map[string]any)
		if !ok {
			return ""
		}
		props, _ := m["properties"].(map[string]any)
		for name, p := range props {
			if pm, ok := p.(map[string]any); ok && pm["const"] != nil {
				if tag != "" && tag != name {
					return ""
				}
				tag = name
			}
		}
	}
	return tag
}

// guard makes a tagged union cheap to validate without changing what it
// accepts: each alternative A that fixes the tag to a const c becomes
// {"if": {"properties": {tag: {"const": c}}}, "then": A, "else": false}.
// A implies the if (it has that very property schema), so the two accept
// the same documents; but a document whose tag names another variant
// fails at once, where the validator would otherwise evaluate A whole to
// collect its errors, for every alternative of the union (ACP's
// SessionUpdate has over a dozen).
func guard(node any) {
	switch n := node.(type) {
	case []any:
		for _, e := range n {
			guard(e)
		}
	case map[string]any:
		for _, v := range n {
			guard(v)
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			alts, ok := n[k].([]any)
			if !ok {
				continue
			}
			tag := unionTag(alts)
			if tag == "" {
				continue
			}
			for i, a := range alts {
				m := a.(map[string]any)
				props, _ := m["properties"].(map[string]any)
				p, _ := props[tag].(map[string]any)
				if p == nil || p["const"] == nil {
					continue
				}
				alts[i] = map[string]any{
					"if":   map[string]any{"properties": map[string]any{tag: map[string]any{"const": p["const"]}}},
					"then": m,
					"else": false,
				}
			}
		}
	}
}

// guardedTag returns the tag of a union guard has guarded, or "".
func guardedTag(alts []any) string {
	for _, a := range alts {
		m, _ := a.(map[string]any)
		cond, _ := m["if"].(map[string]any)
		props, _ := cond["properties"].(map[string]any)
		for name := range props {
			return name
		}
	}
	return ""
}

func markDefault(alts []any, root any) {
	tag := unionTag(alts)
	if tag == "" {
		return
	}
	def := -1
	for i, a := range alts {
		m := a.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		if p, has := props[tag]; has {
			if pm, ok := p.(map[string]any); !ok || pm["const"] == nil && m["not"] == nil {
				return // the tag is there but fixed by no const, and no catch-all
			}
			continue
		}
		if def >= 0 {
			return
		}
		def = i
	}
	if def < 0 {
		return
	}
	m := alts[def].(map[string]any)
	if hasMember(m, tag, root) {
		return
	}
	if _, has := m["not"]; has {
		return
	}
	m["not"] = map[string]any{"required": []any{tag}}
}

// hasMember reports whether s, or the local definition it wraps ($ref or a
// single-$ref allOf), declares member.
func hasMember(s map[string]any, member string, root any) bool {
	ref, _ := s["$ref"].(string)
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 {
		if w, ok := all[0].(map[string]any); ok {
			ref, _ = w["$ref"].(string)
		}
	}
	if !strings.HasPrefix(ref, "#/$defs/") {
		return ref != "" // another file: assume it may, and leave it alone
	}
	defs, _ := root.(map[string]any)["$defs"].(map[string]any)
	d, _ := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	props, _ := d["properties"].(map[string]any)
	_, has := props[member]
	return d == nil || has
}

type overlay struct {
	Def      string   `json:"def"`
	Member   string   `json:"member"`
	Schema   string   `json:"schema"`
	Add      bool     `json:"add"`
	Forbid   []string `json:"forbid"`
	Contract string   `json:"contract"`
	Variants []string `json:"variants"`
}

// applyOverlays applies the overlays of one catalogue to the loaded files:
// forbidden members scoped to a contract only when it is contract.
func applyOverlays(fsys fs.FS, p string, docs map[string]any, retarget map[string]string, contract string) error {
	path := "spec/" + p
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		return err
	}
	var cat struct {
		Overlays []overlay `json:"overlays"`
		Extends  *struct {
			Catalogue string            `json:"catalogue"`
			Rebase    map[string]string `json:"rebase"`
		} `json:"extends"`
	}
	if err := json.Unmarshal(data, &cat); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if e := cat.Extends; e != nil {
		// An extension is its base's overlays, then its own, each read
		// against the files its rebase maps the base's to.
		baseData, err := fs.ReadFile(fsys, pathpkg.Join(pathpkg.Dir(p), e.Catalogue))
		if err != nil {
			return fmt.Errorf("%s: extends: %w", path, err)
		}
		var base struct {
			Overlays []overlay `json:"overlays"`
		}
		if err := json.Unmarshal(baseData, &base); err != nil {
			return fmt.Errorf("%s: extends: %w", path, err)
		}
		rb := func(ref string) string {
			file, frag, _ := strings.Cut(ref, "#")
			if to, ok := e.Rebase[file]; ok {
				return to + "#" + frag
			}
			return ref
		}
		var own []overlay
		for _, o := range append(base.Overlays, cat.Overlays...) {
			o.Def = rb(o.Def)
			if o.Schema != "" {
				o.Schema = rb(o.Schema)
			}
			o.Variants = slices.Clone(o.Variants)
			for i, v := range o.Variants {
				o.Variants[i] = rb(v)
			}
			own = append(own, o)
		}
		cat.Overlays = own
	}
	all := cat.Overlays
	for _, o := range cat.Overlays {
		file, frag, _ := strings.Cut(o.Def, "#")
		if to, ok := retarget[file]; ok {
			// A definition the older version lacks (v0.12.2 has no
			// AuthCapabilities) has nothing to extend: its documents
			// cannot hold the member.
			o.Def = to + "#" + frag
			if _, err := lookup(docs, o.Def); err == nil {
				all = append(all, o)
			}
		}
	}
	for _, o := range all {
		if o.Contract != "" && o.Contract != contract {
			continue
		}
		def, err := lookup(docs, o.Def)
		if err != nil {
			return fmt.Errorf("%s: overlay of %s: %w", path, o.Def, err)
		}
		props, _ := def["properties"].(map[string]any)
		switch {
		case len(o.Forbid) > 0:
			if props == nil {
				props = map[string]any{}
				def["properties"] = props
			}
			for _, f := range o.Forbid {
				props[f] = false
			}
		case len(o.Variants) > 0:
			key := "oneOf"
			if _, ok := def["anyOf"]; ok {
				key = "anyOf"
			}
			alts, _ := def[key].([]any)
			tag := guardedTag(alts)
			for _, v := range o.Variants {
				var alt any = map[string]any{"$ref": Base + v}
				// Guarded like the union's own alternatives (see guard)
				// when the added definition fixes the same tag.
				if vd, err := lookup(docs, v); err == nil && tag != "" {
					vprops, _ := vd["properties"].(map[string]any)
					if p, _ := vprops[tag].(map[string]any); p != nil && p["const"] != nil {
						alt = map[string]any{
							"if":   map[string]any{"properties": map[string]any{tag: map[string]any{"const": p["const"]}}},
							"then": alt,
							"else": false,
						}
					}
				}
				alts = append(alts, alt)
			}
			def[key] = alts
		case o.Add:
			if props == nil {
				props = map[string]any{}
				def["properties"] = props
			}
			if _, named := props[o.Member]; named {
				return fmt.Errorf("%s: overlay of %s adds member %q, which it names", path, o.Def, o.Member)
			}
			props[o.Member] = map[string]any{"anyOf": []any{map[string]any{"$ref": Base + o.Schema}, map[string]any{"type": "null"}}}
		default:
			old, ok := props[o.Member].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: overlay of %s: no member %q", path, o.Def, o.Member)
			}
			typed := map[string]any{"$ref": Base + o.Schema}
			if t, _ := old["type"].([]any); slices.Contains(t, any("null")) {
				typed = map[string]any{"anyOf": []any{typed, map[string]any{"type": "null"}}}
			}
			props[o.Member] = typed
		}
	}
	return nil
}

// lookup finds the $defs entry "<file>#/$defs/<name>" among docs.
func lookup(docs map[string]any, ref string) (map[string]any, error) {
	file, frag, _ := strings.Cut(ref, "#")
	node, ok := docs[file]
	if !ok {
		return nil, fmt.Errorf("no schema file %s", file)
	}
	for _, seg := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object at %s", ref, seg)
		}
		node = m[seg]
	}
	m, ok := node.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: no such definition", ref)
	}
	return m, nil
}

// Compile compiles the schema at loc, "<file>#<json pointer>" (file under
// spec/schemas). A location is compiled once and kept.
func (s *Spec) Compile(loc string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.compiled[loc]; ok {
		return sch, nil
	}
	sch, err := s.c.Compile(Base + s.throughGuards(loc))
	if err != nil {
		return nil, err
	}
	s.compiled[loc] = sch
	return sch, nil
}

// throughGuards rewrites loc, a location in the files as written, to the
// same node once guard has wrapped union alternatives: a step into a
// guarded alternative goes on through its "then".
func (s *Spec) throughGuards(loc string) string {
	file, frag, ok := strings.Cut(loc, "#")
	if !ok || frag == "" {
		return loc
	}
	node := s.docs[file]
	var out strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		out.WriteString("/" + tok)
		switch n := node.(type) {
		case map[string]any:
			node = n[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return loc
			}
			node = n[i]
			if m, ok := node.(map[string]any); ok && m["if"] != nil && m["else"] == false && m["then"] != nil {
				out.WriteString("/then")
				node = m["then"]
			}
		default:
			return loc
		}
	}
	return file + "#" + out.String()
}

// HasUnknown reports whether a decoded value holds, anywhere, a union
// variant this version does not know (a non-empty Unknown field) or a value
// of an open string enum that its schema does not list (Known false). Such
// a document is accepted by the generated decoders and rejected by the
// schema's closed lists, by design: ACP's and Harn's forward-compatibility
// rule.
func HasUnknown(v any) bool {
	return hasUnknown(reflect.ValueOf(v), 0)
}

var rawType = reflect.TypeFor[jsontext.Value]()

func hasUnknown(v reflect.Value, depth int) bool {
	if depth > 64 {
		return false
	}
	if v.Kind() == reflect.String {
		// An open enum's value this version does not list.
		if known := v.MethodByName("Known"); known.IsValid() && known.Type().NumIn() == 0 && known.Type().NumOut() == 1 && known.Type().Out(0).Kind() == reflect.Bool {
			return !known.Call(nil)[0].Bool()
		}
		return false
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasUnknown(v.Elem(), depth+1)
	case reflect.Struct:
		if get := v.MethodByName("Get"); get.IsValid() && get.Type().NumIn() == 0 && get.Type().NumOut() == 2 {
			// wire.Nullable: its value is unexported.
			out := get.Call(nil)
			return out[1].Bool() && hasUnknown(out[0], depth+1)
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Name == "Unknown" && f.Type == rawType && v.Field(i).Len() > 0 {
				return true
			}
			if f.IsExported() && hasUnknown(v.Field(i), depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == rawType || v.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
		for i := range v.Len() {
			if hasUnknown(v.Index(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if hasUnknown(v.MapIndex(k), depth+1) {
				return true
			}
		}
	}
	return false
}
