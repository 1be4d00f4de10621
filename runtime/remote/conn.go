package remote

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/frame"
)

// conn is one remote connection on the server: the agent's transport, the logs of what it sent, and the
// client's socket or streams, which may come and go while the connection lives.
type conn struct {
	s                             *Server
	id, transport, principal, rem string

	ctx    context.Context
	cancel context.CancelCauseFunc
	back   frame.Transport
	done   chan struct{}

	mu        sync.Mutex
	events    uint64             // the last event id given
	received  uint64             // client frames handed to the agent
	postSeq   uint64             // the highest HeaderSeq of a POST taken (HTTP)
	streams   map[string]*stream // by session id; "" is the connection's own stream
	routes    map[string]string  // client request id -> the stream its answer goes to
	agentReqs map[string]string  // agent request id -> the stream it went out on
	initID    string             // the initialize request's id, while its answer is awaited (HTTP)
	initCh    chan []byte
	ws        *wsAttach
	gets      int // open SSE streams
	timer     *time.Timer
	ended     bool
	endErr    error
}

// stream is the output of one session (or of the connection itself, under "").
type stream struct {
	key     string // the log key
	session string
	sent    uint64 // the last event id written to a receiver (HTTP)
	recv    bool   // a GET is reading it
	wake    chan struct{}
	kick    chan struct{} // closed to end the receiver's GET (a resuming GET takes the stream over)
	left    chan struct{} // closed once the receiver's GET has ended
}

func newConn(s *Server, id, transport, principal, remote string) *conn {
	c := &conn{s: s, id: id, transport: transport, principal: principal, rem: remote,
		done: make(chan struct{}), streams: map[string]*stream{}, routes: map[string]string{}, agentReqs: map[string]string{}}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	return c
}

// keyPrefix is what every log key of the connection starts with; the principal is part of it so that
// after a restart a session is resumed only by whoever started it.
func (c *conn) keyPrefix() string { return c.id + "\x1f" + c.principal + "\x1f" }

func (c *conn) hasSession(sid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.streams[sid]
	return ok && sid != ""
}

// streamLocked returns the stream of session, creating it.
func (c *conn) streamLocked(session string) *stream {
	st := c.streams[session]
	if st == nil {
		st = &stream{key: c.keyPrefix() + session, session: session, wake: make(chan struct{}, 1)}
		c.streams[session] = st
	}
	return st
}

// start starts the backend and the pump (or, for an in-process agent, lets it push its frames).
func (c *conn) start(ctx context.Context) error {
	back, err := c.s.backend(c.ctx, ConnInfo{ID: c.id, Transport: c.transport, Principal: c.principal, RemoteAddr: c.rem})
	if err != nil {
		c.shutdown(err)
		return err
	}
	c.mu.Lock()
	c.back = back
	ended := c.ended
	c.mu.Unlock()
	if ended {
		back.Close()
		return c.endErr
	}
	if p, ok := back.(pusher); ok {
		// An in-process agent delivers its frames from its own goroutine (InProcess).
		if !p.push(c.pushed, func() { c.shutdown(errAgentExited) }) {
			c.shutdown(errAgentExited)
			return errAgentExited
		}
		return nil
	}
	c.s.wg.Add(1)
	go c.pump()
	return nil
}

// pushed delivers a frame an in-process agent wrote, from the agent's goroutine.
func (c *conn) pushed(b []byte) {
	p := peekers.Get().(*peeker)
	c.deliver(b, p)
	peekers.Put(p)
}

// pump moves the agent's frames to the logs and the client.
func (c *conn) pump() {
	defer c.s.wg.Done()
	for {
		b, err := c.back.Read(c.ctx)
		if err != nil {
			if errors.Is(err, frame.ErrTooLarge) {
				c.s.logger.Warn("remote: the agent sent a frame over the limit; dropped", "conn", c.id, "err", err)
				continue
			}
			if errors.Is(err, io.EOF) {
				err = errAgentExited
			}
			c.shutdown(err)
			return
		}
		p := peekers.Get().(*peeker)
		c.deliver(b, p)
		peekers.Put(p)
	}
}

// peekers are shared by the connections' pumps: a peeker is a few kilobytes, which an idle connection
// need not hold.
var peekers = sync.Pool{New: func() any { return new(peeker) }}

var (
	errAgentExited = errors.New("the agent ended the connection")
	errRetention   = errors.New("the client did not come back within the retention")
	errDeleted     = errors.New("the client ended the connection")
)

