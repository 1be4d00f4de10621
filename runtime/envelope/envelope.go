// Package envelope frames AgentPM's process protocols for bridgekit's
// connection engine (package rpc): the Harness machine protocol
// (agentpm-harness-machine, `agentpm harness --machine`) and the
// process-service protocol (agentpm-service, configured process providers).
//
// Both wrap every message in an envelope that names the protocol and its
// version, the frame kind and an opaque string id; they differ in which
// kinds exist, where a reply's data travels (payload or result) and what an
// error frame carries. A [Codec] maps their frames onto rpc messages:
// request (and agentpm-service's initialize) frames are requests, event
// frames notifications, response (and initialized) frames replies, error
// frames error replies.
//
// Every inbound frame passes the protocol's gates: the protocol name and
// version must match, the kind must be one of the protocol's, the id must be
// a string. A frame that fails is answered with an error frame that echoes
// its id when it could be read, and a reply that fails fails the call it
// answers, as an *rpc.FrameError matching ErrProtocol, ErrVersion, ErrKind
// or ErrMalformed. Ids are written back exactly as read. Error codes are
// strings; the engine's standard failures map to each protocol's names, so
// errors.Is(err, rpc.ErrMethodNotFound) holds for an unknown_method (machine)
// or unsupported_capability (agentpm-service) error frame too.
package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Protocol describes one envelope protocol.
type Protocol struct {
	Name    string
	Version int64
	// Kinds are the frame kinds the protocol has.
	Kinds []string
	// Result is the member a success reply carries its data in; a reply
	// without it falls back to payload.
	Result string
	// Qualifier is the member that, with the method name, identifies a
	// method (agentpm-service's service role); empty for none.
	Qualifier string
	// Handshake is the method whose request and reply frames have kinds of
	// their own (agentpm-service: initialize / initialized); empty for none.
	Handshake string
	// Retryable says whether error frames carry a retryable flag.
	Retryable bool
	// Codes names the engine's standard failures (rpc.Code*) in the
	// protocol's string codes; decoding maps them back.
	Codes map[int64]string
	// MissingError is the code of an error frame without an error member.
	MissingError string
}

