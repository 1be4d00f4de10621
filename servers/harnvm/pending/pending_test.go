package pending_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/harnvm/pending"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	alice = pending.Actor{ID: "alice"}
	bob   = pending.Actor{ID: "bob", Raw: jsontext.Value(`{"clientId":"bob","role":"observer","source":"acp"}`)}
	host  = pending.Actor{ID: "ide", HostOwner: true}
)

// seqIDs makes deterministic ids.
func seqIDs() *pending.Options {
	n, r := 0, 0
	return &pending.Options{
		NewMessageID:  func() string { n++; return fmt.Sprintf("msg_%d", n) },
		NewReminderID: func() string { r++; return fmt.Sprintf("rem_%d", r) },
	}
}

func text(s string) jsontext.Value { b, _ := json.Marshal(s); return b }

func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	_ = json.Unmarshal(b, &g)
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g, json.Deterministic(true))
	wb, _ := json.Marshal(w, json.Deterministic(true))
	if string(gb) != string(wb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}

func TestDefaultIDs(t *testing.T) {
	q := pending.NewQueue(nil)
	a, err := q.Inject(alice, pending.FinishStep, text("one"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := q.Inject(alice, pending.FinishStep, text("two"))
	if !regexp.MustCompile(`^msg_inj_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$`).MatchString(a) || a == b {
		t.Errorf("message ids %q %q", a, b)
	}
	r, err := q.Remind(pending.Reminder{Body: "x"}, pending.AuditOnly)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(r) {
		t.Errorf("reminder id %q", r)
	}
}

func TestContentAndModes(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	for _, c := range []string{`"hi"`, `[{"type":"text","text":"hi"}]`, `[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"resource_link","uri":"file:///a","name":"a"}]`} {
		if _, err := q.Inject(alice, pending.FinishStep, jsontext.Value(c)); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	for c, msg := range map[string]string{
		``:                              "session/inject requires content",
		`""`:                            "session/inject: content must not be empty",
		`[]`:                            "session/inject: content must not be empty",
		`[{}]`:                          "session/inject: content block 0 has no known type",
		`[{"type":"video"}]`:            "session/inject: content block 0 has no known type",
		`[{"type":"text"}]`:             "session/inject: content block 0: decode TextContent.text: missing required member",
		`[{"type":"image","data":"x"}]`: "session/inject: content block 0: decode ImageContent.mimeType: missing required member",
		`["hi"]`:                        "session/inject: content must be a string or an array of content blocks",
		`5`:                             "session/inject: content must be a string or an array of content blocks",
		`{"type":"text","text":"hi"}`:   "session/inject: content must be a string or an array of content blocks",
		`null`:                          "session/inject: content must be a string or an array of content blocks",
	} {
		_, err := q.Inject(alice, pending.FinishStep, jsontext.Value(c))
		if !errors.Is(err, pending.ErrInvalidContent) || err.Error() != msg {
			t.Errorf("%q: %v, want %q", c, err, msg)
		}
		var ie *pending.InputError
		if errors.As(err, &ie) && ie.RPCError().Code != rpc.CodeInvalidParams {
			t.Errorf("%q: code %d", c, ie.RPCError().Code)
		}
	}
	if _, err := q.Inject(alice, "queue", text("x")); !errors.Is(err, pending.ErrUnsupportedMode) {
		t.Errorf("non-canonical mode: %v", err)
	}
	if _, err := q.Remind(pending.Reminder{Body: "x"}, ""); !errors.Is(err, pending.ErrUnsupportedMode) {
		t.Errorf("remind without mode: %v", err)
	}
	if _, err := q.Remind(pending.Reminder{}, pending.AuditOnly); !errors.Is(err, pending.ErrMalformed) {
		t.Errorf("remind without body: %v", err)
	}
	if q.Len() != 3 {
		t.Errorf("Len %d", q.Len())
	}

	for in, want := range map[string]pending.Mode{"queue": pending.AuditOnly, "steer": pending.FinishStep, "interrupt_immediate": pending.InterruptImmediate} {
		if m, err := pending.ParseInjectMode(in); err != nil || m != want {
			t.Errorf("ParseInjectMode(%q) = %q %v", in, m, err)
		}
	}
	for in, msg := range map[string]string{
		"":            "session/inject requires mode",
		"finish_step": "session/inject: unsupported mode `finish_step`; expected `queue`, `steer` or `interrupt_immediate`",
		"interrupt":   "session/inject: unsupported mode `interrupt`; expected `queue`, `steer` or `interrupt_immediate`",
	} {
		if _, err := pending.ParseInjectMode(in); !errors.Is(err, pending.ErrUnsupportedMode) || err.Error() != msg {
			t.Errorf("ParseInjectMode(%q): %v", in, err)
		}
	}
	for in, want := range map[string]pending.Mode{
		"interrupt_immediate": pending.InterruptImmediate, "interrupt": pending.InterruptImmediate,
		"finish_step": pending.FinishStep, "after_current_operation": pending.FinishStep, "steer": pending.FinishStep,
		"audit_only": pending.AuditOnly, "queue": pending.AuditOnly, "": pending.AuditOnly, "wait_for_completion": pending.AuditOnly,
	} {
		if m := pending.ParseReminderMode(in); m != want {
			t.Errorf("ParseReminderMode(%q) = %q", in, m)
		}
	}
	for cp, m := range map[pending.Checkpoint]pending.Mode{pending.AtInterrupt: pending.InterruptImmediate,
		pending.AtStepBoundary: pending.FinishStep, pending.AtLoopExit: pending.AuditOnly, 0: ""} {
		if cp.Mode() != m {
			t.Errorf("%d.Mode() = %q", cp, cp.Mode())
		}
	}
}

func TestFIFOAndListing(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	m1, _ := q.Inject(alice, pending.FinishStep, text("first"))
	r1, _ := q.Remind(pending.Reminder{Body: "Refresh the compacted context.", Tags: []string{"token_pressure"}, DedupeKey: "k",
		TTLTurns: 2, Propagate: pending.PropagateSession, RoleHint: pending.RoleDeveloper, Authority: pending.AuthorityContract,
		Source: pending.SourceBridge}, pending.InterruptImmediate)
	m2, _ := q.Inject(bob, pending.AuditOnly, jsontext.Value(`[{"type":"text","text":"second"}]`))
	r2, _ := q.Remind(pending.Reminder{ID: "mine", Body: "b", Propagate: pending.PropagateSession, RoleHint: pending.RoleSystem,
		Authority: pending.AuthorityContract, Source: pending.SourceBridge}, pending.FinishStep)
	m3, _ := q.Inject(alice, pending.InterruptImmediate, text("third"))
	if r2 != "mine" {
		t.Errorf("host-given reminder id replaced: %q", r2)
	}
	sameJSON(t, q.Pending(), `{"pendingCount":5,"injections":[
		{"kind":"user","id":"msg_1","messageId":"msg_1","mode":"finish_step","position":0,"content":"first"},
		{"kind":"reminder","id":"rem_1","reminderId":"rem_1","mode":"interrupt_immediate","position":1,"body":"Refresh the compacted context.",
		 "tags":["token_pressure"],"dedupeKey":"k","ttlTurns":2,"preserveOnCompact":false,"propagate":"session","roleHint":"developer",
		 "source":"bridge","firedAtTurn":0,"originatingAgentId":null},
		{"kind":"user","id":"msg_2","messageId":"msg_2","mode":"audit_only","position":2,"content":[{"type":"text","text":"second"}]},
		{"kind":"reminder","id":"mine","reminderId":"mine","mode":"finish_step","position":3,"body":"b","tags":[],"dedupeKey":null,
		 "ttlTurns":null,"preserveOnCompact":false,"propagate":"session","roleHint":"system","source":"bridge","firedAtTurn":0,
		 "originatingAgentId":null},
		{"kind":"user","id":"msg_3","messageId":"msg_3","mode":"interrupt_immediate","position":4,"content":"third"}]}`)

	ids := func(es []pending.Entry) (out []string) {
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s@%d", e.ID, e.Position))
		}
		return out
	}
	if got := ids(q.Drain(pending.AtInterrupt)); fmt.Sprint(got) != fmt.Sprint([]string{r1 + "@1", m3 + "@4"}) {
		t.Errorf("interrupt drain %v", got)
	}
	if got := ids(q.Drain(pending.AtInterrupt)); len(got) != 0 {
		t.Errorf("second drain %v", got)
	}
	if got := ids(q.Pending()); fmt.Sprint(got) != fmt.Sprint([]string{m1 + "@0", m2 + "@1", r2 + "@2"}) {
		t.Errorf("left %v", got)
	}
	if got := ids(q.Drain(pending.AtStepBoundary)); fmt.Sprint(got) != fmt.Sprint([]string{m1 + "@0", r2 + "@2"}) {
		t.Errorf("step drain %v", got)
	}
	if got := ids(q.Drain(pending.AtLoopExit)); fmt.Sprint(got) != fmt.Sprint([]string{m2 + "@0"}) {
		t.Errorf("exit drain %v", got)
	}
	sameJSON(t, q.Pending(), `{"pendingCount":0,"injections":[]}`)
	sameJSON(t, pending.Listing(nil), `{"pendingCount":0,"injections":[]}`)
}

func wantRace(t *testing.T, err error, reason pending.Reason, data string) {
	t.Helper()
	var re *pending.RaceError
	if !errors.As(err, &re) || re.Reason != reason {
		t.Fatalf("err = %v, want %s", err, reason)
	}
	e := re.RPCError()
	if e.Code != rpc.CodeInvalidParams || string(e.Data) != data {
		t.Errorf("RPCError %d %s, want %s", e.Code, e.Data, data)
	}
}

func TestRevokeInject(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	m1, _ := q.Inject(alice, pending.FinishStep, text("a"))
	m2, _ := q.Inject(alice, pending.AuditOnly, text("b"))

	_, err := q.Revoke(bob, m1)
	wantRace(t, err, pending.ReasonNotOwner, `{"reason":"not_owner_or_not_authorized","messageId":"msg_1",`+
		`"actor":{"clientId":"bob","role":"observer","source":"acp"},"owner":{"clientId":"alice"}}`)
	if err.Error() != "pending inject is owned by another ACP actor" {
		t.Errorf("message %q", err)
	}
	if st, err := q.Revoke(alice, m1); err != nil || st != pending.StatusRevoked {
		t.Fatalf("revoke: %s %v", st, err)
	}
	if st, err := q.Revoke(alice, m1); err != nil || st != pending.StatusAlreadyRevoked {
		t.Fatalf("revoke again: %s %v", st, err)
	}
	_, err = q.Revoke(bob, m1) // still not bob's, even revoked
	wantRace(t, err, pending.ReasonNotOwner, `{"reason":"not_owner_or_not_authorized","messageId":"msg_1",`+
		`"actor":{"clientId":"bob","role":"observer","source":"acp"},"owner":{"clientId":"alice"}}`)

	q.Drain(pending.AtLoopExit)
	_, err = q.Revoke(alice, m2)
	wantRace(t, err, pending.ReasonAlreadyDelivered, `{"reason":"already_delivered","messageId":"msg_2"}`)
	if err.Error() != "pending inject already delivered" || !errors.Is(err, pending.ErrAlreadyDelivered) {
		t.Errorf("%v", err)
	}
	_, err = q.Revoke(alice, "msg_nope")
	wantRace(t, err, pending.ReasonUnknownMessageID, `{"reason":"unknown_message_id","messageId":"msg_nope"}`)
	if err.Error() != "unknown pending inject messageId" || !errors.Is(err, pending.ErrUnknownMessageID) {
		t.Errorf("%v", err)
	}

	// A host owner may revoke anyone's message.
	m3, _ := q.Inject(bob, pending.FinishStep, text("c"))
	if st, err := q.Revoke(host, m3); err != nil || st != pending.StatusRevoked {
		t.Fatalf("host owner revoke: %s %v", st, err)
	}
	// Reminders are not user messages.
	r, _ := q.Remind(pending.Reminder{Body: "x"}, pending.AuditOnly)
	_, err = q.Revoke(host, r)
	wantRace(t, err, pending.ReasonUnknownMessageID, `{"reason":"unknown_message_id","messageId":"rem_1"}`)
}

func TestReplaceInject(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	m1, _ := q.Inject(alice, pending.FinishStep, text("a"))
	m2, _ := q.Inject(alice, pending.InterruptImmediate, text("b"))
	m3, _ := q.Inject(alice, pending.FinishStep, text("c"))

	if err := q.Replace(alice, m1, jsontext.Value(`[{"type":"text","text":"A"}]`)); err != nil {
		t.Fatal(err)
	}
	list := q.Pending()
	if list[0].ID != m1 || list[0].Mode != pending.FinishStep || string(list[0].Content) != `[{"type":"text","text":"A"}]` {
		t.Errorf("replaced entry %+v", list[0])
	}
	if err := q.Replace(alice, m1, text("")); !errors.Is(err, pending.ErrInvalidContent) || err.Error() != "session/replace_inject: content must not be empty" {
		t.Errorf("empty replacement: %v", err)
	}
	if string(q.Pending()[0].Content) != `[{"type":"text","text":"A"}]` {
		t.Error("refused replacement changed the entry")
	}
	err := q.Replace(bob, m1, text("x"))
	wantRace(t, err, pending.ReasonNotOwner, `{"reason":"not_owner_or_not_authorized","messageId":"msg_1",`+
		`"actor":{"clientId":"bob","role":"observer","source":"acp"},"owner":{"clientId":"alice"}}`)
	if err := q.Replace(host, m1, text("by host")); err != nil {
		t.Errorf("host owner replace: %v", err)
	}

	_, _ = q.Revoke(alice, m3)
	err = q.Replace(alice, m3, text("x"))
	wantRace(t, err, pending.ReasonAlreadyRevoked, `{"reason":"already_revoked","messageId":"msg_3"}`)
	if err.Error() != "pending inject already revoked" || !errors.Is(err, pending.ErrAlreadyRevoked) {
		t.Errorf("%v", err)
	}
	q.Drain(pending.AtInterrupt)
	wantRace(t, q.Replace(alice, m2, text("x")), pending.ReasonAlreadyDelivered, `{"reason":"already_delivered","messageId":"msg_2"}`)
	wantRace(t, q.Replace(alice, "zzz", text("x")), pending.ReasonUnknownMessageID, `{"reason":"unknown_message_id","messageId":"zzz"}`)
	wantRace(t, q.Replace(bob, m2, text("x")), pending.ReasonNotOwner, `{"reason":"not_owner_or_not_authorized","messageId":"msg_2",`+
		`"actor":{"clientId":"bob","role":"observer","source":"acp"},"owner":{"clientId":"alice"}}`)
	if got := q.Pending(); len(got) != 1 || got[0].ID != m1 || string(got[0].Content) != `"by host"` {
		t.Errorf("pending %+v", got)
	}
}

func TestRevokeReminder(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	r1, _ := q.Remind(pending.Reminder{Body: "a"}, pending.FinishStep)
	r2, _ := q.Remind(pending.Reminder{ID: "fixed", Body: "b"}, pending.AuditOnly)
	if st, err := q.RevokeReminder(r1); err != nil || st != pending.StatusRevoked {
		t.Fatalf("%s %v", st, err)
	}
	if st, err := q.RevokeReminder(r1); err != nil || st != pending.StatusAlreadyRevoked {
		t.Fatalf("%s %v", st, err)
	}
	q.Drain(pending.AtLoopExit)
	_, err := q.RevokeReminder(r2)
	wantRace(t, err, pending.ReasonAlreadyDelivered, `{"reason":"already_delivered","reminderId":"fixed"}`)
	if err.Error() != "pending reminder already delivered" {
		t.Errorf("%v", err)
	}
	_, err = q.RevokeReminder("nope")
	wantRace(t, err, pending.ReasonUnknownReminderID, `{"reason":"unknown_reminder_id","reminderId":"nope"}`)
	if err.Error() != "unknown pending reminderId" || !errors.Is(err, pending.ErrUnknownReminderID) {
		t.Errorf("%v", err)
	}
	// User messages are not reminders.
	m, _ := q.Inject(alice, pending.FinishStep, text("x"))
	_, err = q.RevokeReminder(m)
	wantRace(t, err, pending.ReasonUnknownReminderID, `{"reason":"unknown_reminder_id","reminderId":"msg_1"}`)

	// A pending id cannot be queued twice; a settled one may be reused.
	if _, err := q.Remind(pending.Reminder{ID: "again", Body: "1"}, pending.FinishStep); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Remind(pending.Reminder{ID: "again", Body: "2"}, pending.FinishStep); !errors.Is(err, pending.ErrDuplicateID) {
		t.Errorf("duplicate pending id: %v", err)
	}
	if _, err := q.Remind(pending.Reminder{ID: "fixed", Body: "again"}, pending.FinishStep); err != nil {
		t.Errorf("reuse of a delivered id: %v", err)
	}
	if st, err := q.RevokeReminder("fixed"); err != nil || st != pending.StatusRevoked {
		t.Errorf("revoke of the reused id: %s %v", st, err)
	}
}

func TestBounds(t *testing.T) {
	q := pending.NewQueue(&pending.Options{MaxPending: 2, MaxSettled: 2})
	a, _ := q.Inject(alice, pending.FinishStep, text("a"))
	if _, err := q.Remind(pending.Reminder{Body: "b"}, pending.FinishStep); err != nil {
		t.Fatal(err)
	}
	_, err := q.Inject(alice, pending.FinishStep, text("c"))
	var ie *pending.InputError
	if !errors.Is(err, pending.ErrQueueFull) || !errors.As(err, &ie) || ie.RPCError().Code != -32000 {
		t.Fatalf("full queue: %v", err)
	}
	if _, err := q.Remind(pending.Reminder{Body: "c"}, pending.FinishStep); !errors.Is(err, pending.ErrQueueFull) {
		t.Fatalf("full queue remind: %v", err)
	}
	q.Drain(pending.AtStepBoundary)
	b, _ := q.Inject(alice, pending.FinishStep, text("d"))
	c, _ := q.Inject(alice, pending.FinishStep, text("e"))
	_, _ = q.Revoke(alice, b)
	_, _ = q.Revoke(alice, c) // the third settled id: a is forgotten
	if _, err := q.Revoke(alice, a); !errors.Is(err, pending.ErrUnknownMessageID) {
		t.Errorf("forgotten delivered id: %v", err)
	}
	if st, err := q.Revoke(alice, c); err != nil || st != pending.StatusAlreadyRevoked {
		t.Errorf("remembered id: %s %v", st, err)
	}
}

// The bounds hold in bytes too: a peer cannot fill memory with few, large
// messages, nor with long reminder ids kept for already_* answers.
func TestByteBounds(t *testing.T) {
	q := pending.NewQueue(&pending.Options{MaxPendingBytes: 4096, MaxSettledBytes: 1024})
	big := text(strings.Repeat("x", 3000))
	a, err := q.Inject(alice, pending.FinishStep, big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Inject(alice, pending.FinishStep, big); !errors.Is(err, pending.ErrQueueFull) {
		t.Fatalf("past the byte bound: %v", err)
	}
	if _, err := q.Remind(pending.Reminder{Body: strings.Repeat("y", 2000)}, pending.FinishStep); !errors.Is(err, pending.ErrQueueFull) {
		t.Fatalf("a reminder past the byte bound: %v", err)
	}
	small, err := q.Inject(alice, pending.FinishStep, text("small"))
	if err != nil {
		t.Fatalf("a small message under the bound: %v", err)
	}
	if err := q.Replace(alice, small, big); !errors.Is(err, pending.ErrQueueFull) {
		t.Fatalf("a replace past the byte bound: %v", err)
	}
	// Revoking frees the bytes.
	if _, err := q.Revoke(alice, a); err != nil {
		t.Fatal(err)
	}
	if err := q.Replace(alice, small, big); err != nil {
		t.Fatalf("a replace once there is room: %v", err)
	}
	q.Drain(pending.AtStepBoundary)
	if _, err := q.Inject(alice, pending.FinishStep, big); err != nil {
		t.Fatalf("after the drain: %v", err)
	}
	// Settled ids are forgotten, oldest first, past their byte bound.
	long := strings.Repeat("r", 600)
	for _, id := range []string{long + "1", long + "2"} {
		if _, err := q.Remind(pending.Reminder{ID: id, Body: "b"}, pending.InterruptImmediate); err != nil {
			t.Fatal(err)
		}
		if _, err := q.RevokeReminder(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.RevokeReminder(long + "1"); !errors.Is(err, pending.ErrUnknownReminderID) {
		t.Errorf("the older long id is still remembered: %v", err)
	}
	if st, err := q.RevokeReminder(long + "2"); err != nil || st != pending.StatusAlreadyRevoked {
		t.Errorf("the newer long id: %s %v", st, err)
	}
}

func TestWait(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	got := make(chan []pending.Entry)
	go func() {
		es, err := q.Wait(context.Background(), pending.AtInterrupt)
		if err != nil {
			t.Error(err)
		}
		got <- es
	}()
	time.Sleep(5 * time.Millisecond)
	q.Inject(alice, pending.FinishStep, text("not for this checkpoint"))
	select {
	case es := <-got:
		t.Fatalf("woke for another mode: %+v", es)
	case <-time.After(20 * time.Millisecond):
	}
	q.Inject(alice, pending.InterruptImmediate, text("now"))
	select {
	case es := <-got:
		if len(es) != 1 || string(es[0].Content) != `"now"` {
			t.Fatalf("got %+v", es)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake")
	}
	// Already pending: returns at once.
	if es, err := q.Wait(context.Background(), pending.AtStepBoundary); err != nil || len(es) != 1 {
		t.Fatalf("pending entry: %+v %v", es, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := q.Wait(ctx, pending.AtLoopExit); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx: %v", err)
	}
}

// Returned entries do not alias the queue.
func TestNoAliasing(t *testing.T) {
	q := pending.NewQueue(seqIDs())
	content := jsontext.Value(`"abc"`)
	q.Inject(alice, pending.FinishStep, content)
	content[1] = 'X'
	tags := []string{"t"}
	q.Remind(pending.Reminder{Body: "b", Tags: tags}, pending.FinishStep)
	tags[0] = "changed"
	l := q.Pending()
	l[0].Content[1] = 'Y'
	l[1].Reminder.Tags[0] = "changed"
	l = q.Pending()
	if string(l[0].Content) != `"abc"` || l[1].Reminder.Tags[0] != "t" {
		t.Errorf("queue state changed through shared memory: %s %v", l[0].Content, l[1].Reminder.Tags)
	}
}
