package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/wsframe"
)

// DialOptions configures Dial. The zero value is ready to use.
type DialOptions struct {
	// Header is sent with every request (the upgrade, each POST and GET): Authorization, say. It is never
	// logged.
	Header http.Header
	// Token, if set, is sent as "Authorization: Bearer <Token>".
	Token string
	// HTTPClient makes the requests (default: a client with a cookie jar, for the affinity cookies
	// servers may set, which ACP requires clients to return).
	HTTPClient *http.Client
	// MaxFrame bounds an inbound message (default frame.DefaultMaxFrame).
	MaxFrame int
	// NoResume ends a WebSocket transport when its socket drops instead of reconnecting.
	NoResume bool
	// ResumeTimeout bounds the reconnection attempts after a socket dropped (default 30 s).
	ResumeTimeout time.Duration
	// MaxResendBytes bounds the frames kept to send again after a reconnection, until the server says it
	// has them (default 4 MiB; the oldest go first, and a resume that needs them fails).
	MaxResendBytes int
	// ClientID is the stable client id of Harn's profile (_harn.clientId); default: random.
	ClientID string
	// Logger gets diagnostics (reconnections); nil discards them.
	Logger *slog.Logger
	// Resume, with the WebSocket transport, attaches to a session an earlier client (an earlier process,
	// say) started, instead of starting a connection: the server replays the session's frames after
	// Resume.After and the socket goes on with the session. The engine on the transport must not send
	// initialize.
	Resume *Resume
	// OnForeignResponse, if set, is called with the responses to requests this transport did not send
	// (those of a resumed session's earlier client: the result of a prompt it started, say), which are
	// not handed to the engine.
	OnForeignResponse func(frame []byte)
}

// Resume names a session to attach to and the last event id already seen of it (0: replay all the
// server retained). ConnectionID, the Acp-Connection-Id of the connection that started it, tells the
// server which session is meant when several connections hold one of that id.
type Resume struct {
	SessionID    string
	ConnectionID string
	After        uint64
}

func (o *DialOptions) header() http.Header {
	h := http.Header{}
	for k, v := range o.Header {
		h[k] = append([]string(nil), v...)
	}
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	return h
}

// Transport is the client side of a remote connection: a frame.Transport for the engine.
type Transport interface {
	frame.Transport
	// ConnectionID is the server's Acp-Connection-Id ("" until known).
	ConnectionID() string
}

// Dial connects to an ACP endpoint: ws:// and wss:// URLs with the WebSocket transport, http:// and
// https:// with Streamable HTTP. For WebSocket it returns once the socket is open; for HTTP at once (the
// connection is made by the initialize request, the engine's first frame). ctx bounds the dial only.
func Dial(ctx context.Context, url string, opts *DialOptions) (Transport, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		jar, _ := cookiejar.New(nil)
		o.HTTPClient = &http.Client{Jar: jar}
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = frame.DefaultMaxFrame
	}
	if o.ResumeTimeout <= 0 {
		o.ResumeTimeout = 30 * time.Second
	}
	if o.MaxResendBytes <= 0 {
		o.MaxResendBytes = 4 << 20
	}
	if o.ClientID == "" {
		o.ClientID = newID()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case strings.HasPrefix(url, "ws://"), strings.HasPrefix(url, "wss://"):
		return dialWS(ctx, url, &o)
	case strings.HasPrefix(url, "http://"), strings.HasPrefix(url, "https://"):
		return newHTTPClient(url, &o), nil
	}
	return nil, fmt.Errorf("remote: %q: the URL must be ws://, wss://, http:// or https://", url)
}

// ExpiredError reports a session that could not be resumed in full. Over WebSocket the server answered
// liveState "expired_replay_only" (its agent is gone, or frames the client lacked were dropped), and the
// frames it still had were delivered first; over Streamable HTTP it answered a resuming GET with 410
// (SessionID is "" for the connection's own stream).
type ExpiredError struct {
	SessionID string
	Reason    string // "agent_gone" or "frames_dropped"
}

func (e *ExpiredError) Error() string {
	return "remote: session " + e.SessionID + " cannot be resumed (expired_replay_only: " + e.Reason + ")"
}

// wsClient is a WebSocket transport that resumes its session after a dropped socket.
type wsClient struct {
	url  string
	opts *DialOptions

	writeMu sync.Mutex // orders writes, resends included
	wpeek   peeker     // Write's (writeMu held)
	mu      sync.Mutex
	t       *wsframe.Transport
	live    bool // frames may be written to t (false while a resume is answered)
	connID  string
	seq     uint64 // client frames numbered
	unacked []outFrame
	bytes   int
	lost    uint64          // the highest seq dropped from unacked
	sent    map[string]bool // ids of the requests written, until answered
	fresh   bool            // attaching to another client's session (DialOptions.Resume), not yet answered
	closed  bool
	err     error // why the transport ended for good

	// the reader's
	peek     peeker
	last     uint64 // the highest event id read
	session  string // the session to resume
	resumeID string // the id of the session/load of a resume, while awaited
	resumes  int
}