// The AgentPM protocols.
var (
	// Machine is agentpm-harness-machine v1: replies carry their data in
	// payload, and error frames have no retryable flag.
	Machine = Protocol{
		Name: "agentpm-harness-machine", Version: 1,
		Kinds:  []string{"request", "response", "event", "error"},
		Result: "payload",
		Codes: map[int64]string{
			rpc.CodeParseError: "malformed_json", rpc.CodeInvalidRequest: "protocol_error",
			rpc.CodeMethodNotFound: "unknown_method", rpc.CodeInvalidParams: "invalid_request",
			rpc.CodeInternalError: "internal_error", rpc.CodeRequestCancelled: "cancelled",
			rpc.CodeOverloaded: "overloaded",
		},
		MissingError: "host_service_error",
	}
	// Service is agentpm-service v1: replies carry result, every frame a
	// service writes names its role in service, the handshake uses the
	// initialize and initialized kinds, and errors say whether they are
	// retryable.
	Service = Protocol{
		Name: "agentpm-service", Version: 1,
		Kinds:     []string{"initialize", "initialized", "request", "response", "event", "error"},
		Result:    "result",
		Qualifier: "service",
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

// Sentinel causes of an *rpc.FrameError for a frame that fails a gate;
// compare with errors.Is.
var (
	// ErrMalformed: not a JSON object of the envelope's shape (the machine
	// protocol's malformed_json), including an id that is not a string.
	ErrMalformed = errors.New("envelope: malformed frame")
	// ErrProtocol: protocol names another protocol, or is missing.
	ErrProtocol = errors.New("envelope: wrong protocol")
	// ErrVersion: version is not the one this side speaks.
	ErrVersion = errors.New("envelope: incompatible protocol version")
	// ErrKind: kind is missing or not one of the protocol's, or the frame
	// lacks what its kind needs (a request's method or id).
	ErrKind = errors.New("envelope: invalid frame kind")
)

// Codec frames one Protocol for rpc.Conn. It holds the reading goroutine's
// scratch space: use one per connection.
type Codec struct {
	p        Protocol
	idPrefix string
	role     string
	names    map[string]int64

	dec    jsontext.Decoder
	decBuf bytes.Buffer
}

var _ rpc.Codec = (*Codec)(nil)

// NewCodec returns a codec for p. Outbound request ids are idPrefix followed
// by a number counting up from 1 ("c-" gives "c-1", "c-2", ...). role, for
// agentpm-service, is the service role written on frames that answer a
// request whose role is unknown (a frame too malformed to read); it may be
// empty.
func NewCodec(p Protocol, idPrefix, role string) *Codec {
	if q, err := jsontext.AppendQuote(nil, idPrefix); err != nil || string(q) != `"`+idPrefix+`"` {
		panic(fmt.Sprintf("envelope: id prefix %q must need no escaping in JSON", idPrefix))
	}
	c := &Codec{p: p, idPrefix: idPrefix, role: role, names: make(map[string]int64, len(p.Codes))}
	for code, name := range p.Codes {
		c.names[name] = code
	}
	return c
}

// frame holds the members of an inbound frame; raw values alias the line.
type frame struct {
	protocol, kind, id, method, qualifier string
	hasVersion, hasID, hasMethod          bool
	version                               int64
	payload, result, err                  []byte
}

// Decode implements rpc.Codec.
func (c *Codec) Decode(line []byte, m *rpc.Message) error {
	var f frame
	if err := c.scan(line, &f); err != nil {
		f.id, f.hasID = c.stringID(line)
		return c.frameErr(rpc.FrameMalformed, ErrMalformed, err.Error(), &f, 0)
	}
	var claimed rpc.Kind
	if slices.Contains(c.p.Kinds, f.kind) {
		claimed = c.claimed(f.kind)
	}
	switch {
	case f.protocol != c.p.Name:
		return c.frameErr(rpc.FrameInvalid, ErrProtocol, fmt.Sprintf("unsupported protocol %q; expected %q", f.protocol, c.p.Name), &f, claimed)
	case !f.hasVersion || f.version != c.p.Version:
		return c.frameErr(rpc.FrameInvalid, ErrVersion, fmt.Sprintf("unsupported protocol version %d; expected %d", f.version, c.p.Version), &f, claimed)
	case !slices.Contains(c.p.Kinds, f.kind):
		return c.frameErr(rpc.FrameInvalid, ErrKind, fmt.Sprintf("frame kind %q is not one of %q", f.kind, c.p.Kinds), &f, claimed)
	case claimed == rpc.KindRequest && (!f.hasMethod || !f.hasID):
		return c.frameErr(rpc.FrameInvalid, ErrKind, "a request needs a method and an id", &f, claimed)
	case claimed == rpc.KindNotification && !f.hasMethod:
		return c.frameErr(rpc.FrameInvalid, ErrKind, "an event needs a method", &f, claimed)
	case (claimed == rpc.KindResponse || claimed == rpc.KindError) && !f.hasID:
		return c.frameErr(rpc.FrameInvalid, ErrKind, "a reply needs an id", &f, claimed)
	}
	m.Kind = claimed
	if f.hasID {
		m.ID = []byte(f.id)
	}
	m.Method, m.Qualifier = []byte(f.method), []byte(f.qualifier)
	switch claimed {
	case rpc.KindRequest, rpc.KindNotification:
		m.Body = f.payload
	case rpc.KindResponse:
		m.Body = f.payload
		if c.p.Result != "payload" && f.result != nil {
			m.Body = f.result
		}
	case rpc.KindError:
		e, err := c.errorBody(f.err)
		if err != nil {
			return c.frameErr(rpc.FrameInvalid, ErrMalformed, "error member: "+err.Error(), &f, claimed)
		}
		m.Err = e
	}
	return nil
}

// claimed is the rpc kind of a frame kind (0 when unknown).
func (c *Codec) claimed(kind string) rpc.Kind {
	switch kind {
	case "request", "initialize":
		return rpc.KindRequest
	case "event":
		return rpc.KindNotification
	case "response", "initialized":
		return rpc.KindResponse
	case "error":
		return rpc.KindError
	}
	return 0
}

// frameErr builds the FrameError for a frame that fails a gate: requests
// are answered (malformed frames as such, the rest as protocol errors),
// replies fail the call they answer.
func (c *Codec) frameErr(kind rpc.FrameErrorKind, cause error, detail string, f *frame, claimed rpc.Kind) error {
	fe := &rpc.FrameError{Kind: kind, Err: fmt.Errorf("%w: %s", cause, detail), Claimed: claimed}
	if f.hasID {
		fe.ID = rpc.RawID([]byte(f.id))
	}
	if claimed != rpc.KindResponse && claimed != rpc.KindError && claimed != rpc.KindNotification {
		code := int64(rpc.CodeInvalidRequest)
		if kind == rpc.FrameMalformed {
			code = rpc.CodeParseError
		}
		fe.Reply = &rpc.Error{Code: code, Name: c.p.Codes[code], Message: rpc.Truncate(detail, 4*rpc.MaxEcho)}
	}
	return fe
}

// scan reads the envelope's members. Unknown members are ignored; a
// duplicate member, a number where a string belongs (notably the id) or
// data after the object make the frame malformed.
func (c *Codec) scan(line []byte, f *frame) error {
	c.decBuf = *bytes.NewBuffer(line)
	c.dec.Reset(&c.decBuf)
	d := &c.dec
	if d.PeekKind() != '{' {
		return errors.New("not a JSON object")
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		switch name {
		case "protocol":
			f.protocol, err = str(v, name)
		case "version":
			f.hasVersion = true
			f.version, err = strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				err = fmt.Errorf("version %s is not an integer", v)
			}
		case "kind":
			f.kind, err = str(v, name)
		case "id":
			f.hasID = true
			if v.Kind() != '"' {
				err = fmt.Errorf("id %s is not a string", rpc.Truncate(string(v), rpc.MaxEcho))
			} else {
				f.id = string(v)
			}
		case "method":
			f.hasMethod = true
			f.method, err = str(v, name)
		case "payload":
			f.payload = v
		case "error":
			f.err = v
		default:
			switch {
			case name == c.p.Qualifier && name != "":
				f.qualifier, err = str(v, name)
			case name == c.p.Result:
				f.result = v
			}
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return errors.New("data after the frame")
	}
	if f.payload != nil && string(f.payload) == "null" {
		f.payload = nil
	}
	return nil
}

// stringID finds the string id of a malformed frame, so that the error
// frame answering it can echo the id when there is one to echo.
func (c *Codec) stringID(line []byte) (string, bool) {
	c.decBuf = *bytes.NewBuffer(line)
	c.dec.Reset(&c.decBuf)
	d := &c.dec
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", false
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return "", false
		}
		isID := tok.String() == "id"
		v, err := d.ReadValue()
		if err != nil {
			return "", false
		}
		if isID {
			return string(v), v.Kind() == '"'
		}
	}
	return "", false
}

