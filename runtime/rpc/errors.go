package rpc

import (
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Error codes of JSON-RPC 2.0 and LSP that the engine itself uses. Protocols with string codes map them to
// names of their own.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
	// CodeOverloaded answers a request that arrives while the inbound queue is full and a handler waits for
	// the peer (see Options.QueueBytes).
	CodeOverloaded = -32050
)

// Sentinel errors; errors.Is matches any *Error with the same code (or, for protocols with string codes, the
// same Name).
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "internal error"}
	ErrCancelled      = &Error{Code: CodeRequestCancelled, Message: "request cancelled"}
	ErrOverloaded     = &Error{Code: CodeOverloaded, Message: "overloaded: too many inbound messages queued"}
	// ErrDuplicateID answers a request whose id is that of a request still in flight; the earlier request
	// keeps running and gets its own reply.
	ErrDuplicateID = &Error{Code: CodeInvalidRequest, Message: "invalid request: a request with this id is still in flight"}
)

// ErrClosed is matched by every error caused by the connection shutting down: failed pending calls, calls
// made after shutdown and Conn.Err.
var ErrClosed = errors.New("rpc: connection closed")

// ErrTooManyObjects is matched by the error of a FrameTooLarge report for a line with more JSON objects and
// arrays than Options.MaxObjects.
var ErrTooManyObjects = errors.New("rpc: too many JSON objects and arrays")

// Error is an error reply. Handlers return it (possibly wrapped) to choose the error the peer gets; Send
// returns it when the peer answers with one.
type Error struct {
	// Code is the JSON-RPC code. Codecs of protocols with string codes set it to the matching standard code
	// when there is one, so that errors.Is(err, ErrMethodNotFound) holds for every protocol.
	Code int64
	// Name is the string code of protocols that have them ("session_busy"); empty for JSON-RPC.
	Name    string
	Message string
	// Data is extra JSON (JSON-RPC's data member); nil when absent.
	Data jsontext.Value
	// Retryable is agentpm-service's retryable flag; nil when absent.
	Retryable *bool
	cause     error // what an InvalidParams error was made from; never sent
}

// Unwrap returns the error this one was made from, if any: for an InvalidParams error the decode error, so
// that errors.As finds its *json.SemanticError (the JSON pointer of the member at fault) and its
// *wire.DecodeError (type, member and cause, such as wire.ErrForbiddenMember). It is never sent to the peer.
func (e *Error) Unwrap() error { return e.cause }

// NewError returns an Error whose Data is data marshalled as JSON (a jsontext.Value is used as is); nil data
// means none. If data cannot be marshalled, Data holds the marshalling error's text as a JSON string.
func NewError(code int64, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	switch d := data.(type) {
	case nil:
	case jsontext.Value:
		e.Data = d
	default:
		var err error
		if e.Data, err = json.Marshal(data); err != nil {
			e.Data, _ = jsontext.AppendQuote(nil, err.Error())
		}
	}
	return e
}

func (e *Error) Error() string {
	code := e.Name
	if code == "" {
		code = strconv.FormatInt(e.Code, 10)
	}
	return "rpc error " + code + ": " + e.Message
}

// Is reports whether target is an *Error with the same Name, when target has one, or else the same Code;
// Message and Data are ignored.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if ok && t.Name != "" {
		return t.Name == e.Name
	}
	return ok && t.Code != 0 && t.Code == e.Code
}

// with returns a copy of the sentinel e with message msg.
func (e *Error) with(msg string) *Error {
	c := *e
	c.Message = msg
	return &c
}

// MethodNotFound is the error for a method this side does not serve, whose name the message repeats truncated
// to MaxEcho bytes.
func MethodNotFound(method string) *Error {
	return ErrMethodNotFound.with("method not found: " + Truncate(method, MaxEcho))
}

// UnsupportedOperation is the ErrMethodNotFound error for an operation, carried inside method, that this side
// does not serve. Data names both, truncated like the message: {"method": ..., "operation": ...}.
func UnsupportedOperation(method, operation string) *Error {
	method, operation = Truncate(method, MaxEcho), Truncate(operation, MaxEcho)
	return NewError(CodeMethodNotFound, method+": unsupported operation "+operation, struct {
		Method    string `json:"method"`
		Operation string `json:"operation"`
	}{method, operation})
}

