package pending

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Propagate says how far a reminder travels to sub-agents (gen/harn's
// type).
type Propagate = harn.ReminderPropagate

// The propagate values; PropagateSession is the default.
const (
	PropagateAll     = harn.ReminderPropagateAll
	PropagateSession = harn.ReminderPropagateSession
	PropagateNone    = harn.ReminderPropagateNone
)

// RoleHint is the role a reminder asks to be rendered as (gen/harn's
// type).
type RoleHint = harn.ReminderRoleHint

// The role hints; RoleSystem is the default.
const (
	RoleSystem         = harn.ReminderRoleHintSystem
	RoleDeveloper      = harn.ReminderRoleHintDeveloper
	RoleUserBlock      = harn.ReminderRoleHintUserBlock
	RoleEphemeralCache = harn.ReminderRoleHintEphemeralCache
)

// Authority is how binding a reminder is (gen/harn's type).
type Authority = harn.ReminderAuthority

// The authorities; AuthorityContract is the default.
const (
	AuthorityContract   = harn.ReminderAuthorityContract
	AuthorityCorrective = harn.ReminderAuthorityCorrective
	AuthorityAdvisory   = harn.ReminderAuthorityAdvisory
)

// SourceBridge is the only source a session/remind reminder may have.
const SourceBridge = "bridge"

// Reminder is a validated reminder spec. Strings are trimmed, as Harn does;
// defaults are filled in.
type Reminder struct {
	// ID is the reminder id; empty until queued, when the Queue assigns
	// one if the host sent none.
	ID   string
	Body string
	// Tags are non-empty and deduplicated, in order.
	Tags []string
	// DedupeKey is empty for none.
	DedupeKey string
	// TTLTurns is 0 for none (a given value is at least 1).
	TTLTurns          int64
	PreserveOnCompact bool
	Propagate         Propagate
	RoleHint          RoleHint
	Authority         Authority
	// Source is always SourceBridge.
	Source      string
	FiredAtTurn int64
	// GoalPin is the goal_pin object as sent; nil for none.
	GoalPin jsontext.Value
	// Meta is the reminder's _meta object as sent (host metadata lives
	// here); nil for none.
	Meta jsontext.Value
}

// Code is a Harn reminder diagnostic code.
type Code string

// The reminder diagnostic codes. The seed documents 001 and 002; Harn
// answers an unknown propagate value with 005, and so does this package.
const (
	// CodeUnknownOption: a top-level reminder option Harn does not know.
	CodeUnknownOption Code = "HARN-RMD-001"
	// CodeMalformed: a malformed reminder payload (missing or empty body,
	// a member of the wrong type or out of range, user-message content
	// instead of a body, a source other than bridge, ...).
	CodeMalformed Code = "HARN-RMD-002"
	// CodeUnknownPropagate: propagate is not all, session or none.
	CodeUnknownPropagate Code = "HARN-RMD-005"
)

// ReminderError is a rejected session/remind payload.
type ReminderError struct {
	Code   Code
	Detail string
	// Options are the unknown option names, sorted, for CodeUnknownOption.
	Options []string
}

// Sentinels for errors.Is; each matches every *ReminderError with its Code.
var (
	ErrUnknownOption    = &ReminderError{Code: CodeUnknownOption}
	ErrMalformed        = &ReminderError{Code: CodeMalformed}
	ErrUnknownPropagate = &ReminderError{Code: CodeUnknownPropagate}
)

// Error is "<code>: <detail>", as Harn words it.
func (e *ReminderError) Error() string { return string(e.Code) + ": " + e.Detail }

// Is matches a *ReminderError with the same Code.
func (e *ReminderError) Is(target error) bool {
	t, ok := target.(*ReminderError)
	return ok && t.Code == e.Code
}

// RPCError is Harn's answer to session/remind: -32602, message
// "session/remind: <code>: <detail>".
func (e *ReminderError) RPCError() *rpc.Error {
	return rpc.NewError(rpc.CodeInvalidParams, rpc.Truncate("session/remind: "+e.Error(), 4*rpc.MaxEcho), nil)
}

func malformed(format string, args ...any) error {
	return &ReminderError{Code: CodeMalformed, Detail: fmt.Sprintf(format, args...)}
}

var reminderOptions = []string{"_meta", "authority", "body", "dedupe_key", "fired_at_turn", "goal_pin", "id",
	"preserve_on_compact", "propagate", "role_hint", "source", "tags", "ttl_turns"}

// RemindRequest is a validated session/remind.
type RemindRequest struct {
	Reminder Reminder
	// Mode is the canonical delivery mode (ParseReminderMode).
	Mode Mode
	// SessionID is sessionId (or session_id); empty when absent.
	SessionID string
}

// ParseRemind validates session/remind params, in either form Harn
// accepts: the reminder spec at the top level beside mode and sessionId
// (or session_id), or nested under "reminder". In the nested form the
// other top-level members may only be sessionId, session_id, mode and
// _meta. Errors are *ReminderErrors.
func ParseRemind(params []byte) (RemindRequest, error) {
	var top map[string]jsontext.Value
	if jsontext.Value(params).Kind() != '{' || json.Unmarshal(params, &top) != nil {
		return RemindRequest{}, malformed("session/remind params must be an object")
	}
	var req RemindRequest
	var err error
	if req.SessionID, err = optString(top, "sessionId"); err != nil {
		return RemindRequest{}, err
	}
	if req.SessionID == "" {
		if req.SessionID, err = optString(top, "session_id"); err != nil {
			return RemindRequest{}, err
		}
	}
	mode, _ := optString(top, "mode") // a non-string mode is an absent one, as in Harn
	req.Mode = ParseReminderMode(mode)
	spec := top
	if nested, ok := top["reminder"]; ok {
		var unknown []string
		for k := range top {
			if !slices.Contains([]string{"reminder", "sessionId", "session_id", "mode", "_meta"}, k) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			return RemindRequest{}, unknownOptions(unknown)
		}
		spec = nil
		if nested.Kind() != '{' || json.Unmarshal(nested, &spec) != nil {
			return RemindRequest{}, malformed("session/remind payload must be a reminder object")
		}
	} else {
		spec = map[string]jsontext.Value{}
		for k, v := range top {
			if k != "mode" && k != "sessionId" && k != "session_id" {
				spec[k] = v
			}
		}
	}
	if req.Reminder, err = reminderFrom(spec); err != nil {
		return RemindRequest{}, err
	}
	return req, nil
}

// ParseReminder validates a reminder spec object on its own (the "reminder"
// member of the nested form).
func ParseReminder(spec []byte) (Reminder, error) {
	var m map[string]jsontext.Value
	if jsontext.Value(spec).Kind() != '{' || json.Unmarshal(spec, &m) != nil {
		return Reminder{}, malformed("session/remind payload must be a reminder object")
	}
	return reminderFrom(m)
}

func unknownOptions(names []string) error {
	slices.Sort(names)
	shown := make([]string, len(names))
	for i, n := range names {
		shown[i] = rpc.Truncate(n, rpc.MaxEcho)
	}
	return &ReminderError{Code: CodeUnknownOption, Options: names,
		Detail: "unknown reminder option(s): " + strings.Join(shown, ", ")}
}

func reminderFrom(m map[string]jsontext.Value) (Reminder, error) {
	var unknown []string
	for k := range m {
		if !slices.Contains(reminderOptions, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		if slices.Contains(unknown, "content") {
			return Reminder{}, malformed("session/remind expects reminder `body`, not user-message `content`")
		}
		return Reminder{}, unknownOptions(unknown)
	}
	r := Reminder{Source: SourceBridge}
	var err error
	if meta, ok := m["_meta"]; ok && meta.Kind() != 'n' {
		if meta.Kind() != '{' {
			return Reminder{}, malformed("`_meta` must be an object")
		}
		r.Meta = meta
	}
	if r.TTLTurns, err = optInt(m, "ttl_turns"); err != nil {
		return Reminder{}, err
	}
	if _, given := m["ttl_turns"]; given && r.TTLTurns <= 0 && m["ttl_turns"].Kind() != 'n' {
		return Reminder{}, malformed("`ttl_turns` must be > 0")
	}
	if r.FiredAtTurn, err = optInt(m, "fired_at_turn"); err != nil {
		return Reminder{}, err
	}
	if r.FiredAtTurn < 0 {
		return Reminder{}, malformed("`fired_at_turn` must be >= 0 when provided")
	}
	source, err := optString(m, "source")
	if err != nil {
		return Reminder{}, err
	}
	if source != "" && source != SourceBridge {
		return Reminder{}, malformed("`source` for session/remind must be bridge when provided")
	}
	propagate, err := optString(m, "propagate")
	if err != nil {
		return Reminder{}, err
	}
	switch p := Propagate(propagate); p {
	case "":
		r.Propagate = PropagateSession
	case PropagateAll, PropagateSession, PropagateNone:
		r.Propagate = p
	default:
		return Reminder{}, &ReminderError{Code: CodeUnknownPropagate, Detail: "`propagate` must be one of all, session, or none"}
	}
	role, err := optString(m, "role_hint")
	if err != nil {
		return Reminder{}, err
	}
	switch h := RoleHint(role); h {
	case "":
		r.RoleHint = RoleSystem
	case RoleSystem, RoleDeveloper, RoleUserBlock, RoleEphemeralCache:
		r.RoleHint = h
	default:
		return Reminder{}, malformed("`role_hint` must be one of system, developer, user_block, or ephemeral_cache")
	}
	authority, err := optString(m, "authority")
	if err != nil {
		return Reminder{}, err
	}
	switch a := Authority(authority); a {
	case "":
		r.Authority = AuthorityContract
	case AuthorityContract, AuthorityCorrective, AuthorityAdvisory:
		r.Authority = a
	default:
		return Reminder{}, malformed("`authority` must be one of contract, corrective, or advisory")
	}
	if pin, ok := m["goal_pin"]; ok && pin.Kind() != 'n' {
		if pin.Kind() != '{' {
			return Reminder{}, malformed("`goal_pin` must be an object")
		}
		r.GoalPin = pin
	}
	if r.ID, err = optString(m, "id"); err != nil {
		return Reminder{}, err
	}
	if r.Tags, err = tags(m["tags"]); err != nil {
		return Reminder{}, err
	}
	if r.DedupeKey, err = optString(m, "dedupe_key"); err != nil {
		return Reminder{}, err
	}
	if v, ok := m["preserve_on_compact"]; ok {
		switch v.Kind() {
		case 't':
			r.PreserveOnCompact = true
		case 'f', 'n':
		default:
			return Reminder{}, malformed("`preserve_on_compact` must be a bool, got %s", clip(v))
		}
	}
	if r.Body, err = optString(m, "body"); err != nil {
		return Reminder{}, err
	}
	if r.Body == "" {
		return Reminder{}, malformed("`body` must be a non-empty string")
	}
	return r, nil
}

// optString reads an optional string member, trimmed; absent, null and
// blank are "".
func optString(m map[string]jsontext.Value, name string) (string, error) {
	v, ok := m[name]
	if !ok || v.Kind() == 'n' {
		return "", nil
	}
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return "", malformed("`%s` must be a string, got %s", name, clip(v))
	}
	return strings.TrimSpace(s), nil
}

// optInt reads an optional integer member (a JSON number with an integral
// int64 value written as an integer); absent and null are 0.
func optInt(m map[string]jsontext.Value, name string) (int64, error) {
	v, ok := m[name]
	if !ok || v.Kind() == 'n' {
		return 0, nil
	}
	if v.Kind() != '0' {
		return 0, malformed("`%s` must be an int, got %s", name, clip(v))
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, malformed("`%s` must be an integer", name)
	}
	return n, nil
}

func tags(v jsontext.Value) ([]string, error) {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, nil
	}
	var items []jsontext.Value
	if v.Kind() != '[' || json.Unmarshal(v, &items) != nil {
		return nil, malformed("`tags` must be a list")
	}
	var out []string
	for _, item := range items {
		var s string
		if item.Kind() != '"' || json.Unmarshal(item, &s) != nil {
			return nil, malformed("`tags` entries must be strings, got %s", clip(item))
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, malformed("`tags` entries must be non-empty strings")
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// clip bounds how much of a peer's value an error message repeats.
func clip(v jsontext.Value) string { return rpc.Truncate(string(v), 64) }

// ParseReminderMode maps a session/remind mode onto its canonical value:
// interrupt_immediate (alias interrupt), finish_step (aliases
// after_current_operation, steer) and audit_only (alias queue); anything
// else, an absent mode included, is audit_only, the mode that never
// preempts the loop.
func ParseReminderMode(s string) Mode {
	switch s {
	case "interrupt_immediate", "interrupt":
		return InterruptImmediate
	case "finish_step", "after_current_operation", "steer":
		return FinishStep
	}
	return AuditOnly
}

// ErrUnsupportedMode is matched by ParseInjectMode's errors.
var ErrUnsupportedMode = errors.New("unsupported mode")

// ParseInjectMode maps a session/inject mode onto its canonical value:
// queue is audit_only, steer is finish_step, interrupt_immediate is
// itself. Any other value, the canonical names included, is an
// *InputError matching ErrUnsupportedMode.
func ParseInjectMode(s string) (Mode, error) {
	switch s {
	case "queue":
		return AuditOnly, nil
	case "steer":
		return FinishStep, nil
	case "interrupt_immediate":
		return InterruptImmediate, nil
	case "":
		return "", &InputError{Method: MethodInject, Detail: "requires mode", Err: ErrUnsupportedMode}
	}
	return "", &InputError{Method: MethodInject, Err: ErrUnsupportedMode,
		Detail: fmt.Sprintf("unsupported mode `%s`; expected `queue`, `steer` or `interrupt_immediate`", rpc.Truncate(s, rpc.MaxEcho))}
}
