package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Overrides is the hand-kept table of choices the schemas cannot express,
// keyed by schema location (file#/json/pointer), read from spec/overrides.json:
// Go names for types and fields, the tag member of a union whose variants do
// not name it, and definitions left out of type generation. Every entry must
// match a node the IR build visits; Unused lists those that did not, and
// generation fails on them, so the table cannot rot.
type Overrides struct {
	Types   map[string]TypeOverride  `json:"types,omitempty"`
	Fields  map[string]FieldOverride `json:"fields,omitempty"`
	Unions  map[string]UnionOverride `json:"unions,omitempty"`
	Exclude map[string]Exclusion     `json:"exclude,omitempty"`
	// Raw leaves a $defs entry untyped: every reference to it is a raw JSON
	// value (jsontext.Value), kept byte for byte. For shapes the generator
	// cannot type yet and for values the runtime owns (JSON-RPC ids).
	Raw map[string]RawOverride `json:"raw,omitempty"`
	// Closed keeps a string enum closed (values it does not list fail on
	// decode and encode); every other string enum is open. The reason says
	// where its protocol closes it.
	ClosedEnums map[string]Exclusion `json:"closed,omitempty"`
	// Represent, keyed by an object definition, names members whose Go
	// representation follows the same member of another definition (ACP's
	// ToolCall kind, status, content and locations are held as
	// ToolCallUpdate's are, wire.Nullable), so a program that merges the
	// two uses one type per member. What the member admits on the wire
	// stays what its own schema says.
	Represent map[string]RepresentOverride `json:"represent,omitempty"`

	used map[string]bool
	// rebased maps a file to the one whose entries also apply to it (see
	// Rebased).
	rebased map[string]string
}

// Rebased returns a view of the table for a catalogue that reads, in place
// of each schema file from of rebase, the file rebase[from]: a node of that
// file without an entry of its own takes the entry of the node at the same
// pointer in from (ACP's unstable superset takes the stable schema's
// entries). Entries used through the view count as used in o.
func (o *Overrides) Rebased(rebase map[string]string) *Overrides {
	if o.used == nil {
		o.used = map[string]bool{}
	}
	v := *o
	v.rebased = map[string]string{}
	for from, to := range rebase {
		v.rebased[to] = from
	}
	return &v
}

// TypeOverride renames a generated type.
type TypeOverride struct {
	Go     string `json:"go"`
	Reason string `json:"reason"`
}

// FieldOverride renames a struct field.
type FieldOverride struct {
	Go     string `json:"go"`
	Reason string `json:"reason"`
}

// UnionOverride names the member whose string value selects a union's
// variant when the schema's variants do not carry it (ACP's AuthMethod has a
// single variant, chosen when "type" is absent; other values of "type" are
// kept as unknown, never decoded as that variant).
type UnionOverride struct {
	Tag    string `json:"tag"`
	Reason string `json:"reason"`
}

// Exclusion leaves a $defs entry out of type generation (routing envelopes
// that the runtime frames itself). A generated type that refers to an
// excluded definition fails generation.
type Exclusion struct {
	Reason string `json:"reason"`
}

// RawOverride leaves a $defs entry untyped. Example is a valid value of the
// definition, which seeds the fuzz and agreement tests where a member of
// this definition needs a value.
type RawOverride struct {
	Reason  string          `json:"reason"`
	Example json.RawMessage `json:"example"`
}

// RepresentOverride makes members of one object definition take the Go
// representation of the same members of another: As is a $ref to that
// definition, relative to the file of the entry's definition (so an entry
// of a rebased file resolves in the file read in its place). Every member
// must be optional in both, hold the same Go type in both but for its
// presence, and be nullable in As only: the entry must change something.
type RepresentOverride struct {
	As      string   `json:"as"`
	Members []string `json:"members"`
	Reason  string   `json:"reason"`
}