// InvalidParams is the ErrInvalidParams error for params that do not fit their schema; err says why. The
// message names the place as a JSON pointer in the peer's wire names, and the reason without Go type names
// ("invalid params: /prompt/0/text: want string, got number: wrong JSON kind"); the Error unwraps to err.
func InvalidParams(err error) *Error {
	e := ErrInvalidParams.with("invalid params: " + Truncate(wire.Describe(err), 4*MaxEcho))
	e.cause = err
	return e
}

// MaxEcho bounds, in bytes, how much of a peer's input (a method or operation name) an error reply or a
// diagnostic repeats.
const MaxEcho = 128

// Truncate returns s cut to at most n bytes, at a rune boundary, with "…" appended when it was cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// FrameErrorKind classifies a FrameError.
type FrameErrorKind uint8

const (
	FrameMalformed FrameErrorKind = iota + 1 // the line is not valid JSON of the protocol's shape
	// FrameTooLarge: the line exceeds Options.MaxFrame or Options.MaxObjects (Err matches ErrTooManyObjects).
	FrameTooLarge
	// FrameInvalid: a well-formed message the protocol does not allow (bad envelope, wrong protocol or
	// version, wrong id kind).
	FrameInvalid
	FrameUnknownResponse // a reply whose id matches no pending call
	FrameOverloaded      // a request refused because the inbound queue was full
	// FrameBadParams: a notification (an AgentPM event) dropped because its handler could not decode its
	// params (it returned an error matching ErrInvalidParams). A request gets its -32602 answer instead.
	FrameBadParams
	FrameDuplicateID // a request refused (-32600) because a request with the same id is still in flight

	frameKinds = FrameDuplicateID + 1 // the number of kinds, for tables by kind
)

var frameKindNames = [frameKinds]string{
	FrameMalformed: "malformed", FrameTooLarge: "too large", FrameInvalid: "invalid", FrameUnknownResponse: "unknown response",
	FrameOverloaded: "overloaded", FrameBadParams: "bad params", FrameDuplicateID: "duplicate id",
}

func (k FrameErrorKind) String() string { return enumName(frameKindNames[:], int(k), "FrameErrorKind") }

// FrameError describes an inbound line that was rejected or dropped; the connection stays up. Codecs return
// it from Decode; Options.OnFrameError receives it bounded so as to repeat little of the peer's input: an ID
// longer than MaxEcho bytes is left out, and the text of Err is cut to 4*MaxEcho bytes (Err still unwraps to
// the original error).
type FrameError struct {
	Kind    FrameErrorKind
	Err     error  // the cause: a JSON syntax error, a sentinel of the codec, ...
	Snippet string // the start of the offending line
	ID      ID     // the id the line carried, when it could be read
	// Claimed is what the line said it was, when that could be read (a reply that fails a gate fails the call
	// it answers).
	Claimed Kind
	Reply   *Error // the error to answer with; nil means no answer
	Method  string // the method of a notification whose params did not decode (FrameBadParams)
	// Frame is a copy of the whole line, for the program's own use (the peer's input, unredacted: log it
	// through runtime/redact). It is nil for a line over MaxFrame, and when the reports waiting for
	// OnFrameError already hold too many bytes.
	Frame []byte
}

func (e *FrameError) Error() string {
	msg := "rpc: " + e.Kind.String() + " frame"
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

// snippet returns the start of frame, for FrameError.Snippet.
func snippet(frame []byte) string {
	return Truncate(string(frame[:min(len(frame), snippetLen+4)]), snippetLen)
}

// replyError returns the error to send for a handler's error.
func replyError(err error, ctxErr error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if ctxErr != nil && errors.Is(err, ctxErr) {
		return ErrCancelled.with("request cancelled: " + err.Error())
	}
	return ErrInternal.with(err.Error())
}

// enumName returns names[k], or typ(k) for a k out of the table.
func enumName(names []string, k int, typ string) string {
	if k > 0 && k < len(names) {
		return names[k]
	}
	return typ + "(" + strconv.Itoa(k) + ")"
}
