// Package permission decides ACP session/request_permission requests so that
// they fail closed, on both sides of the wire.
//
// # What grants
//
// Exactly one answer grants a Harn tool call:
//
//	{"outcome": {"outcome": "selected", "optionId": "allow"}}
//
// What counts is the selected option's id, compared byte for byte with
// "allow". An option's kind grants nothing by itself: selecting an option
// whose kind is allow_once or allow_always but whose id is not "allow" is a
// deny, as is selecting "reject", a cancelled outcome, an outcome this
// version does not know, a missing answer and any error. This is the seed's
// rule (a Harn runtime offers the options "allow" and "reject" and honours
// only the first) and the newest runtime's, which no longer accepts the
// legacy {"granted": true} answer. [Granted] and [Check] apply it for a
// runtime reading its host's answer.
//
// # The host side
//
// A [Gate] turns a decision function into an acp.ClientHandlers
// SessionRequestPermission handler that never answers with an error and
// never grants by accident: a decision function that returns an error,
// panics, or outlives [Options.Timeout] produces a deny; a request whose
// context ends (the connection closes, the agent cancels it) or whose
// session the host cancels with [Gate.CancelSession] is answered with the
// cancelled outcome, as ACP requires after session/cancel.
//
//	gate := permission.New(func(ctx context.Context, req *acp.RequestPermissionRequest) (permission.Decision, error) {
//		return permission.Decision{Allow: policy.Allows(req)}, nil
//	}, &permission.Options{Timeout: time.Minute})
//	handlers := &acp.ClientHandlers{SessionRequestPermission: gate.Handle}
//
// [Answer] is the pure mapping from a [Decision] to the response document.
// A denial never selects an option that could read as a grant
// ([GrantLike]: an allow kind, or an id such as "allow" or "approved"
// under a reject kind); when the agent offers no safe reject option it
// answers cancelled, which Harn and every ACP agent take as not granted.
//
// # Policies
//
// A [Policy] is the one permission rule every host uses: an ordered list
// of [Rule]s (tools, kinds, workspace paths, commands; the first that
// matches decides, and what none allows is denied), in the JSON form of a
// policy file's "permissions". It decides a [Call], built by [NewCall] from
// the request merged with what a [Tracker] kept of the tool call's earlier
// tool_call and tool_call_update notifications (kind, title, locations,
// raw input), so that an agent that leaves the kind out of its request
// (claude-code-acp) is decided on the whole call. Rules fail closed: an
// allow rule with paths needs every declared path inside the workspace
// and matching; a deny rule with paths sees every path-like string in the
// raw input (any key, nested, words of longer strings) and the locations,
// and matches any outside the workspace; a call that names more than
// [Policy.MaxPaths] of them, or whose tracked state outgrew the Tracker's
// bounds, is denied unread. Deciding takes time linear in the call's size.
//
//	policy := &permission.Policy{Rules: rules, Resolve: permission.Workspace(root)}
//	tracker := permission.NewTracker(nil)
//	gate := permission.New(policy.DecideFunc(tracker), nil)
//	// in the SessionUpdate handler: tracker.Observe(n)
package permission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/go-json-experiment/json/jsontext"
)

// The option ids a Harn runtime offers. Only AllowOptionID grants.
const (
	AllowOptionID  acp.PermissionOptionID = "allow"
	RejectOptionID acp.PermissionOptionID = "reject"
)

// Granted reports whether resp grants the call: it selects the option
// "allow". A nil resp grants nothing.
func Granted(resp *acp.RequestPermissionResponse) bool {
	return resp != nil && resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionID == AllowOptionID
}

// Errors of Check; a *DeniedError matches ErrDenied, and also ErrCancelled
// when the outcome was "cancelled".
var (
	ErrDenied    = errors.New("permission denied")
	ErrCancelled = errors.New("permission request cancelled")
)

// DeniedError says why a permission request did not grant.
type DeniedError struct {
	// Outcome is the answer's outcome tag ("selected", "cancelled", or an
	// unknown one kept as sent); empty when there was no answer.
	Outcome string
	// OptionID is the selected option, when Outcome is "selected".
	OptionID acp.PermissionOptionID
	// Reason is the answer's top-level "reason" member, when it has a string
	// one (Harn uses it as the denial reason).
	Reason string
	// Err is the error the request failed with (a JSON-RPC error, a closed
	// connection, a context error); nil when the host answered.
	Err error
}