// LoadOverrides reads spec/overrides.json; a missing file is an empty table.
// Unknown members are errors.
func LoadOverrides(path string) (*Overrides, error) {
	o := &Overrides{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return o, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseOverrides(data, path)
}

// ParseOverrides decodes and checks the override table data; name (the
// file it was read from) prefixes its errors.
func ParseOverrides(data []byte, path string) (*Overrides, error) {
	o := &Overrides{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for k, v := range o.Types {
		if v.Go == "" || v.Reason == "" {
			return nil, fmt.Errorf("%s: types[%s] needs go and reason", path, k)
		}
	}
	for k, v := range o.Fields {
		if v.Go == "" || v.Reason == "" {
			return nil, fmt.Errorf("%s: fields[%s] needs go and reason", path, k)
		}
	}
	for k, v := range o.Unions {
		if v.Tag == "" || v.Reason == "" {
			return nil, fmt.Errorf("%s: unions[%s] needs tag and reason", path, k)
		}
	}
	for k, v := range o.Exclude {
		if v.Reason == "" {
			return nil, fmt.Errorf("%s: exclude[%s] needs a reason", path, k)
		}
	}
	for k, v := range o.ClosedEnums {
		if v.Reason == "" {
			return nil, fmt.Errorf("%s: closed[%s] needs a reason", path, k)
		}
	}
	for k, v := range o.Represent {
		if v.As == "" || len(v.Members) == 0 || v.Reason == "" {
			return nil, fmt.Errorf("%s: represent[%s] needs as, members and a reason", path, k)
		}
	}
	for k, v := range o.Raw {
		if v.Reason == "" || len(v.Example) == 0 {
			return nil, fmt.Errorf("%s: raw[%s] needs a reason and an example", path, k)
		}
		if _, both := o.Exclude[k]; both {
			return nil, fmt.Errorf("%s: %s is both excluded and raw", path, k)
		}
	}
	return o, nil
}

func (o *Overrides) use(kind, ptr string) {
	if o.used == nil {
		o.used = map[string]bool{}
	}
	o.used[kind+" "+ptr] = true
}

// lookup returns table's entry at ptr and marks it used under kind.
func lookup[T any](o *Overrides, table map[string]T, kind, ptr string) (T, bool) {
	v, _, ok := lookupKey(o, table, kind, ptr)
	return v, ok
}

// lookupKey is lookup that also returns the entry's key (ptr, or the
// location in the file a rebased file is read in place of).
func lookupKey[T any](o *Overrides, table map[string]T, kind, ptr string) (T, string, bool) {
	v, ok := table[ptr]
	if !ok {
		if file, frag, _ := strings.Cut(ptr, "#"); o.rebased[file] != "" {
			ptr = o.rebased[file] + "#" + frag
			v, ok = table[ptr]
		}
	}
	if ok {
		o.use(kind, ptr)
	}
	return v, ptr, ok
}

// Type returns the type override at ptr, marking it used.
func (o *Overrides) Type(ptr string) (TypeOverride, bool) { return lookup(o, o.Types, "types", ptr) }

// Field returns the field override at ptr (a property's location), marking it used.
func (o *Overrides) Field(ptr string) (FieldOverride, bool) {
	return lookup(o, o.Fields, "fields", ptr)
}

// Union returns the union override at ptr, marking it used.
func (o *Overrides) Union(ptr string) (UnionOverride, bool) {
	return lookup(o, o.Unions, "unions", ptr)
}

// Excluded reports whether the definition at ptr is left out, marking the
// entry used.
func (o *Overrides) Excluded(ptr string) bool {
	_, ok := lookup(o, o.Exclude, "exclude", ptr)
	return ok
}

// Closed returns the closed-enum entry at ptr, marking it used.
func (o *Overrides) Closed(ptr string) (Exclusion, bool) {
	return lookup(o, o.ClosedEnums, "closed", ptr)
}

// Representation returns the represent entry of the definition at ptr and
// its key, marking it used.
func (o *Overrides) Representation(ptr string) (RepresentOverride, string, bool) {
	return lookupKey(o, o.Represent, "represent", ptr)
}

// IsRaw reports whether the definition at ptr is left untyped, marking the
// entry used.
func (o *Overrides) IsRaw(ptr string) (RawOverride, bool) { return lookup(o, o.Raw, "raw", ptr) }

// Unused lists, sorted, the entries no build has used.
func (o *Overrides) Unused() []string {
	var out []string
	add := func(kind string, keys []string) {
		for _, k := range keys {
			if !o.used[kind+" "+k] {
				out = append(out, fmt.Sprintf("spec/overrides.json: %s entry %s matches no schema node", kind, k))
			}
		}
	}
	add("types", keys(o.Types))
	add("fields", keys(o.Fields))
	add("unions", keys(o.Unions))
	add("exclude", keys(o.Exclude))
	add("raw", keys(o.Raw))
	add("closed", keys(o.ClosedEnums))
	add("represent", keys(o.Represent))
	slices.Sort(out)
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
