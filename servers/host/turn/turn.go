// Package turn tells a host how an ACP session/prompt turn ended, and in
// particular whether it completed.
//
// A Harn agent reports the producer-owned terminal outcome of its loop in
// the prompt result, under _meta.harn.terminal:
//
//	{"stopReason":"end_turn","_meta":{"harn":{"terminal":{"kind":"natural","reason":"…","owner":"agent"}}}}
//
// Only terminal.kind "natural" is completion. ACP's stopReason "end_turn"
// alone is no evidence of it (seed: "Hosts must treat only terminal.kind:
// \"natural\" as completion"): a Harn turn stopped by a budget, a guardrail
// or a provider error also ends with end_turn. A plain ACP agent sends no
// terminal at all; its end_turn is reported as [ClassEndTurn], never as a
// Harn completion, and the host decides what that is worth.
//
// [Classify] reads a gen/acp PromptResponse into an [Outcome]; the
// outcome's [Class] sorts it into four classes, and [Outcome.Err] is nil only
// for a completion. gen/acp types _meta.harn (acp.PromptResponseMeta), so a
// result whose harn or terminal member has the wrong kind already fails to
// decode, and the session/prompt call with it; Classify reports a terminal
// that decodes but lacks reason or owner as [ErrMalformedTerminal]. A failed prompt is a JSON-RPC error instead, which
// [ReadPromptError] reads when it carries Harn's harn.acp.prompt_error.v1
// data.
package turn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Kind is terminal.kind: why a Harn agent loop ended. Values this version
// does not know are kept as sent.
type Kind string

// The terminal kinds Harn documents. Only KindNatural is completion.
const (
	KindNatural              Kind = "natural"
	KindUserCancelled        Kind = "user_cancelled"
	KindPolicyBudget         Kind = "policy_budget"
	KindCompletionUnverified Kind = "completion_unverified"
	KindPolicyNoProgress     Kind = "policy_no_progress"
	KindPolicyThrash         Kind = "policy_thrash"
	KindPolicyGuardrail      Kind = "policy_guardrail"
	KindPolicyStop           Kind = "policy_stop"
	KindProviderError        Kind = "provider_error"
	KindRuntimeError         Kind = "runtime_error"
	KindSuspended            Kind = "suspended"
	KindUnknown              Kind = "unknown"
)

var kinds = []Kind{KindNatural, KindUserCancelled, KindPolicyBudget, KindCompletionUnverified, KindPolicyNoProgress,
	KindPolicyThrash, KindPolicyGuardrail, KindPolicyStop, KindProviderError, KindRuntimeError, KindSuspended, KindUnknown}

// Known reports whether k is a documented kind.
func (k Kind) Known() bool { return slices.Contains(kinds, k) }

// Owner is terminal.owner: who ended the loop. Values this version does not
// know are kept as sent.
type Owner string

// The owners Harn documents.
const (
	OwnerAgent    Owner = "agent"
	OwnerUser     Owner = "user"
	OwnerPolicy   Owner = "policy"
	OwnerProvider Owner = "provider"
	OwnerHarness  Owner = "harness"
	OwnerUnknown  Owner = "unknown"
)

var owners = []Owner{OwnerAgent, OwnerUser, OwnerPolicy, OwnerProvider, OwnerHarness, OwnerUnknown}

// Known reports whether o is a documented owner.
func (o Owner) Known() bool { return slices.Contains(owners, o) }

// Terminal is _meta.harn.terminal.
type Terminal struct {
	Kind   Kind
	Reason string
	Owner  Owner
	// TerminalClass, Message and Detail are empty when absent.
	TerminalClass string
	Message       string
	Detail        string
	// Raw is the terminal object as it arrived, with any members this
	// version does not name.
	Raw jsontext.Value
}

// ErrMalformedTerminal is matched by errors from Classify and ReadTerminal
// when _meta.harn.terminal is present but does not have the documented
// shape (an object with string kind, reason and owner).
var ErrMalformedTerminal = errors.New("malformed _meta.harn.terminal")

