package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json/jsontext"
)

// Notify sends a session/update notification to the host; the generated
// acp.ClientPeer's SessionUpdate method has this type.
type Notify func(ctx context.Context, n *acp.SessionNotification) error

// SessionsOptions configures Sessions. The zero value is ready to use.
type SessionsOptions struct {
	// Now and Expiry configure every session's Registry (see Options).
	Now    func() time.Time
	Expiry time.Duration
	// Notify sends the live_session_client updates; SetNotify sets it
	// later. Without one, no update is sent.
	Notify Notify
	// Logger receives updates that could not be sent. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Sessions serves the live-session methods of a runtime over the generated
// gen/harn handlers: one Registry per open session, and for every change,
// in order, the live_session_client session/update that Harn emits before
// it answers. A runtime opens a session's registry when it creates the
// session (session/new) and closes it with the session:
//
//	live := live.NewSessions(&live.SessionsOptions{Expiry: time.Minute})
//	var bridge harn.VMHandlers
//	live.Register(&bridge) // session/attach, detach, heartbeat, takeover, live_clients
//	conn := harn.NewBridgeConn(os.Stdin, os.Stdout, harn.VMHandler(&bridge, &agent), nil)
//	live.SetNotify(acp.NewClientPeer(conn).SessionUpdate)
//	...
//	live.Open(sessionID) // in the session/new handler
//
// Requests naming a session that is not open are answered -32602
// "Unknown session: <id>", as Harn does; refusals are the Registry's
// (Error.RPCError). Changes made on a Registry directly (a broker's
// client_exit detach, say) reach the host with the next operation of the
// session, or at once through Sessions.Detach and Sessions.Sweep.
// Sessions is safe for concurrent use.
type Sessions struct {
	opts SessionsOptions

	mu       sync.Mutex
	notify   Notify
	sessions map[acp.SessionID]*session
}

// session is one open session: its registry and the changes it made that
// have not been sent yet.
type session struct {
	id  acp.SessionID
	reg *Registry
	// op serialises operations with the sending of their updates, so that
	// updates go out in the order of the changes and before the answer.
	op sync.Mutex
	// pending holds the changes OnChange saw (under the registry's lock).
	pmu     sync.Mutex
	pending []Change
}

// NewSessions returns Sessions with no session open.
func NewSessions(opts *SessionsOptions) *Sessions {
	s := &Sessions{sessions: map[acp.SessionID]*session{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.Default()
	}
	s.notify = s.opts.Notify
	return s
}

// SetNotify sets where updates are sent, typically
// acp.NewClientPeer(conn).SessionUpdate once the connection exists.
func (s *Sessions) SetNotify(n Notify) {
	s.mu.Lock()
	s.notify = n
	s.mu.Unlock()
}

// Open opens a session's registry, or returns the one already open.
func (s *Sessions) Open(id acp.SessionID) *Registry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[id]; ok {
		return sess.reg
	}
	sess := &session{id: id}
	sess.reg = New(&Options{Now: s.opts.Now, Expiry: s.opts.Expiry, OnChange: func(ch Change) {
		sess.pmu.Lock()
		sess.pending = append(sess.pending, ch)
		sess.pmu.Unlock()
	}})
	s.sessions[id] = sess
	return sess.reg
}

// Close forgets a session's registry; it reports whether it was open.
func (s *Sessions) Close(id acp.SessionID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[id]
	delete(s.sessions, id)
	return ok
}

// Registry returns an open session's registry, for Authorize and queries.
func (s *Sessions) Registry(id acp.SessionID) (*Registry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return nil, false
	}
	return sess.reg, true
}

// ErrUnknownSession is matched by the errors of requests naming a session
// that is not open.
var ErrUnknownSession = errors.New("live: unknown session")

func (s *Sessions) session(id acp.SessionID) (*session, Notify, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnknownSession,
			rpc.NewError(rpc.CodeInvalidParams, "Unknown session: "+rpc.Truncate(string(id), rpc.MaxEcho), nil))
	}
	return sess, s.notify, nil
}

// do runs op on the session's registry, then sends the updates of every
// change since the last operation (expirations included), in order, and
// answers with op's change.
func (s *Sessions) do(ctx context.Context, id acp.SessionID, op func(*Registry) (Change, error)) (*harn.LiveSessionChange, error) {
	sess, notify, err := s.session(id)
	if err != nil {
		return nil, err
	}
	sess.op.Lock()
	defer sess.op.Unlock()
	ch, err := op(sess.reg)
	s.flush(ctx, sess, notify)
	if e, ok := errors.AsType[*Error](err); ok {
		return nil, fmt.Errorf("%w: %w", e, e.RPCError())
	}
	if err != nil {
		return nil, err
	}
	return ch.Wire(), nil
}

