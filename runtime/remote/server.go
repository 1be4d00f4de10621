package remote

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/frame"
)

// Header names of ACP's remote transports.
const (
	HeaderConnectionID = "Acp-Connection-Id"
	HeaderSessionID    = "Acp-Session-Id"
	// HeaderSeq numbers a client's POSTs on a connection (1, 2, …), so that one sent again after a cut
	// connection is taken once. A bridgekit extension: clients that do not send it are served as before.
	HeaderSeq = "Bridgekit-Seq"
)

// Backend starts the agent side of a new remote connection and returns the transport to it. ctx ends
// when the connection does; the Server closes the transport then.
type Backend func(ctx context.Context, info ConnInfo) (frame.Transport, error)

// ConnInfo describes a remote connection to its Backend.
type ConnInfo struct {
	ID         string // the Acp-Connection-Id
	Transport  string // "websocket" or "http"
	Principal  string // who authenticated (Authenticate's answer), "" when nobody needs to
	RemoteAddr string
}

// Direction of observed traffic.
type Direction int

const (
	FromClient Direction = iota // a frame the client sent
	ToClient                    // a frame sent to the client (as the agent wrote it, without the event id)
)

// Traffic is one frame crossing a Server, for observers (bridgekit trace, the inspector).
type Traffic struct {
	Conn    string // the connection id
	Dir     Direction
	EventID uint64 // ToClient: the frame's event id
	Frame   []byte // valid only during the call
}

// Options configures a Server. The zero value is ready to use: no authentication, no cross-origin
// browser, the defaults below.
type Options struct {
	// Authenticate admits a request and names who made it (for the per-principal bound and for resuming:
	// a connection is resumed only by its principal). An error refuses it with 401; its text is not sent.
	// Nil admits everyone as "". See Tokens.
	Authenticate func(r *http.Request) (principal string, err error)
	// AllowedOrigins lists the browser origins ("https://ide.example.com", compared exactly but for
	// case) whose requests are served; "*" allows any. A request with an Origin header not listed gets
	// 403; requests without one (programs, not browsers) pass.
	AllowedOrigins []string
	// MaxConns bounds the connections held, detached ones included (default 256), and
	// MaxConnsPerPrincipal those of one principal (default 64). Past either, 503.
	MaxConns, MaxConnsPerPrincipal int
	// MaxSessions bounds the sessions of one connection (default 64): past it, session/new and
	// session/fork are refused with an error and not forwarded.
	MaxSessions int
	// MaxFrame bounds an inbound message or POST body (default frame.DefaultMaxFrame).
	MaxFrame int
	// MaxQueuedBytes bounds the output queued for a WebSocket client that reads too slowly (default
	// 8 MiB): past it the socket is closed with 1008, and the client may resume from the log.
	MaxQueuedBytes int64
	// Log keeps the frames sent to clients for replay. Default: eventlog.NewMemoryLimits(MaxLogBytes,
	// MaxLogTotalBytes).
	Log eventlog.Log
	// MaxLogBytes bounds the default Log per session (default eventlog.DefaultMaxBytes), and
	// MaxLogTotalBytes all its sessions together, every connection's (default
	// eventlog.DefaultMaxTotalBytes): past it, the oldest frames of any session go first, and a client
	// that needed them gets expired_replay_only (410 over HTTP).
	MaxLogBytes, MaxLogTotalBytes int64
	// Retention is how long a connection whose client went away is kept for it to resume (default
	// 5 minutes, as Harn's hub); then its agent is stopped.
	Retention time.Duration
	// MaxRetained bounds the ended connections whose logs are kept for an expired_replay_only answer
	// (default 256); the oldest are forgotten first.
	MaxRetained int
	// KeepAlive is the interval of SSE keep-alive comments on an idle stream (default 15 s).
	KeepAlive time.Duration
	// PingInterval and PongTimeout: a WebSocket client is pinged every PingInterval (default 30 s) and
	// closed when its Pong takes longer than PongTimeout (default 10 s). A negative PingInterval turns
	// pings off.
	PingInterval, PongTimeout time.Duration
	// InitTimeout bounds the wait for a client's first message and for the agent's answer to initialize
	// (default 60 s).
	InitTimeout time.Duration
	// BodyTimeout bounds the reading of a POST body (default 30 s).
	BodyTimeout time.Duration
	// IgnoreBinary drops a WebSocket client's binary messages without a word, as the TS SDK's server
	// and the RFD do. By default each is answered as Harn's profile has it (and the draft acp.remote.v2
	// asks: rejected, not ignored): a JSON-RPC error -32600 of id null, and the socket stays open.
	IgnoreBinary bool
	// DraftCursor turns on the cursor of the draft "Durable & Resumable Transport" RFD (DRAFT: the RFD is
	// not adopted and may change) over Streamable HTTP: every SSE event carries its event id, in an id
	// field and in the message's _meta["acp/cursor"] (that of its params, or of its result; a message
	// with neither object, an error answer say, has the id field only), and a GET with Last-Event-ID
	// resumes its stream after that id (410 when the log no longer covers it). Clients of Dial resume
	// their streams so.
	DraftCursor bool
	// Logger gets the server's diagnostics (never a token nor a frame's content); nil discards them.
	Logger *slog.Logger
	// Observe, if set, sees every frame in both directions, from the goroutine that moves it: it must be
	// quick.
	Observe func(Traffic)
}

