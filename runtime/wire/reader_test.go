package wire_test

// Hand-written types shaped exactly like generated ones, so the shared decode
// loop and writer are tested here, independently of the generator.

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// chunk is an open object with a required member: a variant shared by tags.
type chunk struct {
	Text  string
	Meta  wire.Nullable[jsontext.Value]
	Extra wire.Extras
}

var objChunk = wire.Object{Type: "chunk", Required: []string{"text"}}

func (x *chunk) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = chunk{}
	r := wire.ReadObject(dec, &objChunk)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.End()
}

func (x *chunk) member(r *wire.ObjectReader) error {
	switch string(r.Name()) {
	case "text":
		return wire.Field(r, &x.Text, wire.StringFrom)
	case "_meta":
		return wire.Opt(r, &x.Meta, wire.RawObjectFrom)
	}
	return r.Extra(&x.Extra)
}

func (x chunk) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := wire.WriteObject(enc)
	x.members(&w)
	return w.End()
}

func (x *chunk) members(w *wire.ObjectWriter) {
	wire.Put(w, "text", x.Text, wire.StringTo)
	wire.PutOpt(w, "_meta", x.Meta, wire.RawTo)
	w.Extras(x.Extra)
}

// done is a closed object that names the tag member itself as a const.
type done struct{ OK *bool }

var objDone = wire.Object{Type: "done", Required: []string{"kind"}}

func (x *done) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = done{}
	r := wire.ReadObject(dec, &objDone)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.End()
}

func (x *done) member(r *wire.ObjectReader) error {
	switch string(r.Name()) {
	case "kind":
		return wire.Const(r, "done", wire.StringFrom)
	case "ok":
		return wire.Ptr(r, &x.OK, wire.BoolFrom)
	}
	return r.Unknown()
}

func (x done) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := wire.WriteObject(enc)
	x.members(&w)
	return w.End()
}

func (x *done) members(w *wire.ObjectWriter) {
	wire.PutConst(w, "kind", "done", wire.StringTo)
	wire.PutPtr(w, "ok", x.OK, wire.BoolTo)
}

// update is a tagged union: two tags share chunk; done names the tag itself.
type update struct {
	User, Agent *chunk
	Done        *done
	Unknown     jsontext.Value
}

var unionUpdate = wire.Union{Type: "update", Tag: "kind", Variants: []wire.Variant{
	{Tag: "user", Object: &objChunk}, {Tag: "agent", Object: &objChunk}, {Tag: "done", Object: &objDone},
}}

func (x *update) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = update{}
	r := wire.ReadUnion(dec, &unionUpdate)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.EndUnion(&x.Unknown)
}

func (x *update) member(r *wire.ObjectReader) error {
	switch r.Variant() {
	case 0:
		return wire.New(&x.User).member(r)
	case 1:
		return wire.New(&x.Agent).member(r)
	case 2:
		return wire.New(&x.Done).member(r)
	}
	return nil
}

func (x update) MarshalJSONTo(enc *jsontext.Encoder) error {
	if x.Unknown != nil && x.User == nil && x.Agent == nil && x.Done == nil {
		return wire.RawTo(x.Unknown, enc)
	}
	w := wire.WriteObject(enc)
	switch {
	case x.User != nil:
		w.Tag("kind", "user")
		x.User.members(&w)
	case x.Agent != nil:
		w.Tag("kind", "agent")
		x.Agent.members(&w)
	case x.Done != nil:
		w.Tag("kind", "done")
		x.Done.members(&w)
	default:
		return wire.NoVariant("update")
	}
	return w.End()
}

// server is a tagged union with a default variant (no tag: stdio).
type server struct {
	HTTP, Stdio *chunk
	Unknown     jsontext.Value
}

var unionServer = wire.Union{Type: "server", Tag: "type", Variants: []wire.Variant{
	{Tag: "http", Object: &objChunk}, {Default: true, Object: &objChunk},
}}

func (x *server) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = server{}
	r := wire.ReadUnion(dec, &unionServer)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.EndUnion(&x.Unknown)
}

func (x *server) member(r *wire.ObjectReader) error {
	switch r.Variant() {
	case 0:
		return wire.New(&x.HTTP).member(r)
	case 1:
		return wire.New(&x.Stdio).member(r)
	}
	return nil
}

// resource is told apart by required members: text or blob.
type resource struct {
	Text *chunk
	Blob *blob
}

type blob struct {
	Blob  string
	Extra wire.Extras
}

var objBlob = wire.Object{Type: "blob", Required: []string{"blob"}}

func (x *blob) member(r *wire.ObjectReader) error {
	switch string(r.Name()) {
	case "blob":
		return wire.Field(r, &x.Blob, wire.StringFrom)
	}
	return r.Extra(&x.Extra)
}

