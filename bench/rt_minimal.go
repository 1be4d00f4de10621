package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Minimal returns the reference runtime: newline-delimited JSON-RPC 2.0
// with one goroutine per connection that reads a line, decodes its
// envelope once with go-json-experiment (bridgekit's codec), and handles
// it on the spot: a notification or request runs the Service there and
// then (params decoded as bridgekit's adapter does), a response is handed
// to the caller waiting for it. Every message is written with one Write
// under a mutex.
//
// It is not a product: no concurrency (a slow handler stalls the
// connection), no backpressure beyond the pipe, no cancellation of the
// peer's handlers, and a connection that both sends requests and serves
// them can deadlock with a peer doing the same once both pipes fill. It is
// the lower bound for delivering notifications that bridgekit is compared
// with in the burst scenarios (bench.References), not a competitor.
func Minimal() Runtime { return minimalRT{} }

type minimalRT struct{}

func (minimalRT) Name() string { return "minimal (one goroutine)" }
func (minimalRT) Key() string  { return "minimal" }

func (minimalRT) Open(r io.Reader, w io.Writer, svc *Service) Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &minimalConn{
		r: r, w: w, svc: svc,
		ctx: ctx, cancel: cancel,
		pending: map[int64]chan minimalReply{},
		done:    make(chan struct{}),
	}
	go c.read()
	return c
}

// errMinimalClosed is the error of a connection closed by Close.
var errMinimalClosed = errors.New("connection closed")

type minimalConn struct {
	r   io.Reader
	w   io.Writer
	svc *Service

	// ctx is the context of every handler; it ends with the connection.
	ctx    context.Context
	cancel context.CancelFunc

	wmu  sync.Mutex
	wbuf bytes.Buffer // the message being written, under wmu

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan minimalReply // calls awaiting a response
	err     error                       // why the connection ended, once it has
	closed  bool                        // Close was called

	done chan struct{}
}

// minimalReply is a response handed to the caller waiting for it.
type minimalReply struct {
	result jsontext.Value // a copy, owned by the caller
	err    error
}

// minimalMessage is every JSON-RPC message in one struct; which members
// are present says which kind it is.
type minimalMessage struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id,omitzero"`
	Method  string         `json:"method,omitzero"`
	Params  jsontext.Value `json:"params,omitzero"`
	Result  jsontext.Value `json:"result,omitzero"`
	Error   *minimalError  `json:"error,omitzero"`
}

// minimalError is a JSON-RPC error object.
type minimalError struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
}

func (e *minimalError) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// The outbound messages, each encoded in one pass.
type (
	minimalRequest struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitzero"`
	}
	minimalNotification struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitzero"`
	}
	minimalResult struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      jsontext.Value `json:"id"`
		Result  any            `json:"result"`
	}
	minimalErrorReply struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      jsontext.Value `json:"id"`
		Error   *minimalError  `json:"error"`
	}
)

// JSON-RPC 2.0 error codes.
const (
	minimalParseError     = -32700
	minimalInvalidRequest = -32600
	minimalMethodNotFound = -32601
	minimalInternalError  = -32603
)

// maxKeptLine is the largest line buffer kept for the next long line;
// a larger one is dropped so that one huge message does not pin memory.
const maxKeptLine = 1 << 20

// read is the connection's one goroutine: it reads, decodes and handles
// every message in order until the stream ends.
func (c *minimalConn) read() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	var (
		long []byte // a line longer than br's buffer, assembled
		m    minimalMessage
		err  error
	)
	for {
		var line []byte
		line, err = br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(bytes.TrimSpace(line)) > 0 {
			c.handle(line, &m)
		}
		if cap(long) > maxKeptLine {
			long = nil
		}
		if err != nil {
			break
		}
	}
	c.shutdown(err)
}

// handle decodes one line into m (reused from line to line) and acts on it.
func (c *minimalConn) handle(line []byte, m *minimalMessage) {
	*m = minimalMessage{ID: m.ID[:0], Params: m.Params[:0], Result: m.Result[:0]}
	if err := json.Unmarshal(line, m); err != nil {
		c.replyError(jsontext.Value("null"), minimalParseError, err.Error())
		return
	}
	switch {
	case m.JSONRPC != "2.0":
		c.replyError(idOrNull(m.ID), minimalInvalidRequest, `"jsonrpc" must be "2.0"`)
	case m.Method != "":
		c.serve(m)
	case len(m.ID) > 0 && (len(m.Result) > 0 || m.Error != nil):
		c.route(m)
	default:
		c.replyError(idOrNull(m.ID), minimalInvalidRequest, "neither a request nor a response")
	}
}

func idOrNull(id jsontext.Value) jsontext.Value {
	if len(id) == 0 {
		return jsontext.Value("null")
	}
	return id
}

// serve runs a notification or request inline and replies to a request.
func (c *minimalConn) serve(m *minimalMessage) {
	notification := len(m.ID) == 0
	if c.svc == nil {
		if !notification {
			c.replyError(m.ID, minimalMethodNotFound, "method not found: "+m.Method)
		}
		return
	}
	res, err := serve(c.ctx, c.svc, m.Method, m.Params, decodeBridgekit)
	if notification {
		return
	}
	var rerr *rpc.Error
	switch {
	case err == nil:
		c.write(minimalResult{JSONRPC: "2.0", ID: m.ID, Result: res})
	case errors.Is(err, errUnknownMethod):
		c.replyError(m.ID, minimalMethodNotFound, "method not found: "+m.Method)
	case errors.As(err, &rerr):
		c.replyError(m.ID, int64(rerr.Code), rerr.Message)
	default:
		c.replyError(m.ID, minimalInternalError, err.Error())
	}
}

func (c *minimalConn) replyError(id jsontext.Value, code int64, msg string) {
	c.write(minimalErrorReply{JSONRPC: "2.0", ID: id, Error: &minimalError{Code: code, Message: msg}})
}

// route hands a response to the call waiting for it; a response nobody
// waits for (its caller gave up) is dropped.
func (c *minimalConn) route(m *minimalMessage) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return // not an id this connection sent
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		return
	}
	if m.Error != nil {
		ch <- minimalReply{err: m.Error}
		return
	}
	ch <- minimalReply{result: bytes.Clone(m.Result)}
}

// write encodes v and writes it, with its newline, in one Write.
func (c *minimalConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf.Reset()
	if err := json.MarshalWrite(&c.wbuf, v); err != nil {
		return err
	}
	c.wbuf.WriteByte('\n')
	_, err := c.w.Write(c.wbuf.Bytes())
	if c.wbuf.Cap() > maxKeptLine {
		c.wbuf = bytes.Buffer{}
	}
	return err
}

func (c *minimalConn) Call(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan minimalReply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.write(minimalRequest{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		forget()
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(r.result, result)
	case <-ctx.Done():
		forget()
		return ctx.Err()
	case <-c.done:
		return c.Err()
	}
}

func (c *minimalConn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.write(minimalNotification{JSONRPC: "2.0", Method: method, Params: params})
}

// shutdown records why the connection ended and fails the waiting calls.
func (c *minimalConn) shutdown(err error) {
	c.mu.Lock()
	if c.closed || err == nil {
		err = errMinimalClosed
	}
	c.err = err
	for id, ch := range c.pending {
		ch <- minimalReply{err: err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	c.cancel()
	close(c.done)
}

func (c *minimalConn) Done() <-chan struct{} { return c.done }

func (c *minimalConn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Close closes r and w, which ends the read goroutine, and waits for it.
func (c *minimalConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel() // a handler waiting on its context returns
	err := closeBoth(c.r, c.w)
	<-c.done
	return err
}
