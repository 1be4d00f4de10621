package envelope

import (
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// DecodeReference decodes line as Decode did with json.Unmarshal, written
// independently of it, for FuzzDecodeReference: Decode must agree with it.
// It differs in one point only: a line that is JSON null is malformed
// (json.Unmarshal leaves the frame empty, which fails the protocol gate).
func DecodeReference(c *Codec, line []byte, m *rpc.Message) error {
	var f struct {
		Protocol string         `json:"protocol"`
		Version  *int64         `json:"version"`
		Kind     string         `json:"kind"`
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
	var claimed rpc.Kind
	if slices.Contains(c.p.Kinds, f.Kind) {
		claimed = kinds[f.Kind]
	}
	switch {
	case f.Protocol != c.p.Name:
		return c.frameErr(rpc.FrameInvalid, ErrProtocol, "protocol", f.ID, claimed)
	case f.Version == nil || *f.Version != c.p.Version:
		return c.frameErr(rpc.FrameInvalid, ErrVersion, "version", f.ID, claimed)
	case claimed == 0,
		claimed == rpc.KindRequest && (f.Method == nil || f.ID == nil),
		claimed == rpc.KindNotification && f.Method == nil,
		claimed == rpc.KindResponse && f.ID == nil:
		return c.frameErr(rpc.FrameInvalid, ErrKind, "kind", f.ID, claimed)
	}
	m.Kind, m.ID, m.Body = claimed, f.ID, f.Payload
	if f.Method != nil {
		m.Method = []byte(*f.Method)
	}
	if f.Service != nil && c.p.Qualifier {
		m.Qualifier = []byte(*f.Service)
	}
	if string(m.Body) == "null" {
		m.Body = nil
	}
	switch {
	case claimed == rpc.KindResponse && !c.p.ReplyInPayload && f.Result != nil:
		m.Body = f.Result
	case claimed == rpc.KindError:
		var e errorBody
		if f.Error != nil && string(f.Error) != "null" {
			if err := json.Unmarshal(f.Error, &e); err != nil {
				return c.frameErr(rpc.FrameInvalid, ErrMalformed, "error member: "+err.Error(), f.ID, claimed)
			}
		}
		if e.Code == nil {
			e.Code, e.Message = &c.p.MissingError, "error frame without an error code"
		}
		m.Err = &rpc.Error{Name: *e.Code, Code: c.names[*e.Code], Message: e.Message, Retryable: e.Retryable}
	}
	return nil
}
