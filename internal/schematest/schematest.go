// Package schematest judges documents twice, with a JSON Schema validator
// over bridgekit's spec and with the generated Go decoders, and reports
// where the two disagree. Every generated package's tests use it to show
// that each generated type accepts exactly what its schema accepts.
//
// The schema a generated type answers to is the spec as the generator reads
// it: the files under spec/schemas with the overlays of every catalogue in
// spec/catalogue applied (a retyped member, forbidden members as "name":
// false, variants added to a union), rebuilt here independently of the
// generator. Members an overlay forbids only under a contract (Harn's) are
// forbidden only in the spec loaded for that contract (LoadUnder), which is
// judged against the decoders run under it (wire.Contract.Options). Each type's location comes from the package's fuzz table
// (wiretest.Type.Schema). Documents are the table's synthesised seeds and
// the package's golden documents, each mutated systematically: members
// removed, replaced by every JSON kind, added, array elements of the wrong
// kind.
//
// One divergence is by design and allowed: a union member whose tag names no
// variant this version knows is kept in the union's Unknown field, and a
// string enum value the schema does not list is kept (Known reports false),
// where the schema's closed lists reject them (ACP's and Harn's
// forward-compatibility rule). A document accepted only that way is counted,
// not reported.
//
// The package is used by tests only; it is internal so that its validator
// dependency never reaches an SDK user's build.
package schematest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/internal/specschema"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// Spec is the compiled spec of a checkout (internal/specschema's, which
// bridgekit validate uses too).
type Spec struct {
	*specschema.Spec
}

// Load reads the schema files and catalogues under root/spec, applies the
// catalogues' overlays to the schema files they name, and prepares a
// compiler (specschema.Load).
func Load(root string) (*Spec, error) {
	s, err := specschema.Load(os.DirFS(filepath.Join(root, "spec")))
	return &Spec{s}, err
}

// LoadUnder is Load with the members that overlays forbid under contract
// forbidden too: the spec a decode under that contract answers to.
func LoadUnder(root, contract string) (*Spec, error) {
	s, err := specschema.LoadUnder(os.DirFS(filepath.Join(root, "spec")), contract)
	return &Spec{s}, err
}

// LoadRetargeted is Load, with every overlay of a definition in file from
// applied also to the definition of the same name in file to
// (specschema.LoadRetargeted).
func LoadRetargeted(root, from, to string) (*Spec, error) {
	s, err := specschema.LoadRetargeted(os.DirFS(filepath.Join(root, "spec")), from, to)
	return &Spec{s}, err
}

// inlineVariant matches the location of an inline alternative of a union.
var inlineVariant = regexp.MustCompile(`/(oneOf|anyOf)/[0-9]+$`)

// Result counts what Agreement judged.
type Result struct {
	// Types and Documents judged; Unknown: documents the decoder accepted
	// only by keeping an unknown union variant; Raw: documents the schema
	// rejected only in a member kept raw (Options.RawMembers); Pointers:
	// refusals whose pointer was compared with the document and the place
	// the mutation changed (wiretest.CheckPointer).
	Types, Documents, Unknown, Raw, Pointers int
	// Skipped lists types judged only through their union (a group of a
	// union's object alternatives, an inline alternative), by name.
	Skipped []string
}

// Options tune Agreement.
type Options struct {
	// Golden maps a type name to more base documents (golden files).
	Golden map[string][]json.RawMessage
	// MaxMutations bounds the mutated documents judged per base document,
	// picked evenly from all of them; 0 means 200.
	MaxMutations int
	// Decode are the options the decoders run with (a contract's, for a
	// spec from LoadUnder); nil for none.
	Decode jsonv2.Options
	// RawMembers maps a type name to members it keeps as raw JSON (their
	// definition is raw in spec/overrides.json), each with a valid value. A
	// document of the type that the decoder accepts and the schema rejects
	// is judged again with those members set to their values; accepted
	// then, the divergence is the raw member's by design: counted in
	// Result.Raw, not reported.
	RawMembers map[string]map[string]json.RawMessage
}

