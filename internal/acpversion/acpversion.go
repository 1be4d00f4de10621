// Package acpversion holds the rule by which ACP v1 (gen/acp) and the draft v2 (gen/acpv2) share one
// stream: what an agent serving both does with each message that arrives before a valid initialize,
// which version it picks, and how it rewrites the initialize it hands to the chosen implementation. It
// follows the router of the official TypeScript SDK 2.4.0 (AgentProtocolRouter, dist/protocol-router.js;
// ../shared/reference/remote/transports.md §5) code for code. servers/acprouter wires it to a frame
// transport; clients/acpnegotiate uses its downgrade of v2 initialize params.
//
// Where the TypeScript router re-serialises what its schema parser kept, this package keeps the members
// it does not know (gen/acp and gen/acpv2 keep them in Extra): the one difference, in line with
// bridgekit's wire fidelity.
package acpversion

import (
	"bytes"
	"math"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The protocol versions the router knows, and the largest version a client may request (ACP's
// ProtocolVersion is a uint16).
const (
	V1         = 1
	V2         = 2
	MaxVersion = 0xffff
)

// Error codes of the router's replies: JSON-RPC's, and ACP's for an unsupported version.
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeInvalidParams              = -32602
	CodeUnsupportedProtocolVersion = -32022
)

// V2RequestIDMessage is the message of the -32600 error, under a null id, that answers an ACP v2 request
// whose id is neither a string nor an integer (see V2RequestID).
const V2RequestIDMessage = "Invalid request: ACP v2 request IDs must be strings or integers"

// Config says which versions an agent serves.
type Config struct {
	V1, V2 bool
}

// Supported lists the versions c serves, lowest first.
func (c Config) Supported() []int {
	s := make([]int, 0, 2)
	if c.V1 {
		s = append(s, V1)
	}
	if c.V2 {
		s = append(s, V2)
	}
	return s
}

// Select returns the version an agent configured as c speaks to a client that requested requested, or 0
// when there is none. An agent serving only v1 speaks v1 whatever was requested (v1's own negotiation:
// the client then decides); otherwise v2 answers a request for 2 or more, and v1 one for 1 or more.
func (c Config) Select(requested int) int {
	switch {
	case c.V1 && !c.V2:
		return V1
	case c.V2 && requested >= V2:
		return V2
	case c.V1 && requested >= V1:
		return V1
	}
	return 0
}

// Decision is what the router does with one message read before a valid initialize.
type Decision struct {
	// Version is the version chosen (V1 or V2) when the message is an initialize that starts the
	// connection, and 0 otherwise.
	Version int
	// Requested is the protocolVersion an initialize asked for (valid or not: -1 when it had none that
	// is an integer from 0 to MaxVersion).
	Requested int
	// Initialize is the frame to hand to the chosen implementation when Version is set: the initialize
	// request with its params rewritten for that version (its id and other members as they came).
	Initialize []byte
	// Reply is an error response to write back, the connection staying open and uninitialized, or nil
	// when the message is ignored (notifications and responses) or routed.
	Reply []byte
}

// Decide applies the router's rules to one frame (one JSON value) received before initialize:
//   - a frame that is not JSON gets -32700 with a null id (what the TypeScript SDK's NDJSON stream
//     answers), a batch (a JSON array) -32600 with a null id, and a value that is not an object -32600;
//   - notifications and response-shaped objects are ignored;
//   - any other object that is not a request gets -32600 with a null id, and a request other than
//     initialize -32600 with its id;
//   - an initialize whose params are not an object, or whose protocolVersion is not an integer from 0 to
//     65535, gets -32602; one asking for a version c cannot serve gets -32022 with data {requested,
//     supported};
//   - a v2 initialize whose id is neither a string nor an integer gets -32600 with a null id;
//   - an initialize whose params do not decode for the chosen version gets -32602 with its id.
//
// Otherwise Version says which implementation takes the connection and Initialize is its first frame.
func (c Config) Decide(msg []byte) Decision {
	d := Decision{Requested: -1}
	if !jsontext.Value(msg).IsValid() {
		d.Reply = replyFrame(nil, CodeParseError, "Parse error", nil)
		return d
	}
	msg = bytes.TrimSpace(msg)
	switch jsontext.Value(msg).Kind() {
	case '[':
		d.Reply = replyFrame(nil, CodeInvalidRequest, "Invalid request: JSON-RPC batches are not supported", nil)
		return d
	case '{':
	default:
		d.Reply = replyFrame(nil, CodeInvalidRequest, "Invalid request", jsontext.Value(msg))
		return d
	}
	top, err := members(msg)
	if err != nil { // not reached: msg is a valid object
		d.Reply = replyFrame(nil, CodeParseError, "Parse error", nil)
		return d
	}
	jsonrpc, id, method := top.get("jsonrpc"), top.get("id"), top.get("method")
	v2Envelope := string(jsonrpc) == `"2.0"`
	switch {
	case v2Envelope && id == nil && method.Kind() == '"': // a notification
		return d
	case method == nil && (id != nil || top.get("result") != nil || top.get("error") != nil): // a response
		return d
	case !v2Envelope || id == nil || method.Kind() != '"' || !validID(id):
		d.Reply = replyFrame(nil, CodeInvalidRequest, "Invalid request", quote("first ACP message must be an initialize request"))
		return d
	}
	if name, err := jsontext.AppendUnquote(nil, method); err != nil || string(name) != "initialize" {
		d.Reply = replyFrame(id, CodeInvalidRequest, "Invalid request", quote("first ACP request must be initialize"))
		return d
	}
	params := top.get("params")
	var p fields
	if params.Kind() == '{' {
		p, _ = members(params)
	}
	requested, ok := protocolVersion(p.get("protocolVersion"))
	if params.Kind() != '{' || !ok {
		d.Reply = replyFrame(id, CodeInvalidParams, "Invalid params", quote("initialize.protocolVersion must be a valid ACP protocol version"))
		return d
	}
	d.Requested = requested
	v := c.Select(requested)
	if v == 0 {
		data, _ := json.Marshal(struct {
			Requested int   `json:"requested"`
			Supported []int `json:"supported"`
		}{requested, c.Supported()})
		d.Reply = replyFrame(id, CodeUnsupportedProtocolVersion, "Unsupported protocol version", data)
		return d
	}
	if v == V2 && !V2RequestID(id) {
		d.Reply = replyFrame(nil, CodeInvalidRequest, V2RequestIDMessage, nil)
		return d
	}
	rewritten, err := RewriteInitialize(params, requested, v)
	if err != nil {
		d.Reply = replyFrame(id, CodeInvalidParams, "Invalid params", quote("invalid initialize params: "+err.Error()))
		return d
	}
	top.set("params", rewritten)
	d.Version, d.Initialize = v, top.encode()
	return d
}

// DecideTooLarge answers a frame over the transport's size limit, of which only head (its start) was
// kept: a request is refused with -32600 under its id when head shows it, anything else with a null id,
// and a notification or response is ignored as Decide ignores whole ones.
func (c Config) DecideTooLarge(head []byte, limit int) Decision {
	return c.DecideRefused(head, "message exceeds the "+strconv.Itoa(limit)+"-byte limit")
}

// DecideRefused answers, as DecideTooLarge does, a frame refused unread for another bound (too many
// JSON objects and arrays), of which head is the start; why is the error's data.
func (c Config) DecideRefused(head []byte, why string) Decision {
	d := Decision{Requested: -1}
	kind, id := headKind(head)
	if kind == kindIgnored {
		return d
	}
	d.Reply = replyFrame(id, CodeInvalidRequest, "Invalid request", quote(why))
	return d
}

// validID reports whether id is a JSON-RPC id the TypeScript SDK takes for a request's: null, a
// string, or a finite number.
func validID(id jsontext.Value) bool {
	switch id.Kind() {
	case 'n', '"':
		return true
	case '0':
		_, ok := finite(id)
		return ok
	}
	return false
}

// V2RequestID reports whether id, a request's raw JSON id, is a string or an integer (1.0 is one, as
// in JavaScript): what ACP v2 accepts as a request id. null, a fraction and a number beyond float64's
// range are not. A request with another id is answered -32600 V2RequestIDMessage under a null id, as
// the TypeScript SDK's v2 connection answers it.
func V2RequestID(id []byte) bool {
	switch jsontext.Value(id).Kind() {
	case '"':
		return true
	case '0':
		f, ok := finite(id)
		return ok && f == math.Trunc(f)
	}
	return false
}

// finite parses a JSON number as JavaScript does, reporting false for one beyond float64's range.
func finite(num jsontext.Value) (float64, bool) {
	f, err := strconv.ParseFloat(string(num), 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// protocolVersion reads a protocolVersion: an integer (1.0 included) from 0 to MaxVersion.
func protocolVersion(v jsontext.Value) (int, bool) {
	if v.Kind() != '0' {
		return 0, false
	}
	f, ok := finite(v)
	if !ok || f != math.Trunc(f) || f < 0 || f > MaxVersion {
		return 0, false
	}
	return int(f), true
}

// headKind tells from the start of a frame whether it is ignored before initialize (a notification or a
// response) and, for a request, its id; what it cannot tell it answers with a null id.
const (
	kindUnknown = iota
	kindIgnored
)

func headKind(head []byte) (int, jsontext.Value) {
	dec := jsontext.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return kindUnknown, nil
	}
	var id jsontext.Value
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		name := tok.String() // before the next read voids tok
		if name == "result" || name == "error" {
			return kindIgnored, nil
		}
		val, err := dec.ReadValue()
		if err != nil {
			break
		}
		if name == "id" && validID(val) {
			id = val.Clone()
		}
	}
	return kindUnknown, id
}

// replyFrame encodes a JSON-RPC error response. data is a JSON value, or nil for none.
func replyFrame(id jsontext.Value, code int, message string, data jsontext.Value) []byte {
	if id == nil {
		id = jsontext.Value("null")
	}
	out, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      jsontext.Value `json:"id"`
		Error   struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    jsontext.Value `json:"data,omitzero"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data,omitzero"`
	}{code, message, data}})
	if err != nil { // not reached: id and data are valid JSON values
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	return out
}

// quote encodes s as a JSON string.
func quote(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}
