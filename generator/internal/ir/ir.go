// Package ir is the generator's intermediate representation: Go-shaped types
// and methods built from a catalogue and its schemas. Emitters see only the
// IR; it owns its types and shares none with the loader.
package ir

import (
	"encoding/json"
	"strconv"
)

// Framing is how a protocol's messages travel.
type Framing int

// Framings.
const (
	JSONRPC2NDJSON Framing = iota + 1 // JSON-RPC 2.0, one object per line
	EnvelopeNDJSON                    // AgentPM's {protocol, version, kind, id, ...} frames
	StdoutJSON                        // one JSON document on stdout
	JSONRPC2HTTP                      // JSON-RPC 2.0, one request per HTTP exchange
)

// String is the framing's catalogue spelling.
func (f Framing) String() string {
	switch f {
	case JSONRPC2NDJSON:
		return "jsonrpc2-ndjson"
	case EnvelopeNDJSON:
		return "envelope-ndjson"
	case StdoutJSON:
		return "stdout-json"
	case JSONRPC2HTTP:
		return "jsonrpc2-http"
	}
	return "Framing(" + strconv.Itoa(int(f)) + ")"
}

// MethodKind is how a method travels.
type MethodKind int

// Method kinds.
const (
	Request               MethodKind = iota + 1 // answered with a result or an error
	Notification                                // one-way, no answer
	RequestOrNotification                       // accepted either way
	Event                                       // one-way frame of an envelope protocol
	Response                                    // a frame answering another
)

// String is the kind's catalogue spelling.
func (k MethodKind) String() string {
	switch k {
	case Request:
		return "request"
	case Notification:
		return "notification"
	case RequestOrNotification:
		return "request_or_notification"
	case Event:
		return "event"
	case Response:
		return "response"
	}
	return "MethodKind(" + strconv.Itoa(int(k)) + ")"
}

// OneWay reports whether the method is never answered (notifications, events).
func (k MethodKind) OneWay() bool { return k == Notification || k == Event }

// Status is how stable a method or operation is.
type Status int

// Statuses.
const (
	Stable          Status = iota + 1
	Experimental           // may change
	LegacyTolerated        // accepted for compatibility, never emitted by bridgekit
	Retired                // documented so it can be rejected knowingly
)

// Served reports whether a side serves methods of this status: a retired
// method gets no handler field and is answered like an unknown one.
func (s Status) Served() bool { return s != Retired }

// Sent reports whether generated peers send methods of this status: legacy
// and retired ones are never emitted.
func (s Status) Sent() bool { return s == Stable || s == Experimental }

