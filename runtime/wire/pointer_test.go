package wire_test

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
)

// tree nests every shape the decode loop has, so that an error can be put
// at any depth: a closed object with a required member, and members that
// are itself (deep), lists and maps of itself, a tagged union (update), a
// union with a default variant (server), a union told apart by members
// (resource), a union of arrays (lists) and a list of lists of strings.
type tree struct {
	Name     string
	Deep     *tree
	Children []tree
	ByName   map[string]tree
	Update   *update
	Updates  []update
	Server   *server
	Resource *resource
	Lists    *lists
	Grid     [][]string
}

var objTree = wire.Object{Type: "tree", Required: []string{"name"}}

func (x *tree) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = tree{}
	r := wire.ReadObject(dec, &objTree)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.End()
}

func (x *tree) member(r *wire.ObjectReader) error {
	switch string(r.Name()) {
	case "name":
		return wire.Field(r, &x.Name, wire.StringFrom)
	case "deep":
		return wire.Ptr(r, &x.Deep, (*tree).UnmarshalJSONFrom)
	case "children":
		return wire.Field(r, &x.Children, wire.ListFrom((*tree).UnmarshalJSONFrom))
	case "byName":
		return wire.Field(r, &x.ByName, wire.MapFrom((*tree).UnmarshalJSONFrom))
	case "update":
		return wire.Ptr(r, &x.Update, (*update).UnmarshalJSONFrom)
	case "updates":
		return wire.Field(r, &x.Updates, wire.ListFrom((*update).UnmarshalJSONFrom))
	case "server":
		return wire.Ptr(r, &x.Server, (*server).UnmarshalJSONFrom)
	case "resource":
		return wire.Ptr(r, &x.Resource, (*resource).UnmarshalJSONFrom)
	case "lists":
		return wire.Ptr(r, &x.Lists, (*lists).UnmarshalJSONFrom)
	case "grid":
		return wire.Field(r, &x.Grid, wire.ListFrom(wire.ListFrom(wire.StringFrom)))
	}
	return r.Unknown()
}

