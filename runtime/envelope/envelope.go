// Package envelope frames AgentPM's process protocols for bridgekit's connection engine (package rpc): the
// Harness machine protocol (agentpm-harness-machine, `agentpm harness --machine`) and the process-service
// protocol (agentpm-service, configured process providers).
//
// Both wrap every message in an envelope that names the protocol and its version, the frame kind and an
// opaque string id; they differ in which kinds exist, where a reply's data travels (payload or result) and
// what an error frame carries. A [Codec] maps request (and initialize) frames to requests, event frames to
// notifications, response (and initialized) frames to replies and error frames to error replies.
//
// Every inbound frame passes the protocol's gates: the protocol name and version must match, the kind must be
// one of the protocol's, the id must be a string. A frame that fails is answered with an error frame that
// echoes its id when it could be read, and a reply that fails fails the call it answers, as an
// *rpc.FrameError matching ErrProtocol, ErrVersion, ErrKind or ErrMalformed. Ids are written back exactly as
// read. Error codes are strings; the engine's standard failures map to each protocol's names, so
// errors.Is(err, rpc.ErrMethodNotFound) holds for an unknown_method (machine) or unsupported_capability
// (agentpm-service) error frame too.
package envelope

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Protocol describes one envelope protocol.
type Protocol struct {
	Name    string
	Version int64
	Kinds   []string // the frame kinds the protocol has
	// ReplyInPayload says that replies carry their data in payload; else they carry result, falling back to
	// payload when result is absent.
	ReplyInPayload bool
	// Qualifier says that frames carry a service member that, with the method name, identifies a method
	// (agentpm-service's role).
	Qualifier bool
	// Handshake is the method whose request and reply frames have kinds of their own (agentpm-service:
	// initialize / initialized); empty for none.
	Handshake string
	Retryable bool // error frames carry a retryable flag
	// Codes names the engine's standard failures (rpc.Code*) in the protocol's string codes; decoding maps
	// them back.
	Codes map[int64]string
	// MissingError is the code of an error frame without an error member.
	MissingError string
}

// The AgentPM protocols.
var (
	// Machine is agentpm-harness-machine v1: replies carry their data in payload, and error frames have no
	// retryable flag.
	Machine = Protocol{
		Name: "agentpm-harness-machine", Version: 1,
		Kinds:          []string{"request", "response", "event", "error"},
		ReplyInPayload: true,
		Codes: map[int64]string{
			rpc.CodeParseError: "malformed_json", rpc.CodeInvalidRequest: "protocol_error",
			rpc.CodeMethodNotFound: "unknown_method", rpc.CodeInvalidParams: "invalid_request",
			rpc.CodeInternalError: "internal_error", rpc.CodeRequestCancelled: "cancelled",
			rpc.CodeOverloaded: "overloaded",
		},
		MissingError: "host_service_error",
	}
	// Service is agentpm-service v1: replies carry result, every frame a service writes names its role in
	// service, the handshake uses the initialize and initialized kinds, and errors say whether they are
	// retryable.
	Service = Protocol{
		Name: "agentpm-service", Version: 1,
		Kinds:     []string{"initialize", "initialized", "request", "response", "event", "error"},
		Qualifier: true,
		Handshake: "initialize",
		Retryable: true,
		Codes: map[int64]string{
			rpc.CodeParseError: "malformed_frame", rpc.CodeInvalidRequest: "protocol_error",
			rpc.CodeMethodNotFound: "unsupported_capability", rpc.CodeInvalidParams: "invalid_request",
			rpc.CodeInternalError: "internal_error", rpc.CodeRequestCancelled: "cancelled",
			rpc.CodeOverloaded: "overloaded",
		},
		MissingError: "service_error",
	}
)

// Lookup returns the protocol this package frames under name and version.
func Lookup(name string, version int64) (Protocol, bool) {
	for _, p := range []Protocol{Machine, Service} {
		if p.Name == name && p.Version == version {
			return p, true
		}
	}
	return Protocol{}, false
}

// MustLookup is Lookup for generated packages, whose catalogues name the protocol: it panics when this
// package does not frame it.
func MustLookup(name string, version int64) Protocol {
	p, ok := Lookup(name, version)
	if !ok {
		panic(fmt.Sprintf("envelope: no protocol %s version %d", name, version))
	}
	return p
}

// Sentinel causes of an *rpc.FrameError for a frame that fails a gate; compare with errors.Is.
var (
	// ErrMalformed: not a JSON object of the envelope's shape (the machine protocol's malformed_json),
	// including an id that is not a string.
	ErrMalformed = errors.New("envelope: malformed frame")
	// ErrProtocol: protocol names another protocol, or is missing.
	ErrProtocol = errors.New("envelope: wrong protocol")
	// ErrVersion: version is not the one this side speaks.
	ErrVersion = errors.New("envelope: incompatible protocol version")
	// ErrKind: kind is missing or not one of the protocol's, or the frame lacks what its kind needs (a
	// request's method or id).
	ErrKind = errors.New("envelope: invalid frame kind")
)

