package wire

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// ReadRaw reads the next value verbatim (any kind), copying it out of the decoder.
func ReadRaw(dec *jsontext.Decoder, typ, member string) (jsontext.Value, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, Wrap(typ, member, err)
	}
	return bytes.Clone(v), nil
}

// ReadRawObject reads the next value verbatim and requires it to be an object.
func ReadRawObject(dec *jsontext.Decoder, typ, member string) (jsontext.Value, error) {
	if err := ExpectKind(dec, typ, member, '{'); err != nil {
		return nil, err
	}
	return ReadRaw(dec, typ, member)
}

// WriteRaw writes v, or null when v is empty.
func WriteRaw(enc *jsontext.Encoder, v jsontext.Value) error {
	if len(v) == 0 {
		return enc.WriteToken(jsontext.Null)
	}
	return enc.WriteValue(v)
}

// Fidelity is the encoding option under which raw values (jsontext.Value
// members, Extras) are written byte for byte, escapes included. bridgekit's
// runtime and the generated MarshalJSON methods always use it; pass it to
// json.Marshal when encoding generated types yourself.
var Fidelity = jsontext.PreserveRawStrings(true)