type outFrame struct {
	seq   uint64
	frame []byte
}

func dialWS(ctx context.Context, url string, o *DialOptions) (*wsClient, error) {
	c := &wsClient{url: url, opts: o, sent: map[string]bool{}}
	if o.Resume != nil {
		c.session, c.last, c.fresh, c.connID = o.Resume.SessionID, o.Resume.After, true, o.Resume.ConnectionID
		if err := c.reconnect(ctx); err != nil {
			return nil, err
		}
		return c, nil
	}
	t, connID, err := c.dial(ctx, "")
	if err != nil {
		return nil, err
	}
	c.t, c.connID, c.live = t, connID, true
	return c, nil
}

func (c *wsClient) dial(ctx context.Context, connID string) (*wsframe.Transport, string, error) {
	h := c.opts.header()
	if connID != "" {
		h.Set(HeaderConnectionID, connID)
	}
	ws, resp, err := websocket.Dial(ctx, c.url, &websocket.DialOptions{HTTPClient: c.opts.HTTPClient, HTTPHeader: h})
	if err != nil {
		if resp != nil {
			return nil, "", &StatusError{Status: resp.StatusCode}
		}
		return nil, "", err
	}
	id := resp.Header.Get(HeaderConnectionID)
	if id == "" {
		id = connID
	}
	return wsframe.New(ws, &wsframe.Options{MaxFrame: c.opts.MaxFrame}), id, nil
}

// StatusError is an HTTP status a server refused a request with.
type StatusError struct {
	Status int
	Body   string // the start of the body, for status texts (never a token: servers do not quote them)
}

func (e *StatusError) Error() string {
	s := "remote: server answered " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

func (c *wsClient) ConnectionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connID
}

// Read implements frame.Reader: frames in order, each once (by its _harn.eventId), across
// reconnections. Ending ctx while Read waits closes the transport, normally (close code 1000).
func (c *wsClient) Read(ctx context.Context) ([]byte, error) {
	for {
		c.mu.Lock()
		t, closed, err := c.t, c.closed, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if closed {
			return nil, io.EOF
		}
		if t == nil {
			if err := c.reconnect(ctx); err != nil {
				c.fail(err)
				return nil, err
			}
			continue
		}
		// The library closes a socket whose read's context ends, without a close message: the server
		// would take that for a dropped socket and keep the connection for a resume. A caller that stops
		// reading (the engine, before it closes the transport) ends the transport normally instead.
		stop := context.AfterFunc(ctx, func() { c.Close() })
		b, err := t.Read(context.WithoutCancel(ctx))
		stop()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, frame.ErrTooLarge) {
				return nil, err
			}
			if c.resumable(err) {
				c.drop(t, err)
				continue
			}
			c.fail(err)
			return nil, err
		}
		m := c.peek.peek(b)
		if c.resumeID != "" && m.kind == kindResponse && string(m.id) == c.resumeID {
			if err := c.resumed(t, m); err != nil {
				c.fail(err)
				return nil, err
			}
			continue
		}
		if id := c.peek.eventID(); id > 0 {
			if id <= c.last {
				continue // already delivered before the socket dropped
			}
			c.last = id
		}
		if m.kind == kindResponse {
			k := idKey(m.id)
			c.mu.Lock()
			mine := c.sent[k]
			delete(c.sent, k)
			c.mu.Unlock()
			if !mine {
				if c.opts.OnForeignResponse != nil {
					c.opts.OnForeignResponse(b)
				}
				continue
			}
		}
		if m.kind == kindResponse && m.hasSess && m.sessionID != "" {
			c.session = m.sessionID
		} else if m.hasSess && m.sessionID != "" && c.session == "" {
			c.session = m.sessionID
		}
		return b, nil
	}
}

// resumable reports whether a read error is a dropped socket the transport should reconnect.
func (c *wsClient) resumable(err error) bool {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed || c.opts.NoResume || c.session == "" || errors.Is(err, io.EOF) {
		return false
	}
	switch websocket.CloseStatus(err) {
	case websocket.StatusProtocolError, websocket.StatusUnsupportedData, websocket.StatusInvalidFramePayloadData, websocket.StatusMessageTooBig:
		return false
	}
	return true
}

// drop forgets a dead socket; the next Read reconnects.
func (c *wsClient) drop(t *wsframe.Transport, err error) {
	c.opts.Logger.Info("remote: socket dropped; resuming", "err", err)
	t.CloseWith(websocket.StatusGoingAway, "")
	c.mu.Lock()
	if c.t == t {
		c.t, c.live = nil, false
	}
	c.mu.Unlock()
}

func (c *wsClient) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	t := c.t
	c.mu.Unlock()
	if t != nil {
		t.CloseWith(websocket.StatusNormalClosure, "")
	}
}

