// Package wiretest holds the checks that generated fuzz targets and golden
// tests share: a document that decodes must re-encode to a document that
// decodes to the same thing, and encoding must be stable.
package wiretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Type is one generated type in a package's fuzz table.
type Type struct {
	// Name is the Go type name; fuzz inputs start with it.
	Name string
	// New returns a pointer to a new zero value.
	New func() any
	// Seeds are valid documents synthesised by the generator.
	Seeds []string
	// Schema is the schema location the type was generated from
	// ("<file>#/<json pointer>", the file relative to spec/schemas), for
	// tests that judge documents with a JSON Schema validator too.
	Schema string
}

// Fuzz runs one table-driven fuzz target over every type of a generated
// package. An input is a type name, a newline and a document: the name picks
// the type, the document is decoded, re-encoded, decoded again and encoded
// again, and the two encodings must be equal; a document that does not
// decode must be refused at a place that fits it (CheckPointer). The corpus is seeded with each
// type's synthesised documents, the golden documents in goldenFile (a JSON
// object from type name to a list of documents; skipped when the file does
// not exist), and values every decoder must reject without panicking.
func Fuzz(f *testing.F, types []Type, goldenFile string) {
	byName := map[string]Type{}
	for _, t := range types {
		byName[t.Name] = t
		for _, d := range t.Seeds {
			mustDecode(f, t, d)
			f.Add(input(t.Name, d))
		}
		for _, d := range []string{`{}`, `[]`, `null`, `""`, `0`, `{"a":`, `{"a":1,"a":2}`} {
			f.Add(input(t.Name, d))
		}
	}
	golden, err := Golden(goldenFile)
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range sortedKeys(golden) {
		t, ok := byName[name]
		if !ok {
			f.Fatalf("%s: golden documents for unknown type %s", goldenFile, name)
		}
		for _, d := range golden[name] {
			mustDecode(f, t, string(d))
			f.Add(input(name, string(d)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, doc, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return
		}
		typ, ok := byName[string(name)]
		if !ok {
			return
		}
		RoundTrip(t, typ.New, doc)
	})
}

// Golden reads a file of golden documents: a JSON object from type name to a
// list of documents. A missing file gives none.
func Golden(path string) (map[string][]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out map[string][]json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func input(name, doc string) []byte { return []byte(name + "\n" + doc) }

func mustDecode(f *testing.F, t Type, doc string) {
	f.Helper()
	if err := jsonv2.Unmarshal([]byte(doc), t.New()); err != nil {
		f.Fatalf("seed %s does not decode into %s: %v", doc, t.Name, err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// RoundTrip decodes data into a new value; if that succeeds, the encoding
// must succeed, decode again, and encode to the same bytes. If it fails,
// the error's pointer must fit data (CheckPointer).
func RoundTrip(t *testing.T, newValue func() any, data []byte) {
	t.Helper()
	v := newValue()
	if err := jsonv2.Unmarshal(data, v); err != nil {
		if _, p := CheckPointer(data, err, ""); p != "" {
			t.Fatalf("%T: %s\ndoc: %q", v, p, data)
		}
		return
	}
	out, err := jsonv2.Marshal(v, wire.Fidelity)
	if err != nil {
		t.Fatalf("decoded %T from %q but cannot encode it: %v", v, data, err)
	}
	w := newValue()
	if err := jsonv2.Unmarshal(out, w); err != nil {
		t.Fatalf("%T: re-encoded document does not decode: %v\n in: %q\nout: %s", v, err, data, out)
	}
	again, err := jsonv2.Marshal(w, wire.Fidelity)
	if err != nil || !bytes.Equal(out, again) {
		t.Fatalf("%T: encoding is not stable (%v)\nfirst:  %s\nsecond: %s", v, err, out, again)
	}
}

// SameJSON reports whether a and b hold the same JSON value, member order
// aside (numbers compare as float64, as encoding/json decodes them).
func SameJSON(a, b []byte) (bool, error) {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false, err
	}
	return reflect.DeepEqual(x, y), nil
}

// EqualJSON is SameJSON for tests: it fails t when either document is not
// JSON.
func EqualJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	same, err := SameJSON(a, b)
	if err != nil {
		t.Fatalf("comparing %.200s with %.200s: %v", a, b, err)
	}
	return same
}

// GoldenRoundTrip decodes every document of goldenFile (see Golden) into its
// type from types, a generated package's fuzz table, and fails unless
// encoding it again, with wire.Fidelity and with encoding/json (v1), gives
// the same JSON (SameJSON). A missing file, an empty one, or a type the
// table lacks fail too. It returns the number of documents checked.
func GoldenRoundTrip(t testing.TB, types []Type, goldenFile string) int {
	t.Helper()
	golden, err := Golden(goldenFile)
	if err != nil || len(golden) == 0 {
		t.Fatalf("golden documents %s: %v (%d types)", goldenFile, err, len(golden))
	}
	byName := map[string]Type{}
	for _, ty := range types {
		byName[ty.Name] = ty
	}
	n := 0
	for _, name := range sortedKeys(golden) {
		ty, ok := byName[name]
		if !ok {
			t.Fatalf("%s: no type %s in the package", goldenFile, name)
		}
		for i, doc := range golden[name] {
			v := ty.New()
			if err := jsonv2.Unmarshal(doc, v); err != nil {
				t.Errorf("%s[%d]: decode: %v\n%s", name, i, err, doc)
				continue
			}
			out, err := jsonv2.Marshal(v, wire.Fidelity)
			if same, _ := SameJSON(doc, out); err != nil || !same {
				t.Errorf("%s[%d]: round trip changed it (%v)\n in: %s\nout: %s", name, i, err, doc, out)
			}
			v1 := ty.New()
			if err := json.Unmarshal(doc, v1); err != nil {
				t.Errorf("%s[%d]: encoding/json decode: %v", name, i, err)
				continue
			}
			out, err = json.Marshal(v1)
			if same, _ := SameJSON(doc, out); err != nil || !same {
				t.Errorf("%s[%d]: encoding/json round trip changed it (%v)\n in: %s\nout: %s", name, i, err, doc, out)
			}
			n++
		}
	}
	return n
}
