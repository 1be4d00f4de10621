package wire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

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

// Marshal encodes v (a generated type) with Fidelity: the encoding/json v1
// MarshalJSON methods of generated types call it.
func Marshal(v any) ([]byte, error) { return json.Marshal(v, Fidelity) }

// Unmarshal decodes data into v (a pointer to a generated type): the
// encoding/json v1 UnmarshalJSON methods of generated types call it.
func Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Default decodes a schema default given as JSON, for the generated GetX
// accessors of members whose default is not a scalar. The generator checks
// the literal against the member's schema, so a failure is a generator bug.
func Default[E any](literal string) E {
	var v E
	if err := json.Unmarshal([]byte(literal), &v); err != nil {
		panic("wire: invalid schema default " + literal + ": " + err.Error())
	}
	return v
}
