package pending

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// CodeSessionNotFound is Harn's code for a session/inject, session/remind
// or session/pending_injections naming no session it has.
const CodeSessionNotFound = -32004

// ErrSessionNotFound is matched by the errors of requests naming a session
// that is not open.
var ErrSessionNotFound = errors.New("pending: session not found")

// hostOwnerRoles are the actor roles that may revoke and replace anyone's
// messages.
var hostOwnerRoles = []string{"host_owner", "hostOwner", "owner"}

// ActorOf reads the actor of a request from its _meta (_meta.harn.actor):
// its clientId identifies it, a host-owner role (host_owner, hostOwner or
// owner) lets it mutate anyone's messages, and the object as sent is kept
// for error data. A request without one is the anonymous actor.
func ActorOf(meta *harn.ActorMeta) Actor {
	if meta == nil || meta.Harn == nil || meta.Harn.Actor == nil {
		return Actor{}
	}
	a := meta.Harn.Actor
	out := Actor{}
	if a.ClientID != nil {
		out.ID = *a.ClientID
	}
	if a.Role != nil {
		out.HostOwner = slices.Contains(hostOwnerRoles, *a.Role)
	}
	if raw, err := json.Marshal(a); err == nil {
		out.Raw = raw
	}
	return out
}

// UserMessage is the session/update a runtime sends when it delivers the
// user message e into the agent loop: user_message with the message's
// agent-owned id and its content, as injected. It reports false for a
// reminder entry.
func (e Entry) UserMessage(session acp.SessionID) (*acp.SessionNotification, bool) {
	if e.Kind != KindUser {
		return nil, false
	}
	var content harn.UserMessageContent
	if json.Unmarshal(e.Content, &content) != nil {
		return nil, false
	}
	n, err := harn.SessionUpdate{UserMessage: &harn.UserMessageUpdate{MessageID: e.ID, Content: content}}.Notification(session)
	return n, err == nil
}

// SessionsOptions configures Sessions. The zero value is ready to use.
type SessionsOptions struct {
	// Queue configures every session's Queue.
	Queue Options
	// Authorize, when set, is asked before a user message is injected, so
	// that only an authorised actor injects (a live session's active
	// controller, say: live.Registry.Authorize with PromptInjection). Its
	// error answers the request (an *rpc.Error in its chain chooses the
	// answer, else -32602).
	Authorize func(ctx context.Context, session acp.SessionID, actor Actor) error
}

// Sessions serves a runtime's pending-injection methods over the generated
// gen/harn handlers, with one Queue per open session: session/inject,
// session/revoke_inject, session/replace_inject, session/remind,
// session/pending_injections and session/revoke_reminder. A runtime opens a
// session's queue when it creates the session and drains it at the loop's
// checkpoints:
//
//	sessions := pending.NewSessions(nil)
//	var bridge harn.VMHandlers
//	sessions.Register(&bridge)
//	conn := harn.NewBridgeConn(os.Stdin, os.Stdout, pending.RemindErrors(harn.VMHandler(&bridge, &agent)), nil)
//	...
//	q := sessions.Open(sessionID)      // in the session/new handler
//	for _, e := range q.Drain(pending.AtStepBoundary) { ... } // in the agent loop
//
// Answers and refusals are Harn's: the race reasons as RaceError.RPCError,
// bad content and modes as InputError.RPCError, reminders as
// ReminderError.RPCError, and a session that is not open -32004 "Session
// not found". session/remind may name no session (it goes to the first
// opened), and as a notification its errors are silent.
type Sessions struct {
	opts SessionsOptions

	mu     sync.Mutex
	queues map[acp.SessionID]*Queue
	order  []acp.SessionID // open sessions, in the order opened
}

// NewSessions returns Sessions with no session open.
func NewSessions(opts *SessionsOptions) *Sessions {
	s := &Sessions{queues: map[acp.SessionID]*Queue{}}
	if opts != nil {
		s.opts = *opts
	}
	return s
}

// Open opens a session's queue, or returns the one already open.
func (s *Sessions) Open(id acp.SessionID) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[id]; ok {
		return q
	}
	q := NewQueue(&s.opts.Queue)
	s.queues[id] = q
	s.order = append(s.order, id)
	return q
}

// Close forgets a session's queue; it reports whether it was open.
func (s *Sessions) Close(id acp.SessionID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[id]; !ok {
		return false
	}
	delete(s.queues, id)
	s.order = slices.DeleteFunc(s.order, func(o acp.SessionID) bool { return o == id })
	return true
}

// Queue returns an open session's queue.
func (s *Sessions) Queue(id acp.SessionID) (*Queue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[id]
	return q, ok
}

func (s *Sessions) queue(id acp.SessionID) (*Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" && len(s.order) > 0 {
		id = s.order[0]
	}
	q, ok := s.queues[id]
	if !ok {
		return nil, fmt.Errorf("%w: %w", ErrSessionNotFound, rpc.NewError(CodeSessionNotFound, "Session not found", nil))
	}
	return q, nil
}

// answer attaches the JSON-RPC answer to the package's errors.
func answer(err error) error {
	var re interface{ RPCError() *rpc.Error }
	if errors.As(err, &re) {
		return fmt.Errorf("%w: %w", err, re.RPCError())
	}
	return err
}

