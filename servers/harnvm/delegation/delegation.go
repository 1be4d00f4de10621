// Package delegation is the reference guard for Harn's external-agent
// delegation: paid or autonomous work handed to an external A2A peer over
// the extension methods _harn/externalAgent.plan and
// _harn/externalAgent.dispatch (seed, "External-agent delegation").
//
// A [Guard] enforces the safe sequence, whatever the [Peer] transport:
//
//  1. The request needs a budget with at least one positive cap and an
//     idempotency key; otherwise it fails with an invalid_request error and
//     no peer is contacted.
//  2. The peer must prove budget_cap, idempotency, reviewable_handoff and
//     dispatch support (its Agent Card, read by [ParseCapabilities]) before
//     any paid work; otherwise the envelope is "refused".
//  3. A pre-dispatch checkpoint is fetched (_harn/externalAgent.plan), or
//     synthesised locally when the host allows a local fallback, and the
//     envelope is "checkpoint_required" until the request says the
//     checkpoint is approved. A peer that can give no checkpoint is refused.
//  4. Dispatch happens only after approval, with the same idempotency key
//     and the checkpoint already shown. A repeat of a finished delegation
//     returns "replayed" without another dispatch.
//  5. Usage reported above a cap gives "budget_exceeded", a reviewable
//     envelope rather than a clean "completed".
//
// Failures are *[Error]s, whose JSON is Harn's
// {"error":"external_agent_error","kind":…,"category":…,"message":…}.
//
// The wire shapes are gen/externalagent's: [Budget], [Usage], [Status],
// [Kind] and [Source] are its types, [PlanParams] and [DispatchParams]
// return its params, and the checkpoint, envelope, advertisement and error
// encode through it (the Wire methods). The readers of what a peer sends
// ([ParseCapabilities], [ParseCheckpoint], [ParseUsage]) accept the
// aliases Harn accepts.
//
// The Guard remembers each idempotency key's envelope (bounded by
// [Options.MaxEntries]) and is safe for concurrent use: concurrent
// delegations with one key run one at a time, so a key is dispatched at
// most once while remembered.
package delegation

