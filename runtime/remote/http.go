package remote

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/sse"
)

// maxIDLength bounds session ids and string request ids (the TS SDK's maxIdLength, in bytes here).
const maxIDLength = 1024

func plain(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, text)
}

// serveHTTP is Streamable HTTP: POST, GET and DELETE on the endpoint.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request, principal string) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r, principal)
	case http.MethodGet:
		s.get(w, r, principal)
	case http.MethodDelete:
		c, ok := s.connOf(w, r, principal)
		if !ok {
			return
		}
		c.shutdown(errDeleted)
		w.WriteHeader(http.StatusAccepted)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		plain(w, http.StatusMethodNotAllowed, "Method not allowed")
	}
}

// connOf finds the connection named by Acp-Connection-Id, answering 400 or 404 when there is none.
func (s *Server) connOf(w http.ResponseWriter, r *http.Request, principal string) (*conn, bool) {
	id := r.Header.Get(HeaderConnectionID)
	if id == "" {
		plain(w, http.StatusBadRequest, "Missing Acp-Connection-Id")
		return nil, false
	}
	c := s.lookup(id)
	if c == nil || c.principal != principal || c.transport != "http" {
		plain(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
		return nil, false
	}
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if ended {
		plain(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
		return nil, false
	}
	return c, true
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, principal string) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		plain(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	// The body is read within BodyTimeout and MaxFrame: a client that trickles it or sends too much is
	// refused without holding the server.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.opts.MaxFrame)))
	if err != nil {
		// The deadline stays: net/http would otherwise wait for the rest of the body after the answer.
		w.Header().Set("Connection", "close")
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			plain(w, http.StatusRequestEntityTooLarge, "Request body exceeds "+strconv.Itoa(s.opts.MaxFrame)+" bytes")
			return
		}
		plain(w, http.StatusBadRequest, "Request body could not be read")
		return
	}
	rc.SetReadDeadline(time.Time{})
	var p peeker
	m := p.peek(body)
	switch m.kind {
	case kindUnparsable:
		plain(w, http.StatusBadRequest, "Invalid JSON")
		return
	case kindBatch:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(batchError)
		return
	case kindNotObject, kindInvalid:
		plain(w, http.StatusBadRequest, "Invalid JSON-RPC message")
		return
	}
	if len(m.id) > maxIDLength+2 || len(m.sessionID) > maxIDLength || len(r.Header.Get(HeaderSessionID)) > maxIDLength {
		plain(w, http.StatusBadRequest, "Identifier exceeds maxIdLength ("+strconv.Itoa(maxIDLength)+")")
		return
	}
	isInit := m.kind == kindRequest && m.method == "initialize" || m.kind == kindNotification && m.method == "initialize"
	if r.Header.Get(HeaderConnectionID) == "" {
		switch {
		case !isInit:
			plain(w, http.StatusBadRequest, "Missing Acp-Connection-Id")
		case m.kind != kindRequest || string(m.id) == "null":
			plain(w, http.StatusBadRequest, "Initialize request must include an ID")
		default:
			s.initialize(w, r, principal, body, m)
		}
		return
	}
	c, ok := s.connOf(w, r, principal)
	if !ok {
		return
	}
	if isInit {
		plain(w, http.StatusBadRequest, "Initialize not allowed on existing connection")
		return
	}
	// A client that numbers its POSTs (HeaderSeq) sends one again when it could not tell whether the
	// server took it (a connection cut before the answer): the server takes each number once. Once taken,
	// the frame goes to the agent even if this request's client goes away.
	fctx := r.Context()
	if v := r.Header.Get(HeaderSeq); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			plain(w, http.StatusBadRequest, "Invalid "+HeaderSeq)
			return
		}
		c.mu.Lock()
		dup := n <= c.postSeq
		if !dup {
			c.postSeq = n
		}
		c.mu.Unlock()
		if dup {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		fctx = c.ctx
	}
	header := r.Header.Get(HeaderSessionID)
	session := header
	switch m.kind {
	case kindRequest, kindNotification:
		needs := slices.Contains(sessionMethods, m.method) || m.hasSess
		if needs && header == "" {
			plain(w, http.StatusBadRequest, "Missing Acp-Session-Id")
			return
		}
		if m.hasSess && header != "" && m.sessionID != header {
			plain(w, http.StatusBadRequest, "Mismatched Acp-Session-Id")
			return
		}
	case kindResponse:
		c.mu.Lock()
		want, known := c.agentReqs[idKey(m.id)]
		c.mu.Unlock()
		if known && want != "" && header == "" {
			plain(w, http.StatusBadRequest, "Missing Acp-Session-Id")
			return
		}
		if known && header != "" && want != header {
			plain(w, http.StatusBadRequest, "Mismatched Acp-Session-Id")
			return
		}
	}
	if err := c.forward(fctx, body, m, session); err != nil {
		if r.Context().Err() != nil && fctx == r.Context() {
			plain(w, 499, "Request aborted")
			return
		}
		plain(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// initialize creates a connection for an initialize POST and answers with the agent's answer.
func (s *Server) initialize(w http.ResponseWriter, r *http.Request, principal string, body []byte, m *msg) {
	c, err := s.newConn("", "http", principal, r.RemoteAddr)
	if err != nil {
		plain(w, http.StatusServiceUnavailable, "Too many connections")
		return
	}
	id := append([]byte(nil), m.id...)
	c.mu.Lock()
	c.initID, c.initCh = idKey(id), make(chan []byte, 1)
	c.mu.Unlock()
	fail := func(text string) {
		c.shutdown(errors.New(text))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		b := errorFrame(id, -32603, "Initialize failed")
		b = append(b[:len(b)-2], `,"data":`...)
		b = quote(b, text)
		w.Write(append(b, "}}"...))
	}
	if err := c.start(r.Context()); err != nil {
		fail("the agent could not be started")
		return
	}
	if err := c.forward(r.Context(), body, m, ""); err != nil {
		fail("the agent did not take the request")
		return
	}
	timer := time.NewTimer(s.opts.InitTimeout)
	defer timer.Stop()
	select {
	case res, ok := <-c.initCh:
		if !ok {
			fail("the agent ended the connection")
			return
		}
		c.mu.Lock()
		c.armLocked() // until the client opens a stream
		c.mu.Unlock()
		w.Header().Set(HeaderConnectionID, c.id)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(res)
	case <-timer.C:
		fail("the agent did not answer initialize in time")
	case <-r.Context().Done():
		c.shutdown(errDeleted)
		plain(w, 499, "Request aborted")
	}
}

// get serves an SSE stream: the connection's, or a session's with Acp-Session-Id. Frames still queued for
// the stream come first; with the draft cursor, Last-Event-ID replays from the log after that id.
func (s *Server) get(w http.ResponseWriter, r *http.Request, principal string) {
	if !strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/event-stream") {
		plain(w, http.StatusNotAcceptable, "Accept must include text/event-stream")
		return
	}
	c, ok := s.connOf(w, r, principal)
	if !ok {
		return
	}
	session := r.Header.Get(HeaderSessionID)
	if len(session) > maxIDLength {
		plain(w, http.StatusBadRequest, "Acp-Session-Id exceeds maxIdLength ("+strconv.Itoa(maxIDLength)+")")
		return
	}
	var cursor uint64
	resume := false
	if s.opts.DraftCursor {
		if v := r.Header.Get("Last-Event-ID"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				plain(w, http.StatusBadRequest, "Invalid Last-Event-ID")
				return
			}
			cursor, resume = n, true
		}
	}
	c.mu.Lock()
	st := c.streamLocked(session)
	for st.recv {
		if !resume {
			c.mu.Unlock()
			plain(w, http.StatusConflict, "Outbound stream already has an active receiver")
			return
		}
		// A client resuming from its cursor has lost its stream, though the server may not know yet (a
		// half-open TCP connection): the new GET takes the stream over.
		kick, left := st.kick, st.left
		select {
		case <-kick:
		default:
			close(kick)
		}
		c.mu.Unlock()
		select {
		case <-left:
		case <-r.Context().Done():
			return
		}
		c.mu.Lock()
	}
	if !resume {
		cursor = st.sent
	}
	st.recv = true
	st.kick, st.left = make(chan struct{}), make(chan struct{})
	kick, left := st.kick, st.left
	c.gets++
	c.disarmLocked()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		st.recv = false
		close(left)
		if c.gets--; c.gets == 0 && c.ws == nil {
			c.armLocked()
		}
		c.mu.Unlock()
	}()
	// A stream that cannot be resumed from its cursor is refused rather than served with a gap.
	if stat, ok, _ := s.log.Stat(st.key); ok && cursor < stat.Dropped {
		plain(w, http.StatusGone, "Events after the given id are no longer retained")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if r.ProtoMajor < 2 {
		h.Set("Connection", "keep-alive")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var buf, scratch []byte
	if s.opts.DraftCursor {
		// The stream's position before its first event: an id field alone, which sets a client's last
		// event id without an event, so that a client whose stream drops before any event resumes from
		// here.
		buf = append(append(append(buf, "id: "...), sse.FormatID(cursor)...), "\n\n"...)
		rc.SetWriteDeadline(time.Now().Add(s.opts.writeTimeout()))
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
	rc.Flush()
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	for {
		buf = buf[:0]
		err := s.log.Replay(st.key, cursor, func(e eventlog.Event) error {
			id, f := "", e.Frame
			if s.opts.DraftCursor {
				id = sse.FormatID(e.ID)
				scratch = appendWithCursor(scratch[:0], e.Frame, id)
				f = scratch
			}
			buf = sse.AppendEvent(buf, id, f)
			cursor = e.ID
			if len(buf) > 64<<10 {
				return errFlush
			}
			return nil
		})
		if err != nil && err != errFlush {
			return // frames dropped while queued: end the stream, the client reopens it and gets 410
		}
		if len(buf) > 0 {
			rc.SetWriteDeadline(time.Now().Add(s.opts.writeTimeout()))
			if _, werr := w.Write(buf); werr != nil || rc.Flush() != nil {
				return
			}
			c.mu.Lock()
			if cursor > st.sent {
				st.sent = cursor
			}
			c.mu.Unlock()
			if err == errFlush {
				continue
			}
		}
		c.mu.Lock()
		ended := c.ended
		c.mu.Unlock()
		if ended {
			// Write what the agent sent before it ended, then end the stream.
			if stat, _, _ := s.log.Stat(st.key); stat.Last <= cursor {
				return
			}
			continue
		}
		select {
		case <-st.wake:
		case <-c.done:
		case <-r.Context().Done():
			return
		case <-kick:
			return
		case <-keep.C:
			rc.SetWriteDeadline(time.Now().Add(s.opts.writeTimeout()))
			if _, err := io.WriteString(w, sse.KeepAlive); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

var errFlush = errors.New("flush")