// Register sets the fields of h that serve the six methods. Wrap the
// connection's handler with RemindErrors too, so that session/remind
// params the generated decoder refuses are answered with Harn's
// HARN-RMD codes.
func (s *Sessions) Register(h *harn.VMHandlers) {
	h.SessionInject = s.inject
	h.SessionRevokeInject = s.revokeInject
	h.SessionReplaceInject = s.replaceInject
	h.SessionRemind = s.remind
	h.SessionPendingInjections = s.pendingInjections
	h.SessionRevokeReminder = s.revokeReminder
}

func (s *Sessions) inject(ctx context.Context, p *harn.SessionInjectParams) (*harn.SessionInjectResult, error) {
	q, err := s.queue(p.SessionID)
	if err != nil {
		return nil, err
	}
	mode, err := ParseInjectMode(string(p.Mode))
	if err != nil {
		return nil, answer(err)
	}
	actor := ActorOf(p.Meta)
	if s.opts.Authorize != nil {
		if err := s.opts.Authorize(ctx, p.SessionID, actor); err != nil {
			if _, ok := errors.AsType[*rpc.Error](err); ok {
				return nil, err
			}
			var re interface{ RPCError() *rpc.Error }
			if errors.As(err, &re) {
				return nil, answer(err)
			}
			return nil, fmt.Errorf("%w: %w", err, rpc.NewError(rpc.CodeInvalidParams, err.Error(), nil))
		}
	}
	content, err := json.Marshal(p.Content)
	if err != nil {
		return nil, rpc.InvalidParams(err)
	}
	id, err := q.Inject(actor, mode, content)
	if err != nil {
		return nil, answer(err)
	}
	res := &harn.SessionInjectResult{MessageID: id}
	if p.Meta != nil && p.Meta.Harn != nil && p.Meta.Harn.Actor != nil {
		res.Meta = &harn.ActorMeta{Harn: &harn.ActorHarn{Actor: p.Meta.Harn.Actor}}
	}
	return res, nil
}

func (s *Sessions) revokeInject(_ context.Context, p *harn.SessionRevokeInjectParams) (*harn.SessionRevokeInjectResult, error) {
	q, err := s.queue(p.SessionID)
	if err != nil {
		return nil, err
	}
	st, err := q.Revoke(ActorOf(p.Meta), p.MessageID)
	if err != nil {
		return nil, answer(err)
	}
	return &harn.SessionRevokeInjectResult{MessageID: p.MessageID, Status: harn.RevokeStatus(st)}, nil
}

func (s *Sessions) replaceInject(_ context.Context, p *harn.SessionReplaceInjectParams) (*harn.SessionReplaceInjectResult, error) {
	q, err := s.queue(p.SessionID)
	if err != nil {
		return nil, err
	}
	content, err := json.Marshal(p.Content)
	if err != nil {
		return nil, rpc.InvalidParams(err)
	}
	if err := q.Replace(ActorOf(p.Meta), p.MessageID, content); err != nil {
		return nil, answer(err)
	}
	return &harn.SessionReplaceInjectResult{MessageID: p.MessageID}, nil
}

func (s *Sessions) remind(_ context.Context, p *harn.SessionRemindParams) (*harn.SessionRemindResult, error) {
	// The typed params are the wire params re-encoded; ParseRemind applies
	// the rules the schema cannot say (trimming, empty bodies and tags,
	// the nested form's other members).
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, rpc.InvalidParams(err)
	}
	req, err := ParseRemind(raw)
	if err != nil {
		return nil, answer(err)
	}
	q, err := s.queue(acp.SessionID(req.SessionID))
	if err != nil {
		return nil, err
	}
	id, err := q.Remind(req.Reminder, req.Mode)
	if err != nil {
		return nil, answer(err)
	}
	return &harn.SessionRemindResult{ReminderID: id}, nil
}

func (s *Sessions) pendingInjections(_ context.Context, p *harn.SessionIDParams) (*harn.SessionPendingInjectionsResult, error) {
	q, err := s.queue(p.SessionID)
	if err != nil {
		return nil, err
	}
	return q.Pending().Wire()
}

func (s *Sessions) revokeReminder(_ context.Context, p *harn.SessionRevokeReminderParams) (*harn.SessionRevokeReminderResult, error) {
	q, err := s.queue(p.SessionID)
	if err != nil {
		return nil, err
	}
	var id string
	switch {
	case p.ReminderID != nil:
		id = *p.ReminderID
	case p.ReminderIDSnake != nil:
		id = *p.ReminderIDSnake
	default:
		return nil, rpc.NewError(rpc.CodeInvalidParams, MethodRevokeReminder+" requires reminderId", nil)
	}
	st, err := q.RevokeReminder(id)
	if err != nil {
		return nil, answer(err)
	}
	return &harn.SessionRevokeReminderResult{ReminderID: id, Status: harn.RevokeStatus(st)}, nil
}

// RemindErrors wraps a runtime's handler (an rpc.Middleware) so that
// session/remind params are validated by ParseRemind before the generated
// decoder sees them: a reminder Harn refuses is answered with its
// HARN-RMD-001, -002 or -005 message (-32602 "session/remind: HARN-RMD-00x:
// …"), and a notification with one is dropped, as Harn drops it. Valid
// params go on to next unchanged.
func RemindErrors(next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		if req.Method == harn.MethodSessionRemind {
			params := req.Params
			if len(params) == 0 {
				params = jsontext.Value("{}")
			}
			if _, err := ParseRemind(params); err != nil {
				if req.Kind == rpc.KindNotification {
					return nil, nil
				}
				return nil, answer(err)
			}
		}
		return next.Handle(ctx, req)
	})
}
