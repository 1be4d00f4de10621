package wire

import "github.com/go-json-experiment/json/jsontext"

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