func (e *DeniedError) Error() string {
	switch {
	case e.Err != nil:
		return "permission denied: request failed: " + e.Err.Error()
	case e.Outcome == "selected":
		msg := fmt.Sprintf("permission denied: option %q selected", e.OptionID)
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		return msg
	case e.Outcome == "":
		return "permission denied: no answer"
	}
	msg := "permission denied: outcome " + e.Outcome
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is matches ErrDenied, and ErrCancelled for a cancelled outcome.
func (e *DeniedError) Is(target error) bool {
	return target == ErrDenied || (target == ErrCancelled && e.Outcome == "cancelled")
}

// Unwrap returns the error the request failed with.
func (e *DeniedError) Unwrap() error { return e.Err }

// Check is the runtime's reading of a session/request_permission call: pass
// it the call's result and error. It returns nil only when the call
// succeeded and Granted(resp) holds; otherwise a *DeniedError, so that an
// unimplemented method, an error answer, a cancellation or a closed
// connection all deny.
func Check(resp *acp.RequestPermissionResponse, err error) error {
	if err != nil {
		return &DeniedError{Err: err}
	}
	if Granted(resp) {
		return nil
	}
	d := &DeniedError{}
	if resp == nil {
		return d
	}
	d.Outcome = resp.Outcome.Tag()
	if resp.Outcome.Selected != nil {
		d.OptionID = resp.Outcome.Selected.OptionID
	}
	if raw, ok := resp.Extra.Get("reason"); ok && raw.Kind() == '"' {
		if b, err := jsontext.AppendUnquote(nil, raw); err == nil {
			d.Reason = string(b)
		}
	}
	return d
}

// Decision is what a host decided for one request. The zero Decision
// denies.
type Decision struct {
	// Allow grants the call. The answer selects OptionID if set, else the
	// option "allow"; either must be one the agent offered and must not be
	// a reject option, or the answer denies instead. GrantOption finds a
	// plain ACP agent's one-time grant.
	Allow bool
	// OptionID optionally names the offered option to select: for an
	// agent whose grant option is not called "allow" (a plain ACP agent),
	// or to choose among several reject options.
	OptionID acp.PermissionOptionID
	// Reason is written as the answer's top-level "reason" member when the
	// answer denies (Harn records it as the denial reason); empty writes
	// none. The member is Harn's: ACP defines none, so a Gate or a Host
	// sends it only to a peer that advertised Harn's extensions
	// (Options.HarnPeer, Host.HarnPeer).
	Reason string
}

// ForPeer returns resp as it may go to its peer: unchanged for a Harn
// runtime (harn), and without Harn's root "reason" member for a plain ACP
// agent, which the member's absence from ACP's schema would make a member
// it does not know.
func ForPeer(resp *acp.RequestPermissionResponse, harn bool) *acp.RequestPermissionResponse {
	if !harn && resp != nil {
		resp.Extra.Delete("reason")
	}
	return resp
}

// Answer maps d onto the options req offers and returns the response to
// send. A grant selects the chosen allow option (see Decision.Allow). A deny never selects an
// option that could read as a grant (GrantLike: an allow kind, or an id
// such as "allow" or "approved", whatever its kind says); it selects, in
// this order, OptionID if it is an offered reject option, the offered
// option "reject", the first offered option of kind reject_once, then of
// kind reject_always; when req offers none of these it answers with the
// cancelled outcome, which Harn and every ACP agent treat as not granted.
func Answer(req *acp.RequestPermissionRequest, d Decision) *acp.RequestPermissionResponse {
	var options []acp.PermissionOption
	if req != nil {
		options = req.Options
	}
	if d.Allow {
		want := d.OptionID
		if want == "" {
			want = AllowOptionID
		}
		if o, ok := find(options, want); ok && !isReject(o.Kind) {
			return selected(want, "")
		}
		reason := fmt.Sprintf("host granted option %q, which the agent did not offer as a grant", want)
		if d.Reason != "" {
			reason = d.Reason
		}
		d = Decision{Reason: reason}
	}
	return deny(options, d.OptionID, d.Reason)
}

// Cancelled returns the cancelled outcome, {"outcome":{"outcome":"cancelled"}}.
func Cancelled() *acp.RequestPermissionResponse {
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}

func deny(options []acp.PermissionOption, prefer acp.PermissionOptionID, reason string) *acp.RequestPermissionResponse {
	pick := func() (acp.PermissionOptionID, bool) {
		if o, ok := find(options, prefer); ok && prefer != "" && isReject(o.Kind) && !GrantLike(o) {
			return prefer, true
		}
		if o, ok := find(options, RejectOptionID); ok && !GrantLike(o) {
			return RejectOptionID, true
		}
		for _, kind := range []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways} {
			for _, o := range options {
				if o.Kind == kind && !GrantLike(o) {
					return o.OptionID, true
				}
			}
		}
		return "", false
	}
	if id, ok := pick(); ok {
		return selected(id, reason)
	}
	resp := Cancelled()
	setReason(resp, reason)
	return resp
}