func str(v jsontext.Value, name string) (string, error) {
	if v.Kind() != '"' {
		return "", fmt.Errorf("%s %s is not a string", name, rpc.Truncate(string(v), rpc.MaxEcho))
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err
}

// errorBody decodes the error member of an error frame.
func (c *Codec) errorBody(raw []byte) (*rpc.Error, error) {
	if raw == nil || string(raw) == "null" {
		return &rpc.Error{Name: c.p.MissingError, Code: c.names[c.p.MissingError], Message: "error frame without an error"}, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, errors.New("not an object")
	}
	e := &rpc.Error{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		switch name {
		case "code":
			e.Name, err = str(v, "code")
		case "message":
			e.Message, err = str(v, "message")
		case "retryable":
			if v.Kind() != 't' && v.Kind() != 'f' {
				return nil, fmt.Errorf("retryable %s is not a boolean", v)
			}
			b := v.Kind() == 't'
			e.Retryable = &b
		}
		if err != nil {
			return nil, err
		}
	}
	e.Code = c.names[e.Name]
	return e, nil
}

// AppendHead implements rpc.Codec. Members are written in the order the
// AgentPM writers use: protocol, version, kind, id, service, method, then
// the body member.
func (c *Codec) AppendHead(dst []byte, h *rpc.Header) []byte {
	dst = c.start(dst, c.kind(h))
	switch h.Kind {
	case rpc.KindRequest:
		dst = append(dst, `,"id":`...)
		dst = c.AppendID(dst, h.Seq)
	default:
		dst = appendID(dst, h.ID) // a reply's, or the id an event carries
	}
	dst = c.qualifier(dst, h)
	if h.Kind == rpc.KindRequest || h.Kind == rpc.KindNotification {
		dst = append(dst, `,"method":`...)
		dst, _ = jsontext.AppendQuote(dst, h.Method)
		return append(dst, `,"payload":`...)
	}
	dst = append(dst, `,"`...)
	dst = append(dst, c.p.Result...)
	return append(dst, `":`...)
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

// qualifier appends the qualifier member: the header's, else the codec's
// role for frames this side writes.
func (c *Codec) qualifier(dst []byte, h *rpc.Header) []byte {
	q := h.Qualifier
	if q == "" && h.Kind != rpc.KindRequest && h.Kind != rpc.KindNotification {
		q = c.role
	}
	if c.p.Qualifier == "" || q == "" {
		return dst
	}
	dst = append(dst, `,"`...)
	dst = append(dst, c.p.Qualifier...)
	dst = append(dst, `":`...)
	dst, _ = jsontext.AppendQuote(dst, q)
	return dst
}

// AppendTail implements rpc.Codec.
func (c *Codec) AppendTail(dst []byte, h *rpc.Header) []byte { return append(dst, "}\n"...) }

// NullBody implements rpc.Codec: requests carry {}, other frames null.
func (c *Codec) NullBody(h *rpc.Header) string {
	if h.Kind == rpc.KindRequest {
		return "{}"
	}
	return "null"
}

// AppendError implements rpc.Codec: an error frame whose code is the
// error's Name, or the protocol's name for its Code.
func (c *Codec) AppendError(dst []byte, h *rpc.Header, e *rpc.Error) []byte {
	dst = c.start(dst, "error")
	dst = appendID(dst, h.ID)
	dst = c.qualifier(dst, h)
	if c.p.Result == "payload" {
		dst = append(dst, `,"payload":null`...)
	}
	name := e.Name
	if name == "" {
		name = c.p.Codes[e.Code]
	}
	if name == "" {
		name = c.p.Codes[rpc.CodeInternalError]
	}
	dst = append(dst, `,"error":{"code":`...)
	dst, _ = jsontext.AppendQuote(dst, name)
	dst = append(dst, `,"message":`...)
	dst, _ = jsontext.AppendQuote(dst, e.Message)
	if c.p.Retryable {
		dst = append(dst, `,"retryable":`...)
		dst = strconv.AppendBool(dst, e.Retryable != nil && *e.Retryable)
	}
	return append(dst, "}}\n"...)
}

// AppendID implements rpc.Codec: the id of request seq is the string
// idPrefix + seq.
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
