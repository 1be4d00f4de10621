package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/internal/jsonscan"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// NewConn starts an rpc.Conn that speaks JSON-RPC 2.0 on r and w, one message a line; see rpc.NewConn. h may
// be nil and opts may be nil.
func NewConn(r io.Reader, w io.Writer, h rpc.Handler, opts *rpc.Options) *rpc.Conn {
	return rpc.NewConn(r, w, new(Codec), h, opts)
}

// NewTransportConn starts an rpc.Conn that speaks JSON-RPC 2.0 over the frame transport t; see
// rpc.NewTransportConn.
func NewTransportConn(t frame.Transport, h rpc.Handler, opts *rpc.Options) *rpc.Conn {
	return rpc.NewTransportConn(t, new(Codec), h, opts)
}

// Codec turns JSON-RPC 2.0 messages into frames and back, for rpc.Conn.
//
// Inbound ids are kept byte for byte; outbound request ids are integers counting up from 1. A request's
// params are always written (nil params as {}). Frames that are not JSON are answered with ErrParse and id
// null; valid JSON that is not a request, notification or response (a batch, a wrong "jsonrpc" member, an id
// of the wrong kind) with ErrInvalidRequest.
//
// A Codec holds the reading goroutine's scratch space: use one per connection (NewConn and NewTransportConn
// do).
type Codec struct {
	scan    jsonscan.Scanner
	env     envelope
	scratch []byte // an unescaped method name
}

// envelope holds the members of an inbound message as raw JSON aliasing the frame; absent members are nil.
type envelope struct {
	version, id, method, params, result, err jsontext.Value
}

// SetMember implements jsonscan.Members; unknown members are ignored.
func (e *envelope) SetMember(name, value []byte) {
	switch string(name) {
	case "jsonrpc":
		e.version = value
	case "id":
		e.id = value
	case "method":
		e.method = value
	case "params":
		e.params = value
	case "result":
		e.result = value
	case "error":
		e.err = value
	}
}

var _ rpc.Codec = (*Codec)(nil)

// Decode implements rpc.Codec.
func (c *Codec) Decode(line []byte, m *rpc.Message) error {
	e := &c.env
	*e = envelope{}
	if _, err := c.scan.Decode(line, e); err != nil {
		return &rpc.FrameError{Kind: rpc.FrameMalformed, Err: err, Reply: rpc.ErrParse}
	}
	switch {
	case e.method != nil:
		return c.request(e, m)
	case e.id != nil && (e.result != nil || e.err != nil):
		return c.response(e, m)
	}
	var id rpc.ID
	if e.id != nil && validID(e.id) {
		id = rpc.RawID(e.id)
	}
	return invalid(id, "not a request, notification or response")
}

var _ rpc.HeadDecoder = (*Codec)(nil)

// DecodeHead implements rpc.HeadDecoder: a line with an id is a request when its head shows a method or
// params, and a reply when it shows a result or an error (whole or cut).
func (c *Codec) DecodeHead(head []byte) (rpc.Kind, []byte) {
	e := &c.env
	*e = envelope{}
	cut := string(c.scan.Head(head, e))
	if e.id == nil || !validID(e.id) || string(e.id) == "null" {
		return 0, nil
	}
	switch {
	case e.method != nil || e.params != nil || cut == "method" || cut == "params":
		return rpc.KindRequest, e.id
	case e.err != nil || cut == "error":
		return rpc.KindError, e.id
	case e.result != nil || cut == "result":
		return rpc.KindResponse, e.id
	}
	return 0, nil
}

func (c *Codec) request(e *envelope, m *rpc.Message) error {
	if !validID(e.id) {
		return invalid(rpc.ID{}, "id must be a string, number or null")
	}
	if string(e.version) != `"2.0"` {
		return invalid(rpc.RawID(e.id), `"jsonrpc" must be "2.0"`)
	}
	if e.method.Kind() != '"' {
		return invalid(rpc.RawID(e.id), "method must be a string")
	}
	m.Method = e.method[1 : len(e.method)-1]
	if bytes.IndexByte(m.Method, '\\') >= 0 {
		var err error
		if c.scratch, err = jsontext.AppendUnquote(c.scratch[:0], e.method); err != nil {
			return invalid(rpc.RawID(e.id), "method must be a string")
		}
		m.Method = c.scratch
	}
	m.Kind, m.ID, m.Body = rpc.KindNotification, e.id, e.params
	if e.id != nil {
		m.Kind = rpc.KindRequest
	}
	return nil
}

