package prompt

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// Waiting is shown once Slow has passed, and never with Slow 0.
func TestNotice(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	status := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, format)
	}
	stop := New(Options{Slow: 20 * time.Millisecond, Status: status}).notice(context.Background(), "initialize")
	time.Sleep(100 * time.Millisecond)
	stop()
	stop = New(Options{Status: status}).notice(context.Background(), "initialize")
	time.Sleep(50 * time.Millisecond)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "waiting for the agent to answer") {
		t.Errorf("%q", lines)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		harn    bool
		denied  string
		kind    Kind
		summary string
	}{
		{`{"stopReason":"end_turn"}`, false, "", Completed, "completed: end_turn"},
		{`{"stopReason":"end_turn"}`, true, "", NotCompleted, "without the Harn terminal outcome"},
		{`{"stopReason":"end_turn","_meta":{"harn":{"terminal":{"kind":"natural","reason":"done","owner":"agent"}}}}`, true, "", Completed, "Harn terminal outcome natural"},
		{`{"stopReason":"cancelled"}`, false, "", AgentCancelled, "although the host did not ask"},
		{`{"stopReason":"cancelled"}`, false, `"rm" (execute)`, DeniedCancelled, `after the host denied a permission ("rm" (execute))`},
		{`{"stopReason":"refusal"}`, false, "", Refused, "refusal"},
		{`{"stopReason":"max_tokens"}`, false, "", MaxTokens, "max_tokens"},
		{`{"stopReason":"max_turn_requests"}`, false, "", MaxTurnRequests, "max_turn_requests"},
		{`{"stopReason":"bogus"}`, false, "", Protocol, `unknown stopReason "bogus"`},
	} {
		var res acp.PromptResponse
		if err := json.Unmarshal([]byte(tc.doc), &res); err != nil {
			t.Fatal(err)
		}
		r := New(Options{Denied: func() string { return tc.denied }})
		r.harnRuntime = tc.harn
		o := r.classify(&res)
		if o.Kind != tc.kind || !strings.Contains(o.Summary, tc.summary) {
			t.Errorf("%s harn %v denied %q: %+v", tc.doc, tc.harn, tc.denied, o)
		}
	}
}