var unionResource = wire.Union{Type: "resource", Variants: []wire.Variant{
	{Keys: []string{"text"}, Object: &objChunk}, {Keys: []string{"blob"}, Object: &objBlob},
}}

func (x *resource) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = resource{}
	r := wire.ReadUnion(dec, &unionResource)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.End()
}

func (x *resource) member(r *wire.ObjectReader) error {
	switch r.Variant() {
	case 0:
		return wire.New(&x.Text).member(r)
	case 1:
		return wire.New(&x.Blob).member(r)
	}
	return nil
}

// lists is a union of arrays told apart by their first element.
type lists struct {
	Texts []chunk
	Blobs []blob
}

func (x *lists) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = lists{}
	r := wire.ReadFirstElement(dec, &unionResource)
	for r.Next() {
		r.Done(x.first(&r))
	}
	switch r.Variant() {
	case 0:
		return wire.RestOf(&r, &x.Texts, (*chunk).UnmarshalJSONFrom)
	case 1:
		return wire.RestOf(&r, &x.Blobs, func(p *blob, dec *jsontext.Decoder) error {
			rr := wire.ReadObject(dec, &objBlob)
			for rr.Next() {
				rr.Done(p.member(&rr))
			}
			return rr.End()
		})
	}
	return r.End()
}

func (x *lists) first(r *wire.ObjectReader) error {
	switch r.Variant() {
	case 0:
		return wire.First(&x.Texts).member(r)
	case 1:
		return wire.First(&x.Blobs).member(r)
	}
	return nil
}

func decode[T any](t *testing.T, in string) (T, error) {
	t.Helper()
	var v T
	err := json.Unmarshal([]byte(in), &v)
	// The same from a stream read one byte at a time, where names live in a
	// decoder buffer that moves while values are read.
	var s T
	serr := json.UnmarshalRead(iotest.OneByteReader(strings.NewReader(in)), &s)
	if (err == nil) != (serr == nil) {
		t.Fatalf("%s: streamed decode disagrees: %v vs %v", in, err, serr)
	}
	return v, err
}