// deliver numbers a frame for the client, logs it and hands it to the client's socket or stream.
func (c *conn) deliver(b []byte, p *peeker) {
	m := p.peek(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	if c.initID != "" && m.kind == kindResponse && idKey(m.id) == c.initID {
		c.initID = ""
		c.initCh <- append([]byte(nil), b...)
		if c.transport == "http" {
			if c.s.opts.Observe != nil {
				c.s.opts.Observe(Traffic{Conn: c.id, Dir: ToClient, Frame: b})
			}
			return // the answer of the initialize POST, not a stream's
		}
	}
	session := ""
	switch m.kind {
	case kindRequest, kindNotification:
		if m.hasSess {
			session = m.sessionID
		}
		if m.kind == kindRequest {
			c.agentReqs[idKey(m.id)] = session
		}
	case kindResponse:
		k := idKey(m.id)
		session = c.routes[k]
		delete(c.routes, k)
		if m.hasSess && m.sessionID != "" {
			c.streamLocked(m.sessionID) // a session the agent made (or loaded) on this connection
		}
	}
	st := c.streamLocked(session)
	c.events++
	id := c.events
	if err := c.s.log.Append(st.key, eventlog.Event{ID: id, Frame: b}); err != nil {
		c.s.logger.Error("remote: log append failed", "conn", c.id, "err", err)
	}
	if c.s.opts.Observe != nil {
		c.s.opts.Observe(Traffic{Conn: c.id, Dir: ToClient, EventID: id, Frame: b})
	}
	if c.ws != nil {
		c.ws.queueLocked(stamp(b, m, id, session, false))
		return
	}
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// errorFrame is a JSON-RPC error answer with a raw id.
func errorFrame(id []byte, code int, message string) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = quote(b, message)
	return append(b, "}}"...)
}

// sessionMethods must name their session in Acp-Session-Id over HTTP (the TS SDK's list).
var sessionMethods = []string{"session/cancel", "session/close", "session/delete", "session/fork", "session/load",
	"session/prompt", "session/resume", "session/set_config_option", "session/set_mode", "session/set_model"}

// forward hands a client frame to the agent, recording how its answer is routed. A session/new or
// session/fork past the connection's session bound is answered here instead.
func (c *conn) forward(ctx context.Context, b []byte, m *msg, session string) error {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return c.endErr
	}
	switch m.kind {
	case kindRequest:
		if (m.method == "session/new" || m.method == "session/fork") && c.sessionsLocked() >= c.s.opts.MaxSessions {
			c.routes[idKey(m.id)] = session
			c.mu.Unlock()
			p := peekers.Get().(*peeker)
			c.deliver(errorFrame(m.id, -32000, "Connection exceeds maxSessions ("+strconv.Itoa(c.s.opts.MaxSessions)+")"), p)
			peekers.Put(p)
			return nil
		}
		route := session
		if m.method == "session/load" {
			route = "" // its answer goes on the connection stream (the TS SDK's rule)
		}
		c.routes[idKey(m.id)] = route
	case kindResponse:
		delete(c.agentReqs, idKey(m.id))
	}
	back := c.back
	c.mu.Unlock()
	if c.s.opts.Observe != nil {
		c.s.opts.Observe(Traffic{Conn: c.id, Dir: FromClient, Frame: b})
	}
	return back.Write(ctx, b)
}

func (c *conn) sessionsLocked() int {
	n := len(c.streams)
	if _, ok := c.streams[""]; ok {
		n--
	}
	return n
}

// armLocked starts the retention timer of a connection nobody is attached to.
func (c *conn) armLocked() {
	if c.ended {
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(c.s.opts.Retention, func() {
			c.mu.Lock()
			idle := c.ws == nil && c.gets == 0
			c.mu.Unlock()
			if idle {
				c.shutdown(errRetention)
			}
		})
		return
	}
	c.timer.Reset(c.s.opts.Retention)
}

func (c *conn) disarmLocked() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// shutdown ends the connection once: the agent's transport is closed, the client's socket closed (after
// what is queued for it) and its streams ended.
func (c *conn) shutdown(err error) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended, c.endErr = true, err
	if c.timer != nil {
		c.timer.Stop()
	}
	ws := c.ws
	for _, st := range c.streams {
		select {
		case st.wake <- struct{}{}:
		default:
		}
	}
	if c.initID != "" {
		c.initID = ""
		close(c.initCh)
	}
	back := c.back
	c.mu.Unlock()
	c.cancel(err)
	if back != nil {
		back.Close()
	}
	if ws != nil {
		ws.end(err)
	}
	c.s.forget(c)
	close(c.done)
}

// replay collects the logged frames of the connection with ids in (after, upto], in order, across its
// streams. An *eventlog.ExpiredError reports frames gone.
func (s *Server) replay(prefix string, keys []string, after, upto uint64) ([]replayed, error) {
	var out []replayed
	for _, k := range keys {
		session := k[len(prefix):]
		err := s.log.Replay(k, after, func(e eventlog.Event) error {
			if e.ID <= upto {
				out = append(out, replayed{id: e.ID, session: session, frame: append([]byte(nil), e.Frame...)})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b replayed) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out, nil
}

type replayed struct {
	id      uint64
	session string
	frame   []byte
}

// stamp returns the frame with Harn's top-level _harn member: its event id, session and whether it is
// replayed. A frame that already has one is returned unchanged.
func stamp(b []byte, m *msg, id uint64, session string, replayed bool) []byte {
	end := len(b) - 1
	for end >= 0 && b[end] != '}' {
		end--
	}
	if m.hasHarn || end < 0 {
		return append([]byte(nil), b...)
	}
	out := make([]byte, 0, len(b)+64+len(session))
	out = append(out, b[:end]...)
	if !emptyObject(b[:end]) {
		out = append(out, ',')
	}
	out = append(out, `"_harn":{"eventId":`...)
	out = strconv.AppendUint(out, id, 10)
	if session != "" {
		out = append(out, `,"sessionId":`...)
		out = quote(out, session)
	}
	out = append(out, `,"replayed":`...)
	out = strconv.AppendBool(out, replayed)
	return append(out, "}}"...)
}

// emptyObject reports whether b, an object without its closing brace, has no members.
func emptyObject(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}