// GrantOption returns the option a grant of req should select: "allow"
// when offered (Harn's), else the first offered option of kind
// allow_once; never a standing (allow_always) grant. ok is false when req
// offers neither.
func GrantOption(req *acp.RequestPermissionRequest) (id acp.PermissionOptionID, ok bool) {
	if req == nil {
		return "", false
	}
	if o, found := find(req.Options, AllowOptionID); found && !isReject(o.Kind) {
		return AllowOptionID, true
	}
	for _, o := range req.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return o.OptionID, true
		}
	}
	return "", false
}

// grantWords are words that make an option id read as a grant to some
// reader: Harn grants "allow" byte for byte, other agents name their grant
// options approved, approved-for-session, allow_always, yes, ...
var grantWords = []string{"allow", "approv", "grant", "accept", "permit", "proceed", "confirm", "yes", "agree", "authori", "trust", "continue"}

// GrantLike reports whether selecting o could be read as a grant, so that
// a denial must never select it: its kind is allow_once or allow_always,
// or its id, lower-cased, contains a grant word (allow, approv, grant,
// accept, permit, proceed, confirm, yes, ...) or is "y", "ok", "okay",
// "true", "1" or "run". "disallow" reads as a grant by this rule too: a
// denial that finds no option it can safely select answers cancelled,
// which every reader takes as not granted.
func GrantLike(o acp.PermissionOption) bool {
	if isAllow(o.Kind) {
		return true
	}
	id := strings.ToLower(strings.TrimSpace(string(o.OptionID)))
	switch id {
	case "y", "ok", "okay", "true", "1", "run", "go", "":
		return true
	}
	return slices.ContainsFunc(grantWords, func(w string) bool { return strings.Contains(id, w) })
}

func selected(id acp.PermissionOptionID, reason string) *acp.RequestPermissionResponse {
	resp := &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: id}}}
	setReason(resp, reason)
	return resp
}

func setReason(resp *acp.RequestPermissionResponse, reason string) {
	if reason == "" {
		return
	}
	v, err := jsontext.AppendQuote(nil, reason)
	if err != nil { // invalid UTF-8: the reason is dropped rather than sent mangled
		return
	}
	resp.Extra.Set("reason", v)
}

func find(options []acp.PermissionOption, id acp.PermissionOptionID) (acp.PermissionOption, bool) {
	for _, o := range options {
		if o.OptionID == id {
			return o, true
		}
	}
	return acp.PermissionOption{}, false
}

func isReject(k acp.PermissionOptionKind) bool {
	return k == acp.PermissionOptionKindRejectOnce || k == acp.PermissionOptionKindRejectAlways
}

func isAllow(k acp.PermissionOptionKind) bool {
	return k == acp.PermissionOptionKindAllowOnce || k == acp.PermissionOptionKindAllowAlways
}

// DecideFunc decides one permission request. It should return when ctx
// ends; a Gate answers at once anyway.
type DecideFunc func(ctx context.Context, req *acp.RequestPermissionRequest) (Decision, error)

// Options configures a Gate. The zero value is ready to use.
type Options struct {
	// Timeout bounds each decision; when it passes the request is denied.
	// Zero means no bound other than the request's context (a person may
	// take as long as they like, as in Harn's newest runtime).
	Timeout time.Duration
	// Logger receives one record per decision that failed (error, panic,
	// timeout). Nil means slog.Default().
	Logger *slog.Logger
	// HarnPeer reports whether the peer advertised Harn's extension
	// contract (agentCapabilities._meta.harn): only then does a denial
	// carry the root "reason" member (ForPeer). Nil means it did not.
	HarnPeer func() bool
}

