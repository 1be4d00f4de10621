// Package ir is the generator's intermediate representation: Go-shaped types
// and methods built from a catalogue and its schemas. Emitters see only the IR.
package ir

import (
	"encoding/json"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
)

// RefKind is the shape of a use of a type.
type RefKind int

// Ref kinds.
const (
	String    RefKind = iota // string
	Bool                     // bool
	Int                      // int64
	Float                    // float64
	Raw                      // any JSON value, kept verbatim (jsontext.Value)
	RawObject                // any JSON object, kept verbatim (jsontext.Value)
	Array                    // []Elem
	Map                      // map[string]Elem
	Named                    // a generated type
)

// Ref is a use of a type, with the value constraints the schema puts on it.
type Ref struct {
	Kind  RefKind
	Elem  *Ref
	Named *Type

	Minimum, Maximum     *float64
	MinLength, MaxLength *int
	MinItems             *int
	Pattern              string
}

// HasConstraints reports whether decoding must check a constraint.
func (r *Ref) HasConstraints() bool {
	return r.Minimum != nil || r.Maximum != nil || r.MinLength != nil || r.MaxLength != nil || r.MinItems != nil || r.Pattern != ""
}

// TypeKind is the shape of a generated type.
type TypeKind int

// Type kinds.
const (
	Struct     TypeKind = iota // object with named members
	StringEnum                 // closed set of strings
	IntEnum                    // closed set of integers
	MapType                    // object whose members all share one schema
	Union                      // value whose JSON kind selects the variant
)

// Emitter names which code emits a type.
const (
	EmitJennifer     = "jennifer"
	EmitGoJSONSchema = "go-jsonschema"
)

// Type is a generated Go type.
type Type struct {
	Name    string
	Doc     string
	Pointer string // schema location it came from
	Kind    TypeKind
	Emitter string

	Fields []*Field // Struct
	Closed bool     // Struct: unknown members are rejected (else kept in Extra)

	Strings []string // StringEnum
	Ints    []int64  // IntEnum

	Elem *Ref // MapType

	Variants []*Variant // Union
	// Discriminator is set for a union of objects told apart by the string
	// const value of this member; unknown values are kept, not rejected.
	Discriminator string
}

// Field is one member of a struct.
type Field struct {
	JSON, Go, Doc string
	Ref           *Ref
	Required      bool
	Nullable      bool
	Default       json.RawMessage
	// Const is set for a required member whose value is fixed: it is not
	// stored, always written, and checked on decode.
	Const json.RawMessage
	// Bit is the field's bit in the required-member mask, or -1.
	Bit int
}

// Variant is one alternative of a Union, selected by JSON kind or by tag.
type Variant struct {
	Kind byte // '{', '[', '"', '0', 't'
	Go   string
	Ref  *Ref
	Tag  string // discriminator value, for discriminated unions
}

// Package is everything generated for one catalogue.
type Package struct {
	Name      string
	Catalogue *catalogue.Catalogue
	Types     []*Type // sorted by name
	Methods   []*Method
	Inputs    []string // files read, for the header
}

// Method is one wire method.
type Method struct {
	catalogue.Method
	FromSide, ToSide catalogue.Side
	Index            int  // position in the catalogue
	Params           *Ref // nil when the catalogue gives none
	Result           *Ref // nil: any JSON (jsontext.Value)
	Ops              *Ops
}

// Ops are operations carried inside a method.
type Ops struct {
	Selector []*Field // members of the params struct, in selector order
	Payload  *Field
	Items    []*Op
}

// Op is one operation.
type Op struct {
	catalogue.Operation
	MatchValues []string // in selector order
	Args        *Ref
	Result      *Ref
}
