package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// post sends a POST to the endpoint with the given headers ("Name: value" each).
func post(t *testing.T, url, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`

// initHTTP creates a connection and returns its id.
func initHTTP(t *testing.T, url string) string {
	t.Helper()
	resp, body := post(t, url, initBody)
	if resp.StatusCode != 200 || resp.Header.Get(HeaderConnectionID) == "" || !strings.Contains(body, `"protocolVersion":1`) {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get(HeaderConnectionID)
}

// Each malformed request gets the status (and text) of the reference, §2.7, and the connection it
// names goes on: a good request after each is still served.
func TestHTTPBadInput(t *testing.T) {
	_, hs, _ := startServer(t, &Options{MaxFrame: 4096})
	url := hs.URL
	conn := initHTTP(t, url)
	c := "Acp-Connection-Id: " + conn
	for _, tc := range []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
		text    string
	}{
		{"wrong content type", "POST", initBody, []string{"Content-Type: text/plain"}, 415, "application/json"},
		{"no content type", "POST", initBody, []string{"Content-Type: "}, 415, ""},
		{"GET without Accept", "GET", "", []string{c}, 406, "text/event-stream"},
		{"method", "PUT", "", nil, 405, ""},
		{"not JSON", "POST", `{"jsonrpc":`, nil, 400, "Invalid JSON"},
		{"batch", "POST", `[` + initBody + `]`, nil, 400, "batches are not supported"},
		{"primitive", "POST", `42`, nil, 400, "Invalid JSON-RPC message"},
		{"no jsonrpc member", "POST", `{"id":1,"method":"initialize"}`, nil, 400, "Invalid JSON-RPC message"},
		{"no connection id", "POST", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`, nil, 400, "Missing Acp-Connection-Id"},
		{"initialize without id", "POST", `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`, nil, 400, "Initialize request must include an ID"},
		{"unknown connection", "POST", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`, []string{"Acp-Connection-Id: 00000000-0000-4000-8000-000000000000"}, 404, "Unknown Acp-Connection-Id"},
		{"unknown connection GET", "GET", "", []string{"Acp-Connection-Id: nope", "Accept: text/event-stream"}, 404, "Unknown Acp-Connection-Id"},
		{"unknown connection DELETE", "DELETE", "", []string{"Acp-Connection-Id: nope"}, 404, "Unknown Acp-Connection-Id"},
		{"DELETE without id", "DELETE", "", nil, 400, "Missing Acp-Connection-Id"},
		{"initialize again", "POST", initBody, []string{c}, 400, "Initialize not allowed on existing connection"},
		{"missing session header", "POST", `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`, []string{c}, 400, "Missing Acp-Session-Id"},
		{"missing session header by method", "POST", `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, []string{c}, 400, "Missing Acp-Session-Id"},
		{"mismatched session header", "POST", `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`, []string{c, "Acp-Session-Id: t"}, 400, "Mismatched Acp-Session-Id"},
		{"body too large", "POST", `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 5000) + `"}`, []string{c}, 413, "Request body exceeds 4096 bytes"},
		{"id too long", "POST", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 1100) + `","method":"x"}`, []string{c}, 400, "maxIdLength"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url, strings.NewReader(tc.body))
			if tc.method == "POST" {
				req.Header.Set("Content-Type", "application/json")
			}
			for _, h := range tc.headers {
				k, v, _ := strings.Cut(h, ": ")
				req.Header.Set(k, v)
			}
			resp, body := do(t, req)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.text) {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, body, tc.status, tc.text)
			}
			// The connection is unharmed.
			if resp, body := post(t, url, `{"jsonrpc":"2.0","method":"_note","params":{}}`, c); resp.StatusCode != 202 {
				t.Fatalf("after: %d %s", resp.StatusCode, body)
			}
		})
	}
}