// Run loads the spec of the checkout at root, reads the package's golden
// documents (goldenFile, a JSON object from type name to documents; none
// when absent) and checks Agreement for types, logging the counts.
func Run(t *testing.T, root string, types []wiretest.Type, goldenFile string, opts Options) {
	t.Helper()
	runWith(t, Load, root, types, goldenFile, opts)
}

// RunUnder is Run for the spec of a contract (LoadUnder) and the decoders
// under it.
func RunUnder(t *testing.T, root string, c *wire.Contract, types []wiretest.Type, goldenFile string, opts Options) {
	t.Helper()
	opts.Decode = c.Options()
	runWith(t, func(root string) (*Spec, error) { return LoadUnder(root, c.Name()) }, root, types, goldenFile, opts)
}

func runWith(t *testing.T, load func(string) (*Spec, error), root string, types []wiretest.Type, goldenFile string, opts Options) {
	t.Helper()
	spec, err := load(root)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := wiretest.Golden(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	opts.Golden = golden
	res := spec.Agreement(t, types, opts)
	t.Logf("%d types, %d documents judged alike (%d accepted only as unknown union variants, %d rejected by the schema only in a member kept raw), %d refusals' pointers checked; judged through their union: %v", res.Types, res.Documents, res.Unknown, res.Raw, res.Pointers, res.Skipped)
}

// CheckPackage runs the document tests of the generated package pkg from
// its directory (gen/<pkg>): every golden document of
// testdata/<pkg>/seed_examples.json round-trips (wiretest.GoldenRoundTrip),
// and the spec and the decoders judge the fuzz table's seeds, the golden
// documents and their mutations alike (Run). types is the package's
// generated fuzz table. For each contract given (a catalogue's
// wire.Contracts, or those of a package whose types it uses) the spec of that
// contract and the decoders under it are judged alike too (RunUnder).
func CheckPackage(t *testing.T, pkg string, types []wiretest.Type, contracts ...*wire.Contract) {
	t.Helper()
	golden := "../../testdata/" + pkg + "/seed_examples.json"
	t.Run("golden round trip", func(t *testing.T) {
		t.Logf("%d golden documents round-tripped", wiretest.GoldenRoundTrip(t, types, golden))
	})
	t.Run("schema agrees with decoders", func(t *testing.T) {
		Run(t, "../..", types, golden, Options{})
	})
	for _, c := range contracts {
		t.Run("schema agrees with decoders under contract "+c.Name(), func(t *testing.T) {
			RunUnder(t, "../..", c, types, golden, Options{})
		})
	}
}

// raceMutations is MutationLimit's cap under the race detector.
const raceMutations = 20

// MutationLimit is how many mutations of one base document Agreement and
// Differential judge when asked for limit: limit itself, except under the
// race detector, which makes these single-goroutine codec checks several
// times slower and can find nothing in them, where an evenly spread tenth
// (at most raceMutations) is judged. make test runs them again without
// -race, in full.
func MutationLimit(limit int) int {
	if !Thorough {
		return min(limit, raceMutations)
	}
	return limit
}

// TB is the part of testing.TB that Agreement reports through.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Agreement judges, for every type of a generated package's fuzz table, its
// seeds, its golden documents and their mutations with the schema and the
// decoder, and fails t where they disagree. Every base document must be
// accepted by both.
func (s *Spec) Agreement(t TB, types []wiretest.Type, opts Options) Result {
	t.Helper()
	limit := opts.MaxMutations
	if limit == 0 {
		limit = 200
	}
	limit = MutationLimit(limit)
	var res Result
	for _, typ := range types {
		if strings.Contains(typ.Schema, "(") || inlineVariant.MatchString(typ.Schema) {
			// A group of a union's object alternatives has no schema node of
			// its own, and an inline alternative's struct leaves out the tag
			// its union reads: both are judged through their union.
			res.Skipped = append(res.Skipped, typ.Name)
			continue
		}
		sch, err := s.Compile(typ.Schema)
		if err != nil {
			t.Errorf("%s: compile %s: %v", typ.Name, typ.Schema, err)
			continue
		}
		res.Types++
		var bases []any
		for _, d := range typ.Seeds {
			bases = append(bases, decode(t, []byte(d)))
		}
		for _, d := range opts.Golden[typ.Name] {
			bases = append(bases, decode(t, d))
		}
		for _, b := range bases {
			data := encode(b)
			if err := sch.Validate(decode(t, data)); err != nil {
				if v := typ.New(); unmarshal(data, v, opts.Decode) == nil && HasUnknown(v) {
					res.Unknown++ // a golden document of a variant this version does not know
					continue
				}
				t.Errorf("%s: a base document the schema rejects: %s: %v", typ.Name, data, err)
				continue
			}
			if err := unmarshal(data, typ.New(), opts.Decode); err != nil {
				t.Errorf("%s: a base document the decoder rejects: %s: %v", typ.Name, data, err)
				continue
			}
			docs := Mutations(b)
			if len(docs) > limit {
				step := float64(len(docs)) / float64(limit)
				picked := make([]Mutation, 0, limit)
				for i := range limit {
					picked = append(picked, docs[int(float64(i)*step)])
				}
				docs = picked
			}
			for _, m := range docs {
				res.Documents++
				d := m.Doc
				data := encode(d)
				schemaErr := sch.Validate(decode(t, data))
				v := typ.New()
				goErr := unmarshal(data, v, opts.Decode)
				judged, p := wiretest.CheckPointer(data, goErr, m.Place)
				if p != "" {
					t.Errorf("%s: %s, for %s", typ.Name, p, data)
				}
				if judged {
					res.Pointers++
				}
				switch {
				case (schemaErr == nil) == (goErr == nil):
				case goErr == nil && HasUnknown(v):
					res.Unknown++
				case goErr == nil && onlyRaw(sch, d, opts.RawMembers[typ.Name]):
					res.Raw++
				default:
					t.Errorf("%s: the schema says %v, the decoder says %v, for %s", typ.Name, verdict(schemaErr), verdict(goErr), data)
				}
			}
		}
	}
	return res
}

// unmarshal decodes data into v, with opts unless they are nil.
func unmarshal(data []byte, v any, opts jsonv2.Options) error {
	if opts == nil {
		return jsonv2.Unmarshal(data, v)
	}
	return jsonv2.Unmarshal(data, v, opts)
}

// onlyRaw reports whether doc, an object, is valid once its raw members are
// set to their valid values.
func onlyRaw(sch *jsonschema.Schema, doc any, raw map[string]json.RawMessage) bool {
	m, ok := doc.(map[string]any)
	if !ok || len(raw) == 0 {
		return false
	}
	fixed := map[string]any{}
	for k, v := range m {
		fixed[k] = v
	}
	for name, val := range raw {
		if _, present := fixed[name]; present {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(val))
			if err != nil {
				return false
			}
			fixed[name] = v
		}
	}
	return sch.Validate(fixed) == nil
}

