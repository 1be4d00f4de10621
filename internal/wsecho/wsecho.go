// Package wsecho is the reference of bridgekit's WebSocket round-trip measures: a bare coder/websocket
// server that echoes every message, and a client dialled to it, with no bridgekit code between them.
package wsecho

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// Dial starts an echo server and returns a client connected to it; both close when tb ends.
func Dial(tb testing.TB, ctx context.Context) *websocket.Conn {
	tb.Helper()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if c.Write(context.Background(), typ, b) != nil {
				return
			}
		}
	}))
	tb.Cleanup(echo.Close)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(echo.URL, "http"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.CloseNow() })
	return c
}