// ReadTerminal reads _meta.harn.terminal from a result's _meta object. It
// returns nil, nil when there is none (no harn member, or no terminal in
// it, or a null terminal).
func ReadTerminal(meta jsontext.Value) (*Terminal, error) {
	if len(meta) == 0 || meta.Kind() == 'n' {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformedTerminal, fmt.Sprintf(format, args...))
	}
	var metaObj, harnObj, m map[string]jsontext.Value
	if meta.Kind() != '{' || json.Unmarshal(meta, &metaObj) != nil {
		return nil, bad("_meta is not a JSON object")
	}
	harn := metaObj["harn"]
	if len(harn) == 0 || harn.Kind() == 'n' {
		return nil, nil
	}
	if harn.Kind() != '{' || json.Unmarshal(harn, &harnObj) != nil {
		return nil, bad("_meta.harn is not a JSON object")
	}
	raw := harnObj["terminal"]
	if len(raw) == 0 || raw.Kind() == 'n' {
		return nil, nil
	}
	if raw.Kind() != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, bad("not a JSON object")
	}
	t := &Terminal{Raw: raw}
	var kind, owner string
	for _, f := range []struct {
		name     string
		p        *string
		required bool
	}{
		{"kind", &kind, true}, {"reason", &t.Reason, true}, {"owner", &owner, true},
		{"terminalClass", &t.TerminalClass, false}, {"message", &t.Message, false}, {"detail", &t.Detail, false},
	} {
		v, ok := m[f.name]
		if !ok {
			if f.required {
				return nil, bad("missing %s", f.name)
			}
			continue
		}
		if v.Kind() != '"' || json.Unmarshal(v, f.p) != nil {
			return nil, bad("%s is not a string", f.name)
		}
	}
	t.Kind, t.Owner = Kind(kind), Owner(owner)
	return t, nil
}

// Class sorts outcomes.
type Class int

// The classes of Outcome.Class.
const (
	// ClassCompleted: a Harn terminal with kind "natural", whatever the
	// stop reason. The only completion.
	ClassCompleted Class = iota + 1
	// ClassEndTurn: stop reason end_turn and no Harn terminal — a plain ACP
	// agent ended its turn. Not evidence of a Harn completion.
	ClassEndTurn
	// ClassStopped: no Harn terminal and another stop reason (cancelled,
	// max_tokens, max_turn_requests, refusal); see Outcome.StopReason.
	ClassStopped
	// ClassIncomplete: a Harn terminal whose kind is not "natural"; see
	// Outcome.Terminal.Kind.
	ClassIncomplete
)

