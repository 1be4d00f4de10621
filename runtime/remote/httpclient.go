package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/sse"
)

// httpClient is the client side of Streamable HTTP: each frame is a POST; what the server sends comes
// on the connection's SSE stream and one stream per session, opened as the sessions appear.
type httpClient struct {
	url  string
	opts *DialOptions

	in     chan []byte   // frames read from the streams
	done   chan struct{} // closed by Close or a fatal error
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	connID    string
	streams   map[string]chan struct{} // open GETs by session ("" the connection's), closed once open
	agentReqs map[string]string        // agent request id -> the session stream it came on
	err       error
}

func newHTTPClient(url string, o *DialOptions) *httpClient {
	c := &httpClient{url: url, opts: o, in: make(chan []byte, 64), done: make(chan struct{}),
		streams: map[string]chan struct{}{}, agentReqs: map[string]string{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

func (c *httpClient) ConnectionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connID
}

// Read implements frame.Reader.
func (c *httpClient) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-c.in:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		select {
		case b := <-c.in:
			return b, nil
		default:
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return nil, c.err
		}
		return nil, io.EOF
	}
}

func (c *httpClient) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.once.Do(func() { close(c.done); c.cancel() })
}

func (c *httpClient) request(ctx context.Context, method string, body []byte, session string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range c.opts.header() {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.mu.Lock()
	if c.connID != "" {
		req.Header.Set(HeaderConnectionID, c.connID)
	}
	c.mu.Unlock()
	if session != "" {
		req.Header.Set(HeaderSessionID, session)
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	return c.opts.HTTPClient.Do(req)
}

// Write implements frame.Writer: the frame is POSTed. The first frame must be the initialize request,
// whose answer comes in the POST's response; the others are answered 202 and their answers come on a
// stream. A request the server refuses gets a -32603 error answer with the status; a refused
// notification or response ends the transport.
func (c *httpClient) Write(ctx context.Context, b []byte) error {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return c.err
		}
		return errors.New("remote: transport closed")
	default:
	}
	var p peeker
	m := p.peek(b)
	c.mu.Lock()
	connID := c.connID
	session := ""
	switch m.kind {
	case kindRequest, kindNotification:
		if m.hasSess {
			session = m.sessionID
		}
	case kindResponse:
		session = c.agentReqs[idKey(m.id)]
		delete(c.agentReqs, idKey(m.id))
	}
	c.mu.Unlock()
	if connID == "" {
		return c.initialize(ctx, b, m)
	}
	if session != "" {
		if err := c.openStream(ctx, session); err != nil {
			return err
		}
	}
	resp, err := c.request(ctx, http.MethodPost, b, session)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.fail(err)
		return err
	}
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	se := &StatusError{Status: resp.StatusCode, Body: string(text)}
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode == 404 || resp.StatusCode == 410 || m.kind != kindRequest:
		c.fail(se)
		return se
	}
	// The request failed alone: its caller gets an error answer.
	ans := errorFrame(m.id, -32603, "HTTP "+strconv.Itoa(resp.StatusCode))
	ans = append(ans[:len(ans)-2], `,"data":{"status":`...)
	ans = strconv.AppendInt(ans, int64(resp.StatusCode), 10)
	ans = append(ans, `,"body":`...)
	ans = quote(ans, string(text))
	ans = append(ans, "}}}"...)
	c.push(ans)
	return nil
}

func (c *httpClient) push(b []byte) {
	select {
	case c.in <- b:
	case <-c.done:
	}
}

func (c *httpClient) initialize(ctx context.Context, b []byte, m *msg) error {
	if m.kind != kindRequest || m.method != "initialize" {
		return errors.New("remote: the first message over Streamable HTTP must be the initialize request")
	}
	resp, err := c.request(ctx, http.MethodPost, b, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.MaxFrame)+1))
	if err != nil {
		return err
	}
	id := resp.Header.Get(HeaderConnectionID)
	if resp.StatusCode == http.StatusOK && id == "" {
		err := errors.New("remote: the server's answer to initialize has no Acp-Connection-Id")
		c.fail(err)
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var p peeker
		if rm := p.peek(body); rm.kind == kindResponse && string(rm.id) == string(m.id) {
			c.push(body) // Initialize failed, as a JSON-RPC error: the caller gets it
		}
		se := &StatusError{Status: resp.StatusCode, Body: string(body[:min(len(body), 8<<10)])}
		c.fail(se)
		return nil
	}
	c.mu.Lock()
	c.connID = id
	c.mu.Unlock()
	if err := c.openStream(ctx, ""); err != nil {
		return err
	}
	c.push(body)
	return nil
}

// openStream opens the SSE stream of session ("" the connection's) unless it is open, and returns once
// the server has accepted it.
func (c *httpClient) openStream(ctx context.Context, session string) error {
	c.mu.Lock()
	ready, ok := c.streams[session]
	if !ok {
		ready = make(chan struct{})
		c.streams[session] = ready
		c.wg.Add(1)
		go c.stream(session, ready)
	}
	c.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.err
	}
}

// stream reads one SSE stream until it ends. The end of the connection's stream ends the transport; a
// session's is reopened by its next message.
func (c *httpClient) stream(session string, ready chan struct{}) {
	defer c.wg.Done()
	opened := false
	defer func() {
		if !opened {
			close(ready)
		}
		c.mu.Lock()
		if c.streams[session] == ready {
			delete(c.streams, session)
		}
		c.mu.Unlock()
	}()
	resp, err := c.request(c.ctx, http.MethodGet, nil, session)
	if err != nil {
		if session == "" {
			c.fail(err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		if session == "" || resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode == 404 || resp.StatusCode == 410 {
			c.fail(&StatusError{Status: resp.StatusCode, Body: string(text)})
		}
		return
	}
	close(ready)
	opened = true
	d := sse.NewDecoder(resp.Body, c.opts.MaxFrame)
	var p peeker
	for {
		ev, err := d.Next()
		if err != nil {
			if errors.Is(err, frame.ErrTooLarge) {
				c.fail(err) // as the TS SDK: an over-long event ends the transport
				return
			}
			if session == "" {
				if c.ctx.Err() == nil {
					c.fail(io.EOF)
				}
			}
			return
		}
		m := p.peek(ev.Data)
		if m.kind == kindUnparsable || m.kind == kindNotObject || m.kind == kindBatch {
			continue
		}
		if m.kind == kindRequest {
			c.mu.Lock()
			c.agentReqs[idKey(m.id)] = session
			c.mu.Unlock()
		}
		if m.kind == kindResponse && m.hasSess && m.sessionID != "" {
			c.openStream(c.ctx, m.sessionID)
		}
		c.push(append([]byte(nil), ev.Data...))
	}
}

// Close implements frame.Transport: the streams end and the connection is deleted (DELETE).
func (c *httpClient) Close() error {
	c.mu.Lock()
	connID := c.connID
	c.mu.Unlock()
	select {
	case <-c.done:
	default:
		if connID != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5e9)
			if resp, err := c.request(ctx, http.MethodDelete, nil, ""); err == nil {
				resp.Body.Close()
			}
			cancel()
		}
	}
	c.once.Do(func() { close(c.done); c.cancel() })
	c.wg.Wait()
	return nil
}
