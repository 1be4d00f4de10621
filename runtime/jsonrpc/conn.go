package jsonrpc

import (
	"io"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// NewConn starts an rpc.Conn that speaks JSON-RPC 2.0 on r and w; see
// rpc.NewConn. h may be nil and opts may be nil.
func NewConn(r io.Reader, w io.Writer, h rpc.Handler, opts *rpc.Options) *rpc.Conn {
	return rpc.NewConn(r, w, new(Codec), h, opts)
}
