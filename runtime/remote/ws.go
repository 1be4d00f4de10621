package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/wsframe"
)

// Close codes and reasons of the WebSocket transport (the TS SDK's, and Harn's).
const (
	reasonFirstMessage = "First message must be initialize"
	reasonInitNoID     = "Initialize request must include an ID"
	reasonInitFailed   = "Initialize failed"
	reasonShutdown     = "Server shutting down"
	reasonReplaced     = "Session attached to another socket"
)

// Fixed error answers of the WebSocket transport.
var (
	batchError = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: JSON-RPC batches are not supported"}}`)
	parseError = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
)

// invalidRequest is the -32600 answer to a frame that is JSON but no message, with the frame as data
// when it is small.
func invalidRequest(b []byte) []byte {
	out := []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"`)
	if len(b) <= 1024 {
		out = append(out, `,"data":`...)
		out = append(out, b...)
	}
	return append(out, "}}"...)
}

// wsAttach is a client socket attached to a connection: what the agent sends is queued for it and
// written by the socket's sender goroutine, which lives from the first frame that may be written until the
// socket is detached. One goroutine for the socket's life, rather than one for each burst of frames, spares
// each burst a goroutine's start and the growth of its stack, which cost a round trip some 4% of its
// time; an idle session pays for it with the parked goroutine (some 5 KiB).
type wsAttach struct {
	c       *conn
	t       *wsframe.Transport
	queue   [][]byte
	bytes   int64
	started bool          // frames may be written (after a resume's replay)
	wake    chan struct{} // wakes the sender
	ended   bool          // the connection ended: close the socket once the queue is written
	endErr  error         // why
	gone    chan struct{} // closed when the socket is detached
	once    sync.Once
	stop    func() // stops the pings
}

// queueLocked queues a stamped frame (c.mu held); past the bound the socket is closed 1008.
func (a *wsAttach) queueLocked(b []byte) {
	a.queue = append(a.queue, b)
	a.bytes += int64(len(b))
	if a.bytes > a.c.s.opts.MaxQueuedBytes {
		a.c.s.logger.Warn("remote: client too slow; socket closed", "conn", a.c.id, "queued", a.bytes)
		a.queue, a.bytes = nil, 0
		a.c.detachLocked(a)
		a.t.CloseWith(websocket.StatusPolicyViolation, "Connection exceeds maxQueuedBytes ("+strconv.FormatInt(a.c.s.opts.MaxQueuedBytes, 10)+")")
		return
	}
	a.kickLocked()
}

