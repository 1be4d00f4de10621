package envelope

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// DecodeReference reads line's members with json.Unmarshal, written
// independently of Decode's scanner, then judges them as Decode does
// (Codec.judge), for FuzzDecodeReference: Decode must agree with it. It
// differs in one point only: a line that is JSON null is malformed
// (json.Unmarshal leaves the frame empty, which fails the protocol gate).
func DecodeReference(c *Codec, line []byte, m *rpc.Message) error {
	var f struct {
		Protocol *string        `json:"protocol"`
		Version  *int64         `json:"version"`
		Kind     *string        `json:"kind"`
		ID       jsontext.Value `json:"id"`
		Method   *string        `json:"method"`
		Service  *string        `json:"service"`
		Payload  jsontext.Value `json:"payload"`
		Result   jsontext.Value `json:"result"`
		Error    jsontext.Value `json:"error"`
	}
	err := json.Unmarshal(line, &f)
	if err == nil && len(f.ID) > 0 && f.ID.Kind() != '"' {
		err = fmt.Errorf("id %s is not a string", f.ID)
	}
	if v := jsontext.Value(line); err == nil && v.IsValid() && v.Kind() == 'n' {
		err = fmt.Errorf("null")
	}
	if err != nil {
		return c.frameErr(rpc.FrameMalformed, ErrMalformed, err.Error(), stringID(line), 0)
	}
	h := &header{protocol: bytesOf(f.Protocol), kind: bytesOf(f.Kind), method: bytesOf(f.Method), service: bytesOf(f.Service),
		id: f.ID, payload: f.Payload, result: f.Result, err: f.Error}
	if f.Version != nil {
		h.version, h.hasVersion = *f.Version, true
	}
	return c.judge(h, m)
}

// bytesOf is s's bytes, nil when s is.
func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}
