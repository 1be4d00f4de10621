package pending_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/harnvm/pending"
)

// The seed's session/remind example, with a sessionId added as an ACP host
// sends it.
const seedRemind = `{
  "sessionId": "session_123",
  "body": "The workspace changed while you were idle; re-read src/lib.rs before editing.",
  "tags": ["workspace"],
  "dedupe_key": "workspace-change",
  "ttl_turns": 2,
  "role_hint": "system",
  "mode": "interrupt_immediate",
  "_meta": { "harn": { "origin": "file-watcher" } }
}`

func TestParseRemindSeed(t *testing.T) {
	req, err := pending.ParseRemind([]byte(seedRemind))
	if err != nil {
		t.Fatal(err)
	}
	r := req.Reminder
	if req.SessionID != "session_123" || req.Mode != pending.InterruptImmediate ||
		r.Body != "The workspace changed while you were idle; re-read src/lib.rs before editing." ||
		!slices.Equal(r.Tags, []string{"workspace"}) || r.DedupeKey != "workspace-change" || r.TTLTurns != 2 ||
		r.RoleHint != pending.RoleSystem || r.Propagate != pending.PropagateSession || r.Authority != pending.AuthorityContract ||
		r.Source != pending.SourceBridge || r.ID != "" || string(r.Meta) != `{ "harn": { "origin": "file-watcher" } }` {
		t.Fatalf("got %+v / %+v", req, r)
	}
}

func TestParseRemindForms(t *testing.T) {
	nested := `{"session_id":"s","mode":"queue","reminder":{"body":"  hi  ","id":" r1 ","tags":[" a ","b","a"],"propagate":"all",` +
		`"role_hint":"ephemeral_cache","authority":"advisory","source":"bridge","fired_at_turn":3,"preserve_on_compact":true,` +
		`"goal_pin":{"spec":"x","control_id":"c"},"ttl_turns":null,"dedupe_key":null},"_meta":{"harn":{}}}`
	req, err := pending.ParseRemind([]byte(nested))
	if err != nil {
		t.Fatal(err)
	}
	r := req.Reminder
	if req.SessionID != "s" || req.Mode != pending.AuditOnly || r.Body != "hi" || r.ID != "r1" || !slices.Equal(r.Tags, []string{"a", "b"}) ||
		r.Propagate != pending.PropagateAll || r.RoleHint != pending.RoleEphemeralCache || r.Authority != pending.AuthorityAdvisory ||
		r.FiredAtTurn != 3 || !r.PreserveOnCompact || string(r.GoalPin) != `{"spec":"x","control_id":"c"}` || r.TTLTurns != 0 || r.DedupeKey != "" {
		t.Fatalf("nested: %+v", r)
	}
	// No mode, or a mode that is not a string: audit_only.
	for _, doc := range []string{`{"body":"x"}`, `{"body":"x","mode":7}`, `{"body":"x","mode":"sometime"}`} {
		if req, err := pending.ParseRemind([]byte(doc)); err != nil || req.Mode != pending.AuditOnly {
			t.Errorf("%s: %+v %v", doc, req, err)
		}
	}
	r, err = pending.ParseReminder([]byte(`{"body":"x","role_hint":"user_block","authority":"corrective","propagate":"none"}`))
	if err != nil || r.RoleHint != pending.RoleUserBlock || r.Authority != pending.AuthorityCorrective || r.Propagate != pending.PropagateNone {
		t.Fatalf("ParseReminder: %+v %v", r, err)
	}
	if _, err := pending.ParseReminder([]byte(`[]`)); !errors.Is(err, pending.ErrMalformed) {
		t.Errorf("ParseReminder([]): %v", err)
	}
}

