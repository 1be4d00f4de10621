package pending_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bridgekit/bridgekit/servers/harnvm/pending"
	"github.com/go-json-experiment/json"
)

// model is the reference the Queue is checked against: a FIFO of ids and
// the fate of every id ever issued.
type model struct {
	fifo  []string // pending ids in order
	mode  map[string]pending.Mode
	kind  map[string]pending.Kind
	owner map[string]string
	state map[string]string // pending | revoked | delivered
}

var actors = []pending.Actor{{ID: "a"}, {ID: "b"}, {ID: "h", HostOwner: true}}
var modes = []pending.Mode{pending.InterruptImmediate, pending.FinishStep, pending.AuditOnly}

// full checks Inject's or Remind's error against the model: ErrQueueFull
// exactly when DefaultMaxPending entries wait (then nothing was queued),
// no error otherwise.
func full(t *testing.T, m *model, err error) bool {
	t.Helper()
	if len(m.fifo) >= pending.DefaultMaxPending {
		if !errors.Is(err, pending.ErrQueueFull) {
			t.Fatalf("%d pending: got %v, want ErrQueueFull", len(m.fifo), err)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// FuzzQueue runs random sequences of every operation against the model:
// FIFO order, drains by checkpoint, and the exact status or race reason of
// every revoke and replace.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 1, 5, 0, 0, 2, 0, 0, 3, 1, 0, 4, 0, 0, 6, 2, 0, 2, 1, 0, 7, 1, 0, 8, 0, 0})
	f.Add([]byte{1, 2, 2, 1, 0, 1, 0, 1, 1, 6, 0, 0, 5, 1, 0, 4, 2, 0, 2, 2, 1, 3, 0, 2})
	f.Fuzz(func(t *testing.T, prog []byte) {
		q := pending.NewQueue(seqIDs())
		m := &model{mode: map[string]pending.Mode{}, kind: map[string]pending.Kind{}, owner: map[string]string{}, state: map[string]string{}}
		var issued []string
		pick := func(b byte) string {
			if len(issued) == 0 || int(b)%(len(issued)+1) == len(issued) {
				return "never-issued"
			}
			return issued[int(b)%(len(issued)+1)]
		}
		for i := 0; i+2 < len(prog); i += 3 {
			op, x, y := prog[i]%9, prog[i+1], prog[i+2]
			actor := actors[int(y)%len(actors)]
			switch op {
			case 0: // inject
				mode := modes[int(x)%3]
				id, err := q.Inject(actor, mode, text("m"))
				if full(t, m, err) {
					continue
				}
				m.fifo = append(m.fifo, id)
				m.mode[id], m.kind[id], m.owner[id], m.state[id] = mode, pending.KindUser, actor.ID, "pending"
				issued = append(issued, id)
			case 1: // remind
				mode := modes[int(x)%3]
				id, err := q.Remind(pending.Reminder{Body: "r"}, mode)
				if full(t, m, err) {
					continue
				}
				m.fifo = append(m.fifo, id)
				m.mode[id], m.kind[id], m.state[id] = mode, pending.KindReminder, "pending"
				issued = append(issued, id)
			case 2: // revoke_inject
				id := pick(x)
				st, err := q.Revoke(actor, id)
				want := m.revoke(pending.KindUser, id, actor, false)
				check(t, "revoke "+id, st, err, want)
			case 3: // replace_inject
				id := pick(x)
				err := q.Replace(actor, id, text("new"))
				want := m.revoke(pending.KindUser, id, actor, true)
				check(t, "replace "+id, "", err, want)
			case 4: // revoke_reminder
				id := pick(x)
				st, err := q.RevokeReminder(id)
				want := m.revoke(pending.KindReminder, id, pending.Actor{HostOwner: true}, false)
				check(t, "revoke_reminder "+id, st, err, want)
			case 5, 6, 7: // drain at each checkpoint
				cp := pending.Checkpoint(op - 4)
				var got, want []string
				for _, e := range q.Drain(cp) {
					got = append(got, e.ID)
				}
				kept := m.fifo[:0:0]
				for _, id := range m.fifo {
					if m.mode[id] == cp.Mode() {
						want = append(want, id)
						m.state[id] = "delivered"
					} else {
						kept = append(kept, id)
					}
				}
				m.fifo = kept
				if !slices.Equal(got, want) {
					t.Fatalf("drain %d: got %v, want %v", cp, got, want)
				}
			case 8: // list
				var got []string
				for i, e := range q.Pending() {
					if e.Position != i {
						t.Fatalf("position %d at index %d", e.Position, i)
					}
					got = append(got, e.ID)
				}
				if !slices.Equal(got, m.fifo) {
					t.Fatalf("pending %v, want %v", got, m.fifo)
				}
			}
		}
	})
}

// revoke applies a revoke (or, with replace, a replace) to the model and
// returns the expected outcome: a status or a reason.
func (m *model) revoke(kind pending.Kind, id string, actor pending.Actor, replace bool) string {
	st, ok := m.state[id]
	if !ok || m.kind[id] != kind {
		if kind == pending.KindReminder {
			return string(pending.ReasonUnknownReminderID)
		}
		return string(pending.ReasonUnknownMessageID)
	}
	if kind == pending.KindUser && !actor.HostOwner && actor.ID != m.owner[id] {
		return string(pending.ReasonNotOwner)
	}
	switch st {
	case "delivered":
		return string(pending.ReasonAlreadyDelivered)
	case "revoked":
		if replace {
			return string(pending.ReasonAlreadyRevoked)
		}
		return string(pending.StatusAlreadyRevoked)
	}
	if replace {
		return string(pending.StatusReplaced)
	}
	m.state[id] = "revoked"
	m.fifo = slices.DeleteFunc(m.fifo, func(x string) bool { return x == id })
	return string(pending.StatusRevoked)
}

func check(t *testing.T, what string, st pending.Status, err error, want string) {
	t.Helper()
	got := string(st)
	if err != nil {
		var re *pending.RaceError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v", what, err)
		}
		got = string(re.Reason)
	} else if got == "" {
		got = string(pending.StatusReplaced)
	}
	if got != want {
		t.Fatalf("%s: got %s, want %s", what, got, want)
	}
}

// FuzzParseRemind: no input panics; every accepted reminder is valid, and
// every refusal carries one of the three codes.
func FuzzParseRemind(f *testing.F) {
	for _, seed := range []string{seedRemind, `{"reminder":{"body":"x","tags":["a"]},"mode":"steer"}`, `{"body":"x","ttl_turns":0}`,
		`{"content":"x"}`, `{"body":"x","propagate":"y"}`, `{"body":"x","extra":1}`, `[]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := pending.ParseRemind(in)
		if err != nil {
			var re *pending.ReminderError
			if !errors.As(err, &re) || !slices.Contains([]pending.Code{pending.CodeUnknownOption, pending.CodeMalformed, pending.CodeUnknownPropagate}, re.Code) {
				t.Fatalf("error without a reminder code: %v", err)
			}
			return
		}
		r := req.Reminder
		if r.Body == "" || r.TTLTurns < 0 || r.FiredAtTurn < 0 || r.Source != pending.SourceBridge || !slices.Contains(modes, req.Mode) ||
			r.Propagate == "" || r.RoleHint == "" || r.Authority == "" {
			t.Fatalf("accepted an invalid reminder: %+v", req)
		}
		for _, tag := range r.Tags {
			if tag == "" {
				t.Fatal("empty tag")
			}
		}
		q := pending.NewQueue(nil)
		if _, err := q.Remind(r, req.Mode); err != nil {
			t.Fatalf("queue refused a parsed reminder: %v", err)
		}
		if _, err := json.Marshal(q.Pending()); err != nil {
			t.Fatal(fmt.Errorf("listing does not encode: %w", err))
		}
	})
}
