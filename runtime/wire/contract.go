package wire

import (
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A Contract is the rules one flavour of a protocol adds to its schema:
// members that an open object keeps in Extra from any peer but that a peer
// of that flavour must not send (Harn's contract forbids the pre-#904
// tool-lifecycle fields at the root of ACP's tool calls). Generated
// packages declare the contracts their catalogue names (acp.ContractHarn);
// a decode applies one when given its Options, which a connection of that
// flavour passes to every decode of its params (rpc.Options.DecodeOptions):
//
//	err := json.Unmarshal(data, &n, acp.ContractHarn.Options())
//
// Decoding without them keeps the members, like any other extra member.
// Encoding always writes Extra back as it is.
type Contract struct {
	name   string
	rules  []Forbid
	marker *json.Unmarshalers
}

// Forbid lists the members that one generated type forbids under a
// contract, in schema order.
type Forbid struct {
	// Type is the Go type name; Schema the definition it is generated
	// from ("<file>#/$defs/<name>").
	Type, Schema string
	Members      []string
}

// contractMarker is never decoded: a contract's Unmarshalers, unique to it,
// only mark a decode as applying the contract.
type contractMarker struct{}

// NewContract returns a contract called name with the given rules.
// Generated code calls it once per contract, at package initialisation.
func NewContract(name string, rules ...Forbid) *Contract {
	c := &Contract{name: name, rules: slices.Clone(rules)}
	c.marker = json.UnmarshalFromFunc(func(*jsontext.Decoder, *contractMarker) error { return nil })
	return c
}

// Name is the contract's name in its catalogue ("harn").
func (c *Contract) Name() string { return c.name }

// Rules returns a copy of the contract's rules, one per type.
func (c *Contract) Rules() []Forbid {
	out := slices.Clone(c.rules)
	for i := range out {
		out[i].Members = slices.Clone(out[i].Members)
	}
	return out
}

// Forbidden returns the members the type called typ forbids under c, or
// nil.
func (c *Contract) Forbidden(typ string) []string {
	for _, r := range c.rules {
		if r.Type == typ {
			return slices.Clone(r.Members)
		}
	}
	return nil
}

// Options returns the decode options that apply c (go-json-experiment's
// json.Unmarshal, UnmarshalDecode or a jsontext.Decoder's options). They
// set json.WithUnmarshalers, so they replace other unmarshalers given
// before them, and one decode applies at most one contract.
func (c *Contract) Options() json.Options { return json.WithUnmarshalers(c.marker) }

// Applies reports whether dec decodes under c.
func (c *Contract) Applies(dec *jsontext.Decoder) bool {
	if c == nil || dec == nil {
		return false
	}
	u, ok := json.GetOption(dec.Options(), json.WithUnmarshalers)
	return ok && u == c.marker
}

// Under handles the current member of an open object that c forbids: it
// is rejected with ErrForbiddenMember when the decode applies c, and kept
// in x like any other extra member otherwise.
func (r *ObjectReader) Under(c *Contract, x *Extras) error {
	if r.nlen < 0 {
		return nil
	}
	if c.Applies(r.dec) {
		return ErrForbiddenMember
	}
	return r.Extra(x)
}

// carryUnmarshalers returns the options of dec that a decoder of buffered
// members must share with it: its unmarshalers, which carry a contract.
func carryUnmarshalers(dec *jsontext.Decoder) []jsontext.Options {
	if u, ok := json.GetOption(dec.Options(), json.WithUnmarshalers); ok && u != nil {
		return []jsontext.Options{json.WithUnmarshalers(u)}
	}
	return nil
}