// Every documented rejection, with its code.
func TestParseRemindErrors(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		code pending.Code
		msg  string
	}{
		// HARN-RMD-001: unknown top-level reminder options.
		{`{"body":"x","priority":1}`, pending.CodeUnknownOption, "unknown reminder option(s): priority"},
		{`{"body":"x","zeta":1,"alpha":2}`, pending.CodeUnknownOption, "unknown reminder option(s): alpha, zeta"},
		{`{"reminder":{"body":"x","ttl":2}}`, pending.CodeUnknownOption, "unknown reminder option(s): ttl"},
		{`{"reminder":{"body":"x"},"body":"y"}`, pending.CodeUnknownOption, "unknown reminder option(s): body"},
		{`{"body":"x","session":"s"}`, pending.CodeUnknownOption, "unknown reminder option(s): session"},
		// HARN-RMD-002: malformed payloads.
		{`[]`, pending.CodeMalformed, "session/remind params must be an object"},
		{`"remind me"`, pending.CodeMalformed, "session/remind params must be an object"},
		{`{"reminder":"x"}`, pending.CodeMalformed, "session/remind payload must be a reminder object"},
		{`{}`, pending.CodeMalformed, "`body` must be a non-empty string"},
		{`{"body":""}`, pending.CodeMalformed, "`body` must be a non-empty string"},
		{`{"body":"   "}`, pending.CodeMalformed, "`body` must be a non-empty string"},
		{`{"body":null}`, pending.CodeMalformed, "`body` must be a non-empty string"},
		{`{"body":["x"]}`, pending.CodeMalformed, "`body` must be a string, got [\"x\"]"},
		{`{"content":"x"}`, pending.CodeMalformed, "session/remind expects reminder `body`, not user-message `content`"},
		{`{"content":"x","other":1}`, pending.CodeMalformed, "session/remind expects reminder `body`, not user-message `content`"},
		{`{"body":"x","_meta":"m"}`, pending.CodeMalformed, "`_meta` must be an object"},
		{`{"body":"x","ttl_turns":0}`, pending.CodeMalformed, "`ttl_turns` must be > 0"},
		{`{"body":"x","ttl_turns":-1}`, pending.CodeMalformed, "`ttl_turns` must be > 0"},
		{`{"body":"x","ttl_turns":1.5}`, pending.CodeMalformed, "`ttl_turns` must be an integer"},
		{`{"body":"x","ttl_turns":2.0}`, pending.CodeMalformed, "`ttl_turns` must be an integer"},
		{`{"body":"x","ttl_turns":"2"}`, pending.CodeMalformed, "`ttl_turns` must be an int, got \"2\""},
		{`{"body":"x","fired_at_turn":-1}`, pending.CodeMalformed, "`fired_at_turn` must be >= 0 when provided"},
		{`{"body":"x","fired_at_turn":true}`, pending.CodeMalformed, "`fired_at_turn` must be an int, got true"},
		{`{"body":"x","source":"host"}`, pending.CodeMalformed, "`source` for session/remind must be bridge when provided"},
		{`{"body":"x","source":5}`, pending.CodeMalformed, "`source` must be a string, got 5"},
		{`{"body":"x","role_hint":"admin"}`, pending.CodeMalformed, "`role_hint` must be one of system, developer, user_block, or ephemeral_cache"},
		{`{"body":"x","authority":"law"}`, pending.CodeMalformed, "`authority` must be one of contract, corrective, or advisory"},
		{`{"body":"x","goal_pin":"finish"}`, pending.CodeMalformed, "`goal_pin` must be an object"},
		{`{"body":"x","tags":"a"}`, pending.CodeMalformed, "`tags` must be a list"},
		{`{"body":"x","tags":[1]}`, pending.CodeMalformed, "`tags` entries must be strings, got 1"},
		{`{"body":"x","tags":[" "]}`, pending.CodeMalformed, "`tags` entries must be non-empty strings"},
		{`{"body":"x","id":7}`, pending.CodeMalformed, "`id` must be a string, got 7"},
		{`{"body":"x","dedupe_key":{}}`, pending.CodeMalformed, "`dedupe_key` must be a string, got {}"},
		{`{"body":"x","preserve_on_compact":"yes"}`, pending.CodeMalformed, "`preserve_on_compact` must be a bool, got \"yes\""},
		{`{"body":"x","propagate":1}`, pending.CodeMalformed, "`propagate` must be a string, got 1"},
		{`{"body":"x","sessionId":5}`, pending.CodeMalformed, "`sessionId` must be a string, got 5"},
		{`{"body":"x","body":"y"}`, pending.CodeMalformed, "session/remind params must be an object"},
		// HARN-RMD-005: unknown propagate value.
		{`{"body":"x","propagate":"everyone"}`, pending.CodeUnknownPropagate, "`propagate` must be one of all, session, or none"},
	} {
		_, err := pending.ParseRemind([]byte(tc.doc))
		var re *pending.ReminderError
		if !errors.As(err, &re) || re.Code != tc.code || re.Detail != tc.msg {
			t.Errorf("%s: got %v, want %s: %s", tc.doc, err, tc.code, tc.msg)
			continue
		}
		sentinel := map[pending.Code]error{pending.CodeUnknownOption: pending.ErrUnknownOption,
			pending.CodeMalformed: pending.ErrMalformed, pending.CodeUnknownPropagate: pending.ErrUnknownPropagate}[tc.code]
		if !errors.Is(err, sentinel) {
			t.Errorf("%s: does not match its sentinel", tc.doc)
		}
		for _, other := range []error{pending.ErrUnknownOption, pending.ErrMalformed, pending.ErrUnknownPropagate} {
			if other != sentinel && errors.Is(err, other) {
				t.Errorf("%s: matches %v too", tc.doc, other)
			}
		}
		rpcErr := re.RPCError()
		if rpcErr.Code != rpc.CodeInvalidParams || rpcErr.Message != "session/remind: "+string(tc.code)+": "+tc.msg {
			t.Errorf("%s: RPCError %v", tc.doc, rpcErr)
		}
	}
	_, err := pending.ParseRemind([]byte(`{"body":"x","` + strings.Repeat("k", 500) + `":1}`))
	if e := err.(*pending.ReminderError).RPCError(); len(e.Message) > 4*rpc.MaxEcho+8 {
		t.Errorf("unbounded echo: %d bytes", len(e.Message))
	}
	var re *pending.ReminderError
	if errors.As(err, &re) && (len(re.Options) != 1 || len(re.Options[0]) != 500) {
		t.Errorf("Options %v", re.Options)
	}
}