func (c Class) String() string {
	switch c {
	case ClassCompleted:
		return "completed"
	case ClassEndTurn:
		return "end_turn"
	case ClassStopped:
		return "stopped"
	case ClassIncomplete:
		return "incomplete"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Outcome is how a turn ended.
type Outcome struct {
	StopReason acp.StopReason
	// Terminal is the Harn terminal outcome, nil when the agent sent none.
	Terminal *Terminal
}

// Classify reads a session/prompt result. A malformed terminal yields an
// Outcome without it (so never a completion) and an error matching
// ErrMalformedTerminal. A nil resp is an error too.
func Classify(resp *acp.PromptResponse) (Outcome, error) {
	if resp == nil {
		return Outcome{}, errors.New("turn: no prompt result")
	}
	o := Outcome{StopReason: resp.StopReason}
	var meta jsontext.Value
	if m, ok := resp.Meta.Get(); ok {
		// acp types _meta (acp.PromptResponseMeta); ReadTerminal reads it
		// as sent, which its typed form writes back exactly.
		raw, err := json.Marshal(&m)
		if err != nil {
			return o, fmt.Errorf("%w: %w", ErrMalformedTerminal, err)
		}
		meta = raw
	}
	t, err := ReadTerminal(meta)
	if err != nil {
		return o, err
	}
	o.Terminal = t
	return o, nil
}

// Class sorts o into one of the four classes.
func (o Outcome) Class() Class {
	switch {
	case o.Terminal != nil && o.Terminal.Kind == KindNatural:
		return ClassCompleted
	case o.Terminal != nil:
		return ClassIncomplete
	case o.StopReason == acp.StopReasonEndTurn:
		return ClassEndTurn
	}
	return ClassStopped
}

// Completed reports whether the turn completed: a Harn terminal of kind
// "natural".
func (o Outcome) Completed() bool { return o.Class() == ClassCompleted }

// ErrNotCompleted is matched by Outcome.Err's errors.
var ErrNotCompleted = errors.New("turn did not complete")

// IncompleteError is a turn that did not complete.
type IncompleteError struct{ Outcome Outcome }

func (e *IncompleteError) Error() string {
	o := e.Outcome
	switch o.Class() {
	case ClassEndTurn:
		return "turn ended (end_turn) without a Harn terminal outcome: no completion evidence"
	case ClassStopped:
		return fmt.Sprintf("turn stopped: %s", o.StopReason)
	}
	t := o.Terminal
	msg := fmt.Sprintf("turn did not complete: %s", t.Kind)
	if t.Owner != "" {
		msg += " (owner " + string(t.Owner) + ")"
	}
	if t.Reason != "" {
		msg += ": " + t.Reason
	}
	return msg
}

// Is matches ErrNotCompleted.
func (e *IncompleteError) Is(target error) bool { return target == ErrNotCompleted }

// Err is nil for a completion and an *IncompleteError otherwise.
func (o Outcome) Err() error {
	if o.Completed() {
		return nil
	}
	return &IncompleteError{Outcome: o}
}

// PromptErrorSchema is the data.schema of Harn's prompt failures.
const PromptErrorSchema = "harn.acp.prompt_error.v1"

// PromptError is the data of a failed session/prompt (JSON-RPC code
// -32000) from a Harn agent. Empty strings and nil pointers are absent
// members.
type PromptError struct {
	// Code and Message are the JSON-RPC error's.
	Code    int64
	Message string
	// TerminalClass is one of context_overflow, provider_misconfigured,
	// provider_unavailable, rate_limited, timeout, resource_busy,
	// tool_policy_rejected, host_bridge_unimplemented,
	// agent_loop_protocol_failure, parse_dropped, generic_throw (or a
	// newer one, kept as sent).
	TerminalClass string
	Category      string
	Kind          string
	Reason        string
	// ProviderCode is data.code, passed through from the provider as sent
	// (a string or a number).
	ProviderCode jsontext.Value
	Retryable    *bool
	RetryAfterMs *int64
	Provider     string
	Model        string
	// Data is error.data as it arrived.
	Data jsontext.Value
}

// ReadPromptError finds, in err's chain, a JSON-RPC error whose data has
// schema harn.acp.prompt_error.v1, and reads it. Members of the wrong type
// are left unset rather than failing the read: the error is already a
// failure, and its class should still be shown.
func ReadPromptError(err error) (*PromptError, bool) {
	re, ok := errors.AsType[*rpc.Error](err)
	if !ok || len(re.Data) == 0 || re.Data.Kind() != '{' {
		return nil, false
	}
	var m map[string]jsontext.Value
	if json.Unmarshal(re.Data, &m) != nil {
		return nil, false
	}
	var schema string
	if json.Unmarshal(m["schema"], &schema) != nil || schema != PromptErrorSchema {
		return nil, false
	}
	p := &PromptError{Code: re.Code, Message: re.Message, Data: re.Data}
	for name, dst := range map[string]*string{"terminalClass": &p.TerminalClass, "category": &p.Category, "kind": &p.Kind,
		"reason": &p.Reason, "provider": &p.Provider, "model": &p.Model} {
		if v, ok := m[name]; ok && v.Kind() == '"' {
			_ = json.Unmarshal(v, dst)
		}
	}
	if v, ok := m["code"]; ok && v.Kind() != 'n' {
		p.ProviderCode = v
	}
	if v, ok := m["retryable"]; ok && (v.Kind() == 't' || v.Kind() == 'f') {
		b := v.Kind() == 't'
		p.Retryable = &b
	}
	if v, ok := m["retryAfterMs"]; ok && v.Kind() == '0' {
		var n int64
		if json.Unmarshal(v, &n) == nil {
			p.RetryAfterMs = &n
		}
	}
	return p, true
}
