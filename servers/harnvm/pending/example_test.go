package pending_test

import (
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/servers/harnvm/pending"
	"github.com/go-json-experiment/json/jsontext"
)

// A host steers the running agent with a user message and queues a
// reminder; the agent loop drains the message at its next step boundary,
// after which revoking it is a race the host has lost.
func Example() {
	q := pending.NewQueue(nil)
	host := pending.Actor{ID: "portal"}

	mode, _ := pending.ParseInjectMode("steer")
	msgID, _ := q.Inject(host, mode, jsontext.Value(`"Use the staging database instead."`))

	req, err := pending.ParseRemind([]byte(`{"sessionId":"session_123","body":"Re-read src/lib.rs before editing.",` +
		`"tags":["workspace"],"id":"reminder-1","mode":"queue"}`))
	if err != nil {
		panic(err)
	}
	q.Remind(req.Reminder, req.Mode)

	for _, e := range q.Pending() {
		fmt.Println("pending:", e.Kind, e.Mode, e.Position)
	}
	for _, e := range q.Drain(pending.AtStepBoundary) {
		fmt.Println("delivered at step boundary:", string(e.Content))
	}
	_, err = q.Revoke(host, msgID)
	fmt.Println("revoke:", err)
	var race *pending.RaceError
	if errors.As(err, &race) {
		fmt.Println("reason:", race.Reason, "code:", race.RPCError().Code)
	}

	_, err = pending.ParseRemind([]byte(`{"body":"x","priority":"high"}`))
	fmt.Println(err.(*pending.ReminderError).RPCError().Message)
	// Output:
	// pending: user finish_step 0
	// pending: reminder audit_only 1
	// delivered at step boundary: "Use the staging database instead."
	// revoke: pending inject already delivered
	// reason: already_delivered code: -32602
	// session/remind: HARN-RMD-001: unknown reminder option(s): priority
}
