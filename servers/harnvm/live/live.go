// Package live is the reference state machine of a live Harn session's
// attached clients, for runtimes and brokers that serve session/attach,
// session/detach, session/heartbeat, session/takeover and
// session/live_clients.
//
// The rules (seed, "Live session attach/detach"):
//
//   - A session has many observers and at most one controller.
//   - A second controller attach fails with "live session already has
//     controller '<id>'" unless it asks for takeover; takeover (an attach
//     with Takeover, or [Registry.Takeover]) demotes the previous controller
//     to observer, withdrawing its prompt injection and permission routing.
//   - Detach removes the client and releases control when it was the
//     controller; heartbeat refreshes the client's last-seen time (and
//     replaces its metadata when given) without changing ownership.
//   - Only the active controller may inject user prompts or route permission
//     requests ([Registry.Authorize]).
//   - An unexpected client exit is a detach with reason "client_exit": a
//     broker calls Detach when it sees the disconnect, and a Registry with
//     [Options.Expiry] does it itself for clients whose heartbeats stopped,
//     on its injectable clock ([Options.Now]).
//   - Reconnect is a fresh attach with the same client id: the client keeps
//     its attached_at and gets the mode it now asks for.
//
// Every change is returned as a [Change], whose JSON encoding is the
// documented result of the four methods ({client, previous_controller_id,
// active_controller_id, clients}), and is passed in order to
// [Options.OnChange], where a runtime emits its live_session_client
// session/update. Errors are *[Error]s matching the sentinels below, and
// [Error.RPCError] gives Harn's -32602 answer.
//
// A Registry holds one session's clients and is safe for concurrent use.
// Client ids are opaque: kept byte for byte, never trimmed.
//
// # Serving the methods
//
// [Sessions] serves the five methods over the generated gen/harn handlers
// (Sessions.Register sets the harn.VMHandlers fields): one Registry per open
// session, answers and results in gen/acp's types ([Change.Wire],
// [Client.Wire]), and, for every change, the live_session_client
// session/update ([Change.Update]) sent before the answer, as Harn does.
package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Mode is a client's role, gen/acp's type of the live client's mode.
type Mode = harn.LiveClientMode

// The two modes.
const (
	Observer   = harn.LiveClientModeObserver
	Controller = harn.LiveClientModeController
)

// ParseMode reads the mode member of session/attach: empty (absent) means
// Observer; anything but "observer" and "controller" is ErrUnsupportedMode.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Observer:
		return Observer, nil
	case Controller:
		return Controller, nil
	}
	return "", &Error{Method: MethodAttach, Mode: s, Err: ErrUnsupportedMode}
}

// Action names a change, as in the live_session_client session/update
// (gen/acp's type).
type Action = harn.LiveSessionClientAction

// The actions.
const (
	ActionAttached  = harn.LiveSessionClientActionAttached
	ActionTakeover  = harn.LiveSessionClientActionTakeover
	ActionDetached  = harn.LiveSessionClientActionDetached
	ActionHeartbeat = harn.LiveSessionClientActionHeartbeat
)

// Detach reasons Harn documents. Any other reason is kept as given.
const (
	ReasonClientDetached = "client_detached"
	ReasonClientExit     = "client_exit"
)

// The methods, as named in error messages.
const (
	MethodAttach    = "session/attach"
	MethodDetach    = "session/detach"
	MethodHeartbeat = "session/heartbeat"
	MethodTakeover  = "session/takeover"
)

// Client is one attached client.
type Client struct {
	ID                string
	Mode              Mode
	AttachedAt        time.Time
	LastSeenAt        time.Time
	PromptInjection   bool
	PermissionRouting bool
	// Metadata is the client's metadata as given ({} when none was).
	Metadata jsontext.Value
}

