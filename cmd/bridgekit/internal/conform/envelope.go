package conform

// This file holds what the AgentPM sides share: building envelope lines,
// reading the envelopes an implementation writes, and waiting for the
// answer to an envelope request by its id, byte for byte.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Env is one AgentPM envelope as conform writes it; members in the order
// the protocols' documents show them. Nil members are left out.
type Env struct {
	Protocol any       `json:"protocol"`
	Version  any       `json:"version"`
	Kind     string    `json:"kind"`
	ID       any       `json:"id,omitempty"`
	Service  string    `json:"service,omitempty"`
	Method   string    `json:"method,omitempty"`
	Payload  any       `json:"payload,omitempty"`
	Result   any       `json:"result,omitempty"`
	Error    *EnvError `json:"error,omitempty"`
}

// EnvError is an envelope's error member.
type EnvError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable *bool  `json:"retryable,omitempty"`
}

// gotEnv is an envelope an implementation wrote, read leniently: each
// member is kept raw so that its kind can be checked.
type gotEnv struct {
	Protocol json.RawMessage `json:"protocol"`
	Version  json.RawMessage `json:"version"`
	Kind     json.RawMessage `json:"kind"`
	ID       json.RawMessage `json:"id"`
	Service  json.RawMessage `json:"service"`
	Method   json.RawMessage `json:"method"`
	Payload  json.RawMessage `json:"payload"`
	Result   json.RawMessage `json:"result"`
	Error    json.RawMessage `json:"error"`
}

func parseEnv(raw []byte) (*gotEnv, bool) {
	var e gotEnv
	if json.Unmarshal(raw, &e) != nil {
		return nil, false
	}
	return &e, true
}

// str returns a raw member as a string ("" when it is not one).
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// EnvReply is the implementation's answer to one envelope request.
type EnvReply struct {
	Received
	Env    *gotEnv
	Method string
	Kind   string
}

// IsError says whether the reply is an error frame.
func (r *EnvReply) IsError() bool { return r.Kind == "error" }

// ErrorCode returns an error frame's code ("" when it has none).
func (r *EnvReply) ErrorCode() string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.Env.Error, &e)
	return e.Code
}

// Body returns a success reply's data: result, else payload (the machine
// protocol carries replies in payload; agentpm-service falls back to it).
func (r *EnvReply) Body() json.RawMessage {
	if r.Env.Result != nil {
		return r.Env.Result
	}
	return r.Env.Payload
}

// envLine encodes e. A marshalling failure is conform's own and is
// recorded.
func (t *T) envLine(method string, e Env) ([]byte, bool) {
	b, err := json.Marshal(e)
	if err != nil {
		t.Failf(method, 0, "conform", "encoding the envelope: %v", err)
		return nil, false
	}
	return b, true
}

// SendEnv sends the envelope e.
func (t *T) SendEnv(ctx context.Context, e Env) bool {
	line, ok := t.envLine(e.Method, e)
	return ok && t.SendRaw(ctx, e.Method, line)
}

// AwaitEnv waits for the envelope answering the request whose id's JSON
// text is id: the first frame other than an event whose id member is
// those bytes exactly. kinds are the kinds a success may have; an error
// frame is returned too. Events with the id are skipped (an event can
// never replace a response).
func (t *T) AwaitEnv(ctx context.Context, method string, id []byte) *EnvReply {
	rec, ok := t.WaitFor(ctx, func(rec Received) bool {
		e, ok := parseEnv(rec.Raw)
		k := str(e.Kind)
		return ok && bytes.Equal(e.ID, id) && k != "event" && k != "request" && k != "initialize"
	})
	if !ok {
		t.Failf(method, 0, "no_answer", "no answer to request %s: %s", id, t.why(ctx))
		return nil
	}
	e, _ := parseEnv(rec.Raw)
	return &EnvReply{Received: rec, Env: e, Method: method, Kind: str(e.Kind)}
}

// CallEnv sends e (whose ID is a string) and waits for its answer.
func (t *T) CallEnv(ctx context.Context, e Env) *EnvReply {
	if !t.SendEnv(ctx, e) {
		return nil
	}
	id, _ := json.Marshal(e.ID)
	return t.AwaitEnv(ctx, e.Method, id)
}

