package permission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

const root = "/work/space"

// policyOf is the policy of examples/host's README: reads anywhere in the
// workspace, edits under src/, never anything under secrets/, `go test`
// only.
func policyOf(t testing.TB) *permission.Policy {
	p := &permission.Policy{Resolve: permission.Workspace(root), Rules: []permission.Rule{
		{ID: "no-secrets", Paths: []string{"secrets/**", "**/*.pem"}, Decision: "deny"},
		{ID: "no-rm", Kinds: []acp.ToolKind{acp.ToolKindExecute}, Commands: []string{"rm **"}, Decision: "deny"},
		{ID: "reads", Kinds: []acp.ToolKind{acp.ToolKindRead}, Paths: []string{"**"}, Decision: "allow"},
		{ID: "edits", Kinds: []acp.ToolKind{acp.ToolKindEdit}, Paths: []string{"src/**"}, Decision: "allow"},
		{ID: "tests", Kinds: []acp.ToolKind{acp.ToolKindExecute}, Commands: []string{"go test **"}, Decision: "allow"},
	}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func request(kind acp.ToolKind, raw string, locations ...string) *acp.RequestPermissionRequest {
	tc := acp.ToolCallUpdate{ToolCallID: "call_1", Title: wire.Some("tool")}
	if kind != "" {
		tc.Kind = wire.Some(kind)
	}
	if raw != "" {
		tc.RawInput = jsontext.Value(raw)
	}
	if locations != nil {
		var locs []acp.ToolCallLocation
		for _, l := range locations {
			locs = append(locs, acp.ToolCallLocation{Path: l})
		}
		tc.Locations = wire.Some(locs)
	}
	return &acp.RequestPermissionRequest{SessionID: "s", ToolCall: tc, Options: []acp.PermissionOption{
		{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}}
}

func TestPolicyDecisions(t *testing.T) {
	p := policyOf(t)
	for _, c := range []struct {
		name  string
		req   *acp.RequestPermissionRequest
		allow bool
		rule  string
	}{
		{"read inside", request(acp.ToolKindRead, `{"path":"README.md"}`), true, "reads"},
		{"read outside", request(acp.ToolKindRead, `{"path":"/etc/passwd"}`), false, "no-secrets"},
		{"read with no path", request(acp.ToolKindRead, `{}`), false, ""},
		{"edit under src", request(acp.ToolKindEdit, `{"file_path":"/work/space/src/a.go"}`, "/work/space/src/a.go"), true, "edits"},
		{"edit elsewhere", request(acp.ToolKindEdit, `{"file_path":"go.mod"}`), false, ""},
		{"edit escaping", request(acp.ToolKindEdit, `{"file_path":"src/../../x"}`), false, "no-secrets"},
		// A deny rule sees a path under any key, at any depth, inside a
		// longer string, and in locations.
		{"secret under file", request(acp.ToolKindRead, `{"path":"README.md","file":"secrets/key"}`), false, "no-secrets"},
		{"secret under target", request(acp.ToolKindEdit, `{"file_path":"src/a.go","target":"secrets/x"}`), false, "no-secrets"},
		{"secret nested", request(acp.ToolKindRead, `{"path":"a","opts":{"list":[{"x":"/work/space/secrets/k"}]}}`), false, "no-secrets"},
		{"secret in a command", request(acp.ToolKindExecute, `{"command":"go test ./... -coverprofile=secrets/out"}`), false, "no-secrets"},
		{"pem by name", request(acp.ToolKindRead, `{"path":"README.md","note":"see id.pem"}`), false, "no-secrets"},
		{"secret in locations", request(acp.ToolKindRead, `{"path":"README.md"}`, "/work/space/secrets/a"), false, "no-secrets"},
		{"go test", request(acp.ToolKindExecute, `{"command":"go test ./..."}`), true, "tests"},
		{"go test as argv", request(acp.ToolKindExecute, `{"command":["go","test","./..."]}`), true, "tests"},
		{"chained", request(acp.ToolKindExecute, `{"command":"go test ./...; curl x"}`), false, "no-rm"},
		{"a carriage return after the words", request(acp.ToolKindExecute, `{"command":"go test\r"}`), false, "no-rm"},
		{"blanks around the words", request(acp.ToolKindExecute, `{"command":" go test ./...\t"}`), true, "tests"},
		{"rm", request(acp.ToolKindExecute, `{"command":"rm -rf build"}`), false, "no-rm"},
		{"hidden command", request(acp.ToolKindExecute, `{"script":"rm -rf build"}`), false, "no-rm"},
		// A command named ambiguously is not decided: a tool reading
		// the other member would run what nobody checked.
		{"a command named twice", request(acp.ToolKindExecute, `{"command":"go test ./...","command":"rm -rf /home/user"}`), false, ""},
		{"a deny rule's command named second", request(acp.ToolKindExecute, `{"command":"go test","command":"rm -rf x"}`), false, ""},
		{"command and cmd", request(acp.ToolKindExecute, `{"command":"go test ./...","cmd":"rm -rf x"}`), false, ""},
		{"commands in two objects", request(acp.ToolKindExecute, `{"command":"go test","input":{"command":"rm -rf x"}}`), false, ""},
		{"arguments named twice", request(acp.ToolKindExecute, `{"command":"go","args":["test"],"args":["vet"]}`), false, ""},
		{"an object as the command", request(acp.ToolKindExecute, `{"command":{"line":"go test ./..."}}`), false, ""},
		{"a nested array as the command", request(acp.ToolKindExecute, `{"command":[["go","test"]]}`), false, ""},
		{"a number among the words", request(acp.ToolKindExecute, `{"command":["go","test",1]}`), false, ""},
		{"program and arguments", request(acp.ToolKindExecute, `{"command":"go","args":["test","./..."],"description":"tests"}`), true, "tests"},
		{"argv one level down", request(acp.ToolKindExecute, `{"input":{"command":["go","test","./..."]}}`), true, "tests"},
		{"a command deeper down is not the command", request(acp.ToolKindExecute, `{"a":{"b":{"command":"go test ./..."}}}`), false, "no-rm"},
		{"unknown kind", request("", `{"path":"README.md"}`), false, ""},
		{"not JSON", request(acp.ToolKindRead, `{"path":`), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := p.Decide(permission.NewCall(nil, c.req, 0))
			if v.Allow != c.allow || v.Rule != c.rule {
				t.Errorf("Decide = %+v, want allow %v by %q", v, c.allow, c.rule)
			}
		})
	}
}

func update(session acp.SessionID, u acp.SessionUpdate) *acp.SessionNotification {
	return &acp.SessionNotification{SessionID: session, Update: u}
}

// claude-code-acp sends its permission request without the kind its
// tool_call carried: the decision sees the merged state, so the write the
// policy allows is allowed; and a path an earlier update named is seen by
// the deny rules although the request leaves it out.
func TestTrackerMergesTheToolCall(t *testing.T) {
	p := policyOf(t)
	tr := permission.NewTracker(nil)
	kind := acp.ToolKindEdit
	tr.Observe(update("s", acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "call_1", Title: "Write", Kind: wire.Some(kind),
		Locations: wire.Some([]acp.ToolCallLocation{{Path: "/work/space/src/a.go"}}), RawInput: jsontext.Value(`{"file_path":"/work/space/src/a.go"}`)}}))
	req := request("", `{"file_path":"/work/space/src/a.go"}`)
	if v := p.Decide(permission.NewCall(nil, req, 0)); v.Allow {
		t.Fatalf("without the tracker the kind is unknown, yet %+v", v)
	}
	if v := p.Decide(permission.NewCall(tr, req, 0)); !v.Allow || v.Rule != "edits" {
		t.Fatalf("merged: %+v", v)
	}
	// An update that names a secret path: the request no longer may.
	tr.Observe(update("s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "call_1", RawInput: jsontext.Value(`{"file_path":"secrets/k"}`)}}))
	if v := p.Decide(permission.NewCall(tr, req, 0)); v.Allow {
		t.Fatalf("after an update naming secrets/: %+v", v)
	}
	// Another session's call of the same id is another call.
	if v := p.Decide(permission.NewCall(tr, &acp.RequestPermissionRequest{SessionID: "other", ToolCall: req.ToolCall}, 0)); v.Allow {
		t.Fatalf("other session: %+v", v)
	}
	// A finished call is forgotten.
	done := acp.ToolCallStatusCompleted
	tr.Observe(update("s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "call_1", Status: wire.Some(done)}}))
	if n, b := tr.Len(); n != 0 || b != 0 {
		t.Fatalf("after completion the tracker keeps %d calls, %d bytes", n, b)
	}
}

func TestTrackerIsBounded(t *testing.T) {
	tr := permission.NewTracker(&permission.TrackerOptions{MaxCalls: 10, MaxBytes: 64 << 10})
	big := `{"x":"` + strings.Repeat("a", 1000) + `"}`
	for i := range 1000 {
		tr.Observe(update("s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: acp.ToolCallID(fmt.Sprint(i)), RawInput: jsontext.Value(big)}}))
		if n, b := tr.Len(); n > 10 || b > 64<<10 {
			t.Fatalf("after %d updates: %d calls, %d bytes", i, n, b)
		}
	}
	// One call that grows past its share is denied, not half-read.
	for range 100 {
		tr.Observe(update("s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "huge", RawInput: jsontext.Value(big)}}))
	}
	if _, b := tr.Len(); b > 64<<10 {
		t.Fatalf("%d bytes", b)
	}
	c := permission.NewCall(tr, request(acp.ToolKindRead, `{"path":"README.md"}`), 0)
	c2 := permission.NewCall(tr, &acp.RequestPermissionRequest{SessionID: "s", ToolCall: acp.ToolCallUpdate{ToolCallID: "huge", Kind: wire.Some(acp.ToolKindRead)}}, 0)
	if c.Overflow || !c2.Overflow || policyOf(t).Decide(c2).Allow {
		t.Fatalf("overflow: %v %v", c.Overflow, c2.Overflow)
	}
}

// The decision is linear in the number of locations, and denies past the
// cap: 60,000 locations took 22 s when it was quadratic. Timed 5,000
// against 40,000 (8 times the work: 64 times the time if quadratic; the
// margin is for caches and a loaded machine), the best of two runs for the smaller.
func TestDecisionIsLinear(t *testing.T) {
	p := policyOf(t)
	p.MaxPaths = 100_000
	decide := func(n int) time.Duration {
		locs := make([]string, n)
		for i := range locs {
			locs[i] = fmt.Sprintf("/work/space/src/f%d.go", i)
		}
		req := request(acp.ToolKindEdit, "", locs...)
		began := time.Now()
		v := p.Decide(permission.NewCall(nil, req, p.MaxPaths))
		if !v.Allow {
			t.Fatalf("%d locations: %+v", n, v)
		}
		return time.Since(began)
	}
	// The fastest of a few runs each: a pause of the machine's can stretch
	// one run, never the fastest of three (a quadratic decision takes 64x
	// in every run).
	small := min(decide(5_000), decide(5_000), decide(5_000))
	large := min(decide(40_000), decide(40_000), decide(40_000))
	if large > 32*small+50*time.Millisecond {
		t.Fatalf("5,000 locations took %v, 40,000 took %v: not linear", small, large)
	}
	locs := make([]string, permission.DefaultMaxPaths+1)
	for i := range locs {
		locs[i] = fmt.Sprintf("src/f%d.go", i)
	}
	if v := p.Decide(permission.NewCall(nil, request(acp.ToolKindEdit, "", locs...), 0)); v.Allow || v.Reason != permission.ReasonOverflow {
		t.Fatalf("past the cap: %+v", v)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, r := range []permission.Rule{
		{Decision: "maybe"},
		{Decision: "allow", Kinds: []acp.ToolKind{"run"}},
		{Decision: "allow", Tools: []string{"[x"}},
		{Decision: "allow", Paths: []string{"/abs"}},
		{Decision: "allow", Paths: []string{"a/../b"}},
		{Decision: "allow", Commands: []string{"  "}},
	} {
		if err := (&permission.Policy{Rules: []permission.Rule{r}}).Validate(); err == nil {
			t.Errorf("%+v: valid", r)
		}
	}
	var rules []permission.Rule
	if err := json.Unmarshal([]byte(`[{"id":"r","tools":["Write*"],"kinds":["edit"],"paths":["src/**"],"commands":["go test **"],"decision":"allow"}]`), &rules); err != nil || len(rules) != 1 || rules[0].Kinds[0] != acp.ToolKindEdit {
		t.Fatalf("%v %+v", err, rules)
	}
}

// A denial never selects an option that could read as a grant; with none
// safe it answers cancelled.
func TestDenialNeverSelectsAGrant(t *testing.T) {
	for _, c := range []struct {
		options []acp.PermissionOption
		want    string
	}{
		{[]acp.PermissionOption{{OptionID: "allow", Kind: acp.PermissionOptionKindRejectOnce}}, "cancelled"},
		{[]acp.PermissionOption{{OptionID: "approved", Kind: acp.PermissionOptionKindRejectOnce}, {OptionID: "abort", Kind: acp.PermissionOptionKindRejectOnce}}, "abort"},
		{[]acp.PermissionOption{{OptionID: "Allow_Always", Kind: acp.PermissionOptionKindRejectAlways}}, "cancelled"},
		{[]acp.PermissionOption{{OptionID: "yes", Kind: acp.PermissionOptionKindRejectOnce}, {OptionID: "no", Kind: acp.PermissionOptionKindRejectAlways}}, "no"},
		{[]acp.PermissionOption{{OptionID: "reject", Kind: acp.PermissionOptionKindAllowOnce}}, "cancelled"},
	} {
		req := &acp.RequestPermissionRequest{SessionID: "s", Options: c.options}
		for _, prefer := range []acp.PermissionOptionID{"", c.options[0].OptionID} {
			resp := permission.Answer(req, permission.Decision{OptionID: prefer})
			got := resp.Outcome.Tag()
			if resp.Outcome.Selected != nil {
				got = string(resp.Outcome.Selected.OptionID)
			}
			if got != c.want {
				t.Errorf("%+v (prefer %q): answered %s, want %s", c.options, prefer, got, c.want)
			}
		}
	}
}

// A Gate on a Policy grants a plain ACP agent's allow_once option and
// Harn's "allow".
func TestPolicyGate(t *testing.T) {
	p := policyOf(t)
	gate := permission.New(p.DecideFunc(nil), nil)
	req := request(acp.ToolKindRead, `{"path":"README.md"}`)
	req.Options = []acp.PermissionOption{
		{OptionID: "approved-for-session", Kind: acp.PermissionOptionKindAllowAlways},
		{OptionID: "approved", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionID: "abort", Kind: acp.PermissionOptionKindRejectOnce},
	}
	resp, _ := gate.Handle(context.Background(), req)
	if resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionID != "approved" {
		t.Fatalf("grant: %+v", resp.Outcome)
	}
	req.ToolCall.RawInput = jsontext.Value(`{"path":"secrets/a"}`)
	resp, _ = gate.Handle(context.Background(), req)
	if resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionID != "abort" {
		t.Fatalf("deny: %+v", resp.Outcome)
	}
}

// claude-code-acp's execute call: a tool_call with an empty raw input, an
// update with the command, and the request repeating it without a kind.
// The command is one line, not the updates' lines joined, and a deny rule
// sees a command any update named.
func TestTrackerCommandLines(t *testing.T) {
	p := policyOf(t)
	tr := permission.NewTracker(nil)
	kind := acp.ToolKindExecute
	tr.Observe(update("s", acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "call_1", Title: "Terminal", Kind: wire.Some(kind), RawInput: jsontext.Value(`{}`)}}))
	tr.Observe(update("s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "call_1", RawInput: jsontext.Value(`{"command":"go test ./...","description":"Run the tests"}`)}}))
	req := request("", `{"command":"go test ./...","description":"Run the tests"}`)
	c := permission.NewCall(tr, req, 0)
	if c.Command != "go test ./..." || len(c.Commands) != 1 {
		t.Fatalf("command %q, commands %q", c.Command, c.Commands)
	}
	if v := p.Decide(c); !v.Allow || v.Rule != "tests" {
		t.Fatalf("%+v", v)
	}
	// An update that named another command: the allow rule must allow
	// both, and the deny rule sees rm.
	tr.Observe(update("s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "call_1", RawInput: jsontext.Value(`{"command":"rm -rf src"}`)}}))
	c = permission.NewCall(tr, req, 0)
	if c.Command != "go test ./..." || len(c.Commands) != 2 {
		t.Fatalf("command %q, commands %q", c.Command, c.Commands)
	}
	if v := p.Decide(c); v.Allow || v.Rule != "no-rm" {
		t.Fatalf("a command an update named: %+v", v)
	}
	tr2 := permission.NewTracker(nil)
	tr2.Observe(update("s", acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "call_1", Title: "Terminal", Kind: wire.Some(kind), RawInput: jsontext.Value(`{"command":"go vet ./..."}`)}}))
	if v := p.Decide(permission.NewCall(tr2, req, 0)); v.Allow {
		t.Fatalf("an allow rule allowed one of two commands: %+v", v)
	}
}

// A Host decides by policy on the tracked call, remembers the last
// denial, answers cancelled after Cancel, and denies when deciding panics.
func TestHost(t *testing.T) {
	var seen []string
	h := &permission.Host{Policy: policyOf(t), Tracker: permission.NewTracker(nil),
		Observe: func(_ *acp.RequestPermissionRequest, c *permission.Call, v permission.Verdict, _ *acp.RequestPermissionResponse) {
			seen = append(seen, v.Reason)
		}}
	ctx := context.Background()
	if res, _ := h.Handle(ctx, request(acp.ToolKindEdit, `{"path":"src/a.go"}`)); !permission.Granted(res) || h.LastDenied() != "" {
		t.Fatalf("edit in src: %+v, last denied %q", res, h.LastDenied())
	}
	if res, _ := h.Handle(ctx, request(acp.ToolKindExecute, `{"command":"rm -rf src"}`)); permission.Granted(res) || h.LastDenied() != `"tool" (execute)` {
		t.Fatalf("rm: %+v, last denied %q", res, h.LastDenied())
	}
	h.Cancel()
	if res, _ := h.Handle(ctx, request(acp.ToolKindEdit, `{"path":"src/a.go"}`)); res.Outcome.Cancelled == nil {
		t.Fatalf("after Cancel: %+v", res)
	}
	broken := &permission.Host{}
	if res, err := broken.Handle(ctx, request(acp.ToolKindEdit, `{"path":"src/a.go"}`)); err != nil || permission.Granted(res) || res.Outcome.Selected == nil || res.Outcome.Selected.OptionID != "reject" {
		t.Fatalf("a panic while deciding: %+v %v", res, err)
	}
	if fmt.Sprint(seen) != "[rule edits rule no-rm the prompt is being cancelled]" {
		t.Errorf("observed %q", seen)
	}
}

// TestGlobIsPolynomial: a pattern of many "**" against a long name that
// almost matches, both of which the peer may choose (skill/match's paths
// and working files, list_files' pattern), is decided at once. Backtracking
// into every "**" took longer than 10 s for this pattern, and minutes for
// Decide over the paths below.
func TestGlobIsPolynomial(t *testing.T) {
	pattern := strings.Repeat("**/a/", 12) + "b"
	name := strings.TrimSuffix(strings.Repeat("a/", 40), "/")
	began := time.Now()
	if permission.Glob(pattern, name) {
		t.Fatalf("%q matched %q", pattern, name)
	}
	if !permission.Glob(pattern, name+"/b") {
		t.Fatalf("%q did not match %q", pattern, name+"/b")
	}
	p := &permission.Policy{Rules: []permission.Rule{
		{ID: "no-keys", Paths: []string{"**/secrets/**/*.pem"}, Decision: permission.DecisionDeny},
		{ID: "read", Kinds: []acp.ToolKind{acp.ToolKindRead}, Paths: []string{"**"}, Decision: permission.DecisionAllow},
	}, Resolve: permission.Workspace("/ws")}
	paths := make([]string, 200)
	for i := range paths {
		paths[i] = fmt.Sprintf(`"%s%d"`, strings.Repeat("secrets/", 500), i)
	}
	req := request(acp.ToolKindRead, `{"paths":[`+strings.Join(paths, ",")+`]}`)
	if v := p.Decide(permission.NewCall(nil, req, 0)); !v.Allow {
		t.Fatalf("200 deep paths: %+v", v)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

// A Host's denial carries Harn's root "reason" only to a peer that
// advertised Harn's extensions; a plain ACP agent gets the outcome alone,
// nothing ACP does not define (problem 3 of issue 34: every denial carried
// {"reason":"rule ..."}, Harn or not). The Observe callback sees what is
// sent.
func TestHostSendsReasonOnlyToHarn(t *testing.T) {
	ctx := context.Background()
	for _, harn := range []bool{false, true} {
		var observed string
		h := &permission.Host{Policy: policyOf(t), Tracker: permission.NewTracker(nil),
			Observe: func(_ *acp.RequestPermissionRequest, _ *permission.Call, _ permission.Verdict, res *acp.RequestPermissionResponse) {
				observed = encode(t, res)
			}}
		if harn {
			h.HarnPeer = func() bool { return true }
		}
		res, _ := h.Handle(ctx, request(acp.ToolKindExecute, `{"command":"rm -rf src"}`))
		got := encode(t, res)
		want := `{"outcome":{"outcome":"selected","optionId":"reject"}}`
		if harn {
			want = `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"rule no-rm"}`
		}
		if got != want || observed != got {
			t.Errorf("Harn peer %v: sent %s, observed %s, want %s", harn, got, observed, want)
		}
	}
}
