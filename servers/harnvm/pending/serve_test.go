package pending_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/harnvm/live"
	"github.com/bridgekit/bridgekit/servers/harnvm/pending"
)

// connectPending serves sessions (wrapped in RemindErrors when wrap is set)
// on a runtime's end of a real connection and returns the host's end.
func connectPending(t *testing.T, sessions *pending.Sessions, wrap bool) *rpc.Conn {
	t.Helper()
	var bridge harn.VMHandlers
	sessions.Register(&bridge)
	h := harn.VMHandler(&bridge, nil)
	if wrap {
		h = pending.RemindErrors(h)
	}
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	vmConn := harn.NewBridgeConn(vmIn, vmOut, h, nil)
	hostConn := harn.NewBridgeConn(hostIn, hostOut, nil, nil)
	t.Cleanup(func() {
		hostConn.Close()
		vmConn.Close()
		vmOut.Close()
		hostOut.Close()
	})
	return hostConn
}

func actorMeta(id, role string) *harn.ActorMeta {
	a := &harn.Actor{ClientID: &id}
	if role != "" {
		a.Role = &role
	}
	return &harn.ActorMeta{Harn: &harn.ActorHarn{Actor: a}}
}

// wantAnswer checks an error answer's code, message (when given) and data
// (when given).
func wantAnswer(t *testing.T, err error, code int64, msg, data string) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != code || (msg != "" && re.Message != msg) || (data != "" && string(re.Data) != data) {
		t.Errorf("got %v (data %s), want %d %q %s", err, dataOf(re), code, msg, data)
	}
}

func dataOf(re *rpc.Error) string {
	if re == nil {
		return ""
	}
	return string(re.Data)
}