import (
	"bytes"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/bridgekit/bridgekit/gen/externalagent"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Schema ids and method names of the contract.
const (
	Schema         = "harn.external_agent.v1"
	HandoffSchema  = "harn.external_agent.handoff.v1"
	MethodPlan     = "_harn/externalAgent.plan"
	MethodDispatch = "_harn/externalAgent.dispatch"
)

// Budget caps a delegation: gen/externalagent's type, whose null or absent
// members are no cap.
type Budget = externalagent.Budget

// HasCap reports whether b has at least one positive cap.
func HasCap(b Budget) bool {
	pos := func(n wire.Nullable[int64]) bool { v, ok := n.Get(); return ok && v > 0 }
	usd, ok := b.MaxUSD.Get()
	return (ok && usd > 0) || pos(b.MaxTokens) || pos(b.MaxSeconds) || pos(b.MaxToolCalls)
}

// ValidateBudget requires a positive cap, a finite, non-negative max_usd
// and non-negative counts.
func ValidateBudget(b Budget) error {
	if usd, ok := b.MaxUSD.Get(); ok && (math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0) {
		return invalid("budget max_usd must be a finite, non-negative number")
	}
	for name, n := range map[string]wire.Nullable[int64]{"max_tokens": b.MaxTokens, "max_seconds": b.MaxSeconds, "max_tool_calls": b.MaxToolCalls} {
		if v, ok := n.Get(); ok && v < 0 {
			return invalid("budget " + name + " must not be negative")
		}
	}
	if !HasCap(b) {
		return invalid("budget must include at least one positive cap")
	}
	return nil
}

// Exceeded reports whether u is over any cap of b.
func Exceeded(b Budget, u Usage) bool {
	over := func(limit wire.Nullable[int64], used *int64) bool {
		v, ok := limit.Get()
		return ok && used != nil && *used > v
	}
	usd, ok := b.MaxUSD.Get()
	return (ok && u.USD != nil && *u.USD > usd) ||
		over(b.MaxTokens, u.Tokens) || over(b.MaxSeconds, u.Seconds) || over(b.MaxToolCalls, u.ToolCalls)
}

func cloneBudget(b Budget) Budget {
	b.Extra = cloneExtras(b.Extra)
	return b
}

func cloneExtras(x wire.Extras) wire.Extras {
	if x == nil {
		return nil
	}
	out := make(wire.Extras, len(x))
	for i, m := range x {
		out[i] = wire.Member{Name: m.Name, Value: bytes.Clone(m.Value)}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Usage is what a peer reports it spent: gen/externalagent's budget_used,
// whose nil members were not reported.
type Usage = externalagent.BudgetUsed

var usageAliases = map[string][]string{
	"usd":        {"usd", "max_usd", "dollars", "cost_usd"},
	"tokens":     {"tokens", "max_tokens", "token_count"},
	"seconds":    {"seconds", "max_seconds", "duration_seconds"},
	"tool_calls": {"tool_calls", "max_tool_calls"},
}

// ParseUsage reads the usage a dispatch result reports, from budget_used,
// budget.used or usage, accepting Harn's aliases (max_usd, dollars,
// cost_usd; max_tokens, token_count; max_seconds, duration_seconds;
// max_tool_calls). It returns nil when none is reported, and an error when
// the report is not an object of non-negative numbers (counts integral).
func ParseUsage(result jsontext.Value) (*Usage, error) {
	m, _ := object(result)
	raw, ok := m["budget_used"]
	if !ok {
		if b, isObj := object(m["budget"]); isObj {
			raw, ok = b["used"]
		}
	}
	if !ok {
		raw, ok = m["usage"]
	}
	if !ok || raw.Kind() == 'n' {
		return nil, nil
	}
	u, isObj := object(raw)
	if !isObj {
		return nil, errors.New("usage is not an object")
	}
	first := func(name string) (jsontext.Value, string) {
		for _, alias := range usageAliases[name] {
			if v, ok := u[alias]; ok && v.Kind() != 'n' {
				return v, alias
			}
		}
		return nil, ""
	}
	var out Usage
	if v, alias := first("usd"); v != nil {
		var f float64
		if v.Kind() != '0' || json.Unmarshal(v, &f) != nil || f < 0 {
			return nil, fmt.Errorf("usage %s is not a non-negative number", alias)
		}
		out.USD = &f
	}
	for name, dst := range map[string]**int64{"tokens": &out.Tokens, "seconds": &out.Seconds, "tool_calls": &out.ToolCalls} {
		if v, alias := first(name); v != nil {
			var n int64
			if v.Kind() != '0' || json.Unmarshal(v, &n) != nil || n < 0 {
				return nil, fmt.Errorf("usage %s is not a non-negative integer", alias)
			}
			*dst = &n
		}
	}
	return &out, nil
}

// Capabilities is a peer's harn.external_agent.v1 advertisement, as
// ParseCapabilities reads it from any of the places and spellings Harn
// accepts.
type Capabilities struct {
	// Schema is the advertised schema id, as given ("" when none).
	Schema                string
	PreDispatchCheckpoint bool
	BudgetCap             bool
	Idempotency           bool
	ReviewableHandoff     bool
	Dispatch              bool
	Operations            []string
}

// Wire is c as gen/externalagent's Capability, the contract's canonical
// advertisement (schema harn.external_agent.v1, snake_case flags).
func (c Capabilities) Wire() externalagent.Capability {
	return externalagent.Capability{PreDispatchCheckpoint: &c.PreDispatchCheckpoint, BudgetCap: &c.BudgetCap, Idempotency: &c.Idempotency,
		ReviewableHandoff: &c.ReviewableHandoff, Dispatch: &c.Dispatch, Operations: nonNil(slices.Clone(c.Operations))}
}

// MarshalJSON encodes c as the canonical advertisement (Wire).
func (c Capabilities) MarshalJSON() ([]byte, error) { return json.Marshal(c.Wire()) }

// Missing lists what a dispatch requires that c lacks: dispatch,
// budget_cap, idempotency, reviewable_handoff, in that order.
func (c Capabilities) Missing() []string {
	var out []string
	for _, f := range []struct {
		ok   bool
		name string
	}{{c.Dispatch, "dispatch"}, {c.BudgetCap, "budget_cap"}, {c.Idempotency, "idempotency"}, {c.ReviewableHandoff, "reviewable_handoff"}} {
		if !f.ok {
			out = append(out, f.name)
		}
	}
	return out
}

func (c Capabilities) clone() Capabilities {
	c.Operations = slices.Clone(c.Operations)
	return c
}

// ParseCapabilities reads the external-agent advertisement from an A2A
// Agent Card: the object at _meta.harn.externalAgent,
// capabilities._meta.harn.externalAgent or capabilities.externalAgent (the
// first found; external_agent is accepted for externalAgent), with the
// camelCase aliases Harn accepts (preDispatchCheckpoint, budgetCap,
// reviewableHandoff, ...). Advertised operations imply the matching flags:
// _harn/externalAgent.plan a pre-dispatch checkpoint,
// _harn/externalAgent.dispatch dispatch. A card without an advertisement
// gives zero Capabilities (every requirement missing); a card that is not
// an object is an error.
func ParseCapabilities(card jsontext.Value) (Capabilities, error) {
	root, ok := object(card)
	if !ok {
		return Capabilities{}, errors.New("agent card is not a JSON object")
	}
	var adv map[string]jsontext.Value
	for _, path := range [][]string{
		{"_meta", "harn", "externalAgent"}, {"_meta", "harn", "external_agent"},
		{"capabilities", "_meta", "harn", "externalAgent"}, {"capabilities", "_meta", "harn", "external_agent"},
		{"capabilities", "externalAgent"}, {"capabilities", "external_agent"},
	} {
		if m, ok := objectAt(root, path...); ok {
			adv = m
			break
		}
	}
	var c Capabilities
	if adv == nil {
		return c, nil
	}
	flag := func(names ...string) bool {
		for _, n := range names {
			if adv[n].Kind() == 't' {
				return true
			}
		}
		return false
	}
	c.Schema = str(adv["schema"])
	if c.Schema == "" {
		c.Schema = str(adv["schema_id"])
	}
	c.PreDispatchCheckpoint = flag("pre_dispatch_checkpoint", "preDispatchCheckpoint", "checkpoint")
	c.BudgetCap = flag("budget_cap", "budgetCap")
	c.Idempotency = flag("idempotency", "idempotency_key")
	c.ReviewableHandoff = flag("reviewable_handoff", "reviewableHandoff", "handoff")
	c.Dispatch = flag("dispatch")
	for _, n := range []string{"operations", "methods", "extensionMethods"} {
		if ops := strs(adv[n]); ops != nil {
			c.Operations = ops
			break
		}
	}
	if slices.Contains(c.Operations, MethodPlan) {
		c.PreDispatchCheckpoint = true
	}
	if slices.Contains(c.Operations, MethodDispatch) {
		c.Dispatch = true
	}
	return c, nil
}

// Source is where a checkpoint came from (gen/externalagent's type).
type Source = externalagent.CheckpointSource

// The checkpoint sources.
const (
	SourceRemote        = externalagent.CheckpointSourceRemote
	SourceLocalFallback = externalagent.CheckpointSourceLocalFallback
)

// Checkpoint is the pre-dispatch plan the host approves.
type Checkpoint struct {
	ID            string
	Source        Source
	Plan          string
	ExpectedScope []string
	Budget        Budget
	EvidenceRefs  []jsontext.Value
	// Metadata is an object, or nil.
	Metadata jsontext.Value
}

// Wire is c as the checkpoint sent with dispatch (gen/externalagent's
// Checkpoint): _type external_agent_checkpoint, schema
// harn.external_agent.v1, and every member present.
func (c Checkpoint) Wire() externalagent.Checkpoint {
	typ, schema := "external_agent_checkpoint", Schema
	budget := cloneBudget(c.Budget)
	return externalagent.Checkpoint{Type: &typ, Schema: &schema, CheckpointID: &c.ID, Source: &c.Source, Plan: &c.Plan,
		ExpectedScope: nonNil(slices.Clone(c.ExpectedScope)), Budget: &budget, EvidenceRefs: nonNil(cloneValues(c.EvidenceRefs)),
		Metadata: objOrEmpty(bytes.Clone(c.Metadata))}
}

// MarshalJSON encodes c as the checkpoint sent with dispatch (Wire).
func (c Checkpoint) MarshalJSON() ([]byte, error) { return json.Marshal(c.Wire()) }

func (c *Checkpoint) clone() *Checkpoint {
	if c == nil {
		return nil
	}
	d := *c
	d.ExpectedScope = slices.Clone(c.ExpectedScope)
	d.Budget = cloneBudget(c.Budget)
	d.EvidenceRefs = cloneValues(c.EvidenceRefs)
	d.Metadata = bytes.Clone(c.Metadata)
	return &d
}

// ParseCheckpoint reads a _harn/externalAgent.plan result: the checkpoint
// at its root or under "checkpoint", with checkpoint_id (or id), plan (or
// summary), expected_scope (or scope), evidence_refs (or evidence) and
// metadata. A result without a non-empty plan is no checkpoint: nil, nil.
// Missing ids are minted, a missing scope is the request's, and the budget
// is the request's.
func ParseCheckpoint(result jsontext.Value, req *Request) (*Checkpoint, error) {
	m, ok := object(result)
	if !ok {
		return nil, errors.New("plan result is not a JSON object")
	}
	if inner, ok := object(m["checkpoint"]); ok {
		m = inner
	}
	plan := strings.TrimSpace(str(m["plan"]))
	if plan == "" {
		plan = strings.TrimSpace(str(m["summary"]))
	}
	if plan == "" {
		return nil, nil
	}
	c := &Checkpoint{Source: SourceRemote, Plan: plan, Budget: cloneBudget(req.Budget)}
	if c.ID = str(m["checkpoint_id"]); c.ID == "" {
		if c.ID = str(m["id"]); c.ID == "" {
			c.ID = newID("external_checkpoint")
		}
	}
	for _, n := range []string{"expected_scope", "scope"} {
		if s := strs(m[n]); len(s) > 0 {
			c.ExpectedScope = s
			break
		}
	}
	if c.ExpectedScope == nil {
		c.ExpectedScope = slices.Clone(req.ExpectedScope)
	}
	c.EvidenceRefs = values(m, "evidence_refs", "evidence")
	if md, ok := m["metadata"]; ok && md.Kind() == '{' {
		c.Metadata = bytes.Clone(md)
	}
	return c, nil
}

// CheckpointPolicy is the host's decision about checkpoints.
type CheckpointPolicy struct {
	// Approved says the host approved the checkpoint it was shown; until
	// then no dispatch happens.
	Approved   bool
	ApprovedBy string
	// AllowLocalFallback lets a peer without remote checkpoints be used
	// with a locally written plan (LocalPlan, or one synthesised from the
	// task and scope).
	AllowLocalFallback bool
	LocalPlan          string
}

// Request is one delegation.
type Request struct {
	// Target names the peer (an A2A URL or agent id), for the Peer.
	Target string
	Task   string
	Budget Budget
	// IdempotencyKey is required; the stdlib wrapper generates one when
	// the script gives none (see NewIdempotencyKey).
	IdempotencyKey string
	ExpectedScope  []string
	// Context and Metadata travel to the peer as given (Metadata an
	// object).
	Context    jsontext.Value
	Metadata   jsontext.Value
	Checkpoint CheckpointPolicy
}

// NewIdempotencyKey returns a fresh random key.
func NewIdempotencyKey() string { return newID("external_agent") }

// Validate checks what must hold before any peer is contacted: a target, a
// task, an idempotency key, and a budget with a positive cap. Its error is
// an *Error of kind invalid_request.
func (r *Request) Validate() error {
	switch {
	case strings.TrimSpace(r.Target) == "":
		return invalid("external_agent_delegate: target is required")
	case strings.TrimSpace(r.Task) == "":
		return invalid("external_agent_delegate: task is required")
	case strings.TrimSpace(r.IdempotencyKey) == "":
		return invalid("external_agent_delegate: idempotency_key is required")
	case len(r.Metadata) > 0 && r.Metadata.Kind() != '{' && r.Metadata.Kind() != 'n':
		return invalid("external_agent_delegate: metadata must be an object")
	}
	if err := ValidateBudget(r.Budget); err != nil {
		e := err.(*Error)
		e.Message = "external_agent_delegate: " + e.Message
		return e
	}
	return nil
}

// fingerprint identifies what an idempotency key promises: the same
// target, task, budget and scope.
func (r *Request) fingerprint() string {
	b, _ := json.Marshal(struct {
		Target, Task string
		Budget       Budget
		Scope        []string
	}{r.Target, r.Task, r.Budget, r.ExpectedScope}, json.Deterministic(true))
	return string(b)
}

// PlanParams returns the params of _harn/externalAgent.plan for req, sent
// to targetAgent (gen/externalagent's type).
func PlanParams(req *Request, targetAgent string) *externalagent.PlanParams {
	return &externalagent.PlanParams{TargetAgent: &targetAgent, Task: req.Task, Budget: cloneBudget(req.Budget),
		IdempotencyKey: req.IdempotencyKey, ExpectedScope: nonNil(slices.Clone(req.ExpectedScope)),
		Context: nullIfEmpty(bytes.Clone(req.Context)), Metadata: objOrEmpty(bytes.Clone(req.Metadata))}
}

// DispatchParams returns the params of _harn/externalAgent.dispatch: the
// plan params plus the approved checkpoint (gen/externalagent's type).
func DispatchParams(req *Request, targetAgent string, cp *Checkpoint) *externalagent.DispatchParams {
	p := PlanParams(req, targetAgent)
	return &externalagent.DispatchParams{TargetAgent: p.TargetAgent, Task: p.Task, Budget: p.Budget, IdempotencyKey: p.IdempotencyKey,
		ExpectedScope: p.ExpectedScope, Context: p.Context, Metadata: p.Metadata, Checkpoint: cp.Wire()}
}

// RequestID is the JSON-RPC id Harn gives a plan or dispatch request: the
// idempotency key, a dot, and "plan" or "dispatch".
func RequestID(idempotencyKey, method string) string {
	return idempotencyKey + "." + strings.TrimPrefix(method, "_harn/externalAgent.")
}

// Peer is the transport to one external agent.
type Peer interface {
	// Capabilities resolves the peer (its Agent Card) and returns what it
	// advertises; ParseCapabilities reads a card.
	Capabilities(ctx context.Context, req *Request) (Capabilities, error)
	// Plan sends _harn/externalAgent.plan and returns its result.
	Plan(ctx context.Context, req *Request) (jsontext.Value, error)
	// Dispatch sends _harn/externalAgent.dispatch with the approved
	// checkpoint and returns its result.
	Dispatch(ctx context.Context, req *Request, cp *Checkpoint) (jsontext.Value, error)
}

// Status is an envelope's status (gen/externalagent's type).
type Status = externalagent.EnvelopeStatus

// The envelope statuses.
const (
	StatusCheckpointRequired = externalagent.EnvelopeStatusCheckpointRequired
	StatusRefused            = externalagent.EnvelopeStatusRefused
	StatusCompleted          = externalagent.EnvelopeStatusCompleted
	StatusBudgetExceeded     = externalagent.EnvelopeStatusBudgetExceeded
	StatusReplayed           = externalagent.EnvelopeStatusReplayed
)

// Envelope is the reviewable outcome of a delegation.
type Envelope struct {
	ID     string
	Status Status
	// Error says why a delegation was refused or exceeded its budget.
	Error          string
	Target         string
	Task           string
	Budget         Budget
	BudgetUsed     *Usage
	IdempotencyKey string
	Capabilities   *Capabilities
	Checkpoint     *Checkpoint
	// Result is the dispatch result as the peer returned it.
	Result jsontext.Value
	// Handoff is the result's handoff (or first of handoffs), nil if none.
	Handoff jsontext.Value
	// Diff is the result's diff (or patch), nil if none.
	Diff         jsontext.Value
	Artifacts    []jsontext.Value
	Receipts     []jsontext.Value
	EvidenceRefs []jsontext.Value
	Replayed     bool
	// ReplayOf is the id of the envelope a replay repeats.
	ReplayOf string
	Metadata jsontext.Value
}

// Wire is e as Harn's delegation envelope (_type
// external_agent_delegation, schema harn.external_agent.handoff.v1):
// gen/externalagent's HandoffEnvelope, whose open members carry the rest of
// the envelope. A checkpoint, handoff or usage that there is none of is
// left out.
func (e Envelope) Wire() externalagent.HandoffEnvelope {
	schema := HandoffSchema
	h := externalagent.HandoffEnvelope{Schema: &schema, Status: e.Status, Handoff: bytes.Clone(e.Handoff),
		Artifacts: nonNil(cloneValues(e.Artifacts)), BudgetUsed: e.BudgetUsed}
	if h.Handoff.Kind() != '{' {
		h.Handoff = nil
	}
	if e.Checkpoint != nil {
		cp := e.Checkpoint.Wire()
		h.Checkpoint = &cp
	}
	put := func(name string, v any) {
		if raw, err := json.Marshal(v); err == nil {
			h.Extra = append(h.Extra, wire.Member{Name: name, Value: raw})
		}
	}
	put("_type", "external_agent_delegation")
	put("id", e.ID)
	put("error", strOrNull(e.Error))
	put("target", e.Target)
	put("task", e.Task)
	put("budget", cloneBudget(e.Budget))
	put("idempotency_key", e.IdempotencyKey)
	if e.Capabilities != nil {
		put("capabilities", e.Capabilities.Wire())
	}
	if len(e.Diff) > 0 {
		put("diff", e.Diff)
	}
	put("receipts", nonNil(e.Receipts))
	put("evidence_refs", nonNil(e.EvidenceRefs))
	put("result", nullIfEmpty(e.Result))
	put("replayed", e.Replayed)
	put("replay_of", strOrNull(e.ReplayOf))
	put("metadata", objOrEmpty(e.Metadata))
	return h
}

// MarshalJSON encodes e as Harn's delegation envelope (Wire).
func (e Envelope) MarshalJSON() ([]byte, error) { return json.Marshal(e.Wire()) }

func (e *Envelope) clone() *Envelope {
	d := *e
	d.Budget = cloneBudget(e.Budget)
	if e.BudgetUsed != nil {
		u := Usage{USD: clonePtr(e.BudgetUsed.USD), Tokens: clonePtr(e.BudgetUsed.Tokens), Seconds: clonePtr(e.BudgetUsed.Seconds),
			ToolCalls: clonePtr(e.BudgetUsed.ToolCalls), Extra: cloneExtras(e.BudgetUsed.Extra)}
		d.BudgetUsed = &u
	}
	if e.Capabilities != nil {
		c := e.Capabilities.clone()
		d.Capabilities = &c
	}
	d.Checkpoint = e.Checkpoint.clone()
	d.Result, d.Handoff, d.Diff, d.Metadata = bytes.Clone(e.Result), bytes.Clone(e.Handoff), bytes.Clone(e.Diff), bytes.Clone(e.Metadata)
	d.Artifacts, d.Receipts, d.EvidenceRefs = cloneValues(e.Artifacts), cloneValues(e.Receipts), cloneValues(e.EvidenceRefs)
	return &d
}

// Kind classifies a delegation failure (gen/externalagent's type).
type Kind = externalagent.ErrorKind

// The failure kinds.
const (
	KindInvalidRequest = externalagent.ErrorKindInvalidRequest
	KindDiscovery      = externalagent.ErrorKindDiscovery
	KindDenied         = externalagent.ErrorKindDenied
	KindTimeout        = externalagent.ErrorKindTimeout
	KindCancelled      = externalagent.ErrorKindCancelled
	KindTransport      = externalagent.ErrorKindTransport
	KindProtocol       = externalagent.ErrorKindProtocol
)

// DefaultCategory is the runtime error category of a failure of kind k
// whose cause detected none: invalid_request, tool_error (discovery and
// protocol), tool_rejected (denied), timeout, cancelled, and
// transient_network (transport).
func DefaultCategory(k Kind) string {
	switch k {
	case KindInvalidRequest:
		return "invalid_request"
	case KindDiscovery, KindProtocol:
		return "tool_error"
	case KindDenied:
		return "tool_rejected"
	case KindTimeout:
		return "timeout"
	case KindCancelled:
		return "cancelled"
	case KindTransport:
		return "transient_network"
	}
	return "generic"
}

// Error is a failed delegation. A Peer returns one to choose the kind and,
// when it detected one (an HTTP 401 is "auth", say), the category.
type Error struct {
	Kind Kind
	// Category is the shared runtime category; empty means the kind's
	// DefaultCategory.
	Category string
	Message  string
	// Err is the underlying cause, if any.
	Err error
}

// Sentinels for errors.Is; each matches every *Error of its Kind.
var (
	ErrInvalidRequest = &Error{Kind: KindInvalidRequest}
	ErrDiscovery      = &Error{Kind: KindDiscovery}
	ErrDenied         = &Error{Kind: KindDenied}
	ErrTimeout        = &Error{Kind: KindTimeout}
	ErrCancelled      = &Error{Kind: KindCancelled}
	ErrTransport      = &Error{Kind: KindTransport}
	ErrProtocol       = &Error{Kind: KindProtocol}
)

func invalid(msg string) *Error { return &Error{Kind: KindInvalidRequest, Message: msg} }

func (e *Error) Error() string { return "external agent " + string(e.Kind) + ": " + e.Message }

// Is matches an *Error of the same Kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Wire is e as Harn's thrown value, gen/externalagent's DelegationError:
// {"error":"external_agent_error","kind":…,"category":…,"message":…}.
func (e *Error) Wire() externalagent.DelegationError {
	cat := e.Category
	if cat == "" {
		cat = DefaultCategory(e.Kind)
	}
	return externalagent.DelegationError{Kind: e.Kind, Category: cat, Message: e.Message}
}

// MarshalJSON encodes e as Harn's thrown value (Wire).
func (e *Error) MarshalJSON() ([]byte, error) { return json.Marshal(e.Wire()) }

// classify turns a Peer's error from method into an *Error: an *Error keeps
// its kind (its category defaulted), a context error is timeout or
// cancelled, a JSON-RPC error answer is a protocol failure, anything else a
// transport failure.
func classify(method string, err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		c := *e
		if c.Category == "" {
			c.Category = DefaultCategory(c.Kind)
		}
		return &c
	case errors.Is(err, context.DeadlineExceeded):
		e = &Error{Kind: KindTimeout, Message: method + ": " + err.Error(), Err: err}
	case errors.Is(err, context.Canceled):
		e = &Error{Kind: KindCancelled, Message: method + ": " + err.Error(), Err: err}
	default:
		if re, ok := errors.AsType[*rpc.Error](err); ok {
			e = &Error{Kind: KindProtocol, Message: method + " failed: " + re.Message, Err: err}
		} else {
			e = &Error{Kind: KindTransport, Message: method + ": " + err.Error(), Err: err}
		}
	}
	e.Category = DefaultCategory(e.Kind)
	return e
}

// DefaultMaxEntries and DefaultMaxBytes are how many idempotency keys a
// Guard remembers, and how many bytes of envelopes, unless Options says
// otherwise.
const (
	DefaultMaxEntries = 1024
	DefaultMaxBytes   = 16 << 20
)

// Options configures a Guard. The zero value is ready to use.
type Options struct {
	// MaxEntries bounds the idempotency keys remembered; beyond it the
	// oldest is forgotten, and a later delegation with it starts afresh
	// (the peer's own idempotency then keeps it from running twice).
	MaxEntries int
	// MaxBytes bounds, in the same way, the bytes of the envelopes
	// remembered (their task, results, artifacts and the rest); an
	// envelope larger than that alone is not remembered.
	MaxBytes int
}

// Guard runs delegations through the safe sequence.
type Guard struct {
	peer Peer
	opts Options

	mu      sync.Mutex
	entries map[string]*list.Element // of *entry, oldest first
	order   list.List
	bytes   int // of the entries (entry.size)
	busy    map[string]chan struct{}
}

type entry struct {
	key         string
	fingerprint string
	env         *Envelope
	size        int
}

// entrySize is what an entry holds, for Options.MaxBytes.
func entrySize(key, fp string, e *Envelope) int {
	n := 512 + len(key) + len(fp) + len(e.ID) + len(e.Error) + len(e.Target) + len(e.Task) + len(e.IdempotencyKey) +
		len(e.Result) + len(e.Handoff) + len(e.Diff) + len(e.ReplayOf) + len(e.Metadata)
	for _, vs := range [][]jsontext.Value{e.Artifacts, e.Receipts, e.EvidenceRefs} {
		for _, v := range vs {
			n += 24 + len(v)
		}
	}
	if e.Checkpoint != nil {
		b, _ := json.Marshal(e.Checkpoint)
		n += len(b)
	}
	return n
}

// New returns a Guard that delegates through peer.
func New(peer Peer, opts *Options) *Guard {
	g := &Guard{peer: peer, entries: map[string]*list.Element{}, busy: map[string]chan struct{}{}}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.MaxEntries <= 0 {
		g.opts.MaxEntries = DefaultMaxEntries
	}
	if g.opts.MaxBytes <= 0 {
		g.opts.MaxBytes = DefaultMaxBytes
	}
	return g
}

// Delegate runs one delegation (see the package documentation) and returns
// its envelope, or an *Error. Peer failures are not remembered: the same
// request may be retried with the same key. A key reused for a different
// target, task, budget or scope is an invalid_request.
func (g *Guard) Delegate(ctx context.Context, req Request) (*Envelope, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	key := req.IdempotencyKey
	release, err := g.lock(ctx, key)
	if err != nil {
		return nil, classify("external_agent_delegate", err)
	}
	defer release()

	fp := req.fingerprint()
	var cachedCheckpoint *Checkpoint
	if prev := g.lookup(key); prev != nil {
		if prev.fingerprint != fp {
			return nil, invalid("external_agent_delegate: idempotency_key " + rpc.Truncate(key, rpc.MaxEcho) + " was used for a different delegation")
		}
		switch {
		case prev.env.Status == StatusCheckpointRequired && !req.Checkpoint.Approved:
			return prev.env.clone(), nil
		case prev.env.Status == StatusCheckpointRequired:
			cachedCheckpoint = prev.env.Checkpoint.clone()
		default:
			r := prev.env.clone()
			r.ReplayOf, r.ID, r.Status, r.Replayed = prev.env.ID, newID("external_delegate"), StatusReplayed, true
			return r, nil
		}
	}

	caps, err := g.peer.Capabilities(ctx, &req)
	if err != nil {
		return nil, classify("discovery", withKind(err, KindDiscovery))
	}
	env := &Envelope{ID: newID("external_delegate"), Target: req.Target, Task: req.Task, Budget: cloneBudget(req.Budget),
		IdempotencyKey: key, Metadata: bytes.Clone(req.Metadata)}
	c := caps.clone()
	env.Capabilities = &c
	refuse := func(reason string) (*Envelope, error) {
		env.Status, env.Error = StatusRefused, reason
		g.store(key, fp, env)
		return env.clone(), nil
	}
	if missing := caps.Missing(); len(missing) > 0 {
		return refuse("external agent is missing required delegation capabilities: " + strings.Join(missing, ", "))
	}

	cp := cachedCheckpoint
	switch {
	case cp != nil:
	case caps.PreDispatchCheckpoint:
		res, err := g.peer.Plan(ctx, &req)
		if err != nil {
			return nil, classify(MethodPlan, err)
		}
		if cp, err = ParseCheckpoint(res, &req); err != nil {
			return nil, &Error{Kind: KindProtocol, Category: DefaultCategory(KindProtocol), Message: MethodPlan + ": " + err.Error(), Err: err}
		}
		if cp == nil {
			return refuse("external agent did not return a pre-dispatch checkpoint")
		}
	case req.Checkpoint.AllowLocalFallback:
		cp = localCheckpoint(&req)
	default:
		return refuse("external agent does not advertise pre-dispatch checkpoint support")
	}
	env.Checkpoint = cp
	if !req.Checkpoint.Approved {
		env.Status = StatusCheckpointRequired
		g.store(key, fp, env)
		return env.clone(), nil
	}

	res, err := g.peer.Dispatch(ctx, &req, cp.clone())
	if err != nil {
		return nil, classify(MethodDispatch, err)
	}
	used, err := ParseUsage(res)
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Category: DefaultCategory(KindProtocol), Message: MethodDispatch + ": " + err.Error(), Err: err}
	}
	m, _ := object(res)
	env.Result = bytes.Clone(res)
	env.BudgetUsed = used
	env.Handoff = bytes.Clone(m["handoff"])
	if hs := values(m, "handoffs"); env.Handoff == nil && len(hs) > 0 {
		env.Handoff = hs[0]
	}
	env.Diff = bytes.Clone(m["diff"])
	if env.Diff == nil {
		env.Diff = bytes.Clone(m["patch"])
	}
	env.Artifacts = values(m, "artifacts")
	env.Receipts = values(m, "receipts", "receipt_links")
	env.EvidenceRefs = values(m, "evidence_refs", "evidence")
	env.Status = StatusCompleted
	if used != nil && Exceeded(req.Budget, *used) {
		env.Status, env.Error = StatusBudgetExceeded, "external agent reported usage over the approved budget cap"
	}
	g.store(key, fp, env)
	return env.clone(), nil
}