// Wire is c as Harn's live client object (gen/acp's LiveClient):
// timestamps as unix seconds in decimal strings, {} for no metadata.
func (c Client) Wire() harn.LiveClient {
	md := c.Metadata
	if len(md) == 0 {
		md = jsontext.Value("{}")
	}
	return harn.LiveClient{ClientID: c.ID, Mode: c.Mode, AttachedAt: unix(c.AttachedAt), LastSeenAt: unix(c.LastSeenAt),
		PromptInjection: c.PromptInjection, PermissionRouting: c.PermissionRouting, Metadata: md}
}

// MarshalJSON encodes c as Harn's live client object (Wire).
func (c Client) MarshalJSON() ([]byte, error) { return json.Marshal(c.Wire()) }

// clone copies c, metadata included, so that what callers get never
// aliases the Registry's state.
func (c *Client) clone() Client {
	d := *c
	d.Metadata = bytes.Clone(c.Metadata)
	return d
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// Change is the state after one operation.
type Change struct {
	Action Action
	// Client is the client the operation concerned; nil after a detach.
	Client *Client
	// ClientID is the client the operation concerned, also after a detach.
	ClientID string
	// PreviousControllerID and ActiveControllerID are the controller before
	// and after the operation; "" for none (null on the wire).
	PreviousControllerID string
	ActiveControllerID   string
	// Clients are all attached clients after the operation, by id.
	Clients []Client
	// Reason is why a client detached (ReasonClientDetached,
	// ReasonClientExit, or the reason the broker gave).
	Reason string
	// Metadata is the metadata sent with a detach or heartbeat, as given.
	Metadata jsontext.Value
}

// Wire is c as the result of session/attach, detach, heartbeat and
// takeover (gen/acp's LiveSessionChange): {client, previous_controller_id,
// active_controller_id, clients}, with null for no client and no
// controller.
func (c Change) Wire() *harn.LiveSessionChange {
	out := &harn.LiveSessionChange{PreviousControllerID: orNull(c.PreviousControllerID), ActiveControllerID: orNull(c.ActiveControllerID),
		Clients: make([]harn.LiveClient, len(c.Clients))}
	if c.Client != nil {
		w := c.Client.Wire()
		out.Client = &w
	}
	for i, cl := range c.Clients {
		out.Clients[i] = cl.Wire()
	}
	return out
}

// MarshalJSON encodes c as the result of the four methods (Wire).
func (c Change) MarshalJSON() ([]byte, error) { return json.Marshal(c.Wire()) }

// Update is the live_session_client session/update Harn emits for c
// before it answers: the action and, as state, the result document. Its
// error is the encoder's (an action outside the closed list).
func (c Change) Update(session acp.SessionID) (*acp.SessionNotification, error) {
	return harn.SessionUpdate{LiveSessionClient: &harn.LiveSessionClientUpdate{
		Meta: harn.LiveSessionClientUpdateMeta{Harn: harn.LiveSessionClient{Action: c.Action, State: *c.Wire()}}}}.Notification(session)
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Sentinel errors; every *Error matches exactly one.
var (
	// ErrInvalidClientID: the client id is missing or blank.
	ErrInvalidClientID = errors.New("live: client id required")
	// ErrUnsupportedMode: a mode other than observer and controller.
	ErrUnsupportedMode = errors.New("live: unsupported mode")
	// ErrControllerConflict: another client is the controller and the
	// attach did not ask for takeover.
	ErrControllerConflict = errors.New("live: session already has a controller")
	// ErrNotAttached: no attached client has that id.
	ErrNotAttached = errors.New("live: client not attached")
	// ErrNotController: the client is not the active controller.
	ErrNotController = errors.New("live: client is not the active controller")
	// ErrNotPermitted: the controller did not get the capability asked for
	// (it attached with promptInjection or permissionRouting false).
	ErrNotPermitted = errors.New("live: controller lacks the capability")
	// ErrTooManyClients: the attach or heartbeat would pass
	// Options.MaxClients or Options.MaxBytes.
	ErrTooManyClients = errors.New("live: too many clients")
)

// Error is a refused operation.
type Error struct {
	// Method is the wire method the operation serves.
	Method   string
	ClientID string
	// Controller is the active controller, for ErrControllerConflict.
	Controller string
	// Mode is the refused mode, for ErrUnsupportedMode.
	Mode string
	// Capability is what was asked for, for ErrNotPermitted.
	Capability Capability
	// Err is the sentinel.
	Err error
}

// Error returns Harn's message for the refusal.
func (e *Error) Error() string {
	id := rpc.Truncate(e.ClientID, rpc.MaxEcho)
	switch e.Err {
	case ErrInvalidClientID:
		return e.Method + " requires clientId"
	case ErrUnsupportedMode:
		return fmt.Sprintf("%s: unsupported mode `%s`; expected `observer` or `controller`", e.Method, rpc.Truncate(e.Mode, rpc.MaxEcho))
	case ErrControllerConflict:
		return fmt.Sprintf("live session already has controller '%s'", rpc.Truncate(e.Controller, rpc.MaxEcho))
	case ErrNotAttached:
		return fmt.Sprintf("live client '%s' is not attached", id)
	case ErrNotController:
		return fmt.Sprintf("live client '%s' is not the active controller", id)
	case ErrNotPermitted:
		return fmt.Sprintf("live client '%s' cannot %s for this session", id, e.Capability.verb())
	case ErrTooManyClients:
		return fmt.Sprintf("live session cannot hold client '%s': too many clients attached, or too much of their metadata", id)
	}
	return "live: " + e.Err.Error()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// RPCError is Harn's answer: -32602 with the error's message.
func (e *Error) RPCError() *rpc.Error { return rpc.NewError(rpc.CodeInvalidParams, e.Error(), nil) }

// Capability is what only the active controller may do.
type Capability int

// The capabilities Authorize checks.
const (
	PromptInjection Capability = iota + 1
	PermissionRouting
)

func (c Capability) verb() string {
	if c == PermissionRouting {
		return "route permissions"
	}
	return "inject prompts"
}

// AttachRequest is session/attach.
type AttachRequest struct {
	ClientID string
	// Mode is Observer when empty.
	Mode Mode
	// Takeover demotes a current controller instead of failing.
	Takeover bool
	// PromptInjection and PermissionRouting default, when nil, to whether
	// Mode is Controller.
	PromptInjection   *bool
	PermissionRouting *bool
	// Metadata is stored as given; none stores {}.
	Metadata jsontext.Value
}

// Options configures a Registry. The zero value is ready to use.
type Options struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Expiry, when positive, detaches with reason client_exit every client
	// last seen longer ago: at the start of every operation and query, and
	// at each Sweep.
	Expiry time.Duration
	// OnChange, when set, receives every change in order, expirations
	// included. It runs with the Registry locked and must not call it.
	OnChange func(Change)
	// MaxClients and MaxBytes bound the clients attached, in number and
	// in bytes (their ids and metadata, plus a little per client): an
	// attach or heartbeat beyond them fails with ErrTooManyClients. Zero
	// means DefaultMaxClients, DefaultMaxBytes.
	MaxClients, MaxBytes int
}

// Defaults of Options.
const (
	DefaultMaxClients = 256
	DefaultMaxBytes   = 4 << 20
)

// Registry is one live session's clients.
type Registry struct {
	opts Options

	mu         sync.Mutex
	clients    map[string]*Client
	controller string
}

// New returns an empty Registry.
func New(opts *Options) *Registry {
	r := &Registry{clients: map[string]*Client{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	if r.opts.MaxClients <= 0 {
		r.opts.MaxClients = DefaultMaxClients
	}
	if r.opts.MaxBytes <= 0 {
		r.opts.MaxBytes = DefaultMaxBytes
	}
	return r
}

// clientOverhead is what a client costs besides its id and metadata.
const clientOverhead = 256

func clientSize(id string, metadata jsontext.Value) int {
	return clientOverhead + len(id) + len(metadata)
}

// room refuses a client of n bytes, in place of replacing (nil for a new
// one), when the clients would pass the bounds.
func (r *Registry) room(method, id string, replacing *Client, n int) error {
	count, total := len(r.clients), n
	if replacing == nil {
		count++
	}
	for _, c := range r.clients {
		if c != replacing {
			total += clientSize(c.ID, c.Metadata)
		}
	}
	if count > r.opts.MaxClients || total > r.opts.MaxBytes {
		return &Error{Method: method, ClientID: id, Err: ErrTooManyClients}
	}
	return nil
}

func validID(method, id string) error {
	if strings.TrimSpace(id) == "" {
		return &Error{Method: method, Err: ErrInvalidClientID}
	}
	return nil
}

// Attach attaches (or re-attaches) a client.
func (r *Registry) Attach(req AttachRequest) (Change, error) {
	return r.attach(MethodAttach, ActionAttached, req)
}

// Takeover makes the client the controller with prompt injection and
// permission routing, demoting the current controller; a client not yet
// attached is attached.
func (r *Registry) Takeover(clientID string, metadata jsontext.Value) (Change, error) {
	yes := true
	return r.attach(MethodTakeover, ActionTakeover, AttachRequest{ClientID: clientID, Mode: Controller, Takeover: true,
		PromptInjection: &yes, PermissionRouting: &yes, Metadata: metadata})
}

func (r *Registry) attach(method string, action Action, req AttachRequest) (Change, error) {
	if err := validID(method, req.ClientID); err != nil {
		return Change{}, err
	}
	mode, err := ParseMode(string(req.Mode))
	if err != nil {
		e := err.(*Error)
		e.Method = method
		return Change{}, e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	r.expire(now)
	prev := r.controller
	id := req.ClientID
	if err := r.room(method, id, r.clients[id], clientSize(id, req.Metadata)); err != nil {
		return Change{}, err
	}
	if mode == Controller {
		if prev != "" && prev != id {
			if !req.Takeover {
				return Change{}, &Error{Method: method, ClientID: id, Controller: prev, Err: ErrControllerConflict}
			}
			old := r.clients[prev]
			old.Mode, old.PromptInjection, old.PermissionRouting, old.LastSeenAt = Observer, false, false, now
		}
		r.controller = id
	} else if prev == id {
		r.controller = ""
	}
	c := &Client{ID: id, Mode: mode, AttachedAt: now, LastSeenAt: now,
		PromptInjection: flag(req.PromptInjection, mode == Controller), PermissionRouting: flag(req.PermissionRouting, mode == Controller),
		Metadata: metadataOrEmpty(req.Metadata)}
	if old, ok := r.clients[id]; ok {
		c.AttachedAt = old.AttachedAt
	}
	r.clients[id] = c
	return r.emit(Change{Action: action, Client: c, ClientID: id, PreviousControllerID: prev}), nil
}

func flag(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func metadataOrEmpty(md jsontext.Value) jsontext.Value {
	if isNull(md) {
		return jsontext.Value("{}")
	}
	return bytes.Clone(md)
}

func isNull(v jsontext.Value) bool { return len(v) == 0 || v.Kind() == 'n' }

// Detach removes a client, releasing control if it was the controller.
// An empty reason records ReasonClientDetached; brokers that saw the
// client's connection drop pass ReasonClientExit.
func (r *Registry) Detach(clientID, reason string, metadata jsontext.Value) (Change, error) {
	if err := validID(MethodDetach, clientID); err != nil {
		return Change{}, err
	}
	if reason == "" {
		reason = ReasonClientDetached
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	if _, ok := r.clients[clientID]; !ok {
		return Change{}, &Error{Method: MethodDetach, ClientID: clientID, Err: ErrNotAttached}
	}
	return r.detach(clientID, reason, metadata), nil
}

func (r *Registry) detach(id, reason string, metadata jsontext.Value) Change {
	prev := r.controller
	delete(r.clients, id)
	if r.controller == id {
		r.controller = ""
	}
	var md jsontext.Value
	if len(metadata) > 0 {
		md = bytes.Clone(metadata)
	}
	return r.emit(Change{Action: ActionDetached, ClientID: id, PreviousControllerID: prev, Reason: reason, Metadata: md})
}

// Heartbeat refreshes a client's last-seen time and, when metadata is given
// (not absent, not null), replaces its metadata.
func (r *Registry) Heartbeat(clientID string, metadata jsontext.Value) (Change, error) {
	if err := validID(MethodHeartbeat, clientID); err != nil {
		return Change{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	r.expire(now)
	c, ok := r.clients[clientID]
	if !ok {
		return Change{}, &Error{Method: MethodHeartbeat, ClientID: clientID, Err: ErrNotAttached}
	}
	var md jsontext.Value
	if !isNull(metadata) {
		if err := r.room(MethodHeartbeat, clientID, c, clientSize(clientID, metadata)); err != nil {
			return Change{}, err
		}
		c.Metadata = bytes.Clone(metadata)
		md = c.Metadata
	}
	c.LastSeenAt = now
	return r.emit(Change{Action: ActionHeartbeat, Client: c, ClientID: clientID, PreviousControllerID: r.controller, Metadata: md}), nil
}

// emit completes ch with the current state, copies what it shares, and
// hands it to OnChange.
func (r *Registry) emit(ch Change) Change {
	if ch.Client != nil {
		c := ch.Client.clone()
		ch.Client = &c
	}
	ch.ActiveControllerID = r.controller
	ch.Clients = r.list()
	if r.opts.OnChange != nil {
		r.opts.OnChange(ch)
	}
	return ch
}

func (r *Registry) list() []Client {
	out := make([]Client, 0, len(r.clients))
	for _, c := range r.clients {
		out = append(out, c.clone())
	}
	slices.SortFunc(out, func(a, b Client) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// expire detaches clients not seen within Expiry, oldest first.
func (r *Registry) expire(now time.Time) []Change {
	if r.opts.Expiry <= 0 {
		return nil
	}
	var gone []*Client
	for _, c := range r.clients {
		if now.Sub(c.LastSeenAt) > r.opts.Expiry {
			gone = append(gone, c)
		}
	}
	slices.SortFunc(gone, func(a, b *Client) int {
		if c := a.LastSeenAt.Compare(b.LastSeenAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var changes []Change
	for _, c := range gone {
		changes = append(changes, r.detach(c.ID, ReasonClientExit, nil))
	}
	return changes
}

// Sweep detaches, with reason client_exit, the clients whose heartbeats
// stopped (see Options.Expiry), and returns those changes.
func (r *Registry) Sweep() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expire(r.opts.Now())
}

// Run calls Sweep every interval until ctx ends, then returns ctx's error.
// The expirations reach Options.OnChange.
func (r *Registry) Run(ctx context.Context, every time.Duration) error {
	return tick(ctx, every, func() { r.Sweep() })
}

// tick calls f every interval until ctx ends, then returns ctx's error.
func tick(ctx context.Context, every time.Duration, f func()) error {
	if every <= 0 {
		return errors.New("live: Run needs a positive interval")
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			f()
		}
	}
}

// Clients returns the attached clients by id: session/live_clients' data.
func (r *Registry) Clients() []Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	return r.list()
}

// Controller returns the active controller, if there is one.
func (r *Registry) Controller() (Client, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	if r.controller == "" {
		return Client{}, false
	}
	return r.clients[r.controller].clone(), true
}

// Authorize checks that clientID is the active controller and holds
// capability: the gate for injecting a user prompt or routing a permission
// request from a live client. It returns the controller.
func (r *Registry) Authorize(clientID string, capability Capability) (Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	if r.controller != clientID || clientID == "" {
		return Client{}, &Error{ClientID: clientID, Capability: capability, Err: ErrNotController}
	}
	c := r.clients[clientID]
	if (capability == PromptInjection && !c.PromptInjection) || (capability == PermissionRouting && !c.PermissionRouting) {
		return Client{}, &Error{ClientID: clientID, Capability: capability, Err: ErrNotPermitted}
	}
	return c.clone(), nil
}
