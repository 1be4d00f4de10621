package jsonrpc

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"
)

// Request is an inbound request or notification.
type Request struct {
	ID     ID // zero for a notification
	Method string
	Params jsontext.Value // nil when absent
}

// IsNotification reports whether r has no id and therefore gets no reply. A
// request with "id":null is not a notification: its reply echoes null.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// Handler handles inbound requests and notifications.
//
// The returned result is marshalled as the reply's "result" (nil becomes
// null). An error that is or wraps an *Error is sent as that error; any
// other error is sent as CodeInternalError with the error's text. For an
// unknown method return an error matching ErrMethodNotFound. Notifications
// never get a reply; their result and error are only logged.
//
// ctx is cancelled when the connection shuts down. Handlers may call back
// into the connection (Call, Notify) with ctx.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to the Handler interface.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Caller is the outbound side of a connection, the interface generated
// client stubs depend on. *Conn implements it.
type Caller interface {
	Call(ctx context.Context, method string, params, result any) error
	Notify(ctx context.Context, method string, params any) error
}

var _ Caller = (*Conn)(nil)
