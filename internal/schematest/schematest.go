// Package schematest checks that a generated package's decoders and the
// JSON Schema it was generated from judge documents alike: every document
// the schema accepts decodes, every document it rejects is rejected. The
// documents are a package's golden documents and systematic mutations of
// them (a member removed, replaced by a value of every JSON kind, an extra
// member added, an array element of the wrong kind).
//
// One difference is by design: a tagged union keeps a variant this version
// does not know verbatim in its Unknown field, where the schema's oneOf
// rejects it. Such a document must decode with an Unknown set somewhere;
// it is counted apart.
package schematest

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// Verdicts counts how the documents were judged.
type Verdicts struct {
	Accepted, Rejected int
	// KeptUnknown counts documents the schema rejects and the decoder keeps
	// as a variant it does not know.
	KeptUnknown int
}

// Agree judges the golden documents of goldenFile (and their mutations) with
// the schema each generated type of types came from, as typesFile's doc
// comments name it ("Generated from <file>#/$defs/<name>."), relative to
// schemaDir, and with the generated decoder, and fails where they disagree.
// Types without golden documents are not judged; a golden type the table or
// typesFile lacks fails.
func Agree(t *testing.T, schemaDir, typesFile, goldenFile string, types []wiretest.Type) Verdicts {
	t.Helper()
	pointers, err := TypePointers(typesFile)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := wiretest.Golden(goldenFile)
	if err != nil || len(golden) == 0 {
		t.Fatalf("golden documents %s: %v", goldenFile, err)
	}
	byName := map[string]wiretest.Type{}
	for _, ty := range types {
		byName[ty.Name] = ty
	}
	c, err := compiler(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	var v Verdicts
	names := make([]string, 0, len(golden))
	for name := range golden {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ty, ok := byName[name]
		ptr, ok2 := pointers[name]
		if !ok || !ok2 {
			t.Fatalf("%s: golden type %s is not a generated type of %s", goldenFile, name, typesFile)
		}
		sch, err := c.Compile(schemaDir + "/" + ptr)
		if err != nil {
			t.Fatalf("%s: %v", ptr, err)
		}
		for _, doc := range golden[name] {
			var base any
			if err := stdjson.Unmarshal(doc, &base); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, d := range append([]any{base}, Mutations(base)...) {
				data, _ := stdjson.Marshal(d)
				if seen[string(data)] {
					continue
				}
				seen[string(data)] = true
				inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
				want := sch.Validate(inst) == nil
				val := ty.New()
				derr := json.Unmarshal(data, val)
				switch {
				case want && derr == nil:
					v.Accepted++
				case !want && derr != nil:
					v.Rejected++
				case !want && HasUnknown(val):
					v.KeptUnknown++
				case want:
					t.Errorf("%s (%s): the schema accepts, the decoder rejects (%v): %s", name, ptr, derr, data)
				default:
					t.Errorf("%s (%s): the schema rejects, the decoder accepts: %s", name, ptr, data)
				}
			}
		}
	}
	return v
}

// compiler returns a schema compiler that knows every schema file under dir
// by its $id, so that references between files resolve.
func compiler(dir string) (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var head struct {
			ID string `json:"$id"`
		}
		if stdjson.Unmarshal(data, &head) != nil || head.ID == "" {
			return nil
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return c.AddResource(head.ID, doc)
	})
	return c, err
}

var generatedFrom = regexp.MustCompile(`Generated from (\S+#\S+)\.\s*type ([A-Z]\w*) `)

// TypePointers reads a generated types file and returns, by Go type name,
// the schema location each type was generated from (file#/$defs/...).
func TypePointers(typesFile string) (map[string]string, error) {
	src, err := os.ReadFile(typesFile)
	if err != nil {
		return nil, err
	}
	// Join the comment lines so that a location wrapped onto the next
	// comment line is found whole.
	text := strings.ReplaceAll(string(src), "\n// ", " ")
	out := map[string]string{}
	for _, m := range generatedFrom.FindAllStringSubmatch(text, -1) {
		out[m[2]] = m[1]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no generated types found", typesFile)
	}
	return out, nil
}

var replacements = []any{nil, 1, -1, 1.5, "x", "", true, []any{}, map[string]any{}, []any{"x"}, []any{1}}

// Mutations returns doc changed in one step at every path: each member
// removed, replaced by every kind of value, changed recursively; an extra
// member added to every object; an element of each kind appended to every
// array, and each element changed recursively.
func Mutations(doc any) []any {
	var out []any
	switch d := doc.(type) {
	case map[string]any:
		extra := clone(d).(map[string]any)
		extra["extra_member"] = 1.0
		out = append(out, extra)
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		// The mutations share the members they do not change: they are
		// only read.
		with := func(k string, v any, del bool) map[string]any {
			m := make(map[string]any, len(d)+1)
			for kk, vv := range d {
				m[kk] = vv
			}
			if del {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		for _, k := range keys {
			out = append(out, with(k, nil, true))
			for _, r := range replacements {
				out = append(out, with(k, r, false))
			}
			for _, sub := range Mutations(d[k]) {
				out = append(out, with(k, sub, false))
			}
		}
	case []any:
		for _, extra := range []any{1, "s", nil} {
			out = append(out, append(slices.Clip(slices.Clone(d)), extra))
		}
		for i := range d {
			for _, sub := range Mutations(d[i]) {
				a := slices.Clone(d)
				a[i] = sub
				out = append(out, a)
			}
		}
	}
	return out
}

// clone copies the objects and arrays of a decoded JSON value.
func clone(v any) any {
	switch d := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(d)+1)
		for k, e := range d {
			m[k] = clone(e)
		}
		return m
	case []any:
		a := make([]any, len(d), len(d)+1)
		for i, e := range d {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

// HasUnknown reports whether a decoded generated value holds, at any depth,
// a union variant this version does not know (a non-nil Unknown field).
func HasUnknown(v any) bool {
	return hasUnknown(reflect.ValueOf(v))
}

var rawType = reflect.TypeFor[jsontext.Value]()

func hasUnknown(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasUnknown(v.Elem())
	case reflect.Struct:
		if get := v.MethodByName("Get"); get.IsValid() && get.Type().NumIn() == 0 && get.Type().NumOut() == 2 {
			// wire.Nullable[T]: its value is unexported.
			out := get.Call(nil)
			return out[1].Bool() && hasUnknown(out[0])
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "Unknown" && f.Type == rawType && v.Field(i).Len() > 0 {
				return true
			}
			if hasUnknown(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			return false
		}
		for i := range v.Len() {
			if hasUnknown(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if hasUnknown(it.Value()) {
				return true
			}
		}
	}
	return false
}

// CheckPackage runs a generated package's document tests from its
// directory (gen/<pkg>): every golden document of
// testdata/<pkg>/seed_examples.json round-trips (wiretest.GoldenRoundTrip),
// and the schemas under spec/schemas and the decoders judge them and their
// mutations alike (Agree). types is the package's generated fuzz table.
func CheckPackage(t *testing.T, pkg string, types []wiretest.Type) {
	golden := "../../testdata/" + pkg + "/seed_examples.json"
	t.Run("golden round trip", func(t *testing.T) {
		t.Logf("%d golden documents round-tripped", wiretest.GoldenRoundTrip(t, types, golden))
	})
	t.Run("schema agrees with decoders", func(t *testing.T) {
		t.Logf("%+v", Agree(t, "../../spec/schemas", "types_gen.go", golden, types))
	})
}