// A second GET for a stream that has a reader gets 409; DELETE ends the connection (202) and it is
// unknown afterwards (404).
func TestHTTPStreamsAndDelete(t *testing.T) {
	_, hs, _ := startServer(t, nil)
	conn := initHTTP(t, hs.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(HeaderConnectionID, conn)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %v %v", resp, err)
	}
	defer resp.Body.Close()
	req2, _ := http.NewRequest("GET", hs.URL, nil)
	req2.Header.Set("Accept", "text/event-stream")
	req2.Header.Set(HeaderConnectionID, conn)
	if resp2, body := do(t, req2); resp2.StatusCode != 409 || !strings.Contains(body, "active receiver") {
		t.Fatalf("second GET: %d %s", resp2.StatusCode, body)
	}
	del, _ := http.NewRequest("DELETE", hs.URL, nil)
	del.Header.Set(HeaderConnectionID, conn)
	if r, _ := do(t, del); r.StatusCode != 202 {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}
	// The stream ends.
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("stream after DELETE: %v", err)
	}
	if r, _ := post(t, hs.URL, `{"jsonrpc":"2.0","method":"_note"}`, "Acp-Connection-Id: "+conn); r.StatusCode != 404 {
		t.Fatalf("POST after DELETE: %d", r.StatusCode)
	}
}

// Authentication comes first (401, no hint of the token); a browser origin not allowed gets 403.
func TestAuthAndOrigin(t *testing.T) {
	const token = "s3cret-token-value"
	_, hs, fb := startServer(t, &Options{Authenticate: Tokens([]string{token}, nil), AllowedOrigins: []string{"https://ide.example.com"}})
	for _, tc := range []struct {
		headers []string
		status  int
	}{
		{nil, 401},
		{[]string{"Authorization: Bearer wrong"}, 401},
		{[]string{"X-API-Key: " + token + "x"}, 401},
		{[]string{"Authorization: Bearer " + token, "Origin: https://evil.example.com"}, 403},
		{[]string{"Authorization: Bearer " + token}, 200},
		{[]string{"X-API-Key: " + token, "Origin: https://IDE.example.com"}, 200},
	} {
		resp, body := post(t, hs.URL, initBody, tc.headers...)
		if resp.StatusCode != tc.status || strings.Contains(body, token) {
			t.Fatalf("%q: %d %s", tc.headers, resp.StatusCode, body)
		}
		if tc.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatal("401 without WWW-Authenticate")
		}
	}
	// The WebSocket upgrade is refused the same way, before anything reaches an agent.
	_, resp, err := websocket.Dial(context.Background(), wsURL(hs), nil)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("upgrade without a token: %v %v", resp, err)
	}
	if fb.starts != 2 {
		t.Fatalf("%d agents started, want 2 (the admitted requests)", fb.starts)
	}
}

// A client that sends its body slower than BodyTimeout is cut off (no slowloris), and the server goes
// on serving others.
func TestSlowBody(t *testing.T) {
	_, hs, _ := startServer(t, &Options{BodyTimeout: 200 * time.Millisecond})
	nc, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	buf := make([]byte, 512)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := nc.Read(buf)
	if !strings.Contains(string(buf[:n]), "400") {
		t.Fatalf("slow body answered %q", buf[:n])
	}
	initHTTP(t, hs.URL)
}

// wsDial opens a raw socket to the server.
func wsDial(t *testing.T, hs *httptest.Server) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), wsURL(hs), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, s string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func wsRecv(t *testing.T, c *websocket.Conn) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	return string(b), err
}

