package wire

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// ObjectWriter encodes one JSON object member by member for generated code.
// Its error is sticky: after the first failure every call does nothing and
// End reports it, so each member is one line of generated code:
//
//	w := wire.WriteObject(enc)
//	wire.Put(&w, "name", x.Name, wire.StringTo)
//	wire.PutPtr(&w, "title", x.Title, wire.StringTo)
//	w.Extras(x.Extra)
//	return w.End()
type ObjectWriter struct {
	enc  *jsontext.Encoder
	err  error
	tag  string
	open bool
}

// WriteObject returns the writer of an object's members. The '{' is written
// with the first member (or by End), so a union can still fall back to
// writing an unknown value verbatim when it finds no variant set.
func WriteObject(enc *jsontext.Encoder) ObjectWriter {
	return ObjectWriter{enc: enc}
}

func (w *ObjectWriter) begin() bool {
	if !w.open && w.err == nil {
		w.open = true
		w.err = w.enc.WriteToken(jsontext.BeginObject)
	}
	return w.err == nil
}

// End writes '}' (and '{' if no member was written) and reports the first error.
func (w *ObjectWriter) End() error {
	if !w.begin() {
		return w.err
	}
	return w.enc.WriteToken(jsontext.EndObject)
}

// Tag writes a union's tag member first. A const member of the same name
// that the variant writes later is then skipped, so variant types can be
// shared by several tags and can name the tag themselves.
func (w *ObjectWriter) Tag(name, value string) {
	if w.member(name) {
		w.err = StringTo(value, w.enc)
	}
	w.tag = name
}

// Extras writes the kept members of an open object.
func (w *ObjectWriter) Extras(x Extras) {
	if len(x) > 0 && w.begin() {
		w.err = x.Encode(w.enc)
	}
}

// ExtrasExcept writes the kept members of an open object whose schema forbids
// the members named in forbidden; a kept member of such a name fails with
// ErrForbiddenMember, so an encoding never holds what decoding rejects.
func (w *ObjectWriter) ExtrasExcept(x Extras, typ string, forbidden ...string) {
	for _, m := range x {
		for _, f := range forbidden {
			if m.Name == f && w.err == nil {
				w.err = &DecodeError{Type: typ, Member: f, Err: ErrForbiddenMember}
			}
		}
	}
	w.Extras(x)
}

func (w *ObjectWriter) member(name string) bool {
	if !w.begin() {
		return false
	}
	w.err = w.enc.WriteToken(jsontext.String(name))
	return w.err == nil
}

// WriteUnknown writes the verbatim value of a union whose variant this
// version does not know, or fails with ErrNoVariant when there is none.
func WriteUnknown(enc *jsontext.Encoder, typ string, unknown jsontext.Value) error {
	if unknown == nil {
		return NoVariant(typ)
	}
	return enc.WriteValue(unknown)
}

// Put writes a member that is always present.
func Put[E any](w *ObjectWriter, name string, v E, write Writer[E]) {
	if w.member(name) {
		w.err = write(v, w.enc)
	}
}

// PutConst writes a member whose value the schema fixes, unless it is the tag
// a union has already written.
func PutConst[E any](w *ObjectWriter, name string, v E, write Writer[E]) {
	if name != w.tag {
		Put(w, name, v, write)
	}
}

// PutPtr writes *v, or nothing when v is nil (an absent optional member).
func PutPtr[E any](w *ObjectWriter, name string, v *E, write Writer[E]) {
	if v != nil && w.member(name) {
		w.err = write(*v, w.enc)
	}
}

// PutNullPtr writes *v, or null when v is nil (a required member that may be null).
func PutNullPtr[E any](w *ObjectWriter, name string, v *E, write Writer[E]) {
	if w.member(name) {
		if v == nil {
			w.err = w.enc.WriteToken(jsontext.Null)
			return
		}
		w.err = write(*v, w.enc)
	}
}

// PutIf writes v when present is true: an optional member of a nil-able type
// (slice, map, raw JSON), present when non-nil.
func PutIf[E any](w *ObjectWriter, name string, v E, present bool, write Writer[E]) {
	if present && w.member(name) {
		w.err = write(v, w.enc)
	}
}

// PutOrNull writes v, or null when present is false: a required member of a
// nil-able type that may be null.
func PutOrNull[E any](w *ObjectWriter, name string, v E, present bool, write Writer[E]) {
	if w.member(name) {
		if !present {
			w.err = w.enc.WriteToken(jsontext.Null)
			return
		}
		w.err = write(v, w.enc)
	}
}

// PutOpt writes an optional member that may be null: nothing when absent,
// null when null, else the value.
func PutOpt[E any](w *ObjectWriter, name string, v Nullable[E], write Writer[E]) {
	switch v.state {
	case 1:
		if w.member(name) {
			w.err = w.enc.WriteToken(jsontext.Null)
		}
	case 2:
		if w.member(name) {
			w.err = write(v.value, w.enc)
		}
	}
}

// PutOptValue writes a member held as a Nullable whose schema does not admit
// null (see OptValue): nothing when absent, else the value; a null fails
// with an *EncodeError naming typ.name and wrapping ErrNullValue, so an
// encoding never holds what decoding refuses.
func PutOptValue[E any](w *ObjectWriter, typ, name string, v Nullable[E], write Writer[E]) {
	if v.state == 1 {
		if w.err == nil {
			w.err = &EncodeError{Type: typ + "." + name, Err: ErrNullValue}
		}
		return
	}
	PutOpt(w, name, v, write)
}

// PutMembers writes the members of v, itself an object (a nested variant's
// inner union), into w after what w holds already: the union's tag. Names
// and values are copied as v encodes them.
func PutMembers(w *ObjectWriter, v interface {
	MarshalJSONTo(*jsontext.Encoder) error
}) {
	if w.err != nil {
		return
	}
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf, Fidelity)
	if err := v.MarshalJSONTo(enc); err != nil {
		w.err = err
		return
	}
	dec := jsontext.NewDecoder(bytes.NewReader(buf.Bytes()), Fidelity)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		w.err = errors.Join(err, ErrWrongKind)
		return
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			w.err = err
			return
		}
		if !w.begin() {
			return
		}
		if w.err = w.enc.WriteValue(name); w.err != nil {
			return
		}
		val, err := dec.ReadValue()
		if err != nil {
			w.err = err
			return
		}
		w.err = w.enc.WriteValue(val)
	}
}