// Codec frames one Protocol for rpc.Conn. A Codec holds the reading goroutine's scratch space: use one per
// connection (NewConn does).
type Codec struct {
	p        Protocol
	idPrefix string
	role     string
	names    map[string]int64    // Protocol.Codes reversed
	kinds    map[string]rpc.Kind // the protocol's frame kinds
	scan     jsonscan.Scanner
	head     header
	scratch  []byte // unescaped strings
}

var _ rpc.Codec = (*Codec)(nil)

// NewCodec returns a codec for p. Outbound request ids are idPrefix followed by a number counting up from 1
// ("c-" gives "c-1", "c-2", ...). role, for agentpm-service, is the service role written on frames that
// answer a request whose role is unknown (a frame too malformed to read); it may be empty.
func NewCodec(p Protocol, idPrefix, role string) *Codec {
	if q, err := jsontext.AppendQuote(nil, idPrefix); err != nil || string(q) != `"`+idPrefix+`"` {
		panic(fmt.Sprintf("envelope: id prefix %q must need no escaping in JSON", idPrefix))
	}
	c := &Codec{p: p, idPrefix: idPrefix, role: role, names: make(map[string]int64, len(p.Codes)),
		kinds: make(map[string]rpc.Kind, len(p.Kinds))}
	for code, name := range p.Codes {
		c.names[name] = code
	}
	for _, k := range p.Kinds {
		c.kinds[k] = kinds[k]
	}
	return c
}

// errorBody is the error member of an error frame.
type errorBody struct {
	Code      *string `json:"code"`
	Message   string  `json:"message"`
	Retryable *bool   `json:"retryable"`
}

// header holds a frame's members. SetMember records them as raw JSON aliasing the line (absent members are
// nil; unknown ones are ignored); Decode then unescapes the strings (nil when null) and parses the version
// (hasVersion false when absent or null).
type header struct {
	protocol, kind, method, service []byte
	version                         int64
	hasVersion                      bool
	rawVersion                      jsontext.Value
	id, payload, result, err        jsontext.Value
}

// SetMember implements jsonscan.Members.
func (h *header) SetMember(name, value []byte) {
	switch string(name) {
	case "protocol":
		h.protocol = value
	case "version":
		h.rawVersion = value
	case "kind":
		h.kind = value
	case "id":
		h.id = value
	case "method":
		h.method = value
	case "service":
		h.service = value
	case "payload":
		h.payload = value
	case "result":
		h.result = value
	case "error":
		h.err = value
	}
}

// Decode implements rpc.Codec. A frame must be a JSON object without duplicate members or invalid UTF-8, its
// id a string and its protocol, kind, method and service strings (null is absent), its version an integer;
// then it passes the protocol's gates.
func (c *Codec) Decode(line []byte, m *rpc.Message) error {
	h := &c.head
	*h = header{}
	object, err := c.scan.Decode(line, h)
	if err == nil && !object {
		err = errors.New("a frame must be a JSON object")
	}
	if err != nil {
		return c.frameErr(rpc.FrameMalformed, ErrMalformed, err.Error(), stringID(line), 0)
	}
	if h.id != nil && h.id[0] != '"' {
		return c.frameErr(rpc.FrameMalformed, ErrMalformed, fmt.Sprintf("id %s is not a string", rpc.Truncate(string(h.id), rpc.MaxEcho)), nil, 0)
	}
	c.scratch = c.scratch[:0]
	var err1, err2, err3, err4, err5 error
	h.protocol, err1 = c.text("protocol", h.protocol)
	h.kind, err2 = c.text("kind", h.kind)
	h.method, err3 = c.text("method", h.method)
	h.service, err4 = c.text("service", h.service)
	if h.hasVersion = h.rawVersion != nil && string(h.rawVersion) != "null"; h.hasVersion {
		if h.version, err5 = strconv.ParseInt(string(h.rawVersion), 10, 64); err5 != nil {
			err5 = fmt.Errorf("version %s is not an integer", rpc.Truncate(string(h.rawVersion), rpc.MaxEcho))
		}
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return c.frameErr(rpc.FrameMalformed, ErrMalformed, err.Error(), h.id, 0)
	}
	return c.judge(h, m)
}