// checkEnvGates checks the members every envelope the implementation
// writes must have right: the protocol, the version, and (with a
// service) the service member naming it.
func (t *T) checkEnvGates(r *EnvReply, p envelope.Protocol, service string) bool {
	ok := true
	fail := func(ptr, code, format string, args ...any) {
		ok = false
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: ptr, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if got := str(r.Env.Protocol); got != p.Name {
		fail("/protocol", "rule", "protocol %s, want %q", orAbsent(r.Env.Protocol), p.Name)
	}
	if string(bytes.TrimSpace(r.Env.Version)) != fmt.Sprint(p.Version) {
		fail("/version", "rule", "version %s, want the integer %d", orAbsent(r.Env.Version), p.Version)
	}
	if service != "" && str(r.Env.Service) != service {
		fail("/service", "rule", "service %s, want %q (every frame a service writes names its role)", orAbsent(r.Env.Service), service)
	}
	return ok
}

// ExpectEnvResult checks that r is a success of one of kinds and returns
// its data.
func (t *T) ExpectEnvResult(r *EnvReply, kinds ...string) (json.RawMessage, bool) {
	if r == nil {
		return nil, false
	}
	if r.IsError() {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error", Code: "unexpected_error",
			Message: fmt.Sprintf("answered error %s where a result was expected", clip(string(r.Env.Error)))})
		return nil, false
	}
	if !slices.Contains(kinds, r.Kind) {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/kind", Code: "rule",
			Message: fmt.Sprintf("kind %q, want %s", r.Kind, quoteList(kinds))})
		return nil, false
	}
	body := r.Body()
	if body == nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result", Code: "malformed", Message: "a success with neither result nor payload"})
		return nil, false
	}
	return body, true
}

// ExpectEnvError checks that r is an error frame whose error member is
// well formed (a string code, a string message, a boolean retryable when
// retryable is set) with one of codes.
func (t *T) ExpectEnvError(r *EnvReply, retryable bool, codes ...string) bool {
	if r == nil {
		return false
	}
	if !r.IsError() {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/kind", Code: "expected_error",
			Message: fmt.Sprintf("answered kind %q where an error frame %s was expected", r.Kind, quoteList(codes))})
		return false
	}
	var e struct {
		Code      json.RawMessage `json:"code"`
		Message   json.RawMessage `json:"message"`
		Retryable json.RawMessage `json:"retryable"`
	}
	if json.Unmarshal(r.Env.Error, &e) != nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error", Code: "malformed", Message: "an error frame whose error is not an object"})
		return false
	}
	var code, msg string
	if json.Unmarshal(e.Code, &code) != nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error/code", Code: "malformed", Message: fmt.Sprintf("code %s is not a string", orAbsent(e.Code))})
		return false
	}
	if json.Unmarshal(e.Message, &msg) != nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error/message", Code: "malformed", Message: fmt.Sprintf("message %s is not a string", orAbsent(e.Message))})
		return false
	}
	if retryable && e.Retryable != nil {
		var b bool
		if json.Unmarshal(e.Retryable, &b) != nil {
			t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error/retryable", Code: "malformed", Message: fmt.Sprintf("retryable %s is not a boolean", e.Retryable)})
			return false
		}
	}
	if !slices.Contains(codes, code) {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error/code", Code: "error_code",
			Message: fmt.Sprintf("error code %q (%q), want %s", code, clip(msg), quoteList(codes))})
		return false
	}
	return true
}

// envCode is the protocol's string code for one of the engine's standard
// failures (rpc.Code*), from runtime/envelope's table.
func envCode(p envelope.Protocol, c int64) string { return p.Codes[c] }

// standard failures, by the engine's codes.
const (
	failMalformed   = rpc.CodeParseError
	failProtocol    = rpc.CodeInvalidRequest
	failUnsupported = rpc.CodeMethodNotFound
	failInvalid     = rpc.CodeInvalidParams
)

func orAbsent(raw json.RawMessage) string {
	if raw == nil {
		return "absent"
	}
	return clip(string(raw))
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	out := ""
	for i, s := range q {
		if i > 0 {
			if i == len(q)-1 {
				out += " or "
			} else {
				out += ", "
			}
		}
		out += s
	}
	return out
}