// kickLocked wakes the sender when there is something to do (c.mu held).
func (a *wsAttach) kickLocked() {
	if !a.started || len(a.queue) == 0 && !a.ended {
		return
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// startLocked lets frames be written (c.mu held).
func (a *wsAttach) startLocked() {
	if !a.started {
		a.started = true
		a.c.s.wg.Add(1)
		go a.send()
	}
	a.kickLocked()
}

// send writes the queue to the socket whenever it is woken, until the socket is detached; once the
// connection has ended it closes the socket after the last frame.
func (a *wsAttach) send() {
	defer a.c.s.wg.Done()
	// One context and timer for the socket's writes, each bounded by the write timeout: a write that
	// runs out of it closes the socket (the library's rule).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(time.Hour, cancel)
	timer.Stop()
	for {
		select {
		case <-a.wake:
		case <-a.gone:
			return
		}
		a.c.mu.Lock()
		q := a.queue
		a.queue, a.bytes = nil, 0
		ended, err := a.ended, a.endErr
		a.c.mu.Unlock()
		for _, b := range q {
			timer.Reset(a.c.s.opts.writeTimeout())
			err := a.t.Write(ctx, b)
			if !timer.Stop() && err == nil {
				err = context.DeadlineExceeded // the timer went off as the write ended: the socket is closing
			}
			if err != nil {
				// The connection waits for its client to come back (Retention); this socket is done.
				a.c.mu.Lock()
				a.queue, a.bytes = nil, 0
				a.c.detachLocked(a)
				a.c.mu.Unlock()
				a.t.CloseWith(websocket.StatusGoingAway, "")
				return
			}
		}
		if ended && len(q) == 0 {
			code, reason := websocket.StatusNormalClosure, ""
			if errors.Is(err, errServerClosed) {
				code, reason = websocket.StatusGoingAway, reasonShutdown
			}
			a.t.CloseWith(code, reason)
			return
		}
		if ended {
			a.c.mu.Lock()
			a.kickLocked()
			a.c.mu.Unlock()
		}
	}
}

func (o *Options) writeTimeout() time.Duration { return 30 * time.Second }

// end closes the socket of an ended connection once its queue is written.
func (a *wsAttach) end(err error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	a.ended, a.endErr = true, err
	a.kickLocked()
}

// detach takes a socket off its connection (once), which is kept for Retention for the client to come
// back.
func (c *conn) detach(a *wsAttach) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detachLocked(a)
}

func (c *conn) detachLocked(a *wsAttach) {
	a.once.Do(func() {
		if a.stop != nil {
			a.stop()
		}
		close(a.gone)
	})
	if c.ws != a {
		return
	}
	c.ws = nil
	if !c.ended {
		c.armLocked()
	}
}

// attach puts a socket on the connection, replacing (and closing) one still there, and returns it with
// the last event id given so far: later frames are queued for it.
func (c *conn) attach(t *wsframe.Transport) (*wsAttach, uint64, error) {
	a := &wsAttach{c: c, t: t, gone: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return nil, 0, c.endErr
	}
	old := c.ws
	if old != nil {
		c.detachLocked(old)
		old.t.CloseWith(websocket.StatusPolicyViolation, reasonReplaced)
	}
	c.disarmLocked()
	c.ws = a
	last := c.events
	c.mu.Unlock()
	if c.s.opts.PingInterval > 0 {
		a.stop = t.Keepalive(c.s.opts.PingInterval, c.s.opts.PongTimeout)
	}
	return a, last, nil
}

// serveWebSocket upgrades the request and runs the socket: the first message decides whether it starts
// a connection (initialize), or resumes one (session/load), or is answered by the server
// (session/list).
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request, principal string) {
	s.mu.Lock()
	full := len(s.conns) >= s.opts.MaxConns || s.byPrinc[principal] >= s.opts.MaxConnsPerPrincipal
	s.mu.Unlock()
	if full {
		http.Error(w, "Too many connections", http.StatusServiceUnavailable)
		return
	}
	id := newID()
	w.Header().Set(HeaderConnectionID, id)
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // Origin is checked by ServeHTTP
	if err != nil {
		return // Accept answered
	}
	binary := wsframe.RejectBinary
	if s.opts.IgnoreBinary {
		binary = wsframe.IgnoreBinary
	}
	t := wsframe.New(ws, &wsframe.Options{MaxFrame: s.opts.MaxFrame, Binary: binary})
	s.wg.Add(1)
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.InitTimeout)
	defer cancel()
	p := peekers.Get().(*peeker) // not on this goroutine's stack, which lives as long as the socket
	for {
		b, err := t.Read(ctx)
		if err != nil {
			if errors.Is(err, frame.ErrTooLarge) {
				t.Write(ctx, invalidRequest(nil))
				continue
			}
			t.CloseWith(websocket.StatusNormalClosure, "")
			<-t.Done()
			return
		}
		m := p.peek(b)
		switch m.kind {
		case kindUnparsable:
			t.Write(ctx, parseError)
			continue
		case kindBatch:
			t.Write(ctx, batchError)
			continue
		case kindNotObject:
			t.Write(ctx, invalidRequest(b))
			continue
		case kindResponse:
			continue // dropped before initialize
		case kindInvalid:
			if m.hasID || m.hasResult || m.hasError {
				continue // response-shaped
			}
			t.Write(ctx, invalidRequest(b))
			continue
		}
		switch m.method {
		case "initialize":
			if m.kind != kindRequest || string(m.id) == "null" {
				t.CloseWith(websocket.StatusProtocolError, reasonInitNoID)
				<-t.Done()
				return
			}
			peekers.Put(p)
			s.startWebSocket(t, r, principal, id, b)
			return
		case "session/list":
			if m.kind == kindRequest {
				t.Write(ctx, s.sessionList(principal, m))
				continue
			}
		case "session/load":
			if m.kind == kindRequest {
				if c, a := s.resumeWebSocket(ctx, t, r, principal, m); a != nil {
					peekers.Put(p)
					c.readSocket(a, nil)
					return
				}
				continue
			}
		}
		t.CloseWith(websocket.StatusProtocolError, reasonFirstMessage)
		<-t.Done()
		return
	}
}