func TestTaggedUnionStreams(t *testing.T) {
	for _, in := range []string{
		`{"kind":"agent","text":"hi","_meta":{"a":1},"z":[1]}`, // tag first: no buffering
		`{"text":"hi","_meta":null,"kind":"agent","z":[1]}`,    // members before the tag are replayed
		`{"z":{"deep":[{"kind":"user"}]},"kind":"agent","text":"hi"}`,
	} {
		u, err := decode[update](t, in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if u.Agent == nil || u.User != nil || u.Agent.Text != "hi" {
			t.Fatalf("%s: %+v", in, u)
		}
		for _, m := range u.Agent.Extra {
			if m.Name == "kind" {
				t.Fatalf("%s: the tag leaked into the variant's Extra", in)
			}
		}
		out, err := json.Marshal(u)
		if err != nil || !strings.HasPrefix(string(out), `{"kind":"agent","text":"hi"`) {
			t.Fatalf("%s: encode writes the tag first: %s %v", in, out, err)
		}
	}
	u, err := decode[update](t, `{"kind":"done"}`)
	if err != nil || u.Done == nil || u.Done.OK != nil {
		t.Fatalf("a variant with no other member is still chosen: %+v %v", u, err)
	}
	if out, _ := json.Marshal(u); string(out) != `{"kind":"done"}` {
		t.Fatalf("the tag is written once: %s", out)
	}
	u, err = decode[update](t, `{"ok":true,"kind":"done"}`)
	if err != nil || u.Done == nil || !*u.Done.OK {
		t.Fatalf("%+v %v", u, err)
	}
}

func TestUnknownTagKeptVerbatim(t *testing.T) {
	in := `{"text":"looks like text","kind":"future","n":1.50,"s":"\u00e9"}`
	u, err := decode[update](t, in)
	if err != nil || u.Unknown == nil || u.User != nil || u.Agent != nil {
		t.Fatalf("%+v %v", u, err)
	}
	if string(u.Unknown) != in {
		t.Fatalf("unknown kept as %s", u.Unknown)
	}
	out, err := json.Marshal(u, wire.Fidelity)
	if err != nil || string(out) != in {
		t.Fatalf("re-encoded as %s (%v)", out, err)
	}
}

func TestUnionErrors(t *testing.T) {
	for in, want := range map[string]error{
		`{"text":"x"}`:                   wire.ErrMissingMember, // no tag
		`{"kind":7,"text":"x"}`:          wire.ErrWrongKind,
		`{"kind":null}`:                  wire.ErrNullValue,
		`{"kind":"user"}`:                wire.ErrMissingMember, // the variant's required text
		`{"kind":"done","x":1}`:          wire.ErrUnknownMember,
		`{"kind":"user","text":1}`:       wire.ErrWrongKind,
		`{"text":1,"kind":"user"}`:       wire.ErrWrongKind, // replayed member
		`{"kind":"done","kind":"done"}`:  nil,               // checked below: duplicate names
		`[]`:                             wire.ErrWrongKind,
		`null`:                           wire.ErrNullValue,
		`{"kind":"user","text":"a","x":`: nil,
	} {
		_, err := decode[update](t, in)
		if want == nil {
			if err == nil {
				t.Errorf("%s: want an error", in)
			}
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", in, err, want)
		}
	}
	var de *wire.DecodeError
	_, err := decode[update](t, `{"kind":"user","text":"a","_meta":[]}`)
	if !errors.As(err, &de) || de.Type != "chunk" || de.Member != "_meta" {
		t.Fatalf("errors name the variant type and member: %v", err)
	}
}

func TestDefaultVariant(t *testing.T) {
	s, err := decode[server](t, `{"text":"a","x":1}`)
	if err != nil || s.Stdio == nil || s.HTTP != nil || s.Stdio.Extra[0].Name != "x" {
		t.Fatalf("absent tag chooses the default: %+v %v", s, err)
	}
	s, err = decode[server](t, `{"text":"a","type":"http"}`)
	if err != nil || s.HTTP == nil || len(s.HTTP.Extra) != 0 {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = decode[server](t, `{"type":"ws","text":"a"}`)
	if err != nil || s.Unknown == nil || s.Stdio != nil {
		t.Fatalf("an unknown tag is never the default: %+v %v", s, err)
	}
	if _, err := decode[server](t, `{}`); !errors.Is(err, wire.ErrMissingMember) {
		t.Fatalf("the default variant's required members still count: %v", err)
	}
}

func TestRequiredMemberUnion(t *testing.T) {
	for in, text := range map[string]bool{
		`{"text":"a","uri":"u"}`: true, `{"uri":"u","text":"a"}`: true,
		`{"blob":"b","uri":"u"}`: false, `{"uri":"u","x":[1],"blob":"b"}`: false,
	} {
		v, err := decode[resource](t, in)
		if err != nil || (v.Text != nil) != text || (v.Blob != nil) == text {
			t.Fatalf("%s: %+v %v", in, v, err)
		}
		if text && (v.Text.Extra[0].Name != "uri") || !text && v.Blob.Extra[0].Name != "uri" {
			t.Fatalf("%s: members before the choice keep their order: %+v", in, v)
		}
	}
	_, err := decode[resource](t, `{"uri":"u"}`)
	var de *wire.DecodeError
	if !errors.Is(err, wire.ErrMissingMember) || !errors.As(err, &de) || de.Member != "text or blob" {
		t.Fatalf("no distinguishing member: %v", err)
	}
}

func TestArrayUnion(t *testing.T) {
	v, err := decode[lists](t, `[{"blob":"a"},{"blob":"b","x":1}]`)
	if err != nil || len(v.Blobs) != 2 || v.Texts != nil || v.Blobs[1].Extra[0].Name != "x" {
		t.Fatalf("%+v %v", v, err)
	}
	v, err = decode[lists](t, `[]`)
	if err != nil || v.Texts == nil || len(v.Texts) != 0 {
		t.Fatalf("empty selects the first variant, non-nil: %+v %v", v, err)
	}
	if _, err := decode[lists](t, `[{"text":"a"},{"blob":"b"}]`); !errors.Is(err, wire.ErrMissingMember) {
		t.Fatalf("mixed elements: %v", err)
	}
}

func TestObjectAllocations(t *testing.T) {
	in := []byte(`{"kind":"agent","text":"hello","_meta":{"a":1}}`)
	rd := bytes.NewReader(in)
	dec := jsontext.NewDecoder(rd)
	var u update
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(in)
		dec.Reset(rd)
		if err := u.UnmarshalJSONFrom(dec); err != nil {
			t.Fatal(err)
		}
	})
	// The variant, the text string, the raw _meta: nothing for the reader
	// itself, the tag, or buffering.
	if allocs > 3 {
		t.Fatalf("%v allocations per decode", allocs)
	}
}