func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	return "invalid (" + msg + ")"
}

func decode(t TB, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

func encode(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// HasUnknown reports whether a decoded value holds, anywhere, a union
// variant this version does not know (a non-empty Unknown field) or a value
// of an open string enum that its schema does not list (Known false).
func HasUnknown(v any) bool { return specschema.HasUnknown(v) }

// replacements are the values every member and element is replaced with.
var replacements = []any{nil, json.Number("1"), json.Number("-1"), json.Number("1.5"), "x", "", true, []any{}, map[string]any{}, []any{"x"}, []any{json.Number("1")}}

// Mutate returns doc with every single-step change applied at every path:
// an extra member, each member removed, replaced by each of a set of values
// of every JSON kind, or mutated recursively; arrays with extra elements of
// several kinds, and each element mutated recursively. doc is a decoded
// JSON value (maps, slices, json.Number, strings, booleans, nil); it is not
// modified.
func Mutate(doc any) []any {
	ms := Mutations(doc)
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m.Doc
	}
	return out
}

// A Mutation is one document of Mutate with the place it changed: the JSON
// pointer of the object that gained or lost a member, the array that
// gained an element, or the value replaced. A decoder's refusal of Doc lies
// there or below.
type Mutation struct {
	Doc   any
	Place string
}

// Mutations is Mutate with each document's place.
func Mutations(doc any) []Mutation {
	var out []Mutation
	switch d := doc.(type) {
	case map[string]any:
		withExtra := Clone(d).(map[string]any)
		withExtra["extra"] = json.Number("1")
		out = append(out, Mutation{withExtra, ""})
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			del := Clone(d).(map[string]any)
			delete(del, k)
			out = append(out, Mutation{del, ""})
			at := "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			for _, r := range replacements {
				m := Clone(d).(map[string]any)
				m[k] = r
				out = append(out, Mutation{m, at})
			}
			for _, sub := range Mutations(d[k]) {
				m := Clone(d).(map[string]any)
				m[k] = sub.Doc
				out = append(out, Mutation{m, at + sub.Place})
			}
		}
	case []any:
		for _, extra := range []any{json.Number("1"), "s", nil, map[string]any{}} {
			out = append(out, Mutation{append(Clone(d).([]any), extra), ""})
		}
		for i := range d {
			for _, sub := range Mutations(d[i]) {
				a := Clone(d).([]any)
				a[i] = sub.Doc
				out = append(out, Mutation{a, "/" + strconv.Itoa(i) + sub.Place})
			}
		}
	}
	return out
}

