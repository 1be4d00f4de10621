// Package pending is the reference state machine of a Harn session's
// pending injections: user messages queued with session/inject and
// reminders queued with session/remind, delivered into the agent loop at
// its checkpoints, listed by session/pending_injections, and revoked or
// replaced before delivery.
//
// # The queue
//
// A [Queue] keeps user messages and reminders in one FIFO. Each entry has a
// canonical delivery [Mode]; a checkpoint of the loop drains, in order, the
// entries of its mode ([Queue.Drain], or [Queue.Wait] to block until there
// are some): interrupt_immediate entries at the next eligible checkpoint
// (before a pending tool batch), finish_step entries at the next safe
// operation boundary, audit_only entries at loop exit, where they are
// recorded but never rendered to the model.
//
// Mutations race with delivery, and the answers are exact (seed, and
// catalogue §1.12):
//
//	session/revoke_inject    pending → {status:"revoked"}; revoked → {status:"already_revoked"};
//	                         delivered → already_delivered; never seen → unknown_message_id
//	session/replace_inject   pending → {status:"replaced"} (same id, mode and FIFO slot);
//	                         revoked → already_revoked; delivered → already_delivered;
//	                         never seen → unknown_message_id
//	session/revoke_reminder  pending → revoked; revoked → already_revoked;
//	                         delivered → already_delivered; never seen → unknown_reminder_id
//
// and a message may only be revoked or replaced by the actor that injected
// it, or by a host owner: anyone else gets not_owner_or_not_authorized.
// Refusals are *[RaceError]s; [RaceError.RPCError] is Harn's -32602 answer
// with data {reason, messageId | reminderId, actor?, owner?}.
//
// The queue remembers the ids of settled (delivered or revoked) entries up
// to [Options.MaxSettled] and [Options.MaxSettledBytes]; an id forgotten
// since answers unknown_*, never a success. [Options.MaxPending] and
// [Options.MaxPendingBytes] bound what may wait.
//
// # Reminders
//
// [ParseRemind] validates session/remind params: unknown top-level
// reminder options are HARN-RMD-001, malformed payloads HARN-RMD-002 (an
// unknown propagate value HARN-RMD-005, as in Harn), each a *[ReminderError].
//
// A Queue is safe for concurrent use.
//
// # Serving the methods
//
// [Sessions] serves the six methods over the generated gen/harn handlers
// (Sessions.Register sets the harn.VMHandlers fields) with one Queue per
// open session; rows and results are gen/harn's types ([Entry.Wire],
// [Listing.Wire]), the caller's identity is read from _meta.harn.actor
// ([ActorOf]), and [RemindErrors] answers session/remind params the
// generated decoder would refuse with Harn's HARN-RMD diagnostics.
// [Entry.UserMessage] is the user_message update a runtime sends when it
// delivers an injected message.
package pending

