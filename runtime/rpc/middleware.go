package rpc

import "context"

// Chain returns h wrapped in mw, the first outermost: Chain(h, a, b) is a(b(h)). A nil h answers every
// request with ErrMethodNotFound, as a connection with no handler does, so that middleware still sees it.
// With no middleware Chain returns h itself.
func Chain(h Handler, mw ...Middleware) Handler {
	if len(mw) == 0 {
		return h
	}
	if h == nil {
		h = HandlerFunc(func(_ context.Context, req *Request) (any, error) { return nil, MethodNotFound(req.Method) })
	}
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			h = mw[i](h)
		}
	}
	return h
}

// SenderFrom returns the connection that is handling the request whose context is ctx (a handler's, or one
// derived from it), or nil for any other context: a handler's way to call its own peer (acp.ClientPeerFrom).
// The context carries the connection from before the first message is read, so nothing races with a request
// that arrives at once.
func SenderFrom(ctx context.Context) Sender {
	if m, ok := ctx.Value(handlerKey{}).(*handlerMark); ok && m.conn != nil {
		return m.conn
	}
	return nil
}
