package turn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/turn"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func result(t *testing.T, doc string) *acp.PromptResponse {
	t.Helper()
	var r acp.PromptResponse
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return &r
}

func terminal(stop, body string) string {
	return `{"stopReason":"` + stop + `","_meta":{"harn":{"terminal":` + body + `}}}`
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		doc   string
		class turn.Class
		kind  turn.Kind
		msg   string
	}{
		{"natural", terminal("end_turn", `{"kind":"natural","reason":"assistant finished","owner":"agent"}`), turn.ClassCompleted, harn.TerminalKindNatural, ""},
		{"natural whatever the stop reason", terminal("max_tokens", `{"kind":"natural","reason":"done","owner":"agent"}`), turn.ClassCompleted, harn.TerminalKindNatural, ""},
		{"natural with extras", terminal("end_turn", `{"kind":"natural","reason":"r","owner":"agent","terminalClass":"none","message":"m","detail":"d","future":{"x":1}}`), turn.ClassCompleted, harn.TerminalKindNatural, ""},
		{"plain ACP end_turn", `{"stopReason":"end_turn"}`, turn.ClassEndTurn, "", "turn ended (end_turn) without a Harn terminal outcome: no completion evidence"},
		{"end_turn, _meta without harn", `{"stopReason":"end_turn","_meta":{"other":{"terminal":{"kind":"natural"}}}}`, turn.ClassEndTurn, "", "no completion evidence"},
		{"end_turn, harn without terminal", `{"stopReason":"end_turn","_meta":{"harn":{"trace":1}}}`, turn.ClassEndTurn, "", "no completion evidence"},
		{"natural-looking root fields are not read", `{"stopReason":"end_turn","terminal":{"kind":"natural","reason":"r","owner":"agent"}}`, turn.ClassEndTurn, "", "no completion evidence"},
		{"cancelled", `{"stopReason":"cancelled"}`, turn.ClassStopped, "", "turn stopped: cancelled"},
		{"max_tokens", `{"stopReason":"max_tokens"}`, turn.ClassStopped, "", "turn stopped: max_tokens"},
		{"max_turn_requests", `{"stopReason":"max_turn_requests"}`, turn.ClassStopped, "", "turn stopped: max_turn_requests"},
		{"refusal", `{"stopReason":"refusal"}`, turn.ClassStopped, "", "turn stopped: refusal"},
		{"budget", terminal("end_turn", `{"kind":"policy_budget","reason":"llm_cost_usd cap reached","owner":"policy"}`), turn.ClassIncomplete, harn.TerminalKindPolicyBudget,
			"turn did not complete: policy_budget (owner policy): llm_cost_usd cap reached"},
		{"user cancelled", terminal("cancelled", `{"kind":"user_cancelled","reason":"session/cancel","owner":"user"}`), turn.ClassIncomplete, harn.TerminalKindUserCancelled, "user_cancelled"},
		{"unknown future kind kept", terminal("end_turn", `{"kind":"heat_death","reason":"r","owner":"cosmos"}`), turn.ClassIncomplete, "heat_death", "heat_death (owner cosmos)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := turn.Classify(result(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if o.Class() != tc.class {
				t.Fatalf("class %s, want %s", o.Class(), tc.class)
			}
			if tc.kind != "" && (o.Terminal == nil || o.Terminal.Kind != tc.kind) {
				t.Fatalf("terminal %+v", o.Terminal)
			}
			if o.Completed() != (tc.class == turn.ClassCompleted) || (o.Err() == nil) != o.Completed() {
				t.Fatal("Completed/Err disagree with Class")
			}
			if err := o.Err(); err != nil {
				if !errors.Is(err, turn.ErrNotCompleted) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("Err() = %v, want it to say %q", err, tc.msg)
				}
				var ie *turn.IncompleteError
				if !errors.As(err, &ie) || ie.Outcome.Class() != tc.class {
					t.Error("not an *IncompleteError with the outcome")
				}
			}
		})
	}
}