// judge applies the protocol's gates to h and fills m from it.
func (c *Codec) judge(h *header, m *rpc.Message) error {
	claimed := c.kinds[string(h.kind)]
	switch {
	case string(h.protocol) != c.p.Name:
		return c.frameErr(rpc.FrameInvalid, ErrProtocol, fmt.Sprintf("unsupported protocol %q; expected %q", h.protocol, c.p.Name), h.id, claimed)
	case !h.hasVersion || h.version != c.p.Version:
		v := "none"
		if h.hasVersion {
			v = strconv.FormatInt(h.version, 10)
		}
		return c.frameErr(rpc.FrameInvalid, ErrVersion, fmt.Sprintf("unsupported protocol version %s; expected %d", v, c.p.Version), h.id, claimed)
	case claimed == 0:
		return c.frameErr(rpc.FrameInvalid, ErrKind, fmt.Sprintf("frame kind %q is not one of %q", h.kind, c.p.Kinds), h.id, claimed)
	case claimed == rpc.KindRequest && (h.method == nil || h.id == nil):
		return c.frameErr(rpc.FrameInvalid, ErrKind, "a request needs a method and an id", h.id, claimed)
	case claimed == rpc.KindNotification && h.method == nil:
		return c.frameErr(rpc.FrameInvalid, ErrKind, "an event needs a method", h.id, claimed)
	case claimed == rpc.KindResponse && h.id == nil:
		// An error frame may lack one: it answers a frame too malformed for its id to be read.
		return c.frameErr(rpc.FrameInvalid, ErrKind, "a response needs an id", h.id, claimed)
	}
	m.Kind, m.ID, m.Body, m.Method, m.Qualifier, m.Err = claimed, h.id, h.payload, h.method, nil, nil
	if c.p.Qualifier {
		m.Qualifier = h.service
	}
	if string(m.Body) == "null" {
		m.Body = nil
	}
	switch {
	case claimed == rpc.KindResponse && !c.p.ReplyInPayload && h.result != nil:
		m.Body = h.result
	case claimed == rpc.KindError:
		var e errorBody
		if h.err != nil && string(h.err) != "null" {
			if err := json.Unmarshal(h.err, &e); err != nil {
				return c.frameErr(rpc.FrameInvalid, ErrMalformed, "error member: "+err.Error(), h.id, claimed)
			}
		}
		if e.Code == nil {
			e.Code, e.Message = &c.p.MissingError, "error frame without an error code"
		}
		m.Err = &rpc.Error{Name: *e.Code, Code: c.names[*e.Code], Message: e.Message, Retryable: e.Retryable}
	}
	return nil
}

// text returns the contents of the string member name whose raw value is raw, unescaped (into the codec's
// scratch space when it has escapes), or nil when it is absent or null.
func (c *Codec) text(name string, raw []byte) ([]byte, error) {
	switch {
	case raw == nil || string(raw) == "null":
		return nil, nil
	case raw[0] != '"':
		return nil, fmt.Errorf("%s %s is not a string", name, rpc.Truncate(string(raw), rpc.MaxEcho))
	case bytes.IndexByte(raw, '\\') < 0:
		return raw[1 : len(raw)-1], nil
	}
	n := len(c.scratch)
	c.scratch, _ = jsontext.AppendUnquote(c.scratch, raw) // valid: the scanner checked it
	return c.scratch[n:len(c.scratch):len(c.scratch)], nil
}

var _ rpc.HeadDecoder = (*Codec)(nil)

// DecodeHead implements rpc.HeadDecoder: a frame's kind member says what it is, and its id is read when it is
// a whole string.
func (c *Codec) DecodeHead(head []byte) (rpc.Kind, []byte) {
	h := &c.head
	*h = header{}
	c.scan.Head(head, h)
	c.scratch = c.scratch[:0]
	name, err := c.text("kind", h.kind) // as Decode reads it, escapes included
	kind, ok := c.kinds[string(name)]
	if err != nil || !ok {
		return 0, nil
	}
	if h.id == nil || h.id[0] != '"' {
		return kind, nil
	}
	return kind, h.id
}

// kinds maps frame kinds to message kinds.
var kinds = map[string]rpc.Kind{
	"request": rpc.KindRequest, "initialize": rpc.KindRequest, "event": rpc.KindNotification,
	"response": rpc.KindResponse, "initialized": rpc.KindResponse, "error": rpc.KindError,
}

// frameErr builds the FrameError for a frame that fails a gate: requests are answered (malformed frames as
// such, the rest as protocol errors), replies fail the call they answer.
func (c *Codec) frameErr(kind rpc.FrameErrorKind, cause error, detail string, id jsontext.Value, claimed rpc.Kind) error {
	fe := &rpc.FrameError{Kind: kind, Err: fmt.Errorf("%w: %s", cause, detail), Claimed: claimed}
	if id != nil {
		fe.ID = rpc.RawID(id)
	}
	if claimed == 0 || claimed == rpc.KindRequest {
		code := int64(rpc.CodeInvalidRequest)
		if kind == rpc.FrameMalformed {
			code = rpc.CodeParseError
		}
		fe.Reply = &rpc.Error{Code: code, Name: c.p.Codes[code], Message: rpc.Truncate(detail, 4*rpc.MaxEcho)}
	}
	return fe
}

