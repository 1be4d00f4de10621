package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// A decode applies a contract only when given that contract's options, not
// another's; the contract's table is a copy.
func TestContractApplies(t *testing.T) {
	a := wire.NewContract("a", wire.Forbid{Type: "T", Schema: "s.json#/$defs/t", Members: []string{"x", "y"}})
	b := wire.NewContract("b")
	dec := func(opts ...jsontext.Options) *jsontext.Decoder {
		return jsontext.NewDecoder(bytes.NewReader([]byte(`{}`)), opts...)
	}
	if !a.Applies(dec(a.Options())) || a.Applies(dec()) || a.Applies(dec(b.Options())) || b.Applies(dec(a.Options())) {
		t.Error("Applies")
	}
	if !a.Applies(dec(json.JoinOptions(json.Deterministic(true), a.Options()))) {
		t.Error("joined options")
	}
	var nilc *wire.Contract
	if nilc.Applies(dec(a.Options())) || a.Applies(nil) {
		t.Error("nil")
	}
	r := a.Rules()
	r[0].Members[0] = "changed"
	if got := a.Forbidden("T"); len(got) != 2 || got[0] != "x" || a.Forbidden("U") != nil || a.Name() != "a" {
		t.Errorf("table: %v", got)
	}
}

// A contract declared apart from the types it names (a dialect's, in
// another package) applies to them by Go name: under it a forbidden extra
// member of an open object is refused, wherever the object sits and also
// when a union replays it; an unknown tag the contract adds must decode as
// the dialect's variant, whose error is placed under the union; a tag it
// does not add, and every document of a plain decode, is kept as before.
func TestContractAppliesByTypeName(t *testing.T) {
	c := wire.NewContract("dialect", wire.Forbid{Type: "chunk", Schema: "s.json#/$defs/chunk", Members: []string{"legacy"}}).
		Extend(wire.Variants{Type: "update", Schema: "s.json#/$defs/update", Tags: []string{"note"},
			New: func() json.UnmarshalerFrom { return new(chunk) }})
	if tags := c.VariantTags("update"); len(tags) != 1 || tags[0] != "note" || c.VariantTags("chunk") != nil {
		t.Fatalf("variant tags: %v", tags)
	}
	for in, want := range map[string]error{
		`{"kind":"user","text":"a","legacy":1}`: wire.ErrForbiddenMember,
		`{"legacy":1,"kind":"user","text":"a"}`: wire.ErrForbiddenMember,
		`{"kind":"user","text":"a","other":1}`:  nil,
		`{"kind":"note","text":"a"}`:            nil,
		`{"kind":"note","text":1}`:              wire.ErrWrongKind,
		`{"kind":"note"}`:                       wire.ErrMissingMember,
		`{"kind":"note","text":"a","legacy":2}`: wire.ErrForbiddenMember,
		`{"kind":"other","text":1}`:             nil,
	} {
		var plain update
		if err := json.Unmarshal([]byte(in), &plain); err != nil {
			t.Errorf("%s plain: %v", in, err)
		}
		var u update
		err := json.Unmarshal([]byte(in), &u, c.Options())
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s under the contract: %v, want %v", in, err, want)
		}
		if err == nil {
			a, _ := json.Marshal(plain)
			b, _ := json.Marshal(u)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: decoded apart: %s and %s", in, a, b)
			}
		}
	}
	// The variant's error is placed under the union.
	var doc struct{ Update update }
	err := json.Unmarshal([]byte(`{"Update":{"kind":"note","text":1}}`), &doc, c.Options())
	if p := wire.Pointer(err); p != "/Update/text" {
		t.Errorf("pointer %q (%v)", p, err)
	}
	// Another contract, or none, does not apply these rules.
	other := wire.NewContract("other")
	if err := json.Unmarshal([]byte(`{"kind":"user","text":"a","legacy":1}`), new(update), other.Options()); err != nil {
		t.Errorf("another contract: %v", err)
	}
}