// Every documented kind other than natural is incomplete; every documented
// kind and owner is Known.
func TestKinds(t *testing.T) {
	for _, k := range []turn.Kind{harn.TerminalKindNatural, harn.TerminalKindUserCancelled, harn.TerminalKindPolicyBudget, harn.TerminalKindCompletionUnverified,
		harn.TerminalKindPolicyNoProgress, harn.TerminalKindPolicyThrash, harn.TerminalKindPolicyGuardrail, harn.TerminalKindPolicyStop, harn.TerminalKindProviderError,
		harn.TerminalKindRuntimeError, harn.TerminalKindSuspended, harn.TerminalKindUnknown} {
		if !k.Known() {
			t.Errorf("%s not Known", k)
		}
		o := turn.Outcome{StopReason: acp.StopReasonEndTurn, Terminal: &turn.Terminal{Kind: k}}
		if o.Completed() != (k == harn.TerminalKindNatural) {
			t.Errorf("%s: Completed = %v", k, o.Completed())
		}
	}
	for _, o := range []turn.Owner{harn.TerminalOwnerAgent, harn.TerminalOwnerUser, harn.TerminalOwnerPolicy, harn.TerminalOwnerProvider, harn.TerminalOwnerHarness, harn.TerminalOwnerUnknown} {
		if !o.Known() {
			t.Errorf("%s not Known", o)
		}
	}
	if turn.Kind("Natural").Known() || turn.Owner("me").Known() {
		t.Error("unknown value Known")
	}
	if turn.Class(0).String() != "Class(0)" {
		t.Error(turn.Class(0).String())
	}
}

func TestTerminalFields(t *testing.T) {
	body := `{"kind":"provider_error","reason":"429","owner":"provider","terminalClass":"rate_limited","message":"slow down","detail":"retry in 30s","x":[1]}`
	o, err := turn.Classify(result(t, terminal("end_turn", body)))
	if err != nil {
		t.Fatal(err)
	}
	got := o.Terminal
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	if got.Kind != harn.TerminalKindProviderError || got.Reason != "429" || got.Owner != harn.TerminalOwnerProvider || str(got.TerminalClass) != "rate_limited" ||
		str(got.Message) != "slow down" || str(got.Detail) != "retry in 30s" {
		t.Errorf("got %+v", got)
	}
	if x, ok := got.Extra.Get("x"); !ok || string(x) != "[1]" {
		t.Errorf("unknown member not kept: %v", got.Extra)
	}
	again, err := json.Marshal(got)
	if err != nil || string(again) != body {
		t.Errorf("re-encoded %s, %v", again, err)
	}
}

// A terminal that is present but malformed is never a completion: gen/harn
// types _meta.harn.terminal with kind, reason and owner required (Harn's
// catalogue), so Classify fails on the prompt result (which gen/acp, ACP
// alone, decodes with its _meta as sent); ReadTerminal fails the same way on
// a raw _meta.
func TestMalformedTerminal(t *testing.T) {
	for _, doc := range []string{
		terminal("end_turn", `"natural"`),
		terminal("end_turn", `["natural"]`),
		terminal("end_turn", `{"reason":"r","owner":"agent"}`),
		terminal("end_turn", `{"kind":"natural","owner":"agent"}`),
		terminal("end_turn", `{"kind":"natural","reason":"r"}`),
		terminal("end_turn", `{"kind":1,"reason":"r","owner":"agent"}`),
		terminal("end_turn", `{"kind":"natural","reason":"r","owner":"agent","message":7}`),
		terminal("end_turn", `null`),
		`{"stopReason":"end_turn","_meta":{"harn":"natural"}}`,
		`{"stopReason":"end_turn","_meta":{"harn":null}}`,
	} {
		var de *wire.DecodeError
		var res acp.PromptResponse
		if err := json.Unmarshal([]byte(doc), &res); err != nil {
			t.Errorf("%s: ACP's prompt result keeps a vendor's _meta: %v", doc, err)
		}
		if _, err := turn.Classify(&res); !errors.Is(err, turn.ErrMalformedTerminal) || !errors.As(err, &de) {
			t.Errorf("%s: Classify must reject it: %v", doc, err)
		}
		var raw struct {
			Meta jsontext.Value `json:"_meta"`
		}
		if err := json.Unmarshal([]byte(doc), &raw); err != nil {
			t.Fatal(err)
		}
		if tm, err := turn.ReadTerminal(raw.Meta); !errors.Is(err, turn.ErrMalformedTerminal) || tm != nil {
			t.Errorf("%s: ReadTerminal = %v, %v", doc, tm, err)
		}
	}
	if _, err := turn.Classify(nil); err == nil {
		t.Error("nil result classified")
	}
	if _, err := turn.ReadTerminal(jsontext.Value(`[1]`)); !errors.Is(err, turn.ErrMalformedTerminal) {
		t.Errorf("_meta array: %v", err)
	}
	dup := jsontext.Value(`{"harn":{"terminal":{"kind":"natural","reason":"r","owner":"agent","kind":"natural"}}}`)
	if _, err := turn.ReadTerminal(dup); !errors.Is(err, turn.ErrMalformedTerminal) {
		t.Errorf("duplicate member: %v", err)
	}
	for _, meta := range []string{"", "null", `{}`, `{"harn":{}}`, `{"other":{"terminal":{"kind":"natural"}}}`} {
		if tm, err := turn.ReadTerminal(jsontext.Value(meta)); tm != nil || err != nil {
			t.Errorf("%q: %v, %v", meta, tm, err)
		}
	}
	tm, err := turn.ReadTerminal(jsontext.Value(`{"harn":{"terminal":{"kind":"natural","reason":"r","owner":"agent"}}}`))
	if err != nil || tm == nil || tm.Kind != harn.TerminalKindNatural {
		t.Errorf("ReadTerminal = %+v, %v", tm, err)
	}
}

