// Package wsframe carries frames over a WebSocket (github.com/coder/websocket): one JSON-RPC message per
// text message, both ways, as ACP's WebSocket transport and Harn's profile of it have it. It implements
// the engine's seam, frame.Transport, for a socket either side opened.
//
// A text message over the size limit is read to its end, discarded and reported as a
// *frame.TooLargeError with its head: the socket stays usable. A message past HardLimitFactor times the
// limit closes the socket with 1009 instead, so that a peer cannot keep it busy forever. Binary messages
// are ignored (ACP) or answered with a JSON-RPC error (Harn), as Options.Binary says.
package wsframe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

// Binary says what a Transport does with a binary message.
type Binary int

const (
	// IgnoreBinary drops binary messages (ACP's rule, the TS SDK's behaviour).
	IgnoreBinary Binary = iota
	// RejectBinary answers each with a JSON-RPC -32600 error of id null and goes on (Harn's rule).
	RejectBinary
)

// HardLimitFactor times the frame limit is the size at which a message closes the socket (1009)
// instead of being discarded.
const HardLimitFactor = 16

// Options configures a Transport. The zero value is ready to use.
type Options struct {
	// MaxFrame bounds an inbound message (default frame.DefaultMaxFrame).
	MaxFrame int
	// Binary is what becomes of binary messages.
	Binary Binary
	// OnRead, if set, is called with every text message read, before Read returns it (for traffic
	// observers); the slice is valid only during the call.
	OnRead func([]byte)
}

// Transport is a frame.Transport over a WebSocket.
type Transport struct {
	c      *websocket.Conn
	opts   Options
	buf    []byte
	closed atomic.Bool
	once   sync.Once
	done   chan struct{} // closed once the socket is closed
}

// New returns a Transport over c. It takes c's read limit over (the library's own is turned off).
func New(c *websocket.Conn, opts *Options) *Transport {
	t := &Transport{c: c, done: make(chan struct{})}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.MaxFrame <= 0 {
		t.opts.MaxFrame = frame.DefaultMaxFrame
	}
	c.SetReadLimit(-1)
	return t
}

// Conn is the underlying WebSocket.
func (t *Transport) Conn() *websocket.Conn { return t.c }

// errBinaryFrame is the reply to a binary message under RejectBinary.
var errBinaryFrame = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"ACP WebSocket transport only accepts JSON-RPC text frames"}}`)

// Read implements frame.Reader. The end of the socket is io.EOF when the peer closed it with 1000 or
// without a code (the TS SDK's normal end); otherwise the error is a websocket.CloseError (1001, a
// server going away, included: a client may resume) or the network's. Ending ctx
// while Read waits closes the socket (the library's rule).
func (t *Transport) Read(ctx context.Context) ([]byte, error) {
	for {
		typ, r, err := t.c.Reader(ctx)
		if err != nil {
			return nil, t.readErr(err)
		}
		if typ != websocket.MessageText {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return nil, t.readErr(err)
			}
			if t.opts.Binary == RejectBinary {
				if err := t.Write(ctx, errBinaryFrame); err != nil {
					return nil, err
				}
			}
			continue
		}
		b, err := t.readMessage(r)
		if err != nil {
			return nil, err
		}
		if t.opts.OnRead != nil {
			t.opts.OnRead(b)
		}
		return b, nil
	}
}

// readMessage reads one text message into t.buf, or discards one over the limit.
func (t *Transport) readMessage(r io.Reader) ([]byte, error) {
	max := t.opts.MaxFrame
	t.buf = t.buf[:0]
	for {
		if len(t.buf) == cap(t.buf) {
			t.buf = append(t.buf, 0)[:len(t.buf)]
		}
		n, err := r.Read(t.buf[len(t.buf):min(cap(t.buf), max+1)])
		t.buf = t.buf[:len(t.buf)+n]
		if err == io.EOF {
			return t.buf, nil
		}
		if err != nil {
			return nil, t.readErr(err)
		}
		if len(t.buf) > max {
			return nil, t.discard(r, max)
		}
	}
}

// discard reads the rest of an over-long message.
func (t *Transport) discard(r io.Reader, limit int) error {
	head := make([]byte, frame.HeadSize)
	size := copy(head, t.buf)
	if size < len(head) {
		n, err := io.ReadFull(r, head[size:])
		size += n
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return t.readErr(err)
		}
	}
	head = head[:min(size, frame.HeadSize)]
	size = max(size, len(t.buf))
	hard := int64(limit) * HardLimitFactor
	n, err := io.CopyN(io.Discard, r, max(hard-int64(size)+1, 1))
	size += int(n)
	if err == nil {
		t.CloseWith(websocket.StatusMessageTooBig, "message too large")
		return &frame.TooLargeError{Limit: limit, Size: size, Head: head}
	}
	if err != io.EOF {
		return t.readErr(err)
	}
	if cap(t.buf) > 64<<10 {
		t.buf = nil // do not keep a large buffer for one large message
	}
	return &frame.TooLargeError{Limit: limit, Size: size, Head: head}
}

func (t *Transport) readErr(err error) error {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd:
		return io.EOF
	}
	if t.closed.Load() && errors.Is(err, net.ErrClosed) {
		return io.EOF
	}
	if errors.Is(err, io.EOF) {
		// The connection ended without a close message: not a clean end.
		return fmt.Errorf("%w: the connection ended without a close message (%v)", io.ErrUnexpectedEOF, err)
	}
	return err
}

// Write implements frame.Writer: frame goes out as one text message. Writes are serialized by the
// library; ctx ending while a write waits its turn drops the frame, while it is being written closes the
// socket (a frame cut in the middle cannot be taken back).
func (t *Transport) Write(ctx context.Context, frame []byte) error {
	return t.c.Write(ctx, websocket.MessageText, frame)
}

// Close ends the socket with the close code 1000 (normal) and returns at once: Read and Write fail from
// then on. The closing handshake goes on in the background, bounded by the library's timeouts (5 s to
// send the close message, 5 s for the peer's); Done is closed when it is over.
func (t *Transport) Close() error {
	t.CloseWith(websocket.StatusNormalClosure, "")
	return nil
}

// CloseWith ends the socket with code and reason (at most 123 bytes) as Close does, once: later calls
// do nothing. websocket.StatusNoStatusRcvd sends a close message without a code, as Harn does on a
// liveness timeout.
func (t *Transport) CloseWith(code websocket.StatusCode, reason string) {
	t.once.Do(func() {
		t.closed.Store(true)
		go func() {
			defer close(t.done)
			t.c.Close(code, reason)
		}()
	})
}

// Done is closed once the socket is closed, after Close or CloseWith.
func (t *Transport) Done() <-chan struct{} { return t.done }

// Keepalive pings the peer every interval from a goroutine of its own while the socket is open, and
// closes the socket without a code (Harn's liveness rule) when a pong does not come within timeout.
// Pongs are read by Read, which must be running. It returns a function that stops it.
func (t *Transport) Keepalive(interval, timeout time.Duration) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var timer *time.Timer
	timer = time.AfterFunc(interval, func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := t.c.Ping(ctx)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		if stopped || t.closed.Load() {
			return
		}
		if err != nil {
			t.CloseWith(websocket.StatusNoStatusRcvd, "")
			return
		}
		timer.Reset(interval)
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		timer.Stop()
	}
}