// TestPointerAtEveryDepth checks the exact pointer of a missing member, a
// wrong kind and an unknown member at every depth and in every shape: the
// pointer of a missing member names the object that lacks it (its own
// segment included), that of any other error the member that is wrong.
func TestPointerAtEveryDepth(t *testing.T) {
	for _, tc := range []struct {
		doc, ptr string
		cause    error
	}{
		// Objects, at depth 0 to 3.
		{`{}`, "/name", wire.ErrMissingMember},
		{`{"name":"a","deep":{}}`, "/deep/name", wire.ErrMissingMember},
		{`{"name":"a","deep":{"name":"b","deep":{"deep":{"name":"c"}}}}`, "/deep/deep/name", wire.ErrMissingMember},
		{`{"name":"a","deep":{"name":"b","deep":{"name":"c","deep":{}}}}`, "/deep/deep/deep/name", wire.ErrMissingMember},
		{`{"name":1}`, "/name", wire.ErrWrongKind},
		{`{"name":"a","deep":{"name":"b","deep":{"name":null}}}`, "/deep/deep/name", wire.ErrNullValue},
		{`{"name":"a","deep":{"name":"b","odd":1}}`, "/deep/odd", wire.ErrUnknownMember},
		{`{"name":"a","deep":7}`, "/deep", wire.ErrWrongKind},
		// Arrays: the element's index, also for the first element and for
		// an element refused at its first token.
		{`{"name":"a","children":[{}]}`, "/children/0/name", wire.ErrMissingMember},
		{`{"name":"a","children":[{"name":"b"},{"name":"c"},{}]}`, "/children/2/name", wire.ErrMissingMember},
		{`{"name":"a","children":[{"name":"b"},5]}`, "/children/1", wire.ErrWrongKind},
		{`{"name":"a","children":[{"name":"b","children":[{"name":"c"},{"name":"d","deep":{}}]}]}`, "/children/0/children/1/deep/name", wire.ErrMissingMember},
		{`{"name":"a","grid":[["x"],["y",1]]}`, "/grid/1/1", wire.ErrWrongKind},
		{`{"name":"a","grid":[["x"],5]}`, "/grid/1", wire.ErrWrongKind},
		// Maps: the key, escaped.
		{`{"name":"a","byName":{"k":{}}}`, "/byName/k/name", wire.ErrMissingMember},
		{`{"name":"a","byName":{"a/b~c":{"name":"x"},"k":{"name":2}}}`, "/byName/k/name", wire.ErrWrongKind},
		{`{"name":"a","byName":{"a/b~c":{"name":"x","deep":{}}}}`, "/byName/a~1b~0c/deep/name", wire.ErrMissingMember},
		// A tagged union: tag first (streamed), tag last (members buffered
		// and replayed), nested in a list, unions in unions' replays.
		{`{"name":"a","update":{"kind":"user"}}`, "/update/text", wire.ErrMissingMember},
		{`{"name":"a","update":{"text":"t"}}`, "/update/kind", wire.ErrMissingMember},
		{`{"name":"a","update":{"text":1,"kind":"user"}}`, "/update/text", wire.ErrWrongKind},
		{`{"name":"a","update":{"ok":true,"kind":"done","odd":1}}`, "/update/odd", wire.ErrUnknownMember},
		{`{"name":"a","update":{"ok":1,"kind":"done"}}`, "/update/ok", wire.ErrWrongKind},
		{`{"name":"a","update":{"kind":5}}`, "/update/kind", wire.ErrWrongKind},
		{`{"name":"a","updates":[{"kind":"user","text":"t"},{"kind":"agent"}]}`, "/updates/1/text", wire.ErrMissingMember},
		{`{"name":"a","updates":[{"kind":"user","text":"t"},{"text":[],"kind":"agent"}]}`, "/updates/1/text", wire.ErrWrongKind},
		{`{"name":"a","deep":{"name":"b","updates":[{"text":"t","kind":"done"}]}}`, "/deep/updates/0/text", wire.ErrUnknownMember},
		// A union with a default variant, and one told apart by members.
		{`{"name":"a","server":{}}`, "/server/text", wire.ErrMissingMember},
		{`{"name":"a","server":{"type":"http","text":false}}`, "/server/text", wire.ErrWrongKind},
		{`{"name":"a","resource":{}}`, "/resource/text", wire.ErrMissingMember},
		{`{"name":"a","resource":{"blob":7}}`, "/resource/blob", wire.ErrWrongKind},
		// A union of arrays: the first element and the rest.
		{`{"name":"a","lists":[{"text":"t","kind":1}]}`, "", nil},
		{`{"name":"a","lists":[{"blob":"b"},{}]}`, "/lists/1/blob", wire.ErrMissingMember},
		{`{"name":"a","lists":[{"text":"t"},{"text":"u"},{"text":5}]}`, "/lists/2/text", wire.ErrWrongKind},
		{`{"name":"a","lists":[{"blob":1}]}`, "/lists/0/blob", wire.ErrWrongKind},
		{`{"name":"a","lists":[7]}`, "/lists/0", wire.ErrWrongKind},
		// Members that need escaping in a pointer.
		{`{"name":"a","deep":{"name":"b","a/b":1}}`, "/deep/a~1b", wire.ErrUnknownMember},
	} {
		var v tree
		err := json.Unmarshal([]byte(tc.doc), &v)
		if tc.cause == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.doc, err)
			}
			continue
		}
		if !errors.Is(err, tc.cause) || wire.Pointer(err) != tc.ptr {
			t.Errorf("%s:\n got %q (%v)\nwant %q (%v)", tc.doc, wire.Pointer(err), err, tc.ptr, tc.cause)
			continue
		}
		if judged, p := wiretest.CheckPointer([]byte(tc.doc), err, ""); !judged || p != "" {
			t.Errorf("%s: CheckPointer judged %v: %s", tc.doc, judged, p)
		}
		if d := wire.Describe(err); d != tc.ptr+": "+wire.Reason(err) {
			t.Errorf("%s: Describe gives %q", tc.doc, d)
		}
	}
}

// TestPointerInsideOtherValues: a generated value inside a value the JSON
// package decodes by reflection is placed within the whole document.
func TestPointerInsideOtherValues(t *testing.T) {
	var v struct {
		Params struct {
			Trees []tree `json:"trees"`
		} `json:"params"`
	}
	err := json.Unmarshal([]byte(`{"params":{"trees":[{"name":"a"},{"name":"b","update":{"ok":true,"kind":"done","odd":1}}]}}`), &v)
	if got, want := wire.Pointer(err), "/params/trees/1/update/odd"; got != want {
		t.Fatalf("got %q, want %q (%v)", got, want, err)
	}
}

// FuzzPointer decodes documents into tree and compares the pointer of each
// refusal with the document (wiretest.CheckPointer).
func FuzzPointer(f *testing.F) {
	for _, d := range []string{
		`{"name":"a","deep":{"name":"b","deep":{"name":"c"}}}`,
		`{"name":"a","children":[{"name":"b"},{"name":"c","children":[{"name":"d"}]}]}`,
		`{"name":"a","byName":{"k":{"name":"x"},"a/b":{"name":"y"}}}`,
		`{"name":"a","update":{"text":"t","kind":"user"},"updates":[{"kind":"done","ok":true},{"text":"u","kind":"agent"}]}`,
		`{"name":"a","server":{"text":"s"},"resource":{"blob":"b"},"lists":[{"text":"t"},{"text":"u"}]}`,
		`{"name":"a","grid":[["x","y"],[]],"lists":[{"blob":"b"}]}`,
		`{"name":"a","deep":{"name":"b","updates":[{"text":"t","kind":"user"}],"server":{"type":"http","text":"h"}}}`,
	} {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var v tree
		err := json.Unmarshal(doc, &v)
		if _, p := wiretest.CheckPointer(doc, err, ""); p != "" {
			t.Fatalf("%s\ndoc: %s", p, doc)
		}
	})
}
