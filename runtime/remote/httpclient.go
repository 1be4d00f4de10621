package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

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

	postMu sync.Mutex // POSTs go one at a time, in order
	seq    uint64     // the last HeaderSeq sent (postMu)

	mu        sync.Mutex
	isClosing bool
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

func (c *httpClient) request(ctx context.Context, method string, body []byte, session string, extra http.Header) (*http.Response, error) {
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
	for k, v := range extra {
		req.Header[k] = v
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
		c.postMu.Lock()
		defer c.postMu.Unlock()
		return c.initialize(ctx, b, m)
	}
	if session != "" {
		if err := c.openStream(ctx, session); err != nil {
			return err
		}
	}
	resp, err := c.post(ctx, b, session)
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

// post POSTs a frame, numbered (HeaderSeq), and sends it again when the connection fails before the
// answer (a cut connection: the server may or may not have it, and takes each number once), with backoff
// until ResumeTimeout.
func (c *httpClient) post(ctx context.Context, b []byte, session string) (*http.Response, error) {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	c.seq++
	hdr := http.Header{HeaderSeq: {strconv.FormatUint(c.seq, 10)}}
	var deadline time.Time
	wait := 50 * time.Millisecond
	for {
		resp, err := c.request(ctx, http.MethodPost, b, session, hdr)
		if err == nil || c.opts.NoResume || ctx.Err() != nil || c.closing() {
			return resp, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(c.opts.ResumeTimeout)
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, err
		}
		c.opts.Logger.Info("remote: POST failed; sending it again", "err", err)
		select {
		case <-time.After(wait + rand.N(wait/2+1)):
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, err
		}
		wait = min(wait*2, 2*time.Second)
	}
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
	resp, err := c.request(ctx, http.MethodPost, b, "", nil)
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

// stream reads one SSE stream until it ends. A stream whose server gives it a position (the draft
// cursor: an id field) is resumed when it drops: the GET is sent again with Last-Event-ID, with backoff
// until ResumeTimeout, and every event after the last one read comes once, in order; a server that no
// longer has them answers 410, and the transport ends with an *ExpiredError. Without a position, the end
// of the connection's stream ends the transport, and a session's is reopened by its next message.
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
	var (
		p        peeker
		last     uint64 // the position read: the last event id
		cursor   bool   // the server gave the stream a position
		deadline time.Time
		wait     time.Duration
	)
	// retry waits before the next GET of a dropped stream; false when it is too late or the transport is
	// closing.
	retry := func() bool {
		if time.Now().Add(wait).After(deadline) {
			return false
		}
		select {
		case <-time.After(wait + rand.N(wait/2+1)):
		case <-c.ctx.Done():
			return false
		}
		wait = min(wait*2, 2*time.Second)
		return !c.closing()
	}
	for {
		var hdr http.Header
		if cursor {
			hdr = http.Header{"Last-Event-Id": {strconv.FormatUint(last, 10)}}
		}
		resp, err := c.request(c.ctx, http.MethodGet, nil, session, hdr)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			if cursor && retry() {
				continue
			}
			if session == "" || cursor {
				c.fail(c.dropErr(session, err))
			}
			return
		}
		if resp.StatusCode != http.StatusOK {
			text, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			switch {
			case cursor && resp.StatusCode == http.StatusGone:
				c.fail(&ExpiredError{SessionID: session, Reason: "frames_dropped"})
			case cursor && resp.StatusCode == http.StatusNotFound:
				c.fail(io.EOF) // the connection ended (its agent exited, or it outlived the retention) meanwhile
			case cursor && resp.StatusCode/100 == 5 && retry():
				continue
			case session == "" || cursor || resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode == 404 || resp.StatusCode == 410:
				c.fail(&StatusError{Status: resp.StatusCode, Body: string(text)})
			}
			return
		}
		if !opened {
			close(ready)
			opened = true
		}
		d := sse.NewDecoder(resp.Body, c.opts.MaxFrame)
		for {
			ev, err := d.Next()
			if err != nil {
				resp.Body.Close()
				if errors.Is(err, frame.ErrTooLarge) {
					c.fail(err) // as the TS SDK: an over-long event ends the transport
					return
				}
				if id, ok := d.LastEventID(); ok && !cursor {
					if n, perr := strconv.ParseUint(id, 10, 64); perr == nil {
						last, cursor = n, true
					}
				}
				break
			}
			if ev.HasID {
				if n, perr := strconv.ParseUint(ev.ID, 10, 64); perr == nil {
					if cursor && n <= last {
						continue // read before the stream dropped
					}
					last, cursor = n, true
				}
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
		if c.ctx.Err() != nil || c.closing() {
			return
		}
		if cursor && !c.opts.NoResume {
			c.opts.Logger.Info("remote: event stream dropped; resuming", "session", session, "after", last)
			deadline, wait = time.Now().Add(c.opts.ResumeTimeout), 50*time.Millisecond
			continue
		}
		if session == "" {
			c.fail(io.EOF)
		}
		return
	}
}

// dropErr is the error that ends the transport when a stream cannot be had again.
func (c *httpClient) dropErr(session string, err error) error {
	if session == "" {
		return err
	}
	return fmt.Errorf("remote: the event stream of session %s: %w", session, err)
}

func (c *httpClient) closing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isClosing
}

// Close implements frame.Transport: the streams end and the connection is deleted (DELETE).
func (c *httpClient) Close() error {
	c.mu.Lock()
	connID := c.connID
	c.isClosing = true
	c.mu.Unlock()
	select {
	case <-c.done:
	default:
		if connID != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5e9)
			if resp, err := c.request(ctx, http.MethodDelete, nil, "", nil); err == nil {
				resp.Body.Close()
			}
			cancel()
		}
	}
	c.once.Do(func() { close(c.done); c.cancel() })
	c.wg.Wait()
	return nil
}
