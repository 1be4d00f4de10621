package wire

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// Member is one JSON object member kept verbatim.
type Member struct {
	Name  string
	Value jsontext.Value
}

// Extras keeps, in arrival order, the members of an open object that its schema
// does not name, so that a decode followed by an encode loses nothing.
type Extras []Member

// Get returns the raw value of the member called name.
func (x Extras) Get(name string) (jsontext.Value, bool) {
	for _, m := range x {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// Set replaces the member called name, or appends it. value must be valid JSON.
func (x *Extras) Set(name string, value jsontext.Value) {
	for i := range *x {
		if (*x)[i].Name == name {
			(*x)[i].Value = value
			return
		}
	}
	*x = append(*x, Member{Name: name, Value: value})
}

// Delete removes the member called name.
func (x *Extras) Delete(name string) {
	for i := range *x {
		if (*x)[i].Name == name {
			*x = append((*x)[:i], (*x)[i+1:]...)
			return
		}
	}
}

// Read appends the member whose name was just read and whose value is next in
// dec. name may point into dec's buffer, so it is copied before the value is read.
func (x *Extras) Read(dec *jsontext.Decoder, typ string, name []byte) error {
	n := string(name)
	v, err := dec.ReadValue()
	if err != nil {
		return Wrap(typ, n, err)
	}
	*x = append(*x, Member{Name: n, Value: bytes.Clone(v)})
	return nil
}

// Encode writes every member in order.
func (x Extras) Encode(enc *jsontext.Encoder) error {
	for _, m := range x {
		if err := enc.WriteToken(jsontext.String(m.Name)); err != nil {
			return err
		}
		if err := enc.WriteValue(m.Value); err != nil {
			return err
		}
	}
	return nil
}