// String is the status's catalogue spelling.
func (s Status) String() string {
	switch s {
	case Stable:
		return "stable"
	case Experimental:
		return "experimental"
	case LegacyTolerated:
		return "legacy-tolerated"
	case Retired:
		return "retired"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Package is everything generated for one catalogue.
type Package struct {
	// Name is the Go package name (gen/<Name>).
	Name string
	// Protocol identifies the protocol (harn-bridge, acp, agentpm-service).
	Protocol   string
	Title, Doc string
	Framing    Framing
	// Envelope is set for envelope framings.
	Envelope *Envelope
	// Sides are the two peers, in catalogue order.
	Sides [2]*Side
	// Source is the catalogue file, relative to the repository root.
	Source string
	// Inputs are the schema files read, relative to spec/schemas.
	Inputs []string
	// Types are sorted by name.
	Types   []*Type
	Methods []*Method
	// Errors are the errors any method can get.
	Errors []Error
	// Codes are the string error codes the catalogue documents (agentpm's
	// "session_busy"), protocol-wide ones first, then the methods' and
	// operations' in catalogue order of first mention.
	Codes []*Code
	// Contracts are the contracts the catalogue's overlays scope forbidden
	// members to, by name, with the types they apply to: the package's own,
	// and those of imported packages a dialect's overlays forbid members of.
	Contracts []*Contract
	// Dialect are the catalogue's overlays scoped to a contract on types of
	// imported packages, in catalogue order: a dialect's rules for the
	// protocol it extends, which leave those types unchanged.
	Dialect []*DialectOverlay
}

// DialectOverlay is one overlay scoped to a contract on an imported type:
// members forbidden, a member typed by a schema of ours, or variants added
// to a union, under the contract only.
type DialectOverlay struct {
	Contract string
	// Type is the imported type it applies to.
	Type *Type
	// Member is the retyped member, Schema its type under the contract.
	Member string
	Schema *Ref
	Forbid []string
	// Variants are the types added to the union under the contract.
	Variants []*Ref
	Reason   string
}

// Scoped lists the members a type forbids under one contract.
type Scoped struct {
	// Contract is the contract's name ("harn"); Go the name of its
	// generated wire.Contract (ContractHarn).
	Contract, Go string
	Members      []string
}

// Contract is one contract and the types whose members it forbids.
type Contract struct {
	Name, Go string
	Rules    []ContractRule
	// Variants are the package's own types that the contract adds to
	// unions of imported packages (a dialect's overlay variants).
	Variants []ContractVariants
}

// ContractVariants is one type of the package that a contract adds to a
// union of an imported package: an object of Union with one of Tags must
// decode as Type under the contract.
type ContractVariants struct {
	Union, Type *Type
	Tags        []string
}

// ContractRule is what a contract forbids in one type, in schema order.
type ContractRule struct {
	Type    *Type
	Members []string
}

// Code is one documented string error code.
type Code struct {
	// Code is the wire value; Go its Go name (SessionBusy).
	Code, Go string
	// Uses say when it occurs, each with the methods (and operations) that
	// document it so, in catalogue order.
	Uses []CodeUse
}

// CodeUse is one documented meaning of an error code.
type CodeUse struct {
	When string
	// Where are "<wire>[ (<qualifier value>)][ <operation>]", or "any
	// method" for a protocol-wide error.
	Where []string
}

// Envelope is the protocol string and version every frame of an envelope
// framing carries.
type Envelope struct {
	Protocol string
	Version  int64
}

// Side is one peer of a protocol.
type Side struct {
	// Name is the catalogue's name (host, vm, agent, client).
	Name string
	// Go prefixes generated names (HostClient, DispatchHost).
	Go  string
	Doc string
}

// Method is one wire method.
type Method struct {
	// Wire is the method name on the wire (session/new).
	Wire string
	// Go is its Go name (SessionNew).
	Go string
	// Qualifier holds further envelope members that identify the method
	// together with Wire ({"service": "knowledge"}), sorted by member.
	Qualifier []MemberValue
	// From sends the method; To serves it.
	From, To *Side
	Kind     MethodKind
	// Params is nil when the method has none.
	Params *Ref
	// Result is nil for any JSON result (and for one-way methods).
	Result *Ref
	Errors []Error
	Status Status
	// Source says where the contract comes from; Doc what the method does.
	Source, Doc string
	// Operations are carried inside the method (host/call), or nil.
	Operations *Operations
	// Cancels says which running requests this method cancels, or nil.
	Cancels *Cancels
	// FrameID is the params member whose value an event's frame carries as
	// its id, or nil.
	FrameID *Field
	// Preempt: the receiver handles it on the connection's control lane.
	Preempt bool
	// Index is the method's position in Package.Methods.
	Index int
}

// MemberValue is a JSON member name with the string value it must have.
type MemberValue struct {
	Member, Value string
}

// Error is one documented error of a method or operation.
type Error struct {
	Code ErrorCode
	When string
}

// ErrorCode is a JSON-RPC integer code or a protocol's string code.
type ErrorCode struct {
	// Int is the integer code; meaningless when String is set.
	Int int64
	// String is a string code (agentpm's "session_busy"), or "".
	String string
}

// JSON renders the code as it appears on the wire.
func (c ErrorCode) JSON() string {
	if c.String != "" {
		b, _ := json.Marshal(c.String)
		return string(b)
	}
	return strconv.FormatInt(c.Int, 10)
}

// Operations are operations carried inside one method, selected by members
// of its params.
type Operations struct {
	// Selector are members of the params struct, in selector order.
	Selector []*Field
	// Payload is the params member carrying the operation's arguments.
	Payload *Field
	Items   []*Operation
}

// Operation is one operation carried inside a method.
type Operation struct {
	// MatchValues gives each selector member's value, in selector order.
	MatchValues []string
	Go          string
	// Advertise says how a capability query lists the operation, or nil.
	Advertise    *Advertise
	Args, Result *Ref
	Errors       []Error
	Status       Status
	Source, Doc  string
}

// Advertise says how a capability query lists an operation
// ({"<capability>": ["<op>", ...]}).
type Advertise struct {
	Capability, Op string
}

// Cancels says which running requests a method cancels: every running
// request of Method, or those whose params member TargetKey equals this
// method's params member Key, or the one whose request id is in member ID.
type Cancels struct {
	// Method is the request that is cancelled.
	Method *Method
	// Key is a member of this method's params (nil: no key match), TargetKey
	// the member of the same name in Method's params.
	Key, TargetKey *Field
	// ID is a member of this method's params holding the target request's
	// id, or nil.
	ID *Field
}

// RefKind is the shape of a use of a type.
type RefKind int

// Ref kinds.
const (
	String    RefKind = iota + 1 // string
	Bool                         // bool
	Int                          // int64
	Float                        // float64
	Raw                          // any JSON value, kept verbatim (jsontext.Value)
	RawObject                    // any JSON object, kept verbatim (jsontext.Value)
	Array                        // []Elem
	Map                          // map[string]Elem
	Named                        // a generated type
)

// Ref is a use of a type, with the value constraints the schema puts on it.
type Ref struct {
	Kind  RefKind
	Elem  *Ref  // Array, Map
	Named *Type // Named

	Minimum, Maximum     *float64
	MinLength, MaxLength *int
	MinItems             *int
	Pattern              string
	// Format is the schema's format annotation (int64, uint32, uri, ...).
	Format string
	// Example is, for a Raw use of a definition spec/overrides.json leaves
	// untyped, a valid value of it (the override's example).
	Example json.RawMessage
	// Kinds are, for such a Raw use, the JSON kinds its schema allows
	// when the schema is nothing but plain kinds ("integer", "string",
	// "null", ...: ACP v1's RequestId), which decoding checks while it
	// keeps the value byte for byte; nil when the schema says more.
	Kinds []string
}

// HasConstraints reports whether decoding must check a constraint.
func (r *Ref) HasConstraints() bool {
	return r.Minimum != nil || r.Maximum != nil || r.MinLength != nil || r.MaxLength != nil || r.MinItems != nil || r.Pattern != ""
}

// TypeKind is the shape of a generated type.
type TypeKind int

// Type kinds.
const (
	Struct  TypeKind = iota + 1 // object with named members
	Enum                        // string or integer values, closed or open
	Scalar                      // a named string, integer, number or boolean
	MapType                     // object whose members all share one schema
	Union                       // one of several variants
)

// UnionKind says how a union's variant is chosen.
type UnionKind int

// Union kinds.
const (
	ByKind    UnionKind = iota + 1 // the value's JSON kind (object, array, string, ...)
	ByTag                          // the string value of member Tag; other values are kept in Unknown
	ByMembers                      // a required member only one variant has (Variant.Keys)
	ByElement                      // arrays told apart by their first element's members or tag
)

// Type is a generated Go type.
type Type struct {
	Name string
	// Import is the Go import path of the package that generates the type
	// when it belongs to an imported catalogue ("" for the package's own);
	// ImportName is that package's name. Imported types are built only to
	// know their shape and are referred to, never emitted.
	Import, ImportName string
	// Doc is the schema's description.
	Doc string
	// Pointer is the schema location it came from (file#/pointer).
	Pointer string
	Kind    TypeKind

	// Fields are a Struct's members, in schema order.
	Fields []*Field
	// Closed: a Struct (or a union's Common part) rejects members the schema
	// does not name; otherwise they are kept in Extra.
	Closed bool
	// Forbidden are members a Struct rejects even when open (properties
	// whose schema is false, or an overlay's forbid list), in schema order.
	Forbidden []string
	// Scoped are members an open Struct forbids only under a contract (an
	// overlay's forbid with contract): kept in Extra otherwise.
	Scoped []Scoped

	// Base is an Enum's or Scalar's underlying value: String, Int, Float or
	// Bool, with a Scalar's constraints.
	Base *Ref
	// Values are an Enum's known values, in schema order.
	Values []*EnumValue
	// Open: the Enum keeps values it does not list (anyOf with a plain
	// branch); closed ones reject them.
	Open bool

	// Elem is a MapType's value.
	Elem *Ref

	// Union says how the variant is chosen.
	Union UnionKind
	// Tag is the member whose value selects the variant (ByTag, and ByElement
	// unions of tagged elements).
	Tag string
	// Common are members every variant of an object union shares.
	Common   []*Field
	Variants []*Variant
	// Other is set when the union also takes any other value: one of its
	// alternatives has no schema (ACP v2's "Other"). A value that decodes as
	// no variant is then kept verbatim in the field Other names.
	Other *Other
}

// Other is a union's alternative that takes any value.
type Other struct {
	// Go names the field holding the value (the alternative's title, or
	// "Other").
	Go  string
	Doc string
}

// EnumValue is one known value of an Enum.
type EnumValue struct {
	// Go is the constant's name (RoleAssistant).
	Go string
	// String or Int holds the value, by the enum's Base.
	String string
	Int    int64
	// Doc is the value's own description (oneOf/anyOf of consts).
	Doc string
}

// Field is one member of a struct.
type Field struct {
	JSON, Go, Doc string
	Ref           *Ref
	Required      bool
	Nullable      bool
	Default       json.RawMessage
	// Const is set for a member whose value is fixed: a required one is not
	// stored, always written and checked on decode.
	Const json.RawMessage
	// Pointer is the property's schema location.
	Pointer string
	// Represented is, for an optional member that is not nullable but is
	// held as wire.Nullable[T] because spec/overrides.json's represent
	// table makes it follow the same member of another type, that member
	// ("ToolCallUpdate.kind"). Null stays refused on decode and on encode.
	Represented string
}

// Variant is one alternative of a Union.
type Variant struct {
	// Go names the union's field holding it.
	Go  string
	Doc string
	// Ref is its type: a struct for object unions, an array of structs for
	// ByElement, anything of the right JSON kind for ByKind.
	Ref *Ref
	// Kind is the JSON kind that selects it (ByKind): '{', '[', '"', '0', 't'.
	Kind byte
	// Tag is the tag value that selects it (ByTag, ByElement), or "".
	Tag string
	// Keys are members only this variant has (ByMembers, ByElement).
	Keys []string
	// Default: chosen when nothing selects another variant.
	Default bool
	// Nested: the variant is itself a union of objects (ACP v2's
	// state_update, a union by state): chosen by this union's tag, its
	// other members decoded by the inner union, in a second pass over them.
	Nested bool
	// NullTag: the default variant of a union by tag is chosen also when
	// the tag is null (ACP v2's "none" stop reason: omitted or null);
	// the null member is then the variant's, kept in its Extra.
	NullTag bool
}

// Struct returns the struct a variant of an object union decodes into (for
// ByElement, the element struct).
func (v *Variant) Struct() *Type {
	r := v.Ref
	if r.Kind == Array {
		r = r.Elem
	}
	return r.Named
}
