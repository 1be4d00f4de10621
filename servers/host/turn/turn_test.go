package turn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
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
		{"natural", terminal("end_turn", `{"kind":"natural","reason":"assistant finished","owner":"agent"}`), turn.ClassCompleted, turn.KindNatural, ""},
		{"natural whatever the stop reason", terminal("max_tokens", `{"kind":"natural","reason":"done","owner":"agent"}`), turn.ClassCompleted, turn.KindNatural, ""},
		{"natural with extras", terminal("end_turn", `{"kind":"natural","reason":"r","owner":"agent","terminalClass":"none","message":"m","detail":"d","future":{"x":1}}`), turn.ClassCompleted, turn.KindNatural, ""},
		{"plain ACP end_turn", `{"stopReason":"end_turn"}`, turn.ClassEndTurn, "", "turn ended (end_turn) without a Harn terminal outcome: no completion evidence"},
		{"end_turn, _meta without harn", `{"stopReason":"end_turn","_meta":{"other":{"terminal":{"kind":"natural"}}}}`, turn.ClassEndTurn, "", "no completion evidence"},
		{"end_turn, harn without terminal", `{"stopReason":"end_turn","_meta":{"harn":{"trace":1}}}`, turn.ClassEndTurn, "", "no completion evidence"},
		{"natural-looking root fields are not read", `{"stopReason":"end_turn","terminal":{"kind":"natural","reason":"r","owner":"agent"}}`, turn.ClassEndTurn, "", "no completion evidence"},
		{"cancelled", `{"stopReason":"cancelled"}`, turn.ClassStopped, "", "turn stopped: cancelled"},
		{"max_tokens", `{"stopReason":"max_tokens"}`, turn.ClassStopped, "", "turn stopped: max_tokens"},
		{"max_turn_requests", `{"stopReason":"max_turn_requests"}`, turn.ClassStopped, "", "turn stopped: max_turn_requests"},
		{"refusal", `{"stopReason":"refusal"}`, turn.ClassStopped, "", "turn stopped: refusal"},
		{"budget", terminal("end_turn", `{"kind":"policy_budget","reason":"llm_cost_usd cap reached","owner":"policy"}`), turn.ClassIncomplete, turn.KindPolicyBudget,
			"turn did not complete: policy_budget (owner policy): llm_cost_usd cap reached"},
		{"user cancelled", terminal("cancelled", `{"kind":"user_cancelled","reason":"session/cancel","owner":"user"}`), turn.ClassIncomplete, turn.KindUserCancelled, "user_cancelled"},
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
	for _, k := range []turn.Kind{turn.KindNatural, turn.KindUserCancelled, turn.KindPolicyBudget, turn.KindCompletionUnverified,
		turn.KindPolicyNoProgress, turn.KindPolicyThrash, turn.KindPolicyGuardrail, turn.KindPolicyStop, turn.KindProviderError,
		turn.KindRuntimeError, turn.KindSuspended, turn.KindUnknown} {
		if !k.Known() {
			t.Errorf("%s not Known", k)
		}
		o := turn.Outcome{StopReason: acp.StopReasonEndTurn, Terminal: &turn.Terminal{Kind: k}}
		if o.Completed() != (k == turn.KindNatural) {
			t.Errorf("%s: Completed = %v", k, o.Completed())
		}
	}
	for _, o := range []turn.Owner{turn.OwnerAgent, turn.OwnerUser, turn.OwnerPolicy, turn.OwnerProvider, turn.OwnerHarness, turn.OwnerUnknown} {
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
	want := turn.Terminal{Kind: turn.KindProviderError, Reason: "429", Owner: turn.OwnerProvider, TerminalClass: "rate_limited",
		Message: "slow down", Detail: "retry in 30s", Raw: jsontext.Value(body)}
	got := *o.Terminal
	if got.Kind != want.Kind || got.Reason != want.Reason || got.Owner != want.Owner || got.TerminalClass != want.TerminalClass ||
		got.Message != want.Message || got.Detail != want.Detail || string(got.Raw) != body {
		t.Errorf("got %+v", got)
	}
}