// withKind gives a plain error the kind k; an *Error keeps its own.
func withKind(err error, k Kind) error {
	var e *Error
	if errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Error{Kind: k, Message: err.Error(), Err: err}
}

func localCheckpoint(req *Request) *Checkpoint {
	plan := strings.TrimSpace(req.Checkpoint.LocalPlan)
	if plan == "" {
		scope := "Remote agent must state any files or entities before mutating them."
		if len(req.ExpectedScope) > 0 {
			scope = "Remote agent may work only within: " + strings.Join(req.ExpectedScope, ", ") + "."
		}
		plan = "Delegate task after local approval. Task: " + req.Task + " " + scope
	}
	return &Checkpoint{ID: newID("external_checkpoint"), Source: SourceLocalFallback, Plan: plan,
		ExpectedScope: slices.Clone(req.ExpectedScope), Budget: cloneBudget(req.Budget)}
}

// Forget drops what the Guard remembers of key, so that the next
// delegation with it starts afresh. It reports whether anything was held.
func (g *Guard) Forget(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	el, ok := g.entries[key]
	if ok {
		g.order.Remove(el)
		delete(g.entries, key)
	}
	return ok
}

// lock makes delegations with one key run one at a time.
func (g *Guard) lock(ctx context.Context, key string) (func(), error) {
	for {
		g.mu.Lock()
		ch, busy := g.busy[key]
		if !busy {
			ch = make(chan struct{})
			g.busy[key] = ch
			g.mu.Unlock()
			return func() {
				g.mu.Lock()
				delete(g.busy, key)
				g.mu.Unlock()
				close(ch)
			}, nil
		}
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (g *Guard) lookup(key string) *entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if el, ok := g.entries[key]; ok {
		return el.Value.(*entry)
	}
	return nil
}

func (g *Guard) store(key, fp string, env *Envelope) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forget(key)
	n := entrySize(key, fp, env)
	if n > g.opts.MaxBytes {
		return
	}
	for g.order.Len() > 0 && (g.order.Len() >= g.opts.MaxEntries || g.bytes+n > g.opts.MaxBytes) {
		g.forget(g.order.Front().Value.(*entry).key)
	}
	g.entries[key] = g.order.PushBack(&entry{key: key, fingerprint: fp, env: env.clone(), size: n})
	g.bytes += n
}

