package jsonrpc

import (
	"errors"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error codes defined by JSON-RPC 2.0 and LSP.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
)

// Sentinel errors for the standard codes. Compare with errors.Is, which
// matches any *Error with the same code.
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "internal error"}
)

// ErrClosed is matched by every error caused by the connection shutting
// down: failed pending calls, calls made after shutdown and Conn.Err.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Error is a JSON-RPC error object. Handlers return it (possibly wrapped) to
// choose the error sent to the peer; Call returns it when the peer answers
// with an error.
type Error struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
}

// NewError returns an Error whose Data is data marshalled as JSON (a
// jsontext.Value is used as is); nil data means no data. If data cannot be
// marshalled, Data holds the marshalling error's text as a JSON string.
func NewError(code int64, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	if data == nil {
		return e
	}
	if raw, ok := data.(jsontext.Value); ok {
		e.Data = raw
		return e
	}
	var err error
	if e.Data, err = json.Marshal(data); err != nil {
		e.Data, _ = jsontext.AppendQuote(nil, err.Error())
	}
	return e
}

func (e *Error) Error() string {
	return "jsonrpc error " + strconv.FormatInt(e.Code, 10) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code; the message
// and data are ignored.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// FrameErrorKind classifies a FrameError.
type FrameErrorKind int

const (
	// FrameMalformed: the line is not valid JSON.
	FrameMalformed FrameErrorKind = iota + 1
	// FrameTooLarge: the line exceeds Options.MaxFrame.
	FrameTooLarge
	// FrameInvalidEnvelope: valid JSON that is neither a request, a
	// notification nor a response.
	FrameInvalidEnvelope
	// FrameUnknownResponse: a response whose id matches no pending call.
	FrameUnknownResponse
)

func (k FrameErrorKind) String() string {
	switch k {
	case FrameMalformed:
		return "malformed"
	case FrameTooLarge:
		return "too large"
	case FrameInvalidEnvelope:
		return "invalid envelope"
	case FrameUnknownResponse:
		return "unknown response"
	}
	return "FrameErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// FrameError describes an inbound frame that was rejected or dropped. The
// connection stays open; see Options.OnFrameError.
type FrameError struct {
	Kind    FrameErrorKind
	Err     error  // the cause, e.g. a JSON syntax error or the *Error sent in reply
	Snippet string // the start of the offending line
}

func (e *FrameError) Error() string {
	msg := "jsonrpc: " + e.Kind.String() + " frame"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Snippet != "" {
		msg += " in " + strconv.Quote(e.Snippet)
	}
	return msg
}

func (e *FrameError) Unwrap() error { return e.Err }

const snippetLen = 64

func newFrameError(kind FrameErrorKind, err error, frame []byte) *FrameError {
	s := string(frame[:min(len(frame), snippetLen)])
	if len(frame) > snippetLen {
		s += "..."
	}
	return &FrameError{Kind: kind, Err: err, Snippet: s}
}

// wireError returns the error object to send for a handler error.
func wireError(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}