// stringID finds the string id of a malformed frame, for the error frame answering it to echo.
func stringID(line []byte) jsontext.Value {
	if id := rpc.Member(line, "id"); id.Kind() == '"' {
		return id
	}
	return nil
}

// AppendHead implements rpc.Codec. Members are written in the order the AgentPM writers use: protocol,
// version, kind, id, service, method, then the body member.
func (c *Codec) AppendHead(dst []byte, h *rpc.Header) []byte {
	dst = c.start(dst, c.kind(h))
	if h.Kind == rpc.KindRequest {
		dst = c.AppendID(append(dst, `,"id":`...), h.Seq)
	} else {
		dst = appendID(dst, h.ID) // a reply's, or the id an event carries
	}
	dst = c.qualifier(dst, h)
	if h.Kind == rpc.KindRequest || h.Kind == rpc.KindNotification {
		dst = append(dst, `,"method":`...)
		dst, _ = jsontext.AppendQuote(dst, h.Method)
		return append(dst, `,"payload":`...)
	}
	if c.p.ReplyInPayload {
		return append(dst, `,"payload":`...)
	}
	return append(dst, `,"result":`...)
}

func (c *Codec) kind(h *rpc.Header) string {
	handshake := c.p.Handshake != "" && h.Method == c.p.Handshake
	switch h.Kind {
	case rpc.KindRequest:
		if handshake {
			return "initialize"
		}
		return "request"
	case rpc.KindNotification:
		return "event"
	case rpc.KindResponse:
		if handshake {
			return "initialized"
		}
		return "response"
	}
	return "error"
}

func (c *Codec) start(dst []byte, kind string) []byte {
	dst = append(dst, `{"protocol":`...)
	dst, _ = jsontext.AppendQuote(dst, c.p.Name)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, c.p.Version, 10)
	dst = append(dst, `,"kind":"`...)
	dst = append(dst, kind...)
	return append(dst, '"')
}

func appendID(dst []byte, id rpc.ID) []byte {
	if id.IsZero() {
		return dst
	}
	return append(append(dst, `,"id":`...), id.String()...)
}

// qualifier appends the qualifier member: the header's, else the codec's role for replies this side writes.
func (c *Codec) qualifier(dst []byte, h *rpc.Header) []byte {
	q := h.Qualifier
	if q == "" && h.Kind != rpc.KindRequest && h.Kind != rpc.KindNotification {
		q = c.role
	}
	if !c.p.Qualifier || q == "" {
		return dst
	}
	dst = append(dst, `,"service":`...)
	dst, _ = jsontext.AppendQuote(dst, q)
	return dst
}

// AppendTail implements rpc.Codec.
func (c *Codec) AppendTail(dst []byte, h *rpc.Header) []byte { return append(dst, '}') }

// NullBody implements rpc.Codec: requests carry {}, other frames null.
func (c *Codec) NullBody(h *rpc.Header) string {
	if h.Kind == rpc.KindRequest {
		return "{}"
	}
	return "null"
}

// AppendError implements rpc.Codec: an error frame whose code is the error's Name, or the protocol's name for
// its Code (for internal_error when it has none).
func (c *Codec) AppendError(dst []byte, h *rpc.Header, e *rpc.Error) []byte {
	dst = c.start(dst, "error")
	dst = appendID(dst, h.ID)
	dst = c.qualifier(dst, h)
	if c.p.ReplyInPayload {
		dst = append(dst, `,"payload":null`...)
	}
	dst = append(dst, `,"error":{"code":`...)
	dst, _ = jsontext.AppendQuote(dst, cmp.Or(e.Name, c.p.Codes[e.Code], c.p.Codes[rpc.CodeInternalError]))
	dst = append(dst, `,"message":`...)
	dst, _ = jsontext.AppendQuote(dst, e.Message)
	if c.p.Retryable {
		dst = append(dst, `,"retryable":`...)
		dst = strconv.AppendBool(dst, e.Retryable != nil && *e.Retryable)
	}
	return append(dst, "}}"...)
}

// AppendID implements rpc.Codec: the id of request seq is the string idPrefix + seq.
func (c *Codec) AppendID(dst []byte, seq uint64) []byte {
	dst = append(dst, '"')
	dst = append(dst, c.idPrefix...) // NewCodec checked that it needs no escaping
	dst = strconv.AppendUint(dst, seq, 10)
	return append(dst, '"')
}

// Seq implements rpc.Codec.
func (c *Codec) Seq(id []byte) (uint64, bool) {
	if len(id) < 2 || id[0] != '"' || id[len(id)-1] != '"' {
		return 0, false
	}
	s, ok := bytes.CutPrefix(id[1:len(id)-1], []byte(c.idPrefix))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	return n, err == nil && n > 0
}