// reconnect opens a new socket and asks for the session from the last event id read, with backoff,
// until ResumeTimeout.
func (c *wsClient) reconnect(ctx context.Context) error {
	deadline := time.Now().Add(c.opts.ResumeTimeout)
	wait := 50 * time.Millisecond
	for {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c.mu.Lock()
		connID := c.connID
		c.mu.Unlock()
		t, _, err := c.dial(dctx, connID)
		cancel()
		if err == nil {
			c.resumes++
			c.resumeID = `"bridgekit/resume-` + strconv.Itoa(c.resumes) + `"`
			req := []byte(`{"jsonrpc":"2.0","id":` + c.resumeID + `,"method":"session/load","params":{"sessionId":`)
			req = quote(req, c.session)
			req = append(req, `,"lastAckedEventId":`...)
			req = strconv.AppendUint(req, c.last, 10)
			req = append(req, `,"_harn":{"clientId":`...)
			req = quote(req, c.opts.ClientID)
			req = append(req, "}}}"...)
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = t.Write(wctx, req)
			cancel()
			if err == nil {
				c.mu.Lock()
				if c.closed {
					c.mu.Unlock()
					t.Close()
					return io.EOF
				}
				c.t = t
				c.mu.Unlock()
				return nil
			}
			t.CloseWith(websocket.StatusGoingAway, "")
		}
		var se *StatusError
		if errors.As(err, &se) && (se.Status == 401 || se.Status == 403 || se.Status == 404) {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("remote: could not resume session %s within %v: %w", c.session, c.opts.ResumeTimeout, err)
		}
		select {
		case <-time.After(wait + rand.N(wait/2+1)):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// resumed takes the server's answer to a resume: live, the frames the server lacks are sent again and
// writing goes on; otherwise the transport ends with an *ExpiredError.
func (c *wsClient) resumed(t *wsframe.Transport, m *msg) error {
	c.resumeID = ""
	if m.hasError {
		return fmt.Errorf("remote: resuming session %s: %s", c.session, m.errv)
	}
	var res struct {
		LiveState string `json:"liveState"`
		Session   struct {
			LiveState string `json:"liveState"`
		} `json:"session"`
		Meta struct {
			Bridgekit struct {
				Received uint64 `json:"received"`
				Reason   string `json:"reason"`
			} `json:"bridgekit"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.result, &res); err != nil {
		return fmt.Errorf("remote: resuming session %s: %w", c.session, err)
	}
	if res.LiveState != "live" {
		reason := res.Meta.Bridgekit.Reason
		if reason == "" {
			reason = "agent_gone"
		}
		return &ExpiredError{SessionID: c.session, Reason: reason}
	}
	received := res.Meta.Bridgekit.Received
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	if c.fresh {
		// A transport attaching to a session another client started: the server's count is of that
		// client's frames, and none of ours has reached it. Ours are numbered on from there.
		c.fresh = false
		for i := range c.unacked {
			c.unacked[i].seq += received
		}
		c.seq += received
		if c.lost > 0 {
			c.lost += received
		}
	}
	if received < c.lost {
		c.mu.Unlock()
		return fmt.Errorf("remote: resuming session %s: frames the server lacks were dropped from the resend buffer", c.session)
	}
	var resend []outFrame
	for _, f := range c.unacked {
		if f.seq > received {
			resend = append(resend, f)
		}
	}
	c.mu.Unlock()
	for _, f := range resend {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := t.Write(ctx, f.frame)
		cancel()
		if err != nil {
			return nil // the socket dropped again: the next Read resumes once more
		}
	}
	c.mu.Lock()
	if c.t == t {
		c.live = true
	}
	// What the server has is acknowledged: forget it.
	i := 0
	for i < len(c.unacked) && c.unacked[i].seq <= received {
		c.bytes -= len(c.unacked[i].frame)
		i++
	}
	c.unacked = append(c.unacked[:0:0], c.unacked[i:]...)
	c.mu.Unlock()
	return nil
}

// Write implements frame.Writer. A frame written while the socket is down is kept and sent once the
// session is resumed; Write then returns nil at once.
func (c *wsClient) Write(ctx context.Context, b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	if c.err != nil || c.closed {
		err := c.err
		c.mu.Unlock()
		if err == nil {
			err = net_ErrClosed
		}
		return err
	}
	c.seq++
	if id, ok := c.wpeek.requestID(b); ok {
		c.sent[idKey(id)] = true
	}
	if !c.opts.NoResume {
		c.unacked = append(c.unacked, outFrame{c.seq, append([]byte(nil), b...)})
		c.bytes += len(b)
		for len(c.unacked) > 1 && c.bytes > c.opts.MaxResendBytes {
			c.bytes -= len(c.unacked[0].frame)
			c.lost = c.unacked[0].seq
			c.unacked = c.unacked[1:]
		}
	}
	t, live := c.t, c.live
	c.mu.Unlock()
	if t == nil || !live {
		return nil
	}
	err := t.Write(ctx, b)
	if err != nil && c.opts.NoResume {
		return err
	}
	return nil
}

var net_ErrClosed = errors.New("remote: transport closed")

// Close implements frame.Transport: the socket is closed normally and the transport ends.
func (c *wsClient) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	t := c.t
	c.mu.Unlock()
	if t != nil {
		t.Close()
		<-t.Done()
	}
	return nil
}