// Before initialize: bad frames are answered and the socket stays; another method closes it 1002.
func TestWebSocketFirstMessage(t *testing.T) {
	_, hs, _ := startServer(t, nil)
	c := wsDial(t, hs)
	for in, want := range map[string]string{
		`not json`:                       `"code":-32700`,
		`[1,2]`:                          `batches are not supported`,
		`"primitive"`:                    `"data":"primitive"`,
		`{"jsonrpc":"2.0","nonsense":1}`: `"code":-32600`,
	} {
		wsSend(t, c, in)
		got, err := wsRecv(t, c)
		if err != nil || !strings.Contains(got, want) || !strings.Contains(got, `"id":null`) {
			t.Fatalf("%s: %s %v", in, got, err)
		}
	}
	wsSend(t, c, `{"jsonrpc":"2.0","id":1,"result":{}}`) // response-shaped: dropped
	c.Write(context.Background(), websocket.MessageBinary, []byte(`{}`))
	if got, err := wsRecv(t, c); err != nil || got != binaryError {
		t.Fatalf("binary message before initialize: %s %v", got, err)
	}
	wsSend(t, c, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	_, err := wsRecv(t, c)
	if websocket.CloseStatus(err) != websocket.StatusProtocolError || !strings.Contains(err.Error(), "First message must be initialize") {
		t.Fatalf("got %v, want close 1002", err)
	}
	c2 := wsDial(t, hs)
	wsSend(t, c2, `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`)
	if _, err := wsRecv(t, c2); websocket.CloseStatus(err) != websocket.StatusProtocolError || !strings.Contains(err.Error(), "must include an ID") {
		t.Fatalf("got %v, want close 1002", err)
	}
}

// After initialize: batches, bad JSON, binary and oversized frames are answered (or ignored) and the
// connection goes on; a second initialize is refused with its id.
func TestWebSocketBadFrames(t *testing.T) {
	_, hs, _ := startServer(t, &Options{MaxFrame: 1024})
	c := wsDial(t, hs)
	wsSend(t, c, initBody)
	if got, err := wsRecv(t, c); err != nil || !strings.Contains(got, `"protocolVersion":1`) || !strings.Contains(got, `"_harn":{"eventId":1`) {
		t.Fatalf("initialize: %s %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`[{"jsonrpc":"2.0","id":1,"method":"session/new"}]`, `batches are not supported`},
		{`{bad`, `"code":-32700`},
		{`{"jsonrpc":"2.0","id":7,"method":"x","params":"` + strings.Repeat("z", 2000) + `"}`, `"id":7,"error":{"code":-32600`},
		{initBody, `Initialize not allowed on existing connection`},
	} {
		wsSend(t, c, tc.in)
		if got, err := wsRecv(t, c); err != nil || !strings.Contains(got, tc.want) {
			t.Fatalf("%.40s: %s %v", tc.in, got, err)
		}
	}
	// A binary message is answered as Harn's profile has it, not forwarded, and the socket stays.
	c.Write(context.Background(), websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{}}`))
	if got, err := wsRecv(t, c); err != nil || got != binaryError {
		t.Fatalf("binary message: %s %v", got, err)
	}
	wsSend(t, c, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
	if got, err := wsRecv(t, c); err != nil || !strings.Contains(got, `"id":2,"result":{"sessionId":"sess-1"}`) {
		t.Fatalf("session/new after bad frames (the binary one not forwarded): %s %v", got, err)
	}
}

const binaryError = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"ACP WebSocket transport only accepts JSON-RPC text frames"}}`

// With IgnoreBinary, as the TS SDK's server: a binary message gets no answer and is not forwarded.
func TestWebSocketIgnoreBinary(t *testing.T) {
	_, hs, _ := startServer(t, &Options{IgnoreBinary: true})
	c := wsDial(t, hs)
	wsSend(t, c, initBody)
	if _, err := wsRecv(t, c); err != nil {
		t.Fatal(err)
	}
	c.Write(context.Background(), websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{}}`))
	wsSend(t, c, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
	if got, err := wsRecv(t, c); err != nil || !strings.Contains(got, `"id":2,"result":{"sessionId":"sess-1"}`) {
		t.Fatalf("the next answer after a binary message: %s %v", got, err)
	}
}

// A client that never reads is closed (1008) once its queue passes the bound; the agent is not held up
// (it writes on until the bound is passed), and another client of the server is served meanwhile. Over
// each backend: an in-process agent's writes queue as a pumped one's do.
func TestClientNeverReads(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testClientNeverReads(t, b.inProcess, b.wrapped) })
	}
}

func testClientNeverReads(t *testing.T, inProcess, wrapped bool) {
	// The server's log says when it gives up on the client: the test reads
	// the socket only then, since reading lets the server write on.
	slow := &logWatch{want: "client too slow", seen: make(chan struct{})}
	_, hs, _ := startServerWith(t, &Options{MaxQueuedBytes: 64 << 10, PingInterval: -1, Logger: slog.New(slog.NewTextHandler(slow, nil))},
		&fakeBackend{inProcess: inProcess, wrapped: wrapped})
	// A raw TCP client that upgrades and then never reads. Its receive
	// buffer stays as the kernel sized it at the handshake. Shrinking it
	// afterwards (SetReadBuffer(4096), as this test once did) made it fail
	// about one run in four: the handshake had offered a 64 KiB window, the
	// server's kernel sent 32 KiB segments into it, the 8 KiB buffer took
	// one at a time and dropped the rest, and their retransmissions backed
	// off to seconds. The server did give up and, its close message held
	// behind the frame stuck in the socket for 5 s, cut the socket; but the
	// megabytes left in its send buffer, and the FIN behind them, reached
	// the client at some 30 KiB/s: about 1 MiB in the 30 s below.
	nc, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	send := func(s string) {
		// A masked client text frame.
		b := []byte(s)
		hdr := []byte{0x81}
		switch {
		case len(b) < 126:
			hdr = append(hdr, 0x80|byte(len(b)))
		default:
			hdr = append(hdr, 0x80|126, byte(len(b)>>8), byte(len(b)))
		}
		hdr = append(hdr, 0, 0, 0, 0) // mask key 0: the payload as is
		nc.Write(append(hdr, b...))
	}
	send(initBody)
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"until cancelled"}]}}`)
	// Another client is served while the first is stuck.
	tr, err := Dial(context.Background(), wsURL(hs), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cl := &client{t: tr, tb: t}
	cl.call("initialize", `{"protocolVersion":1}`)
	cl.call("session/new", `{}`)
	res := cl.call("session/prompt", `{"sessionId":"sess-1","prompt":[{"type":"text","text":"40 updates"}]}`)
	if !strings.Contains(string(res.Result), "end_turn") {
		t.Fatal(string(res.Result))
	}
	// The stuck socket is closed by the server: reading it to its end finds the close frame (1008).
	select {
	case <-slow.seen:
	case <-time.After(2 * time.Minute):
		t.Fatal("the server never gave up on the never-reading client")
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	all, _ := io.ReadAll(nc)
	if !strings.Contains(string(all), "maxQueuedBytes") {
		t.Fatalf("the never-reading client was not closed with 1008 (read %d bytes)", len(all))
	}
}

// logWatch is a log's writer that closes seen once a line contains want.
type logWatch struct {
	want string
	seen chan struct{}
	once sync.Once
}

func (w *logWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// 10,000 connections opened and dropped (upgrades, initialize POSTs, bare connections): the server
// serves the next client and holds no goroutine for them afterwards. In a synctest bubble over in-memory
// connections, so that "afterwards" is an event: every goroutine of the bubble at rest.
func TestManyConnectionsDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	synctest.Test(t, func(t *testing.T) {
		serveInBubble(t, &Options{MaxConns: 20000, MaxConnsPerPrincipal: 20000}, func(s *Server, hc *http.Client, ln *pipeListener) {
			synctest.Wait()
			before := runtime.NumGoroutine()
			for i := 0; i < 10000; i++ {
				nc, err := ln.dial(context.Background(), "", "")
				if err != nil {
					t.Fatal(err)
				}
				switch i % 3 {
				case 0: // an upgrade, dropped at once
					fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
				case 1: // half a request
					fmt.Fprintf(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
				}
				nc.Close()
			}
			resp, err := hc.Post("http://bubble/acp", "application/json", strings.NewReader(initBody))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"protocolVersion":1`) {
				t.Fatalf("the next client: %d %s", resp.StatusCode, body)
			}
			synctest.Wait()
			// The next client's connection and agent remain, and the HTTP client's idle connection.
			if n := runtime.NumGoroutine(); n > before+20 {
				t.Fatalf("%d goroutines left, %d before", n, before)
			}
			s.mu.Lock()
			n := len(s.conns)
			s.mu.Unlock()
			if n > 1 {
				t.Fatalf("%d connections held", n)
			}
		})
	})
}

// A session/load for a session nobody knows gets -32004; session/list lists the live ones.
func TestWebSocketUnknownSession(t *testing.T) {
	_, hs, _ := startServer(t, nil)
	c := wsDial(t, hs)
	wsSend(t, c, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"nope","lastAckedEventId":3}}`)
	if got, err := wsRecv(t, c); err != nil || !strings.Contains(got, `"code":-32004`) || !strings.Contains(got, "Session not found: nope") {
		t.Fatalf("%s %v", got, err)
	}
	wsSend(t, c, `{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	if got, err := wsRecv(t, c); err != nil || got != `{"jsonrpc":"2.0","id":2,"result":{"sessions":[]}}` {
		t.Fatalf("%s %v", got, err)
	}
}

var _ = errors.New
