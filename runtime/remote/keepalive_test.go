package remote

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client that answers pings stays connected across several of them; one that reads nothing (so
// answers no ping) is closed once a pong is late, with a close message without a code (Harn's rule).
func TestKeepalive(t *testing.T) {
	_, hs, _ := startServer(t, &Options{PingInterval: 20 * time.Millisecond, PongTimeout: 50 * time.Millisecond})
	pings := make(chan struct{}, 16)
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, wsURL(hs), &websocket.DialOptions{OnPingReceived: func(context.Context, []byte) bool {
		select {
		case pings <- struct{}{}:
		default:
		}
		return true
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsSend(t, c, initBody)
	if got, err := wsRecv(t, c); err != nil || !strings.Contains(got, "protocolVersion") {
		t.Fatal(got, err)
	}
	// Pings are answered while the client reads: three of them, and the connection still serves.
	read := make(chan string)
	go func() {
		defer close(read)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			read <- string(b)
		}
	}()
	for i := 0; i < 3; i++ {
		<-pings
	}
	wsSend(t, c, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
	if got := <-read; !strings.Contains(got, `"sessionId":"sess-1"`) {
		t.Fatalf("after pings: %s", got)
	}
	c.Close(websocket.StatusNormalClosure, "")
	for range read {
	}

	// A raw client that upgrades and never reads again.
	nc, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	frame := []byte(initBody)
	nc.Write(append([]byte{0x81, 0x80 | byte(len(frame)), 0, 0, 0, 0}, frame...))
	// Everything the server sends, to its end: the 101, the answer, pings, and a close message
	// (opcode 0x8) with no payload, i.e. no code.
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	all, _ := io.ReadAll(nc)
	if !strings.Contains(string(all), "\x88\x00") {
		t.Fatalf("no code-less close message in %q", all)
	}
}