// BenchmarkUnionDecode compares the streamed one-pass union decode with the
// three passes the generator used before (read the value raw, scan it for the
// tag, decode the raw value again into the variant).
func BenchmarkUnionDecode(b *testing.B) {
	in := []byte(`{"kind":"agent","text":"Here is the change to main.go you asked for.","_meta":{"a":1}}`)
	rd := bytes.NewReader(in)
	dec := jsontext.NewDecoder(rd)
	b.Run("streamed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(in)
			dec.Reset(rd)
			var u update
			if err := u.UnmarshalJSONFrom(dec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("three-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(in)
			dec.Reset(rd)
			raw, err := dec.ReadValue()
			if err != nil {
				b.Fatal(err)
			}
			raw = bytes.Clone(raw)
			if tag, err := wire.Tag(raw, "update", "kind"); err != nil || tag != "agent" {
				b.Fatal(tag, err)
			}
			var u update
			u.Agent = new(chunk)
			if err := json.Unmarshal(raw, &threePassChunk{u.Agent}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// threePassChunk decodes a chunk that also carries the tag member, as the
// variant did when the union did not consume the tag.
type threePassChunk struct{ c *chunk }

func (x *threePassChunk) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x.c = chunk{}
	r := wire.ReadObject(dec, &objChunk)
	for r.Next() {
		if string(r.Name()) == "kind" {
			r.Done(wire.Const(&r, "agent", wire.StringFrom))
			continue
		}
		r.Done(x.c.member(&r))
	}
	return r.End()
}

// moved is an open object that forbids the member "old" (a property whose
// schema is false): it must be rejected on decode, kept out of Extra, and
// refused on encode.
type moved struct {
	Extra wire.Extras
}

var objMoved = wire.Object{Type: "moved"}

func (x *moved) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*x = moved{}
	r := wire.ReadObject(dec, &objMoved)
	for r.Next() {
		r.Done(x.member(&r))
	}
	return r.End()
}

func (x *moved) member(r *wire.ObjectReader) error {
	switch string(r.Name()) {
	case "old":
		return r.Forbidden()
	}
	return r.Extra(&x.Extra)
}

func (x moved) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := wire.WriteObject(enc)
	w.ExtrasExcept(x.Extra, "moved", "old")
	return w.End()
}

func TestForbiddenMember(t *testing.T) {
	var m moved
	if err := json.Unmarshal([]byte(`{"a":1,"b":{"old":2}}`), &m); err != nil || len(m.Extra) != 2 {
		t.Fatalf("other members are kept: %v %+v", err, m)
	}
	err := json.Unmarshal([]byte(`{"a":1,"old":2}`), &m)
	var de *wire.DecodeError
	if !errors.Is(err, wire.ErrForbiddenMember) || !errors.Is(err, wire.ErrUnknownMember) || !errors.As(err, &de) || de.Type != "moved" || de.Member != "old" {
		t.Fatalf("a forbidden member must fail naming itself: %v", err)
	}
	m.Extra.Set("old", jsontext.Value(`1`))
	if _, err := json.Marshal(m); !errors.Is(err, wire.ErrForbiddenMember) {
		t.Fatalf("encoding a forbidden member must fail: %v", err)
	}
}

// RawOfKinds keeps a value byte for byte and checks its kind; an integer
// is any number of integral value, however it is spelt.
func TestRawOfKinds(t *testing.T) {
	read := wire.RawOfKinds("integer", "null", "string")
	for in, ok := range map[string]bool{
		`1`: true, `1.0`: true, `1e3`: true, `-0`: true, `0.0e-5`: true, `12345678901234567890`: true, `1.50e1`: true,
		`1.5e99999999999999999999`: true, `100e-2`: true, `"x"`: true, `null`: true,
		`1.5`: false, `1e-1`: false, `10e-2`: false, `1e-99999999999999999999`: false, `true`: false, `{}`: false, `[]`: false,
	} {
		var v jsontext.Value
		err := read(&v, jsontext.NewDecoder(strings.NewReader(in)))
		if ok != (err == nil) {
			t.Errorf("%s: %v", in, err)
		}
		if ok && string(v) != in {
			t.Errorf("%s kept as %s", in, v)
		}
		if !ok && !errors.Is(err, wire.ErrWrongKind) {
			t.Errorf("%s: %v, want ErrWrongKind", in, err)
		}
	}
}

func FuzzRawOfKinds(f *testing.F) {
	for _, s := range []string{`1`, `1.0`, `1e3`, `1.5`, `"x"`, `null`, `{}`, `-12.30e+1`} {
		f.Add(s)
	}
	read := wire.RawOfKinds("integer", "string", "null")
	f.Fuzz(func(t *testing.T, in string) {
		var v jsontext.Value
		if err := read(&v, jsontext.NewDecoder(strings.NewReader(in))); err != nil {
			return
		}
		if !v.IsValid() {
			t.Fatalf("kept %q, not JSON", v)
		}
		var x any
		_ = json.Unmarshal(v, &x) // 1e700 is JSON, but no float64
		if f, ok := x.(float64); ok && !math.IsInf(f, 0) && math.Abs(f) < 1<<52 && f != math.Trunc(f) {
			t.Fatalf("%s accepted as an integer", v)
		}
		if !strings.Contains(in, string(v)) {
			t.Fatalf("%q kept as %q", in, v)
		}
	})
}