// startWebSocket starts a connection for the socket with its initialize request.
func (s *Server) startWebSocket(t *wsframe.Transport, r *http.Request, principal, id string, init []byte) {
	c, err := s.newConn(id, "websocket", principal, r.RemoteAddr) // the id the 101 carried
	var a *wsAttach
	if err == nil {
		// The socket is attached before the agent starts, so that a frame the agent writes at once is
		// queued for it (and written once the socket starts, below) rather than only logged.
		a, _, err = c.attach(t)
	}
	if err == nil {
		if err = c.start(context.Background()); err != nil {
			c.detach(a)
		}
	}
	if err != nil {
		s.logger.Error("remote: initialize failed", "err", err)
		var p peeker
		m := p.peek(init)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Write(ctx, errorFrame(m.id, -32603, reasonInitFailed))
		cancel()
		t.CloseWith(websocket.StatusInternalError, reasonInitFailed)
		<-t.Done()
		return
	}
	c.mu.Lock()
	a.startLocked()
	c.mu.Unlock()
	c.readSocket(a, init)
}

// readSocket forwards the client's frames to the agent until the socket ends; first is a frame already
// read (nil if none).
func (c *conn) readSocket(a *wsAttach, first []byte) {
	handle := func(b []byte) {
		p := peekers.Get().(*peeker)
		defer peekers.Put(p)
		// Frames are counted (the count tells a resuming client what to send again) and taken only while
		// this socket is the connection's: a replaced socket's last frames are sent again by the client.
		c.mu.Lock()
		mine := c.ws == a
		if mine {
			c.received++
		}
		c.mu.Unlock()
		if !mine {
			return
		}
		m := p.peek(b)
		reply := []byte(nil)
		switch m.kind {
		case kindUnparsable:
			reply = parseError
		case kindBatch:
			reply = batchError
		case kindNotObject, kindInvalid:
			reply = invalidRequest(b)
		case kindRequest:
			if m.method == "initialize" && first == nil {
				reply = errorFrame(m.id, -32600, "Initialize not allowed on existing connection")
			}
		}
		if reply != nil {
			ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.writeTimeout())
			a.t.Write(ctx, reply)
			cancel()
			return
		}
		session := ""
		if m.hasSess {
			session = m.sessionID
		}
		if err := c.forward(c.ctx, b, m, session); err != nil {
			c.s.logger.Debug("remote: forward failed", "conn", c.id, "err", err)
		}
	}
	if first != nil {
		handle(first)
		first = nil
	}
	for {
		b, err := a.t.Read(context.Background())
		if err != nil {
			if errors.Is(err, frame.ErrTooLarge) {
				var tl *frame.TooLargeError
				errors.As(err, &tl)
				p := peekers.Get().(*peeker)
				m := p.peekHead(tl.Head)
				ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.writeTimeout())
				a.t.Write(ctx, errorFrame(m.id, -32600, "Message exceeds maxMessageBytes ("+strconv.Itoa(c.s.opts.MaxFrame)+")"))
				cancel()
				peekers.Put(p)
				continue
			}
			// A client that closed its socket cleanly (1000, or no code as the TS SDK does) ended the
			// connection, as ACP's transports have it; one whose socket dropped is kept for it to resume.
			c.mu.Lock()
			current := c.ws == a
			c.mu.Unlock()
			c.detach(a)
			if current && errors.Is(err, io.EOF) {
				c.shutdown(errDeleted)
			}
			a.t.CloseWith(websocket.StatusNormalClosure, "")
			<-a.t.Done()
			return
		}
		handle(b)
	}
}

// loadParams are the members of session/load the server reads for a resume (Harn's names and aliases).
type loadParams struct {
	SessionID        string       `json:"sessionId"`
	LastAckedEventID *uint64      `json:"lastAckedEventId"`
	LastAckedSnake   *uint64      `json:"last_acked_event_id"`
	LastEventID      *uint64      `json:"lastEventId"`
	Harn             *harnMembers `json:"_harn"`
	Role             string       `json:"role"`
	AttachRole       string       `json:"attachRole"`
}

type harnMembers struct {
	ClientID string `json:"clientId"`
	Role     string `json:"role"`
}