import (
	"bytes"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Mode is a canonical delivery mode (gen/harn's type of a pending row's
// mode).
type Mode = harn.DeliveryMode

// The canonical delivery modes.
const (
	InterruptImmediate = harn.DeliveryModeInterruptImmediate
	FinishStep         = harn.DeliveryModeFinishStep
	AuditOnly          = harn.DeliveryModeAuditOnly
)

// Checkpoint is a point of the agent loop where injections are delivered.
type Checkpoint int

// The checkpoints; each drains the entries of one mode.
const (
	// AtInterrupt is the next eligible checkpoint, including before a
	// pending tool batch: interrupt_immediate entries.
	AtInterrupt Checkpoint = iota + 1
	// AtStepBoundary is the next safe operation boundary: finish_step
	// entries.
	AtStepBoundary
	// AtLoopExit is the end of the interaction: audit_only entries.
	AtLoopExit
)

// Mode is the mode of the entries the checkpoint drains.
func (c Checkpoint) Mode() Mode {
	switch c {
	case AtInterrupt:
		return InterruptImmediate
	case AtStepBoundary:
		return FinishStep
	case AtLoopExit:
		return AuditOnly
	}
	return ""
}

// The methods, as named in errors.
const (
	MethodInject         = "session/inject"
	MethodRevokeInject   = "session/revoke_inject"
	MethodReplaceInject  = "session/replace_inject"
	MethodRemind         = "session/remind"
	MethodRevokeReminder = "session/revoke_reminder"
)

// Actor is who sent a request: _meta.harn.actor.
type Actor struct {
	// ID identifies the actor (its clientId); owners are compared by it.
	ID string
	// HostOwner actors may revoke and replace anyone's messages (Harn:
	// role host_owner, hostOwner or owner).
	HostOwner bool
	// Raw is the actor object as sent, echoed in error data; when empty,
	// {"clientId": ID} is.
	Raw jsontext.Value
}

// MarshalJSON encodes a as Raw, or {"clientId": ID}.
func (a Actor) MarshalJSON() ([]byte, error) {
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	return json.Marshal(struct {
		ClientID string `json:"clientId"`
	}{a.ID})
}

// Kind is an entry's kind.
type Kind string

// The two kinds of entry.
const (
	KindUser     Kind = "user"
	KindReminder Kind = "reminder"
)

// Entry is a pending or drained injection.
type Entry struct {
	Kind Kind
	// ID is the messageId or the reminderId.
	ID   string
	Mode Mode
	// Position is the entry's index in the FIFO when listed or drained.
	Position int
	// Content is a user message's content as injected (a string or an ACP
	// content-block array).
	Content jsontext.Value
	// Owner is who injected a user message.
	Owner Actor
	// Reminder is a reminder entry's spec.
	Reminder *Reminder
}

// Wire is e as a session/pending_injections row (gen/harn's
// PendingInjection): a user row {kind, id, messageId, mode, position,
// content}, or a reminder row with the reminder's members in camelCase,
// null for no dedupe key, ttl or originating agent.
func (e Entry) Wire() (harn.PendingInjection, error) {
	if e.Kind == KindUser {
		var content harn.PendingUserMessageContent
		if err := json.Unmarshal(e.Content, &content); err != nil {
			return harn.PendingInjection{}, fmt.Errorf("pending: content of %s: %w", e.ID, err)
		}
		return harn.PendingInjection{User: &harn.PendingUserMessage{ID: &e.ID, MessageID: e.ID, Mode: e.Mode,
			Position: int64(e.Position), Content: content}}, nil
	}
	r := e.Reminder
	if r == nil {
		r = &Reminder{}
	}
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	row := &harn.PendingReminder{ID: &e.ID, ReminderID: e.ID, Mode: e.Mode, Position: int64(e.Position), Body: r.Body, Tags: tags,
		DedupeKey: wire.Null[string](), TTLTurns: wire.Null[int64](), PreserveOnCompact: &r.PreserveOnCompact,
		Propagate: &r.Propagate, RoleHint: new(string(r.RoleHint)), Source: &r.Source, FiredAtTurn: &r.FiredAtTurn,
		OriginatingAgentID: wire.Null[string]()}
	if r.DedupeKey != "" {
		row.DedupeKey = wire.Some(r.DedupeKey)
	}
	if r.TTLTurns > 0 {
		row.TTLTurns = wire.Some(r.TTLTurns)
	}
	return harn.PendingInjection{Reminder: row}, nil
}

// MarshalJSON encodes e as a session/pending_injections row (Wire).
func (e Entry) MarshalJSON() ([]byte, error) {
	w, err := e.Wire()
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// Listing is the result of session/pending_injections.
type Listing []Entry

// Wire is l as the result of session/pending_injections (gen/harn's
// SessionPendingInjectionsResult): {pendingCount, injections}.
func (l Listing) Wire() (*harn.SessionPendingInjectionsResult, error) {
	out := &harn.SessionPendingInjectionsResult{PendingCount: int64(len(l)), Injections: make([]harn.PendingInjection, len(l))}
	for i, e := range l {
		w, err := e.Wire()
		if err != nil {
			return nil, err
		}
		out.Injections[i] = w
	}
	return out, nil
}

// MarshalJSON encodes l as {pendingCount, injections} (Wire).
func (l Listing) MarshalJSON() ([]byte, error) {
	w, err := l.Wire()
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// Status is a successful mutation's status.
type Status string

// The statuses.
const (
	StatusAccepted       Status = "accepted"
	StatusRevoked        Status = "revoked"
	StatusAlreadyRevoked Status = "already_revoked"
	StatusReplaced       Status = "replaced"
)

// Defaults of Options.
const (
	DefaultMaxPending      = 1024
	DefaultMaxPendingBytes = 32 << 20
	DefaultMaxSettled      = 4096
	DefaultMaxSettledBytes = 4 << 20
)

// Options configures a Queue. The zero value is ready to use.
type Options struct {
	// MaxPending and MaxPendingBytes bound the entries waiting, in number
	// and in bytes (content, reminder members and ids, plus a little per
	// entry); Inject, Replace and Remind beyond them fail with
	// ErrQueueFull. Zero means DefaultMaxPending, DefaultMaxPendingBytes.
	MaxPending, MaxPendingBytes int
	// MaxSettled and MaxSettledBytes bound how many delivered and revoked
	// ids are remembered for already_* answers, in number and in bytes
	// (the ids and their owners); the oldest are forgotten first. Zero
	// means DefaultMaxSettled, DefaultMaxSettledBytes.
	MaxSettled, MaxSettledBytes int
	// NewMessageID and NewReminderID mint ids; by default
	// "msg_inj_<uuid v7, no hyphens>" and a hyphenated uuid v7, as Harn.
	NewMessageID  func() string
	NewReminderID func() string
}

// Queue is one session's pending injections.
type Queue struct {
	opts Options

	mu      sync.Mutex
	entries []*Entry // FIFO
	bytes   int      // held by entries (Entry.size)
	// settled remembers ids no longer pending, by kind and id.
	settled      map[settledKey]*list.Element // of settledEntry
	order        list.List
	settledBytes int // held by settled (settledEntry.size)
	// wake is closed (and replaced) whenever an entry is added.
	wake chan struct{}
}

type settledKey struct {
	kind Kind
	id   string
}

type settledEntry struct {
	key       settledKey
	delivered bool // else revoked
	owner     Actor
}

// NewQueue returns an empty Queue.
func NewQueue(opts *Options) *Queue {
	q := &Queue{settled: map[settledKey]*list.Element{}, wake: make(chan struct{})}
	if opts != nil {
		q.opts = *opts
	}
	if q.opts.MaxPending <= 0 {
		q.opts.MaxPending = DefaultMaxPending
	}
	if q.opts.MaxSettled <= 0 {
		q.opts.MaxSettled = DefaultMaxSettled
	}
	if q.opts.MaxPendingBytes <= 0 {
		q.opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if q.opts.MaxSettledBytes <= 0 {
		q.opts.MaxSettledBytes = DefaultMaxSettledBytes
	}
	if q.opts.NewMessageID == nil {
		q.opts.NewMessageID = func() string { u := uuidV7(); return "msg_inj_" + hex.EncodeToString(u[:]) }
	}
	if q.opts.NewReminderID == nil {
		q.opts.NewReminderID = func() string { return formatUUID(uuidV7()) }
	}
	return q
}

// Inject queues a user message (session/inject) and returns its
// agent-owned messageId. content must be a non-empty string or a non-empty
// array of ACP content blocks; it is kept as given.
func (q *Queue) Inject(actor Actor, mode Mode, content jsontext.Value) (string, error) {
	if err := checkMode(MethodInject, mode); err != nil {
		return "", err
	}
	if err := checkContent(MethodInject, content); err != nil {
		return "", err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.entries) >= q.opts.MaxPending {
		return "", &InputError{Method: MethodInject, Err: ErrQueueFull, Detail: "too many pending injections"}
	}
	e := &Entry{Kind: KindUser, ID: q.opts.NewMessageID(), Mode: mode, Content: content, Owner: actor}
	if err := q.room(MethodInject, e.size()); err != nil {
		return "", err
	}
	e.Content = bytes.Clone(content)
	q.forget(settledKey{KindUser, e.ID})
	q.push(e)
	return e.ID, nil
}

// Remind queues a validated reminder (from ParseRemind) and returns its id:
// the one the host gave, or a new one. An id that is already pending is
// refused with ErrDuplicateID; the id of a settled reminder may be reused.
func (q *Queue) Remind(r Reminder, mode Mode) (string, error) {
	if err := checkMode(MethodRemind, mode); err != nil {
		return "", err
	}
	if r.Body == "" {
		return "", malformed("`body` must be a non-empty string")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.entries) >= q.opts.MaxPending {
		return "", &InputError{Method: MethodRemind, Err: ErrQueueFull, Detail: "too many pending injections"}
	}
	if r.ID == "" {
		r.ID = q.opts.NewReminderID()
	}
	if q.find(KindReminder, r.ID) >= 0 {
		return "", &InputError{Method: MethodRemind, Err: ErrDuplicateID,
			Detail: fmt.Sprintf("reminder id `%s` is already pending", rpc.Truncate(r.ID, rpc.MaxEcho))}
	}
	e := &Entry{Kind: KindReminder, ID: r.ID, Mode: mode, Reminder: &r}
	if err := q.room(MethodRemind, e.size()); err != nil {
		return "", err
	}
	q.forget(settledKey{KindReminder, r.ID})
	r.Tags = append([]string(nil), r.Tags...)
	r.GoalPin, r.Meta = bytes.Clone(r.GoalPin), bytes.Clone(r.Meta)
	q.push(e)
	return r.ID, nil
}

// room reports ErrQueueFull unless n more bytes fit the pending entries.
func (q *Queue) room(method string, n int) error {
	if q.bytes+n > q.opts.MaxPendingBytes {
		return &InputError{Method: method, Err: ErrQueueFull, Detail: fmt.Sprintf("pending injections would hold more than %d bytes", q.opts.MaxPendingBytes)}
	}
	return nil
}

// entryOverhead is what an entry costs besides its members' bytes.
const entryOverhead = 128

// size is what e holds, for Options.MaxPendingBytes.
func (e *Entry) size() int {
	n := entryOverhead + len(e.ID) + len(e.Content) + len(e.Owner.ID) + len(e.Owner.Raw)
	if r := e.Reminder; r != nil {
		n += len(r.Body) + len(r.DedupeKey) + len(r.Source) + len(r.GoalPin) + len(r.Meta)
		for _, t := range r.Tags {
			n += len(t) + 16
		}
	}
	return n
}

func (q *Queue) push(e *Entry) {
	q.bytes += e.size()
	q.entries = append(q.entries, e)
	close(q.wake)
	q.wake = make(chan struct{})
}

func (q *Queue) find(kind Kind, id string) int {
	for i, e := range q.entries {
		if e.Kind == kind && e.ID == id {
			return i
		}
	}
	return -1
}

// owns reports whether actor may mutate a message owned by owner.
func owns(actor, owner Actor) bool { return actor.HostOwner || actor.ID == owner.ID }

// Revoke withdraws a pending user message (session/revoke_inject):
// StatusRevoked, or StatusAlreadyRevoked for one revoked before; a
// delivered, unknown or foreign message is a *RaceError.
func (q *Queue) Revoke(actor Actor, messageID string) (Status, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := q.find(KindUser, messageID); i >= 0 {
		if owner := q.entries[i].Owner; !owns(actor, owner) {
			return "", notOwner(MethodRevokeInject, messageID, actor, owner)
		}
		q.settle(q.remove(i), false)
		return StatusRevoked, nil
	}
	s, ok := q.settledAs(KindUser, messageID)
	switch {
	case !ok:
		return "", &RaceError{Method: MethodRevokeInject, Reason: ReasonUnknownMessageID, MessageID: messageID}
	case !owns(actor, s.owner):
		return "", notOwner(MethodRevokeInject, messageID, actor, s.owner)
	case s.delivered:
		return "", &RaceError{Method: MethodRevokeInject, Reason: ReasonAlreadyDelivered, MessageID: messageID}
	}
	return StatusAlreadyRevoked, nil
}

// Replace edits a pending user message in place (session/replace_inject),
// keeping its id, mode and FIFO slot; a revoked, delivered, unknown or
// foreign message is a *RaceError.
func (q *Queue) Replace(actor Actor, messageID string, content jsontext.Value) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := q.find(KindUser, messageID); i >= 0 {
		if owner := q.entries[i].Owner; !owns(actor, owner) {
			return notOwner(MethodReplaceInject, messageID, actor, owner)
		}
		if err := checkContent(MethodReplaceInject, content); err != nil {
			return err
		}
		e := q.entries[i]
		if err := q.room(MethodReplaceInject, len(content)-len(e.Content)); err != nil {
			return err
		}
		q.bytes += len(content) - len(e.Content)
		e.Content = bytes.Clone(content)
		return nil
	}
	s, ok := q.settledAs(KindUser, messageID)
	switch {
	case !ok:
		return &RaceError{Method: MethodReplaceInject, Reason: ReasonUnknownMessageID, MessageID: messageID}
	case !owns(actor, s.owner):
		return notOwner(MethodReplaceInject, messageID, actor, s.owner)
	case s.delivered:
		return &RaceError{Method: MethodReplaceInject, Reason: ReasonAlreadyDelivered, MessageID: messageID}
	}
	return &RaceError{Method: MethodReplaceInject, Reason: ReasonAlreadyRevoked, MessageID: messageID}
}

// RevokeReminder withdraws a pending reminder (session/revoke_reminder):
// StatusRevoked, or StatusAlreadyRevoked for one revoked before; a
// delivered or unknown reminder is a *RaceError.
func (q *Queue) RevokeReminder(reminderID string) (Status, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := q.find(KindReminder, reminderID); i >= 0 {
		q.settle(q.remove(i), false)
		return StatusRevoked, nil
	}
	s, ok := q.settledAs(KindReminder, reminderID)
	switch {
	case !ok:
		return "", &RaceError{Method: MethodRevokeReminder, Reason: ReasonUnknownReminderID, ReminderID: reminderID}
	case s.delivered:
		return "", &RaceError{Method: MethodRevokeReminder, Reason: ReasonAlreadyDelivered, ReminderID: reminderID}
	}
	return StatusAlreadyRevoked, nil
}

// Pending lists the pending entries in FIFO order (session/pending_injections).
func (q *Queue) Pending() Listing {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(Listing, len(q.entries))
	for i, e := range q.entries {
		out[i] = e.copy(i)
	}
	return out
}

// Len returns how many entries are pending.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.entries)
}

// Drain removes and returns, in FIFO order, the entries that cp delivers,
// marking them delivered; the others keep their order.
func (q *Queue) Drain(cp Checkpoint) []Entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.drain(cp.Mode())
}

func (q *Queue) drain(mode Mode) []Entry {
	var out []Entry
	kept := q.entries[:0]
	for i, e := range q.entries {
		if e.Mode == mode {
			out = append(out, e.copy(i))
			q.bytes -= e.size()
			q.settle(e, true)
		} else {
			kept = append(kept, e)
		}
	}
	clear(q.entries[len(kept):])
	q.entries = kept
	return out
}

// Wait blocks until cp has entries to deliver, then drains them as Drain
// does; it returns ctx's error if ctx ends first. A daemon waiting for host
// activity calls it with AtInterrupt.
func (q *Queue) Wait(ctx context.Context, cp Checkpoint) ([]Entry, error) {
	for {
		q.mu.Lock()
		if out := q.drain(cp.Mode()); len(out) > 0 {
			q.mu.Unlock()
			return out, nil
		}
		wake := q.wake
		q.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (e *Entry) copy(pos int) Entry {
	c := *e
	c.Position = pos
	c.Content = bytes.Clone(e.Content)
	if e.Reminder != nil {
		r := *e.Reminder
		r.Tags = append([]string(nil), r.Tags...)
		r.GoalPin, r.Meta = bytes.Clone(r.GoalPin), bytes.Clone(r.Meta)
		c.Reminder = &r
	}
	return c
}

// remove takes entry i out of the FIFO.
func (q *Queue) remove(i int) *Entry {
	e := q.entries[i]
	q.entries = append(q.entries[:i], q.entries[i+1:]...)
	q.entries[len(q.entries) : len(q.entries)+1][0] = nil
	q.bytes -= e.size()
	return e
}

func (q *Queue) settle(e *Entry, delivered bool) {
	k := settledKey{e.Kind, e.ID}
	q.forget(k)
	s := &settledEntry{key: k, delivered: delivered, owner: e.Owner}
	for q.order.Len() > 0 && (q.order.Len() >= q.opts.MaxSettled || q.settledBytes+s.size() > q.opts.MaxSettledBytes) {
		q.forget(q.order.Front().Value.(*settledEntry).key)
	}
	q.settled[k] = q.order.PushBack(s)
	q.settledBytes += s.size()
}

// size is what s holds, for Options.MaxSettledBytes.
func (s *settledEntry) size() int {
	return entryOverhead + len(s.key.id) + len(s.owner.ID) + len(s.owner.Raw)
}

func (q *Queue) forget(k settledKey) {
	if el, ok := q.settled[k]; ok {
		q.settledBytes -= el.Value.(*settledEntry).size()
		q.order.Remove(el)
		delete(q.settled, k)
	}
}

func (q *Queue) settledAs(kind Kind, id string) (*settledEntry, bool) {
	el, ok := q.settled[settledKey{kind, id}]
	if !ok {
		return nil, false
	}
	return el.Value.(*settledEntry), true
}

func checkMode(method string, m Mode) error {
	switch m {
	case InterruptImmediate, FinishStep, AuditOnly:
		return nil
	}
	return &InputError{Method: method, Err: ErrUnsupportedMode,
		Detail: fmt.Sprintf("unsupported mode `%s`", rpc.Truncate(string(m), rpc.MaxEcho))}
}

// checkContent accepts a non-empty string or a non-empty array of ACP
// content blocks (gen/acp's ContentBlock: text, image, audio, resource or
// resource_link, each with its required members).
func checkContent(method string, content jsontext.Value) error {
	bad := func(detail string) error { return &InputError{Method: method, Err: ErrInvalidContent, Detail: detail} }
	switch content.Kind() {
	case 0:
		return bad("requires content")
	case '"':
		var s string
		if json.Unmarshal(content, &s) != nil {
			return bad("content must be a string or an array of content blocks")
		}
		if s == "" {
			return bad("content must not be empty")
		}
		return nil
	case '[':
		var blocks []jsontext.Value
		if json.Unmarshal(content, &blocks) != nil {
			return bad("content must be a string or an array of content blocks")
		}
		if len(blocks) == 0 {
			return bad("content must not be empty")
		}
		for i, b := range blocks {
			if b.Kind() != '{' {
				return bad("content must be a string or an array of content blocks")
			}
			var block acp.ContentBlock
			err := json.Unmarshal(b, &block)
			switch {
			case err == nil && block.Unknown == nil:
			case err == nil || rpc.Member(b, "type").Kind() != '"':
				return bad(fmt.Sprintf("content block %d has no known type", i))
			default:
				if de, ok := errors.AsType[*wire.DecodeError](err); ok {
					err = de
				}
				return bad(fmt.Sprintf("content block %d: %v", i, err))
			}
		}
		return nil
	}
	return bad("content must be a string or an array of content blocks")
}

// uuidV7 returns a version 7 UUID: 48 bits of Unix milliseconds, then
// random bits.
func uuidV7() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(time.Now().UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return u
}

func formatUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Reason is why a mutation lost a race (error data "reason").
type Reason string

// The race reasons.
const (
	ReasonAlreadyDelivered  Reason = "already_delivered"
	ReasonAlreadyRevoked    Reason = "already_revoked"
	ReasonUnknownMessageID  Reason = "unknown_message_id"
	ReasonNotOwner          Reason = "not_owner_or_not_authorized"
	ReasonUnknownReminderID Reason = "unknown_reminder_id"
)

// RaceError is a refused revoke or replace.
type RaceError struct {
	Method     string
	Reason     Reason
	MessageID  string
	ReminderID string
	// Actor and Owner are set for ReasonNotOwner.
	Actor, Owner *Actor
}

// Sentinels for errors.Is; each matches every *RaceError with its Reason.
var (
	ErrAlreadyDelivered  = &RaceError{Reason: ReasonAlreadyDelivered}
	ErrAlreadyRevoked    = &RaceError{Reason: ReasonAlreadyRevoked}
	ErrUnknownMessageID  = &RaceError{Reason: ReasonUnknownMessageID}
	ErrNotOwner          = &RaceError{Reason: ReasonNotOwner}
	ErrUnknownReminderID = &RaceError{Reason: ReasonUnknownReminderID}
)

func notOwner(method, id string, actor, owner Actor) error {
	return &RaceError{Method: method, Reason: ReasonNotOwner, MessageID: id, Actor: &actor, Owner: &owner}
}

// Error is Harn's message for the refusal.
func (e *RaceError) Error() string {
	switch e.Reason {
	case ReasonAlreadyDelivered:
		if e.ReminderID != "" {
			return "pending reminder already delivered"
		}
		return "pending inject already delivered"
	case ReasonAlreadyRevoked:
		return "pending inject already revoked"
	case ReasonUnknownMessageID:
		return "unknown pending inject messageId"
	case ReasonNotOwner:
		return "pending inject is owned by another ACP actor"
	case ReasonUnknownReminderID:
		return "unknown pending reminderId"
	}
	return "pending: " + string(e.Reason)
}

// Is matches a *RaceError with the same Reason.
func (e *RaceError) Is(target error) bool {
	t, ok := target.(*RaceError)
	return ok && t.Reason == e.Reason
}

// RPCError is Harn's answer: -32602 with data {reason, messageId} (plus
// actor and owner for not_owner_or_not_authorized) or {reason, reminderId}.
func (e *RaceError) RPCError() *rpc.Error {
	data := struct {
		Reason     Reason `json:"reason"`
		MessageID  string `json:"messageId,omitempty"`
		ReminderID string `json:"reminderId,omitempty"`
		Actor      *Actor `json:"actor,omitempty"`
		Owner      *Actor `json:"owner,omitempty"`
	}{e.Reason, rpc.Truncate(e.MessageID, rpc.MaxEcho), rpc.Truncate(e.ReminderID, rpc.MaxEcho), e.Actor, e.Owner}
	return rpc.NewError(rpc.CodeInvalidParams, e.Error(), data)
}

// Errors of InputError.
var (
	// ErrInvalidContent: injected content that is empty or not a string or
	// content-block array.
	ErrInvalidContent = errors.New("invalid content")
	// ErrQueueFull: Options.MaxPending entries are already waiting.
	ErrQueueFull = errors.New("pending queue full")
	// ErrDuplicateID: a reminder id that is already pending.
	ErrDuplicateID = errors.New("reminder id already pending")
)

// InputError is a refused inject, replace or remind that is not a race:
// bad content, a bad mode, a full queue, a duplicate reminder id.
type InputError struct {
	Method string
	Detail string
	// Err is ErrInvalidContent, ErrUnsupportedMode, ErrQueueFull or
	// ErrDuplicateID.
	Err error
}

func (e *InputError) Error() string {
	if strings.HasPrefix(e.Detail, "requires ") {
		return e.Method + " " + e.Detail
	}
	return e.Method + ": " + e.Detail
}

// Unwrap returns the sentinel.
func (e *InputError) Unwrap() error { return e.Err }

// RPCError is -32602 with the error's message, except -32000 for a full
// queue.
func (e *InputError) RPCError() *rpc.Error {
	code := int64(rpc.CodeInvalidParams)
	if e.Err == ErrQueueFull {
		code = -32000
	}
	return rpc.NewError(code, e.Error(), nil)
}