func TestSessionsInjectRaceReasonsOverAConnection(t *testing.T) {
	n := 0
	sessions := pending.NewSessions(&pending.SessionsOptions{Queue: pending.Options{NewMessageID: func() string {
		n++
		return "msg_inj_" + string(rune('0'+n))
	}}})
	q := sessions.Open("s")
	vm := harn.NewVMPeer(connectPending(t, sessions, true))
	ctx := context.Background()

	_, err := vm.SessionInject(ctx, &harn.SessionInjectParams{SessionID: "nope", Mode: harn.InjectModeSteer, Content: harn.InjectContent{String: new("hi")}})
	wantAnswer(t, err, pending.CodeSessionNotFound, "Session not found", "")

	res, err := vm.SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s", Mode: harn.InjectModeSteer,
		Content: harn.InjectContent{String: new("use the staging db")}, Meta: actorMeta("alice", "")})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, res, `{"messageId":"msg_inj_1","status":"accepted","_meta":{"harn":{"actor":{"clientId":"alice"}}}}`)
	m2, err := vm.SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s", Mode: harn.InjectModeQueue,
		Content: harn.InjectContent{List: []acp.ContentBlock{{Text: &acp.TextContent{Text: "later"}}}}, Meta: actorMeta("alice", "")})
	if err != nil {
		t.Fatal(err)
	}
	list, err := vm.SessionPendingInjections(ctx, &harn.SessionIDParams{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, list, `{"pendingCount":2,"injections":[
		{"kind":"user","id":"msg_inj_1","messageId":"msg_inj_1","mode":"finish_step","position":0,"content":"use the staging db"},
		{"kind":"user","id":"msg_inj_2","messageId":"msg_inj_2","mode":"audit_only","position":1,"content":[{"type":"text","text":"later"}]}]}`)

	// Another actor may neither revoke nor replace; the host owner may.
	_, err = vm.SessionRevokeInject(ctx, &harn.SessionRevokeInjectParams{SessionID: "s", MessageID: "msg_inj_1", Meta: actorMeta("bob", "observer")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "pending inject is owned by another ACP actor",
		`{"reason":"not_owner_or_not_authorized","messageId":"msg_inj_1","actor":{"clientId":"bob","role":"observer"},"owner":{"clientId":"alice"}}`)
	_, err = vm.SessionReplaceInject(ctx, &harn.SessionReplaceInjectParams{SessionID: "s", MessageID: "msg_inj_1",
		Content: harn.InjectContent{String: new("x")}, Meta: actorMeta("bob", "")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "", `{"reason":"not_owner_or_not_authorized","messageId":"msg_inj_1","actor":{"clientId":"bob"},"owner":{"clientId":"alice"}}`)
	rep, err := vm.SessionReplaceInject(ctx, &harn.SessionReplaceInjectParams{SessionID: "s", MessageID: "msg_inj_1",
		Content: harn.InjectContent{String: new("use the prod db")}, Meta: actorMeta("ide", "host_owner")})
	if err != nil || rep.MessageID != "msg_inj_1" {
		t.Fatalf("host owner replace: %+v %v", rep, err)
	}
	sameJSON(t, rep, `{"messageId":"msg_inj_1","status":"replaced"}`)

	rev, err := vm.SessionRevokeInject(ctx, &harn.SessionRevokeInjectParams{SessionID: "s", MessageID: m2.MessageID, Meta: actorMeta("alice", "")})
	if err != nil || rev.Status != harn.RevokeStatusRevoked {
		t.Fatalf("revoke %+v %v", rev, err)
	}
	rev, err = vm.SessionRevokeInject(ctx, &harn.SessionRevokeInjectParams{SessionID: "s", MessageID: m2.MessageID, Meta: actorMeta("alice", "")})
	if err != nil || rev.Status != harn.RevokeStatusAlreadyRevoked {
		t.Fatalf("revoke again %+v %v", rev, err)
	}
	_, err = vm.SessionReplaceInject(ctx, &harn.SessionReplaceInjectParams{SessionID: "s", MessageID: m2.MessageID,
		Content: harn.InjectContent{String: new("y")}, Meta: actorMeta("alice", "")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "", `{"reason":"already_revoked","messageId":"msg_inj_2"}`)

	// The loop delivers the first message at its next step boundary, with
	// the user_message update that echoes its id.
	delivered := q.Drain(pending.AtStepBoundary)
	if len(delivered) != 1 {
		t.Fatalf("drained %+v", delivered)
	}
	u, ok := delivered[0].UserMessage("s")
	if !ok {
		t.Fatal("no user_message update")
	}
	sameJSON(t, u, `{"sessionId":"s","update":{"sessionUpdate":"user_message","messageId":"msg_inj_1","content":"use the prod db"}}`)
	_, err = vm.SessionRevokeInject(ctx, &harn.SessionRevokeInjectParams{SessionID: "s", MessageID: "msg_inj_1", Meta: actorMeta("alice", "")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "pending inject already delivered", `{"reason":"already_delivered","messageId":"msg_inj_1"}`)
	_, err = vm.SessionRevokeInject(ctx, &harn.SessionRevokeInjectParams{SessionID: "s", MessageID: "msg_inj_9"})
	wantAnswer(t, err, rpc.CodeInvalidParams, "unknown pending inject messageId", `{"reason":"unknown_message_id","messageId":"msg_inj_9"}`)

	// Bad content: the generated decoder refuses an empty list, the queue
	// an empty string.
	_, err = vm.SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s", Mode: harn.InjectModeSteer, Content: harn.InjectContent{String: new("")}})
	wantAnswer(t, err, rpc.CodeInvalidParams, "", "")
}

func TestSessionsRemindOverAConnection(t *testing.T) {
	sessions := pending.NewSessions(&pending.SessionsOptions{Queue: pending.Options{NewReminderID: func() string { return "rem-1" }}})
	q := sessions.Open("first")
	sessions.Open("second")
	conn := connectPending(t, sessions, true)
	vm := harn.NewVMPeer(conn)
	ctx := context.Background()

	// The seed's session/remind, without a sessionId: the first session's.
	var p harn.SessionRemindParams
	if err := json.Unmarshal([]byte(`{"body":"The workspace changed while you were idle; re-read src/lib.rs before editing.",
		"tags":["workspace"],"dedupe_key":"workspace-change","ttl_turns":2,"role_hint":"system","mode":"interrupt_immediate",
		"_meta":{"harn":{"origin":"file-watcher"}}}`), &p); err != nil {
		t.Fatal(err)
	}
	res, err := vm.SessionRemind(ctx, &p)
	if err != nil || res.ReminderID != "rem-1" {
		t.Fatalf("remind %+v %v", res, err)
	}
	list, err := vm.SessionPendingInjections(ctx, &harn.SessionIDParams{SessionID: "first"})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, list, `{"pendingCount":1,"injections":[{"kind":"reminder","id":"rem-1","reminderId":"rem-1","mode":"interrupt_immediate",
		"position":0,"body":"The workspace changed while you were idle; re-read src/lib.rs before editing.","tags":["workspace"],
		"dedupeKey":"workspace-change","ttlTurns":2,"preserveOnCompact":false,"propagate":"session","roleHint":"system",
		"source":"bridge","firedAtTurn":0,"originatingAgentId":null}]}`)

	// Harn's diagnostics, for documents the generated decoder refuses too
	// (RemindErrors answers first) and for those only ParseRemind refuses.
	for params, msg := range map[string]string{
		`{"sessionId":"first","body":"b","colour":"red","zeal":1}`: "session/remind: HARN-RMD-001: unknown reminder option(s): colour, zeal",
		`{"sessionId":"first","content":"b"}`:                      "session/remind: HARN-RMD-002: ",
		`{"sessionId":"first","body":"b","ttl_turns":0}`:           "session/remind: HARN-RMD-002: ",
		`{"sessionId":"first","body":"b","propagate":"world"}`:     "session/remind: HARN-RMD-005: ",
		`{"sessionId":"first","body":"   "}`:                       "session/remind: HARN-RMD-002: ",
	} {
		err := conn.Call(ctx, harn.MethodSessionRemind, jsontext.Value(params), nil)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidParams || len(re.Message) < len(msg) || re.Message[:len(msg)] != msg {
			t.Errorf("%s: got %v, want %q…", params, err, msg)
		}
	}
	// As a notification a bad reminder is dropped; a good one is queued.
	if err := conn.Notify(ctx, harn.MethodSessionRemind, jsontext.Value(`{"sessionId":"first","body":"b","colour":"red"}`)); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify(ctx, harn.MethodSessionRemind, jsontext.Value(`{"sessionId":"second","reminder":{"body":"nested","id":"mine"},"mode":"steer"}`)); err != nil {
		t.Fatal(err)
	}
	list, err = vm.SessionPendingInjections(ctx, &harn.SessionIDParams{SessionID: "second"})
	if err != nil || list.PendingCount != 1 || list.Injections[0].Reminder.ReminderID != "mine" || list.Injections[0].Reminder.Mode != pending.FinishStep {
		t.Fatalf("second session %+v %v", list, err)
	}

	// revoke_reminder: revoked, already_revoked, already_delivered,
	// unknown_reminder_id; reminder_id is accepted for reminderId.
	if _, err := vm.SessionRemind(ctx, &harn.SessionRemindParams{SessionID: new("first"), Body: new("two"), ID: new("rem-2")}); err != nil {
		t.Fatal(err)
	}
	rev, err := vm.SessionRevokeReminder(ctx, &harn.SessionRevokeReminderParams{SessionID: "first", ReminderIDSnake: new("rem-2")})
	if err != nil || rev.Status != harn.RevokeStatusRevoked || rev.ReminderID != "rem-2" {
		t.Fatalf("revoke reminder %+v %v", rev, err)
	}
	rev, err = vm.SessionRevokeReminder(ctx, &harn.SessionRevokeReminderParams{SessionID: "first", ReminderID: new("rem-2")})
	if err != nil || rev.Status != harn.RevokeStatusAlreadyRevoked {
		t.Fatalf("revoke reminder again %+v %v", rev, err)
	}
	if got := q.Drain(pending.AtInterrupt); len(got) != 1 || got[0].Reminder.Body == "" {
		t.Fatalf("drain %+v", got)
	}
	_, err = vm.SessionRevokeReminder(ctx, &harn.SessionRevokeReminderParams{SessionID: "first", ReminderID: new("rem-1")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "pending reminder already delivered", `{"reason":"already_delivered","reminderId":"rem-1"}`)
	_, err = vm.SessionRevokeReminder(ctx, &harn.SessionRevokeReminderParams{SessionID: "first", ReminderID: new("rem-x")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "unknown pending reminderId", `{"reason":"unknown_reminder_id","reminderId":"rem-x"}`)
	_, err = vm.SessionRevokeReminder(ctx, &harn.SessionRevokeReminderParams{SessionID: "first"})
	wantAnswer(t, err, rpc.CodeInvalidParams, "session/revoke_reminder requires reminderId", "")
}

// Without RemindErrors the generated decoder still refuses what the schema
// refuses, with a plain -32602; what only ParseRemind refuses keeps Harn's
// code.
func TestSessionsRemindWithoutTheMiddleware(t *testing.T) {
	sessions := pending.NewSessions(nil)
	sessions.Open("s")
	conn := connectPending(t, sessions, false)
	ctx := context.Background()
	err := conn.Call(ctx, harn.MethodSessionRemind, jsontext.Value(`{"sessionId":"s","body":"b","colour":"red"}`), nil)
	if !errors.Is(err, rpc.ErrInvalidParams) {
		t.Errorf("unknown option: %v", err)
	}
	err = conn.Call(ctx, harn.MethodSessionRemind, jsontext.Value(`{"sessionId":"s","body":" \t "}`), nil)
	wantAnswer(t, err, rpc.CodeInvalidParams, "session/remind: HARN-RMD-002: `body` must be a non-empty string", "")
}

// Only the live session's active controller injects, when Authorize asks
// the live registry.
func TestSessionsAuthorizeWithALiveRegistry(t *testing.T) {
	lives := live.NewSessions(nil)
	reg := lives.Open("s")
	if _, err := reg.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Attach(live.AttachRequest{ClientID: "portal"}); err != nil {
		t.Fatal(err)
	}
	sessions := pending.NewSessions(&pending.SessionsOptions{Authorize: func(_ context.Context, id acp.SessionID, a pending.Actor) error {
		r, ok := lives.Registry(id)
		if !ok {
			return errors.New("no live session")
		}
		_, err := r.Authorize(a.ID, live.PromptInjection)
		return err
	}})
	sessions.Open("s")
	vm := harn.NewVMPeer(connectPending(t, sessions, true))
	ctx := context.Background()
	_, err := vm.SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s", Mode: harn.InjectModeInterruptImmediate,
		Content: harn.InjectContent{String: new("stop")}, Meta: actorMeta("portal", "")})
	wantAnswer(t, err, rpc.CodeInvalidParams, "live client 'portal' is not the active controller", "")
	if _, err := vm.SessionInject(ctx, &harn.SessionInjectParams{SessionID: "s", Mode: harn.InjectModeInterruptImmediate,
		Content: harn.InjectContent{String: new("stop")}, Meta: actorMeta("tui", "")}); err != nil {
		t.Fatal(err)
	}
}