// resumeWebSocket answers a first session/load: a live connection of the principal holding the
// session is resumed on this socket (its frames after the acknowledged id replayed first); a session
// only the log knows gets its frames and expired_replay_only; an unknown one -32004. It returns the
// connection the socket now belongs to, if any.
func (s *Server) resumeWebSocket(ctx context.Context, t *wsframe.Transport, r *http.Request, principal string, m *msg) (*conn, *wsAttach) {
	var lp loadParams
	if err := json.Unmarshal(m.params, &lp); err != nil || lp.SessionID == "" {
		t.Write(ctx, errorFrame(m.id, -32602, "Invalid params: session/load needs a sessionId"))
		return nil, nil
	}
	after := uint64(0)
	for _, v := range []*uint64{lp.LastAckedEventID, lp.LastAckedSnake, lp.LastEventID} {
		if v != nil {
			after = *v
			break
		}
	}
	role := lp.Role
	if role == "" {
		role = lp.AttachRole
	}
	if role == "" && lp.Harn != nil {
		role = lp.Harn.Role
	}
	switch role {
	case "", "host_owner", "hostOwner", "owner":
	default:
		t.Write(ctx, errorFrame(m.id, -32011, "ACP client role is not authorized for this method"))
		return nil, nil
	}
	c, ambiguous := s.findSession(r.Header.Get(HeaderConnectionID), principal, lp.SessionID)
	if ambiguous {
		t.Write(ctx, errorFrame(m.id, -32004, "Session "+lp.SessionID+" is held by several connections: name yours in Acp-Connection-Id"))
		return nil, nil
	}
	if c == nil {
		s.replayOnly(ctx, t, principal, r.Header.Get(HeaderConnectionID), lp.SessionID, after, m)
		return nil, nil
	}
	a, last, err := c.attach(t)
	if err != nil {
		s.replayOnly(ctx, t, principal, c.id, lp.SessionID, after, m)
		return nil, nil
	}
	keys := c.keys()
	events, err := s.replay(c.keyPrefix(), keys, after, last)
	if err != nil {
		// Frames the client lacks are gone: no partial replay, no attachment.
		c.detach(a)
		t.Write(ctx, expiredAnswer(m.id, lp.SessionID, nil, err))
		return nil, nil
	}
	wctx, cancel := context.WithTimeout(context.Background(), s.opts.writeTimeout())
	defer cancel()
	var p peeker
	for _, e := range events {
		if t.Write(wctx, stamp(e.frame, p.peek(e.frame), e.id, e.session, true)) != nil {
			c.detach(a)
			return nil, nil
		}
	}
	c.mu.Lock()
	received := c.received
	c.mu.Unlock()
	res := []byte(`{"jsonrpc":"2.0","id":`)
	res = append(res, m.id...)
	res = append(res, `,"result":{"sessionId":`...)
	res = quote(res, lp.SessionID)
	res = append(res, `,"liveState":"live","replayed":`...)
	res = strconv.AppendInt(res, int64(len(events)), 10)
	res = append(res, `,"_meta":{"bridgekit":{"connectionId":`...)
	res = quote(res, c.id)
	res = append(res, `,"received":`...)
	res = strconv.AppendUint(res, received, 10)
	res = append(res, `,"lastEventId":`...)
	res = strconv.AppendUint(res, last, 10)
	res = append(res, "}}}}"...)
	if t.Write(wctx, res) != nil {
		c.detach(a)
		return nil, nil
	}
	c.mu.Lock()
	a.startLocked()
	c.mu.Unlock()
	return c, a
}

// keys lists the log keys of the connection's streams.
func (c *conn) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.streams))
	for _, st := range c.streams {
		out = append(out, st.key)
	}
	return out
}

// replayOnly answers a session/load for a session no live connection holds, from the log: its frames
// after the acknowledged id, then expired_replay_only; or -32004 when the log does not know it either.
func (s *Server) replayOnly(ctx context.Context, t *wsframe.Transport, principal, connID, sid string, after uint64, m *msg) {
	keys, _ := s.log.Keys()
	var prefix string
	var best uint64
	found := false
	for _, k := range keys {
		cid, rest, ok := cutKey(k)
		if !ok || rest.principal != principal || rest.session != sid {
			continue
		}
		st, _, _ := s.log.Stat(k)
		if !found || cid == connID || (connID == "" || cid != connID) && st.Last > best {
			prefix, best, found = cid+"\x1f"+principal+"\x1f", st.Last, true
		}
	}
	if !found {
		t.Write(ctx, errorFrame(m.id, -32004, "Session not found: "+sid))
		return
	}
	var ks []string
	for _, k := range keys {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix || k == prefix {
			ks = append(ks, k)
		}
	}
	events, err := s.replay(prefix, ks, after, ^uint64(0))
	if err != nil {
		t.Write(ctx, expiredAnswer(m.id, sid, nil, err))
		return
	}
	var p peeker
	ids := make([]uint64, 0, len(events))
	for _, e := range events {
		if t.Write(ctx, stamp(e.frame, p.peek(e.frame), e.id, e.session, true)) != nil {
			return
		}
		ids = append(ids, e.id)
	}
	t.Write(ctx, expiredAnswer(m.id, sid, ids, nil))
}

