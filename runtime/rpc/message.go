package rpc

import (
	"context"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Kind says what a message is.
type Kind uint8

// Message kinds, onto which a protocol's frame kinds map (an AgentPM event is a notification).
const (
	KindRequest      Kind = iota + 1 // expects a reply
	KindNotification                 // one-way: JSON-RPC notification, envelope event
	KindResponse                     // a successful reply
	KindError                        // an error reply
)

var kindNames = [...]string{
	KindRequest: "request", KindNotification: "notification", KindResponse: "response", KindError: "error",
}

func (k Kind) String() string { return enumName(kindNames[:], int(k), "Kind") }

// ID is a message id: the raw JSON text of a string, a number or null, kept byte for byte so that replies
// echo it unchanged. The zero ID means "no id". IDs are comparable and can be map keys.
type ID struct {
	raw string
}

// RawID returns the ID whose JSON text is raw; raw must be valid JSON.
func RawID(raw []byte) ID { return ID{raw: string(raw)} }

// Int64ID returns the ID for the JSON number n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// StringID returns the ID for the JSON string s. Invalid UTF-8 in s is replaced with U+FFFD.
func StringID(s string) ID {
	b, _ := jsontext.AppendQuote(nil, s)
	return ID{raw: string(b)}
}

// IsZero reports whether id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// Raw returns the id's JSON text, or nil for the zero ID.
func (id ID) Raw() jsontext.Value {
	if id.raw == "" {
		return nil
	}
	return jsontext.Value(id.raw)
}

// String returns the id's JSON text, or "" for the zero ID.
func (id ID) String() string { return id.raw }

// Message is one decoded inbound message. Its byte slices alias the frame it was decoded from (or the
// codec's scratch space) and are valid only until the next Decode.
type Message struct {
	Kind   Kind
	ID     []byte // the raw JSON of the id; nil when the message has none
	Method []byte // the method name, unquoted (requests and notifications)
	// Qualifier is the member that identifies the method together with its name in protocols that have one
	// (agentpm-service: the service role).
	Qualifier []byte
	Body      []byte // the raw JSON of the params, payload or result; nil when absent
	Err       *Error // the error of a KindError message
}

// Header describes an outbound message for a Codec to frame.
type Header struct {
	Kind      Kind
	ID        ID     // the id a reply echoes
	Seq       uint64 // numbers an outbound request; the codec writes its id from it
	Method    string // of a request or notification, and of the request a reply answers
	Qualifier string
}

// Codec turns frames into messages and back for one protocol family. Frames are whole JSON values with no
// framing around them (no newline): the transport frames them. A codec is used by one connection's
// goroutines concurrently: Decode only from the reading goroutine, the Append methods from any;
// implementations keep per-call state out of the codec value or guard it.
type Codec interface {
	// Decode parses one frame into m. A frame it cannot accept gives a *FrameError saying how to answer it.
	Decode(frame []byte, m *Message) error
	// AppendHead appends a message's envelope up to where its body value goes; AppendTail appends what
	// follows the body, to the end of the frame.
	AppendHead(dst []byte, h *Header) []byte
	AppendTail(dst []byte, h *Header) []byte
	// NullBody is the body written for a nil or null body (JSON-RPC params are {}, results null).
	NullBody(h *Header) string
	// AppendError appends a whole error reply frame.
	AppendError(dst []byte, h *Header, e *Error) []byte
	// AppendID appends the id that AppendHead writes for request seq; Seq returns the sequence number of such
	// an id, and whether id is one.
	AppendID(dst []byte, seq uint64) []byte
	Seq(id []byte) (uint64, bool)
}

// HeadDecoder is implemented by a codec that can tell what a frame was from its first bytes alone. A Conn
// uses it for a frame over Options.MaxFrame, of which it keeps only the start (frame.HeadSize bytes): a reply
// fails the call it answers at once, instead of leaving the caller waiting, a request is answered with its
// own id, and a notification is not answered.
type HeadDecoder interface {
	// DecodeHead reports the kind of the frame that head starts (0 when head does not settle it, as for a
	// JSON-RPC frame whose id may come after a long member) and its raw id (nil when head shows none). It
	// must not claim more than head shows: a cut value is never taken for a whole one.
	DecodeHead(head []byte) (kind Kind, id []byte)
}

// Request is an inbound request or notification. A Request and its Params are valid only until the handler
// returns; copy what must outlive it.
type Request struct {
	Kind      Kind // KindRequest or KindNotification
	ID        ID   // a request's id; a notification's, if its protocol gives one (AgentPM events)
	Method    string
	Qualifier string
	Params    jsontext.Value // nil when absent
	// Options are the decode options of the connection (Options.DecodeOptions), which DecodeParams applies;
	// nil for none.
	Options json.Options
}

// Handler handles inbound requests and notifications. The result is marshalled as the reply's body (nil
// becomes the protocol's null body). An error that is or wraps an *Error is sent as that error; the context's
// own error, after a cancel message or deadline, is sent as ErrCancelled; any other error is sent as
// ErrInternal with the error's text. Notifications never get a reply; their errors are logged. ctx ends when
// the connection is closed, when the protocol's cancel message for the request arrives, or at the request's
// deadline. Handlers may call back into the connection with ctx.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to the Handler interface.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Middleware wraps a Handler, for example to log, trace or authorise every method a side serves.
type Middleware func(next Handler) Handler

// Outbound is a message to send.
type Outbound struct {
	Kind      Kind // KindRequest (the default) or KindNotification
	Method    string
	Qualifier string
	Params    any
	// ID is an id for a notification to carry, in protocols whose events may have one (AgentPM's
	// harness_event); requests get ids of their own.
	ID ID
}

// Sender is the outbound side of a connection, the interface generated peers depend on. *Conn implements it.
type Sender interface {
	// Send sends m; for a request it waits for the reply and decodes its body into result, if not nil.
	Send(ctx context.Context, m Outbound, result any) error
}

// CancelRule describes a protocol's cancel message: Method, when it arrives, ends the context of running
// Target requests whose Key member has the same value as the cancel message's (or of every running Target
// request when Key is empty), or of the request whose id the cancel message's ByID member holds. When an
// outbound Target request's context ends, the connection sends Method with the request's Key value (or id).
type CancelRule struct {
	Method string
	Kind   Kind // of the cancel message: KindNotification (default) or KindRequest
	Target string
	Key    string
	ByID   string
}