func (g *Guard) forget(key string) {
	if el, ok := g.entries[key]; ok {
		g.bytes -= el.Value.(*entry).size
		g.order.Remove(el)
		delete(g.entries, key)
	}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// JSON helpers over raw values.

func object(v jsontext.Value) (map[string]jsontext.Value, bool) {
	if v.Kind() != '{' {
		return nil, false
	}
	var m map[string]jsontext.Value
	if json.Unmarshal(v, &m) != nil {
		return nil, false
	}
	return m, true
}

func objectAt(m map[string]jsontext.Value, path ...string) (map[string]jsontext.Value, bool) {
	for i, p := range path {
		next, ok := object(m[p])
		if !ok {
			return nil, false
		}
		if i == len(path)-1 {
			return next, true
		}
		m = next
	}
	return nil, false
}

func str(v jsontext.Value) string {
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// strs reads a list of non-empty strings (other items skipped) or a single
// non-empty string; nil when v is neither.
func strs(v jsontext.Value) []string {
	if s := str(v); s != "" {
		return []string{s}
	}
	var items []jsontext.Value
	if v.Kind() != '[' || json.Unmarshal(v, &items) != nil {
		return nil
	}
	out := []string{}
	for _, it := range items {
		if s := str(it); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// values returns the items of the first of names that is an array.
func values(m map[string]jsontext.Value, names ...string) []jsontext.Value {
	for _, n := range names {
		var items []jsontext.Value
		if m[n].Kind() == '[' && json.Unmarshal(m[n], &items) == nil {
			return items
		}
	}
	return nil
}

func cloneValues(vs []jsontext.Value) []jsontext.Value {
	if vs == nil {
		return nil
	}
	out := make([]jsontext.Value, len(vs))
	for i, v := range vs {
		out[i] = bytes.Clone(v)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nullIfEmpty(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return jsontext.Value("null")
	}
	return v
}

func objOrEmpty(v jsontext.Value) jsontext.Value {
	if v.Kind() != '{' {
		return jsontext.Value("{}")
	}
	return v
}

func strOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