type keyParts struct{ principal, session string }

// cutKey splits a log key into its connection id, principal and session.
func cutKey(k string) (string, keyParts, bool) {
	var parts [3]string
	n := 0
	start := 0
	for i := 0; i < len(k) && n < 2; i++ {
		if k[i] == 0x1f {
			parts[n] = k[start:i]
			n++
			start = i + 1
		}
	}
	if n < 2 {
		return "", keyParts{}, false
	}
	parts[2] = k[start:]
	return parts[0], keyParts{parts[1], parts[2]}, true
}

// expiredAnswer is the answer to a resume the server cannot honour in full: Harn's result for a session
// whose agent is gone, liveState "expired_replay_only", with the ids replayed, and, when frames the
// client lacks were dropped, where the gap is.
func expiredAnswer(id []byte, sid string, ids []uint64, gap error) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, id...)
	b = append(b, `,"result":{"session":{"sessionId":`...)
	b = quote(b, sid)
	b = append(b, `,"liveState":"expired_replay_only","attachableRoles":[]},"replayed":[`...)
	for i, e := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"eventId":`...)
		b = strconv.AppendUint(b, e, 10)
		b = append(b, '}')
	}
	b = append(b, ']')
	var ee *eventlog.ExpiredError
	if errors.As(gap, &ee) {
		b = append(b, `,"_meta":{"bridgekit":{"reason":"frames_dropped","after":`...)
		b = strconv.AppendUint(b, ee.After, 10)
		b = append(b, `,"droppedThrough":`...)
		b = strconv.AppendUint(b, ee.Dropped, 10)
		b = append(b, "}}"...)
	}
	return append(b, "}}"...)
}

// sessionList answers session/list from the connections of the principal and the log: live (a socket
// attached), detached_retained (waiting for its client) and expired_replay_only (only logged frames).
func (s *Server) sessionList(principal string, m *msg) []byte {
	type item struct {
		SessionID       string   `json:"sessionId"`
		LiveState       string   `json:"liveState"`
		AttachableRoles []string `json:"attachableRoles"`
		LastEventID     uint64   `json:"lastEventId"`
		Meta            struct {
			Harn struct {
				LiveState       string   `json:"liveState"`
				AttachableRoles []string `json:"attachableRoles"`
				LastEventID     uint64   `json:"lastEventId"`
			} `json:"harn"`
		} `json:"_meta"`
	}
	var filter struct {
		LiveState jsontext.Value `json:"liveState"`
		State     jsontext.Value `json:"state"`
	}
	if len(m.params) > 0 {
		json.Unmarshal(m.params, &filter)
	}
	want := map[string]bool{}
	for _, v := range []jsontext.Value{filter.LiveState, filter.State} {
		var one string
		var many []string
		if json.Unmarshal(v, &one) == nil && one != "" {
			want[one] = true
		} else if json.Unmarshal(v, &many) == nil {
			for _, x := range many {
				want[x] = true
			}
		}
	}
	items := []item{}
	seen := map[string]bool{}
	add := func(sid, state string, roles []string, last uint64) {
		if seen[sid] || len(want) > 0 && !want[state] {
			return
		}
		seen[sid] = true
		it := item{SessionID: sid, LiveState: state, AttachableRoles: roles, LastEventID: last}
		it.Meta.Harn.LiveState, it.Meta.Harn.AttachableRoles, it.Meta.Harn.LastEventID = state, roles, last
		items = append(items, it)
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		if c.principal == principal {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		state, roles := "detached_retained", []string{"host_owner"}
		if c.ws != nil || c.gets > 0 {
			state, roles = "live", []string{}
		}
		for sid := range c.streams {
			if sid != "" {
				add(sid, state, roles, c.events)
			}
		}
		c.mu.Unlock()
	}
	keys, _ := s.log.Keys()
	for _, k := range keys {
		_, parts, ok := cutKey(k)
		if ok && parts.principal == principal && parts.session != "" {
			st, _, _ := s.log.Stat(k)
			add(parts.session, "expired_replay_only", []string{}, st.Last)
		}
	}
	res, _ := json.Marshal(struct {
		Sessions []item `json:"sessions"`
	}{items})
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, m.id...)
	b = append(b, `,"result":`...)
	b = append(b, res...)
	return append(b, '}')
}