// A terminal that is present but malformed is an error, and never a
// completion: acp types _meta.harn, so most malformed shapes already fail
// decoding the prompt result (the session/prompt call fails); those it
// accepts fail Classify.
func TestMalformedTerminal(t *testing.T) {
	for _, doc := range []string{
		terminal("end_turn", `"natural"`),
		terminal("end_turn", `["natural"]`),
		terminal("end_turn", `{"reason":"r","owner":"agent"}`),
		terminal("end_turn", `{"kind":1,"reason":"r","owner":"agent"}`),
		terminal("end_turn", `{"kind":"natural","reason":"r","owner":"agent","message":7}`),
		terminal("end_turn", `null`),
		`{"stopReason":"end_turn","_meta":{"harn":"natural"}}`,
		`{"stopReason":"end_turn","_meta":{"harn":null}}`,
	} {
		var de *wire.DecodeError
		if err := json.Unmarshal([]byte(doc), new(acp.PromptResponse)); !errors.As(err, &de) {
			t.Errorf("%s: the typed prompt result must reject it: %v", doc, err)
		}
	}
	for _, doc := range []string{
		terminal("end_turn", `{"kind":"natural","owner":"agent"}`),
		terminal("end_turn", `{"kind":"natural","reason":"r"}`),
	} {
		o, err := turn.Classify(result(t, doc))
		if !errors.Is(err, turn.ErrMalformedTerminal) {
			t.Errorf("%s: err = %v", doc, err)
		}
		if o.Completed() || o.Terminal != nil || o.StopReason != acp.StopReasonEndTurn {
			t.Errorf("%s: outcome %+v", doc, o)
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
	if tm, err := turn.ReadTerminal(nil); tm != nil || err != nil {
		t.Error("absent _meta")
	}
}

func TestReadPromptError(t *testing.T) {
	// The second document of shared/fixtures/harn/upstream/conformance/
	// protocols/fixtures/acp/jsonrpc_error.valid.json.
	fixture := rpc.NewError(-32000, "Provider-looking prose is not the authority",
		jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","terminalClass":"tool_policy_rejected"}`))
	p, ok := turn.ReadPromptError(fixture)
	if !ok || p.TerminalClass != "tool_policy_rejected" || p.Code != -32000 || p.Message != "Provider-looking prose is not the authority" {
		t.Fatalf("got %+v %v", p, ok)
	}
	if p.Retryable != nil || p.RetryAfterMs != nil || p.ProviderCode != nil {
		t.Errorf("absent members set: %+v", p)
	}

	full := rpc.NewError(-32000, "rate limited", jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","terminalClass":"rate_limited",`+
		`"category":"rate_limit","kind":"transient","reason":"rate_limit","code":"429","retryable":true,"retryAfterMs":30000,`+
		`"provider":"anthropic","model":"claude"}`))
	p, ok = turn.ReadPromptError(errors.Join(errors.New("prompt"), full))
	if !ok || p.Category != "rate_limit" || p.Kind != "transient" || p.Reason != "rate_limit" || string(p.ProviderCode) != `"429"` ||
		p.Retryable == nil || !*p.Retryable || p.RetryAfterMs == nil || *p.RetryAfterMs != 30000 || p.Provider != "anthropic" || p.Model != "claude" {
		t.Fatalf("got %+v", p)
	}
	wrongTypes := rpc.NewError(-32000, "x", jsontext.Value(`{"schema":"harn.acp.prompt_error.v1","terminalClass":5,"retryable":"yes","retryAfterMs":"soon","code":null}`))
	if p, ok = turn.ReadPromptError(wrongTypes); !ok || p.TerminalClass != "" || p.Retryable != nil || p.RetryAfterMs != nil || p.ProviderCode != nil {
		t.Fatalf("wrong types: %+v %v", p, ok)
	}
	for _, err := range []error{
		nil,
		errors.New("plain"),
		rpc.NewError(-32602, "Unknown session: session-missing", jsontext.Value(`{"method":"session/set_mode"}`)),
		rpc.NewError(-32000, "x", jsontext.Value(`{"schema":"harn.acp.prompt_error.v2"}`)),
		rpc.NewError(-32000, "x", jsontext.Value(`"harn.acp.prompt_error.v1"`)),
		rpc.NewError(-32000, "x", nil),
	} {
		if _, ok := turn.ReadPromptError(err); ok {
			t.Errorf("%v read as a prompt error", err)
		}
	}
}