// Reasons a Gate writes when a decision failed.
const (
	ReasonFailed  = "host permission handler failed"
	ReasonPanic   = "host permission handler panicked"
	ReasonTimeout = "host permission decision timed out"
)

// Gate serves session/request_permission with a DecideFunc, failing closed.
// It is safe for concurrent use.
type Gate struct {
	decide DecideFunc
	opts   Options

	mu      sync.Mutex
	pending map[acp.SessionID]map[*pendingReq]struct{}
}

type pendingReq struct {
	cancel context.CancelFunc
	// byHost is set under Gate.mu when CancelSession ends the request.
	byHost bool
}

// New returns a Gate that asks decide. A nil decide denies everything.
func New(decide DecideFunc, opts *Options) *Gate {
	g := &Gate{decide: decide, pending: map[acp.SessionID]map[*pendingReq]struct{}{}}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Logger == nil {
		g.opts.Logger = slog.Default()
	}
	return g
}

// Handle answers one request; it has the type of
// acp.ClientHandlers.SessionRequestPermission and never returns an error.
func (g *Gate) Handle(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	res, err := g.handle(ctx, req)
	return ForPeer(res, g.opts.HarnPeer != nil && g.opts.HarnPeer()), err
}

func (g *Gate) handle(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	if req == nil {
		return Cancelled(), nil
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pendingReq{cancel: cancel}
	g.track(req.SessionID, p)
	defer g.untrack(req.SessionID, p)

	var timeout <-chan time.Time
	if g.opts.Timeout > 0 {
		t := time.NewTimer(g.opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}

	type result struct {
		d     Decision
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r = result{panic: v}
			}
			done <- r
		}()
		if g.decide == nil {
			r.d = Decision{}
			return
		}
		r.d, r.err = g.decide(dctx, req)
	}()

	select {
	case r := <-done:
		switch {
		case r.panic != nil:
			g.opts.Logger.Error("permission: decision panicked; denying", "session", string(req.SessionID), "panic", fmt.Sprint(r.panic))
			return Answer(req, Decision{Reason: ReasonPanic}), nil
		case r.err != nil:
			if g.endedByCancel(ctx, p) {
				return Cancelled(), nil
			}
			g.opts.Logger.Warn("permission: decision failed; denying", "session", string(req.SessionID), "err", r.err)
			return Answer(req, Decision{Reason: ReasonFailed}), nil
		case g.endedByCancel(ctx, p):
			// The decision raced with a cancellation: the cancel wins, so a
			// grant made after the prompt was cancelled is never sent.
			return Cancelled(), nil
		}
		return Answer(req, r.d), nil
	case <-dctx.Done():
		return Cancelled(), nil
	case <-timeout:
		cancel()
		g.opts.Logger.Warn("permission: decision timed out; denying", "session", string(req.SessionID), "timeout", g.opts.Timeout)
		return Answer(req, Decision{Reason: ReasonTimeout}), nil
	}
}

// endedByCancel reports whether the request was cancelled by its context or
// by CancelSession (as opposed to a decision that simply failed).
func (g *Gate) endedByCancel(ctx context.Context, p *pendingReq) bool {
	if ctx.Err() != nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return p.byHost
}

// CancelSession answers every pending request of session with the cancelled
// outcome, as ACP requires of a client that sends session/cancel, and
// returns how many it ended. Decision functions see their context end.
func (g *Gate) CancelSession(session acp.SessionID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for p := range g.pending[session] {
		if !p.byHost {
			p.byHost = true
			p.cancel()
			n++
		}
	}
	return n
}

// Pending returns how many requests of session await a decision.
func (g *Gate) Pending(session acp.SessionID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending[session])
}

func (g *Gate) track(s acp.SessionID, p *pendingReq) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.pending[s]
	if m == nil {
		m = map[*pendingReq]struct{}{}
		g.pending[s] = m
	}
	m[p] = struct{}{}
}

func (g *Gate) untrack(s acp.SessionID, p *pendingReq) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pending[s], p)
	if len(g.pending[s]) == 0 {
		delete(g.pending, s)
	}
}
