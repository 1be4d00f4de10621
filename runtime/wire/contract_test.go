package wire_test

import (
	"bytes"
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