// Clone deep-copies a decoded JSON value.
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Clone(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = Clone(e)
		}
		return a
	}
	return v
}

// Differential checks that every document the spec of an older schema
// accepts decodes with the generated types of the current one and
// re-encodes to the same JSON (member order aside): golden documents of
// the older version (golden, by type name) and their mutations, each judged
// by the older schema's definition of the same name (older is that file,
// under spec/schemas). The generated seeds are not used: they hold members
// only the current version defines, which the older, open objects accept
// as anything.
// Types whose definition the older file lacks are skipped. It returns how
// many documents the older schema accepted.
func (s *Spec) Differential(t TB, types []wiretest.Type, older string, golden map[string][]json.RawMessage, limit int) (judged int) {
	t.Helper()
	limit = MutationLimit(limit)
	for _, typ := range types {
		_, frag, _ := strings.Cut(typ.Schema, "#")
		if strings.Contains(typ.Schema, "(") || inlineVariant.MatchString(typ.Schema) || !strings.HasPrefix(frag, "/$defs/") {
			continue
		}
		sch, err := s.Compile(older + "#" + frag)
		if err != nil {
			continue // the older file has no such definition
		}
		var bases []any
		for _, d := range golden[typ.Name] {
			bases = append(bases, decode(t, d))
		}
		for _, b := range bases {
			docs := append([]any{b}, Mutate(b)...)
			if len(docs) > limit {
				step := float64(len(docs)) / float64(limit)
				picked := make([]any, 0, limit)
				for i := range limit {
					picked = append(picked, docs[int(float64(i)*step)])
				}
				docs = picked
			}
			for _, d := range docs {
				data := encode(d)
				if sch.Validate(decode(t, data)) != nil {
					continue
				}
				judged++
				v := typ.New()
				if err := jsonv2.Unmarshal(data, v); err != nil {
					t.Errorf("%s: valid under %s, rejected by the current type: %v, for %s", typ.Name, older, err, data)
					continue
				}
				out, err := jsonv2.Marshal(v)
				if err != nil {
					t.Errorf("%s: decoded but not re-encoded: %v, for %s", typ.Name, err, data)
					continue
				}
				if !sameJSON(data, out) {
					t.Errorf("%s: valid under %s, re-encoded differently:\n in  %s\n out %s", typ.Name, older, data, out)
				}
			}
		}
	}
	return judged
}

// sameJSON compares two documents structurally, member order aside.
func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
