package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// pipeListener is a net.Listener of in-memory connections (net.Pipe), whose blocking synctest sees:
// a server and its clients in one bubble, on the bubble's clock.
type pipeListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.ch <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serveInBubble runs a Server with the default options on a pipeListener; the returned client reaches
// it. Everything is stopped when f returns.
func serveInBubble(t *testing.T, opts *Options, f func(s *Server, hc *http.Client, ln *pipeListener)) {
	fb := &fakeBackend{}
	s := NewServer(fb.start, opts)
	ln := newPipeListener()
	hs := &http.Server{Handler: s}
	go hs.Serve(ln)
	tr := &http.Transport{DialContext: ln.dial}
	defer func() {
		tr.CloseIdleConnections()
		s.Close()
		hs.Close()
		fb.wait()
	}()
	f(s, &http.Client{Transport: tr}, ln)
}

// Harn's liveness rule, on synctest's clock with the default intervals: a client that answers pings
// gets one every 30 s and stays; one that answers none is closed 10 s after the ping it left
// unanswered, with a close message without a code.
func TestKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		serveInBubble(t, nil, func(_ *Server, hc *http.Client, ln *pipeListener) {
			ctx := context.Background()
			var mu sync.Mutex
			var pings []time.Duration
			start := time.Now()
			c, _, err := websocket.Dial(ctx, "ws://bubble/acp", &websocket.DialOptions{HTTPClient: hc,
				OnPingReceived: func(context.Context, []byte) bool {
					mu.Lock()
					pings = append(pings, time.Since(start))
					mu.Unlock()
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
			time.Sleep(100 * time.Second)
			synctest.Wait()
			mu.Lock()
			got := fmt.Sprint(pings)
			mu.Unlock()
			if got != "[30s 1m0s 1m30s]" {
				t.Errorf("pings at %s, want every 30 s", got)
			}
			// Still served.
			wsSend(t, c, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
			if got := <-read; !strings.Contains(got, `"sessionId":"sess-1"`) {
				t.Fatalf("after pings: %s", got)
			}
			c.Close(websocket.StatusNormalClosure, "")
			for range read {
			}

			// A client that reads but answers no ping.
			start = time.Now()
			c2, _, err := websocket.Dial(ctx, "ws://bubble/acp", &websocket.DialOptions{HTTPClient: hc,
				OnPingReceived: func(context.Context, []byte) bool { return false }})
			if err != nil {
				t.Fatal(err)
			}
			defer c2.CloseNow()
			wsSend(t, c2, initBody)
			if _, err := wsRecv(t, c2); err != nil {
				t.Fatal(err)
			}
			_, _, err = c2.Read(ctx)
			if websocket.CloseStatus(err) != websocket.StatusNoStatusRcvd || time.Since(start) != 40*time.Second {
				t.Errorf("closed with %v after %v, want a close without a code after 40s", err, time.Since(start))
			}

			// A raw client that never reads again sees, on the wire, the close message without payload.
			nc, err := ln.dial(ctx, "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			go func() {
				fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
				b := []byte(initBody)
				nc.Write(append([]byte{0x81, 0x80 | byte(len(b)), 0, 0, 0, 0}, b...))
			}()
			all, err := io.ReadAll(nc)
			if err != nil && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatal(err)
			}
			// A ping (its payload is the library's counter, where Harn's is empty: peers answer either),
			// then the close message.
			if i := strings.Index(string(all), "\x89"); i < 0 || !strings.HasSuffix(string(all), "\x88\x00") {
				t.Fatalf("no ping and code-less close message in %q", all)
			}
		})
	})
}
