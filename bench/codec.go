package bench

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Pure codec micro-benchmarks: how a 425-byte request is encoded and
// decoded by encoding/json (v1) the way the competitors do it, and by
// github.com/go-json-experiment/json (v2), bridgekit's codec.

// v1Envelope is the usual encoding/json message struct: params kept raw.
type v1Envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// requestOut is a request envelope with params still to be encoded.
type requestOut struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// EncodeV1Double encodes a request the way acp-go-sdk, sourcegraph/jsonrpc2
// and x/exp/jsonrpc2 do: params are marshalled to a RawMessage, which the
// envelope marshal then validates and copies again.
func EncodeV1Double(buf *bytes.Buffer, id int64, method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v1Envelope{JSONRPC: "2.0", ID: strconv.AppendInt(nil, id, 10), Method: method, Params: p})
	if err != nil {
		return err
	}
	buf.Write(b)
	buf.WriteByte('\n')
	return nil
}

// EncodeV1Single encodes a request in one encoding/json pass into buf.
func EncodeV1Single(buf *bytes.Buffer, id int64, method string, params any) error {
	return json.NewEncoder(buf).Encode(requestOut{"2.0", id, method, params})
}

// EncodeV2Single encodes a request in one go-json-experiment pass into buf,
// as bridgekit does (bridgekit writes the envelope by hand and marshals
// only params, which is slightly cheaper still).
func EncodeV2Single(buf *bytes.Buffer, id int64, method string, params any) error {
	if err := jsonv2.MarshalWrite(buf, requestOut{"2.0", id, method, params}); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return nil
}

// DecodeV1 decodes a request envelope and then its params with encoding/json.
func DecodeV1(frame []byte, p *PromptParams) error {
	var e v1Envelope
	if err := json.Unmarshal(frame, &e); err != nil {
		return err
	}
	return json.Unmarshal(e.Params, p)
}

// v2Envelope is a request envelope whose members stay raw JSON.
type v2Envelope struct {
	JSONRPC jsontext.Value `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  jsontext.Value `json:"method"`
	Params  jsontext.Value `json:"params"`
}

// DecodeV2 decodes a request envelope with go-json-experiment and then its
// params with bridgekit's rpc.DecodeParams.
func DecodeV2(frame []byte, p *PromptParams) error {
	var e v2Envelope
	if err := jsonv2.Unmarshal(frame, &e); err != nil {
		return err
	}
	return rpc.DecodeParams(e.Params, p)
}

// RequestFrame returns the standard payload as a request frame.
func RequestFrame() []byte {
	var buf bytes.Buffer
	if err := EncodeV1Single(&buf, 1, MethodPrompt, NewPrompt()); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