// flush sends the pending changes' updates; sess.op is held.
func (s *Sessions) flush(ctx context.Context, sess *session, notify Notify) {
	sess.pmu.Lock()
	changes := sess.pending
	sess.pending = nil
	sess.pmu.Unlock()
	if notify == nil {
		return
	}
	for _, ch := range changes {
		n, err := ch.Update(sess.id)
		if err == nil {
			err = notify(ctx, n)
		}
		if err != nil {
			s.opts.Logger.Warn("live: live_session_client update not sent", "session", string(sess.id), "client", ch.ClientID,
				"action", string(ch.Action), "err", err)
		}
	}
}

// Detach detaches a client of a session, as session/detach does, sending
// the update: for a broker that saw the client's connection drop (reason
// ReasonClientExit).
func (s *Sessions) Detach(ctx context.Context, id acp.SessionID, clientID, reason string) (Change, error) {
	var out Change
	_, err := s.do(ctx, id, func(r *Registry) (Change, error) {
		ch, err := r.Detach(clientID, reason, nil)
		out = ch
		return ch, err
	})
	return out, err
}

// Sweep expires silent clients in every open session (Options.Expiry) and
// sends the updates of those changes, and of any change not sent yet.
func (s *Sessions) Sweep(ctx context.Context) {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		all = append(all, sess)
	}
	notify := s.notify
	s.mu.Unlock()
	for _, sess := range all {
		sess.op.Lock()
		sess.reg.Sweep()
		s.flush(ctx, sess, notify)
		sess.op.Unlock()
	}
}

// Run calls Sweep every interval until ctx ends, then returns ctx's error.
func (s *Sessions) Run(ctx context.Context, every time.Duration) error {
	return tick(ctx, every, func() { s.Sweep(ctx) })
}

// metadata is the client metadata of a request: metadata, else
// _meta.harn (Harn: metadata takes precedence).
func metadata(md, meta jsontext.Value) jsontext.Value {
	if len(md) > 0 {
		return md
	}
	return harnOf(meta)
}

// harnOf returns the harn member of a _meta object, or nil.
func harnOf(meta jsontext.Value) jsontext.Value {
	if meta.Kind() != '{' {
		return nil
	}
	return rpc.Member(meta, "harn")
}

// Register sets the fields of h that serve session/attach, session/detach,
// session/heartbeat, session/takeover and session/live_clients.
func (s *Sessions) Register(h *harn.VMHandlers) {
	h.SessionAttach = s.attach
	h.SessionDetach = s.detach
	h.SessionHeartbeat = s.heartbeat
	h.SessionTakeover = s.takeover
	h.SessionLiveClients = s.liveClients
}

func (s *Sessions) attach(ctx context.Context, p *harn.SessionAttachParams) (*harn.LiveSessionChange, error) {
	req := AttachRequest{ClientID: p.ClientID, Takeover: p.GetTakeover(), PromptInjection: p.PromptInjection,
		PermissionRouting: p.PermissionRouting, Metadata: metadata(p.Metadata, p.Meta)}
	if p.Mode != nil {
		req.Mode = Mode(*p.Mode)
	}
	return s.do(ctx, p.SessionID, func(r *Registry) (Change, error) { return r.Attach(req) })
}

func (s *Sessions) detach(ctx context.Context, p *harn.SessionDetachParams) (*harn.LiveSessionChange, error) {
	var reason string
	if p.Reason != nil {
		reason = string(*p.Reason)
	}
	md := metadata(p.Metadata, p.Meta)
	return s.do(ctx, p.SessionID, func(r *Registry) (Change, error) { return r.Detach(p.ClientID, reason, md) })
}

func (s *Sessions) heartbeat(ctx context.Context, p *harn.SessionClientParams) (*harn.LiveSessionChange, error) {
	md := metadata(p.Metadata, p.Meta)
	return s.do(ctx, p.SessionID, func(r *Registry) (Change, error) { return r.Heartbeat(p.ClientID, md) })
}

func (s *Sessions) takeover(ctx context.Context, p *harn.SessionClientParams) (*harn.LiveSessionChange, error) {
	md := metadata(p.Metadata, p.Meta)
	return s.do(ctx, p.SessionID, func(r *Registry) (Change, error) { return r.Takeover(p.ClientID, md) })
}

func (s *Sessions) liveClients(ctx context.Context, p *harn.SessionIDParams) (*harn.SessionLiveClientsResult, error) {
	sess, notify, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	sess.op.Lock()
	defer sess.op.Unlock()
	clients := sess.reg.Clients()
	s.flush(ctx, sess, notify) // expirations the query found
	out := &harn.SessionLiveClientsResult{Data: make([]harn.LiveClient, len(clients))}
	for i, c := range clients {
		out.Data[i] = c.Wire()
	}
	return out, nil
}
