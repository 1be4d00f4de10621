package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"

	"github.com/sourcegraph/jsonrpc2"
)

// Sourcegraph returns the adapter for github.com/sourcegraph/jsonrpc2 over a
// PlainObjectStream (newline-delimited JSON). As recommended by its
// documentation for handlers that may block, requests are handled in their
// own goroutine; notifications are handled inline, in order.
func Sourcegraph() Runtime { return sourcegraphRT{} }

type sourcegraphRT struct{}

func (sourcegraphRT) Name() string { return "sourcegraph/jsonrpc2" }
func (sourcegraphRT) Key() string  { return "sourcegraph" }

func (sourcegraphRT) Open(r io.Reader, w io.Writer, svc *Service) Conn {
	c := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(rwc{r, w}), sgHandler{svc},
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	return sgConn{c}
}

type sgHandler struct{ svc *Service }

func (h sgHandler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if h.svc == nil {
		if !req.Notif {
			conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found"})
		}
		return
	}
	if req.Notif {
		serve(ctx, h.svc, req.Method, req.Params, decodeSourcegraph)
		return
	}
	go func() {
		res, err := serve(ctx, h.svc, req.Method, req.Params, decodeSourcegraph)
		switch {
		case errors.Is(err, errUnknownMethod):
			conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found"})
		case err != nil:
			conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()})
		default:
			conn.Reply(ctx, req.ID, res)
		}
	}()
}

func decodeSourcegraph(raw *json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(*raw, v)
}

type sgConn struct{ c *jsonrpc2.Conn }

func (c sgConn) Call(ctx context.Context, method string, params, result any) error {
	return c.c.Call(ctx, method, params, result)
}

func (c sgConn) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, method, params)
}

func (c sgConn) Done() <-chan struct{} { return c.c.DisconnectNotify() }

func (c sgConn) Err() error {
	select {
	case <-c.c.DisconnectNotify():
		return errors.New("connection closed")
	default:
		return nil
	}
}

func (c sgConn) Close() error { return c.c.Close() }