func (c *Codec) response(e *envelope, m *rpc.Message) error {
	m.ID = e.id
	if e.err == nil || string(e.err) == "null" {
		m.Kind, m.Body = rpc.KindResponse, e.result
		return nil
	}
	var w wireErr
	if err := json.Unmarshal(e.err, &w); err != nil {
		return &rpc.FrameError{Kind: rpc.FrameInvalid, Claimed: rpc.KindError, ID: rpc.RawID(e.id),
			Err: errors.New("jsonrpc: malformed error object: " + err.Error())}
	}
	m.Kind, m.Err = rpc.KindError, &rpc.Error{Code: w.Code, Message: w.Message, Data: w.Data}
	return nil
}

// wireErr is a JSON-RPC error object as it travels.
type wireErr struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
}

func invalid(id rpc.ID, why string) error {
	e := rpc.NewError(rpc.CodeInvalidRequest, "invalid request: "+why, nil)
	return &rpc.FrameError{Kind: rpc.FrameInvalid, Err: e, ID: id, Reply: e}
}

// validID reports whether the raw id of an inbound request is absent, a string, a number or null.
func validID(raw []byte) bool {
	if raw == nil {
		return true
	}
	switch raw[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// AppendHead implements rpc.Codec.
func (c *Codec) AppendHead(dst []byte, h *rpc.Header) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	switch h.Kind {
	case rpc.KindRequest:
		dst = append(dst, `"id":`...)
		dst = strconv.AppendUint(dst, h.Seq, 10)
		dst = append(dst, ',')
		fallthrough
	case rpc.KindNotification:
		dst = append(dst, `"method":`...)
		dst, _ = jsontext.AppendQuote(dst, h.Method)
		return append(dst, `,"params":`...)
	}
	return append(appendID(dst, h.ID), `,"result":`...)
}

func appendID(dst []byte, id rpc.ID) []byte {
	dst = append(dst, `"id":`...)
	if id.IsZero() {
		return append(dst, "null"...)
	}
	return append(dst, id.String()...)
}

// AppendTail implements rpc.Codec.
func (c *Codec) AppendTail(dst []byte, h *rpc.Header) []byte { return append(dst, '}') }

// NullBody implements rpc.Codec: params default to {}, results to null.
func (c *Codec) NullBody(h *rpc.Header) string {
	if h.Kind == rpc.KindResponse {
		return "null"
	}
	return "{}"
}

// AppendError implements rpc.Codec. An error with a string code only (from another protocol's vocabulary) is
// sent as a server error (-32000) whose message starts with the name. Invalid UTF-8 in the message is
// replaced; data that is not valid JSON is left out.
func (c *Codec) AppendError(dst []byte, h *rpc.Header, e *rpc.Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	dst = append(appendID(dst, h.ID), `,"error":{"code":`...)
	code, msg := e.Code, e.Message
	if code == 0 {
		code = -32000
		if e.Name != "" {
			msg = e.Name + ": " + msg
		}
	}
	dst = strconv.AppendInt(dst, code, 10)
	dst = append(dst, `,"message":`...)
	dst, _ = jsontext.AppendQuote(dst, msg)
	if len(e.Data) > 0 && jsontext.Value(e.Data).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
		dst = append(dst, `,"data":`...)
		if bytes.IndexByte(e.Data, '\n') >= 0 {
			dst, _ = jsontext.AppendFormat(dst, e.Data, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
		} else {
			dst = append(dst, e.Data...)
		}
	}
	return append(dst, "}}"...)
}

// AppendID implements rpc.Codec: request ids are the numbers themselves.
func (c *Codec) AppendID(dst []byte, seq uint64) []byte { return strconv.AppendUint(dst, seq, 10) }

// Seq implements rpc.Codec.
func (c *Codec) Seq(id []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(id), 10, 64)
	return n, err == nil && n > 0
}
