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
// for a completion. The terminal is gen/harn's typed harn.TerminalOutcome
// (kind, reason and owner required, as Harn's catalogue has them), read from
// the result's _meta by harn.PromptResultOf (gen/acp keeps _meta as sent),
// so a result whose terminal is malformed is an error of Classify;
// [ReadTerminal] reads one from a raw _meta. A failed prompt is a JSON-RPC error instead, which
// [ReadPromptError] reads when it carries Harn's harn.acp.prompt_error.v1
// data.
package turn

import (
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Kind is terminal.kind: why a Harn agent loop ended (gen/harn's type, with
// its constants harn.TerminalKindNatural and the others). Values this
// version does not know are kept as sent; Known tells them apart. Only
// harn.TerminalKindNatural is completion.
type Kind = harn.TerminalKind

// Owner is terminal.owner: who ended the loop (gen/harn's type, with its
// constants harn.TerminalOwnerAgent and the others). Values this version
// does not know are kept as sent.
type Owner = harn.TerminalOwner

// Terminal is _meta.harn.terminal, gen/harn's type: kind, reason and owner,
// the optional terminalClass, message and detail, and any member this
// version does not name in Extra.
type Terminal = harn.TerminalOutcome

// ErrMalformedTerminal is matched by ReadTerminal's errors when
// _meta.harn.terminal is present but does not have the documented shape
// (an object with string kind, reason and owner).
var ErrMalformedTerminal = errors.New("malformed _meta.harn.terminal")

// ReadTerminal reads _meta.harn.terminal from a result's raw _meta object
// (an acp.PromptResponse's Meta, or one kept elsewhere). It returns nil,
// nil when there is none (no harn member, or no terminal in it).
func ReadTerminal(meta jsontext.Value) (*Terminal, error) {
	if len(meta) == 0 || meta.Kind() == 'n' {
		return nil, nil
	}
	return terminalOf(wire.Some(meta))
}

func terminalOf(meta wire.Nullable[jsontext.Value]) (*Terminal, error) {
	h, err := harn.PromptResultOf(meta)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedTerminal, err)
	}
	if h == nil {
		return nil, nil
	}
	return h.Terminal, nil
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

// Classify reads a session/prompt result. A nil resp is an error, and so
// is a malformed _meta.harn.terminal (matching ErrMalformedTerminal).
func Classify(resp *acp.PromptResponse) (Outcome, error) {
	if resp == nil {
		return Outcome{}, errors.New("turn: no prompt result")
	}
	o := Outcome{StopReason: resp.StopReason}
	t, err := terminalOf(resp.Meta)
	if err != nil {
		return Outcome{}, err
	}
	o.Terminal = t
	return o, nil
}

// Class sorts o into one of the four classes.
func (o Outcome) Class() Class {
	switch {
	case o.Terminal != nil && o.Terminal.Kind == harn.TerminalKindNatural:
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

// PromptError is a failed session/prompt (JSON-RPC code -32000) from a
// Harn agent.
type PromptError struct {
	// Code and Message are the JSON-RPC error's.
	Code    int64
	Message string
	// Data is error.data, gen/harn's type: terminalClass (context_overflow,
	// provider_misconfigured, provider_unavailable, rate_limited, timeout,
	// resource_busy, tool_policy_rejected, host_bridge_unimplemented,
	// agent_loop_protocol_failure, parse_dropped, generic_throw, or a newer
	// one, kept as sent), category, kind, reason, the provider's code as
	// sent, retryable, retryAfterMs, provider and model. Members of the
	// wrong type (and null ones) are left out rather than failing the read:
	// the error is already a failure, and its class should still be shown.
	Data harn.PromptErrorData
	// Raw is error.data as it arrived.
	Raw jsontext.Value
}

// TerminalClass is Data.TerminalClass, or "" when absent.
func (p *PromptError) TerminalClass() string {
	if p.Data.TerminalClass == nil {
		return ""
	}
	return string(*p.Data.TerminalClass)
}

// ReadPromptError finds, in err's chain, a JSON-RPC error whose data has
// schema harn.acp.prompt_error.v1, and reads it (see PromptError.Data for
// the members it leaves out).
func ReadPromptError(err error) (*PromptError, bool) {
	re, ok := errors.AsType[*rpc.Error](err)
	if !ok || len(re.Data) == 0 || re.Data.Kind() != '{' {
		return nil, false
	}
	p := &PromptError{Code: re.Code, Message: re.Message, Raw: re.Data}
	if json.Unmarshal(re.Data, &p.Data) == nil {
		return p, true
	}
	// Keep the members that fit on their own (the schema member among
	// them), then read those.
	var members map[string]jsontext.Value
	if json.Unmarshal(re.Data, &members) != nil {
		return nil, false
	}
	kept := map[string]jsontext.Value{}
	for name, value := range members {
		if value.Kind() == 'n' {
			continue
		}
		one, err := json.Marshal(map[string]jsontext.Value{"schema": members["schema"], name: value})
		if err == nil && json.Unmarshal(one, new(harn.PromptErrorData)) == nil {
			kept[name] = value
		}
	}
	if _, ok := kept["schema"]; !ok {
		return nil, false
	}
	raw, err := json.Marshal(kept, json.Deterministic(true))
	if err != nil || json.Unmarshal(raw, &p.Data) != nil {
		return nil, false
	}
	return p, true
}
