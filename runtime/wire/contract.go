package wire

import (
	"errors"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A Contract is the rules one flavour (dialect) of a protocol adds to its
// schema: members that an open object keeps in Extra from any peer but that
// a peer of that flavour must not send (Harn's contract forbids the
// pre-#904 tool-lifecycle fields at the root of ACP's tool calls). The
// generated package of the dialect declares it (harn.ContractHarn), so the
// package of the protocol it extends knows nothing of it: a rule names its
// type by Go name (Object.Type), and a decode under the contract applies it
// to every object of that name it reaches, whichever package generated it.
// A decode applies a contract when given its Options, which a connection of
// that flavour passes to every decode of its params
// (rpc.Options.DecodeOptions):
//
//	err := json.Unmarshal(data, &n, harn.ContractHarn.Options())
//
// Decoding without them keeps the members, like any other extra member.
// Encoding always writes Extra back as it is.
type Contract struct {
	name     string
	rules    []Forbid
	byType   map[string][]string
	variants []Variants
	marker   *json.Unmarshalers
}

// Forbid lists the members that one generated type forbids under a
// contract, in schema order.
type Forbid struct {
	// Type is the Go type name; Schema the definition it is generated
	// from ("<file>#/$defs/<name>").
	Type, Schema string
	Members      []string
}

// Variants are variants a dialect adds to a union of the protocol it
// extends, which that protocol's decoder keeps in Unknown (Harn's
// session/update variants in ACP's SessionUpdate): under the contract, an
// object of the union Type (Go name) whose tag is one of Tags must also
// decode as the dialect's value New returns, or the decode fails with that
// error. The value is thrown away; the union keeps the object in Unknown,
// and the dialect's package types it (harn.UpdateOf).
type Variants struct {
	// Type is the union's Go type name; Schema the definition it is
	// generated from.
	Type, Schema string
	Tags         []string
	New          func() json.UnmarshalerFrom
}

// contractMarker is never decoded: a contract's Unmarshalers, unique to it,
// only mark a decode as applying the contract.
type contractMarker struct{}

// contracts maps each contract's marker to the contract, for the decoder
// of an open object's extra members (ObjectReader.Extra), which knows the
// options of its decode but not the package that declared the contract.
var contracts sync.Map // *json.Unmarshalers -> *Contract

// NewContract returns a contract called name with the given rules.
// Generated code calls it once per contract, at package initialisation; a
// contract lives as long as the program.
func NewContract(name string, rules ...Forbid) *Contract {
	c := &Contract{name: name, rules: slices.Clone(rules), byType: map[string][]string{}}
	for _, r := range rules {
		c.byType[r.Type] = append(c.byType[r.Type], r.Members...)
	}
	c.marker = json.UnmarshalFromFunc(func(*jsontext.Decoder, *contractMarker) error { return nil })
	contracts.Store(c.marker, c)
	return c
}

// Extend adds the variants a dialect adds to unions of the protocol it
// extends, and returns c. Generated code calls it once, where it declares
// c, before any decode applies c.
func (c *Contract) Extend(v ...Variants) *Contract {
	c.variants = append(c.variants, v...)
	return c
}

// VariantTags returns the tags c adds to the union called typ, or nil.
func (c *Contract) VariantTags(typ string) []string {
	var out []string
	for _, v := range c.variants {
		if v.Type == typ {
			out = append(out, v.Tags...)
		}
	}
	return out
}

// checkVariant decodes the object raw of union typ, whose tag is tag and
// which the union keeps as unknown, as the dialect's variant when c adds
// one of that tag. at is the union's JSON pointer in the document: the
// error's pointer, relative to raw, is placed under it.
func (c *Contract) checkVariant(typ, tag string, raw []byte, at jsontext.Pointer) error {
	for _, v := range c.variants {
		if v.Type != typ || !slices.Contains(v.Tags, tag) {
			continue
		}
		err := json.Unmarshal(raw, v.New(), c.Options())
		if se, ok := errors.AsType[*json.SemanticError](err); ok && se.Err != nil {
			out := *se
			out.JSONPointer = at + se.JSONPointer
			out.ByteOffset = 0
			return &out
		}
		return err
	}
	return nil
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

// contractOf returns the contract dec decodes under, or nil.
func contractOf(dec *jsontext.Decoder) *Contract {
	if dec == nil {
		return nil
	}
	u, ok := json.GetOption(dec.Options(), json.WithUnmarshalers)
	if !ok || u == nil {
		return nil
	}
	c, _ := contracts.Load(u)
	c2, _ := c.(*Contract)
	return c2
}

// forbids reports whether c forbids member name in objects of type typ.
func (c *Contract) forbids(typ string, name []byte) bool {
	for _, m := range c.byType[typ] {
		if m == string(name) {
			return true
		}
	}
	return false
}

// carryUnmarshalers returns the options of dec that a decoder of buffered
// members must share with it: its unmarshalers, which carry a contract.
func carryUnmarshalers(dec *jsontext.Decoder) []jsontext.Options {
	if u, ok := json.GetOption(dec.Options(), json.WithUnmarshalers); ok && u != nil {
		return []jsontext.Options{json.WithUnmarshalers(u)}
	}
	return nil
}