func TestReadPromptError(t *testing.T) {
	// The second document of shared/fixtures/harn/upstream/conformance/
	// protocols/fixtures/acp/jsonrpc_error.valid.json.
	fixture := rpc.NewError(-32000, "Provider-looking prose is not the authority",
		jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","terminalClass":"tool_policy_rejected"}`))
	p, ok := turn.ReadPromptError(fixture)
	if !ok || p.TerminalClass() != "tool_policy_rejected" || p.Code != -32000 || p.Message != "Provider-looking prose is not the authority" {
		t.Fatalf("got %+v %v", p, ok)
	}
	if p.Data.Retryable != nil || p.Data.RetryAfterMS != nil || p.Data.Code != nil {
		t.Errorf("absent members set: %+v", p)
	}

	full := rpc.NewError(-32000, "rate limited", jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","terminalClass":"rate_limited",`+
		`"category":"rate_limit","kind":"transient","reason":"rate_limit","code":"429","retryable":true,"retryAfterMs":30000,`+
		`"provider":"anthropic","model":"claude"}`))
	p, ok = turn.ReadPromptError(errors.Join(errors.New("prompt"), full))
	d := p.Data
	if !ok || *d.Category != "rate_limit" || *d.Kind != "transient" || *d.Reason != "rate_limit" || string(d.Code) != `"429"` ||
		d.Retryable == nil || !*d.Retryable || d.RetryAfterMS == nil || *d.RetryAfterMS != 30000 || *d.Provider != "anthropic" || *d.Model != "claude" {
		t.Fatalf("got %+v", p)
	}
	wrongTypes := rpc.NewError(-32000, "x", jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","terminalClass":5,"retryable":"yes","retryAfterMs":"soon","code":null,"model":"m","future":[1]}`))
	if p, ok = turn.ReadPromptError(wrongTypes); !ok || p.TerminalClass() != "" || p.Data.Retryable != nil || p.Data.RetryAfterMS != nil || p.Data.Code != nil ||
		*p.Data.Model != "m" || len(p.Data.Extra) != 1 || string(p.Raw) != string(wrongTypes.Data) {
		t.Fatalf("wrong types: %+v %v", p, ok)
	}
	for _, err := range []error{
		nil,
		errors.New("plain"),
		rpc.NewError(-32602, "Unknown session: session-missing", jsontext.Value(`{"method":"session/set_mode"}`)),
		rpc.NewError(-32000, "x", jsontext.Value(`{"schema":"harn.acp.prompt_error.v2"}`)),
		rpc.NewError(-32000, "x", jsontext.Value(`"harn.acp.prompt_error.v1"`)),
		rpc.NewError(-32000, "x", nil),
		rpc.NewError(-32000, "x", jsontext.Value(`{"terminalClass":"timeout"}`)),
		rpc.NewError(-32000, "x", jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","schema":"harn.acp.prompt_error.v1","model":1}`)),
	} {
		if _, ok := turn.ReadPromptError(err); ok {
			t.Errorf("%v read as a prompt error", err)
		}
	}
}