// Server serves remote connections on one endpoint. See the package documentation.
type Server struct {
	backend Backend
	opts    Options
	log     eventlog.Log
	logger  *slog.Logger

	mu       sync.Mutex
	conns    map[string]*conn
	byPrinc  map[string]int
	retained []string // log key prefixes of ended connections, oldest first
	closed   bool
	wg       sync.WaitGroup
}

// NewServer returns a Server starting backends with b.
func NewServer(b Backend, opts *Options) *Server {
	s := &Server{backend: b, conns: map[string]*conn{}, byPrinc: map[string]int{}}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxConns, 256)
	def(&o.MaxConnsPerPrincipal, 64)
	def(&o.MaxSessions, 64)
	def(&o.MaxFrame, frame.DefaultMaxFrame)
	def(&o.MaxRetained, 256)
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = 8 << 20
	}
	defd(&o.Retention, 5*time.Minute)
	defd(&o.KeepAlive, 15*time.Second)
	defd(&o.PingInterval, 30*time.Second)
	defd(&o.PongTimeout, 10*time.Second)
	defd(&o.InitTimeout, time.Minute)
	defd(&o.BodyTimeout, 30*time.Second)
	s.log = o.Log
	if s.log == nil {
		s.log = eventlog.NewMemoryLimits(o.MaxLogBytes, o.MaxLogTotalBytes)
	}
	s.logger = o.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		http.Error(w, "Origin not allowed", http.StatusForbidden)
		return
	}
	principal := ""
	if s.opts.Authenticate != nil {
		p, err := s.opts.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="acp"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		principal = p
	}
	if isUpgrade(r) {
		s.serveWebSocket(w, r, principal)
		return
	}
	s.serveHTTP(w, r, principal)
}

func isUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range s.opts.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// errLimit refuses a connection past a bound.
var errLimit = errors.New("too many connections")

// newConn registers a connection for principal, within the bounds, under id (a new one if "").
func (s *Server) newConn(id, transport, principal, remote string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errServerClosed
	}
	if len(s.conns) >= s.opts.MaxConns || s.byPrinc[principal] >= s.opts.MaxConnsPerPrincipal {
		return nil, errLimit
	}
	if id == "" {
		id = newID()
	}
	c := newConn(s, id, transport, principal, remote)
	s.conns[c.id] = c
	s.byPrinc[principal]++
	return c, nil
}

// forget removes an ended connection, keeping its logs for a later expired_replay_only answer.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[c.id] != c {
		return
	}
	delete(s.conns, c.id)
	if s.byPrinc[c.principal]--; s.byPrinc[c.principal] <= 0 {
		delete(s.byPrinc, c.principal)
	}
	if s.closed {
		return // a server shutting down keeps every log (a durable one serves them after the restart)
	}
	s.retained = append(s.retained, c.keyPrefix())
	for len(s.retained) > s.opts.MaxRetained {
		prefix := s.retained[0]
		s.retained = s.retained[1:]
		keys, _ := s.log.Keys()
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				s.log.Delete(k)
			}
		}
	}
}

func (s *Server) lookup(id string) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[id]
}

// findSession returns the live connection of principal that holds session sid: connID's, else the only
// one that holds it. Agents that number their sessions from 1 in every process make a session id
// ambiguous across connections: ambiguous reports that the client must name the connection.
func (s *Server) findSession(connID, principal, sid string) (c *conn, ambiguous bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.conns[connID]; c != nil && c.principal == principal && c.hasSession(sid) {
		return c, false
	}
	var found *conn
	for _, c := range s.conns {
		if c.principal == principal && c.hasSession(sid) {
			if found != nil {
				return nil, true
			}
			found = c
		}
	}
	return found, false
}

var errServerClosed = errors.New("server closed")

// Close ends every connection (WebSocket clients get 1001 "Server shutting down"), stops their agents
// and waits for them; the log is left as it is (a durable one serves resuming clients after a restart),
// and not closed.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.shutdown(errServerClosed)
	}
	s.wg.Wait()
	return nil
}

// newID returns a random UUID (version 4), the form of the TS SDK's connection ids.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Tokens returns an Authenticate function admitting requests that carry one of tokens as
// "Authorization: Bearer <token>" or "X-API-Key: <token>", in constant time whatever the token. The
// principal is the token's name: names[i] for tokens[i], else "token-<i+1>".
func Tokens(tokens []string, names []string) func(*http.Request) (string, error) {
	type entry struct {
		sum  [32]byte
		name string
	}
	entries := make([]entry, 0, len(tokens))
	for i, t := range tokens {
		name := fmt.Sprintf("token-%d", i+1)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		entries = append(entries, entry{sha256.Sum256([]byte(t)), name})
	}
	return func(r *http.Request) (string, error) {
		presented := r.Header.Get("X-API-Key")
		if presented == "" {
			if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
				presented = strings.TrimSpace(a[7:])
			}
		}
		if presented == "" {
			return "", errors.New("no token")
		}
		sum := sha256.Sum256([]byte(presented))
		found := -1
		for i, e := range entries { // no early exit: the time taken does not tell which token matched
			if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
				found = i
			}
		}
		if found < 0 {
			return "", errors.New("unknown token")
		}
		return entries[found].name, nil
	}
}
