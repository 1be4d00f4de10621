package delegation_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/harnvm/delegation"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The seed's advertisement.
const seedAdvert = `{"schema":"harn.external_agent.v1","pre_dispatch_checkpoint":true,"budget_cap":true,"idempotency":true,` +
	`"reviewable_handoff":true,"dispatch":true,"operations":["_harn/externalAgent.plan","_harn/externalAgent.dispatch"]}`

// fakePeer records calls and answers from its fields.
type fakePeer struct {
	mu                        sync.Mutex
	caps                      delegation.Capabilities
	capsErr, planErr, dispErr error
	plan, result              jsontext.Value
	calls                     []string
	dispatched                []*delegation.Checkpoint
	block                     chan struct{}
}

func (p *fakePeer) record(s string) {
	p.mu.Lock()
	p.calls = append(p.calls, s)
	p.mu.Unlock()
}

func (p *fakePeer) Calls() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.calls, ",")
}

func (p *fakePeer) Capabilities(ctx context.Context, req *delegation.Request) (delegation.Capabilities, error) {
	p.record("caps")
	return p.caps, p.capsErr
}

func (p *fakePeer) Plan(ctx context.Context, req *delegation.Request) (jsontext.Value, error) {
	p.record("plan")
	return p.plan, p.planErr
}

func (p *fakePeer) Dispatch(ctx context.Context, req *delegation.Request, cp *delegation.Checkpoint) (jsontext.Value, error) {
	p.record("dispatch")
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	p.dispatched = append(p.dispatched, cp)
	p.mu.Unlock()
	return p.result, p.dispErr
}

func goodPeer(t *testing.T) *fakePeer {
	caps, err := delegation.ParseCapabilities(jsontext.Value(`{"capabilities":{"externalAgent":` + seedAdvert + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	return &fakePeer{caps: caps,
		plan:   jsontext.Value(`{"checkpoint":{"checkpoint_id":"cp-1","plan":"Fix the flaky test","expected_scope":["tests/**"],"evidence_refs":[{"kind":"log"}],"metadata":{"m":1}}}`),
		result: jsontext.Value(`{"handoff":{"summary":"done"},"artifacts":[{"kind":"report"}],"patch":"--- a\n+++ b\n","receipts":["r1"],"budget_used":{"usd":1.5,"tokens":900}}`),
	}
}

func n64(n int64) wire.Nullable[int64]     { return wire.Some(n) }
func f64(f float64) wire.Nullable[float64] { return wire.Some(f) }
func i64(n int64) *int64                   { return &n }

func request(key string) delegation.Request {
	return delegation.Request{Target: "https://agent.example", Task: "Fix the flaky test", IdempotencyKey: key,
		Budget: delegation.Budget{MaxUSD: f64(2), MaxTokens: n64(1000)}, ExpectedScope: []string{"tests/**"}}
}

func TestInvalidRequests(t *testing.T) {
	p := goodPeer(t)
	g := delegation.New(p, nil)
	for name, change := range map[string]func(*delegation.Request){
		"no target": func(r *delegation.Request) { r.Target = " " },
		"no task":   func(r *delegation.Request) { r.Task = "" },
		"no key":    func(r *delegation.Request) { r.IdempotencyKey = "" },
		"no budget": func(r *delegation.Request) { r.Budget = delegation.Budget{} },
		"zero caps": func(r *delegation.Request) {
			r.Budget = delegation.Budget{MaxUSD: f64(0), MaxTokens: n64(0), MaxSeconds: n64(0), MaxToolCalls: n64(0)}
		},
		"negative usd":     func(r *delegation.Request) { r.Budget.MaxUSD = f64(-1) },
		"NaN usd":          func(r *delegation.Request) { r.Budget.MaxUSD = f64(math.NaN()) },
		"infinite usd":     func(r *delegation.Request) { r.Budget.MaxUSD = f64(math.Inf(1)) },
		"metadata not obj": func(r *delegation.Request) { r.Metadata = jsontext.Value(`[1]`) },
	} {
		req := request("k")
		change(&req)
		_, err := g.Delegate(context.Background(), req)
		if !errors.Is(err, delegation.ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if p.Calls() != "" {
		t.Errorf("peer contacted for invalid requests: %s", p.Calls())
	}
	// One positive cap of any kind is enough.
	for _, b := range []delegation.Budget{{MaxUSD: f64(0.01)}, {MaxTokens: n64(1)}, {MaxSeconds: n64(1)}, {MaxToolCalls: n64(1)}} {
		if err := delegation.ValidateBudget(b); err != nil {
			t.Errorf("%+v: %v", b, err)
		}
	}
}

// The whole sequence: checkpoint_required until approved, dispatch with the
// same checkpoint, replayed on a repeat.
func TestSequence(t *testing.T) {
	ctx := context.Background()
	p := goodPeer(t)
	g := delegation.New(p, nil)

	env, err := g.Delegate(ctx, request("k1"))
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != delegation.StatusCheckpointRequired || env.Checkpoint == nil || env.Checkpoint.ID != "cp-1" ||
		env.Checkpoint.Source != delegation.SourceRemote || env.Checkpoint.Plan != "Fix the flaky test" {
		t.Fatalf("first: %+v", env)
	}
	if p.Calls() != "caps,plan" {
		t.Fatalf("calls %s", p.Calls())
	}
	again, _ := g.Delegate(ctx, request("k1"))
	if again.Status != delegation.StatusCheckpointRequired || again.ID != env.ID || p.Calls() != "caps,plan" {
		t.Fatalf("unapproved repeat: %+v calls %s", again, p.Calls())
	}

	approved := request("k1")
	approved.Checkpoint.Approved = true
	done, err := g.Delegate(ctx, approved)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != delegation.StatusCompleted || done.Error != "" || *done.BudgetUsed.USD != 1.5 || *done.BudgetUsed.Tokens != 900 {
		t.Fatalf("approved: %+v", done)
	}
	if p.Calls() != "caps,plan,caps,dispatch" {
		t.Fatalf("calls %s (the checkpoint must not be fetched again, capabilities must be proved again)", p.Calls())
	}
	if p.dispatched[0].ID != "cp-1" {
		t.Errorf("dispatched with checkpoint %q", p.dispatched[0].ID)
	}
	if string(done.Handoff) != `{"summary":"done"}` || string(done.Diff) != `"--- a\n+++ b\n"` || len(done.Artifacts) != 1 ||
		len(done.Receipts) != 1 || done.Checkpoint.ID != "cp-1" {
		t.Errorf("envelope contents %+v", done)
	}

	replay, err := g.Delegate(ctx, approved)
	if err != nil {
		t.Fatal(err)
	}
	if replay.Status != delegation.StatusReplayed || !replay.Replayed || replay.ReplayOf != done.ID || replay.ID == done.ID ||
		string(replay.Result) != string(done.Result) {
		t.Fatalf("replay %+v", replay)
	}
	if p.Calls() != "caps,plan,caps,dispatch" {
		t.Fatalf("replay contacted the peer: %s", p.Calls())
	}

	// The key promises this delegation: another task under it is refused.
	other := approved
	other.Task = "Delete the tests"
	if _, err := g.Delegate(ctx, other); !errors.Is(err, delegation.ErrInvalidRequest) {
		t.Errorf("key reuse: %v", err)
	}
	// Forget starts afresh.
	if !g.Forget("k1") || g.Forget("k1") {
		t.Error("Forget")
	}
	if env, _ := g.Delegate(ctx, other); env.Status != delegation.StatusCompleted {
		t.Errorf("after Forget: %+v", env)
	}
}

// Capabilities are proved before any paid work; refusals are remembered and
// replayed.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("missing capabilities", func(t *testing.T) {
		p := goodPeer(t)
		p.caps.BudgetCap, p.caps.ReviewableHandoff = false, false
		g := delegation.New(p, nil)
		req := request("k")
		req.Checkpoint.Approved = true
		env, err := g.Delegate(ctx, req)
		if err != nil || env.Status != delegation.StatusRefused ||
			env.Error != "external agent is missing required delegation capabilities: budget_cap, reviewable_handoff" {
			t.Fatalf("%+v %v", env, err)
		}
		if p.Calls() != "caps" {
			t.Fatalf("paid work before the capability proof: %s", p.Calls())
		}
		if env, _ := g.Delegate(ctx, req); env.Status != delegation.StatusReplayed || p.Calls() != "caps" {
			t.Fatalf("repeat: %+v %s", env, p.Calls())
		}
	})
	t.Run("no checkpoint support", func(t *testing.T) {
		p := goodPeer(t)
		p.caps.PreDispatchCheckpoint = false
		env, _ := delegation.New(p, nil).Delegate(ctx, request("k"))
		if env.Status != delegation.StatusRefused || env.Error != "external agent does not advertise pre-dispatch checkpoint support" || p.Calls() != "caps" {
			t.Fatalf("%+v %s", env, p.Calls())
		}
	})
	t.Run("empty plan", func(t *testing.T) {
		p := goodPeer(t)
		p.plan = jsontext.Value(`{"checkpoint":{"plan":"  "}}`)
		env, _ := delegation.New(p, nil).Delegate(ctx, request("k"))
		if env.Status != delegation.StatusRefused || env.Error != "external agent did not return a pre-dispatch checkpoint" {
			t.Fatalf("%+v", env)
		}
	})
	t.Run("local fallback", func(t *testing.T) {
		p := goodPeer(t)
		p.caps.PreDispatchCheckpoint = false
		g := delegation.New(p, nil)
		req := request("k")
		req.Checkpoint.AllowLocalFallback = true
		env, _ := g.Delegate(ctx, req)
		if env.Status != delegation.StatusCheckpointRequired || env.Checkpoint.Source != delegation.SourceLocalFallback ||
			env.Checkpoint.Plan != "Delegate task after local approval. Task: Fix the flaky test Remote agent may work only within: tests/**." {
			t.Fatalf("%+v", env.Checkpoint)
		}
		req.IdempotencyKey = "k2"
		req.Checkpoint.LocalPlan = "My plan"
		req.Checkpoint.Approved = true
		env, _ = g.Delegate(ctx, req)
		if env.Status != delegation.StatusCompleted || env.Checkpoint.Plan != "My plan" || p.Calls() != "caps,caps,dispatch" {
			t.Fatalf("%+v %s", env, p.Calls())
		}
	})
}

func TestBudgetExceeded(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		result string
		status delegation.Status
	}{
		{`{"budget_used":{"usd":2.01}}`, delegation.StatusBudgetExceeded},
		{`{"budget_used":{"usd":2}}`, delegation.StatusCompleted},
		{`{"budget_used":{"tokens":1001}}`, delegation.StatusBudgetExceeded},
		{`{"budget_used":{"seconds":99999,"tool_calls":99999}}`, delegation.StatusCompleted}, // no such caps
		{`{"budget_used":{"cost_usd":3}}`, delegation.StatusBudgetExceeded},
		{`{"budget_used":{"dollars":3}}`, delegation.StatusBudgetExceeded},
		{`{"budget_used":{"max_usd":3}}`, delegation.StatusBudgetExceeded},
		{`{"budget_used":{"token_count":5000}}`, delegation.StatusBudgetExceeded},
		{`{"budget":{"used":{"tokens":5000}}}`, delegation.StatusBudgetExceeded},
		{`{"usage":{"max_tokens":5000}}`, delegation.StatusBudgetExceeded},
		{`{}`, delegation.StatusCompleted},
		{`{"budget_used":null}`, delegation.StatusCompleted},
	} {
		p := goodPeer(t)
		p.result = jsontext.Value(tc.result)
		req := request("k")
		req.Checkpoint.Approved = true
		env, err := delegation.New(p, nil).Delegate(ctx, req)
		if err != nil || env.Status != tc.status {
			t.Errorf("%s: %+v %v", tc.result, env, err)
			continue
		}
		if tc.status == delegation.StatusBudgetExceeded && env.Error != "external agent reported usage over the approved budget cap" {
			t.Errorf("%s: error %q", tc.result, env.Error)
		}
	}
	sec := delegation.Budget{MaxSeconds: n64(10), MaxToolCalls: n64(3)}
	if !delegation.Exceeded(sec, delegation.Usage{Seconds: i64(11)}) || !delegation.Exceeded(sec, delegation.Usage{ToolCalls: i64(4)}) ||
		delegation.Exceeded(sec, delegation.Usage{Seconds: i64(10)}) {
		t.Error("Exceeded on seconds/tool_calls")
	}
	// Unreadable usage is a protocol error, not a clean completion.
	for _, bad := range []string{`{"budget_used":{"usd":"1"}}`, `{"budget_used":{"tokens":-1}}`, `{"budget_used":{"tokens":1.5}}`, `{"budget_used":7}`} {
		p := goodPeer(t)
		p.result = jsontext.Value(bad)
		req := request("k")
		req.Checkpoint.Approved = true
		if _, err := delegation.New(p, nil).Delegate(ctx, req); !errors.Is(err, delegation.ErrProtocol) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		setup    func(*fakePeer)
		kind     delegation.Kind
		category string
		msg      string
	}{
		{"discovery", func(p *fakePeer) { p.capsErr = errors.New("A2A agent card missing protocolVersion") }, delegation.KindDiscovery, "tool_error", "A2A agent card missing protocolVersion"},
		{"denied with detected category", func(p *fakePeer) {
			p.planErr = &delegation.Error{Kind: delegation.KindDenied, Category: "auth", Message: "HTTP 401 Unauthorized"}
		}, delegation.KindDenied, "auth", "HTTP 401 Unauthorized"},
		{"denied", func(p *fakePeer) {
			p.planErr = &delegation.Error{Kind: delegation.KindDenied, Message: "remote agent rejected task"}
		},
			delegation.KindDenied, "tool_rejected", "remote agent rejected task"},
		{"timeout", func(p *fakePeer) { p.dispErr = context.DeadlineExceeded }, delegation.KindTimeout, "timeout", "_harn/externalAgent.dispatch: context deadline exceeded"},
		{"cancelled", func(p *fakePeer) { p.dispErr = context.Canceled }, delegation.KindCancelled, "cancelled", "_harn/externalAgent.dispatch: context canceled"},
		{"transport", func(p *fakePeer) { p.dispErr = errors.New("connection dropped") }, delegation.KindTransport, "transient_network", "_harn/externalAgent.dispatch: connection dropped"},
		{"protocol", func(p *fakePeer) { p.planErr = rpc.NewError(-32601, "Method not found", nil) }, delegation.KindProtocol, "tool_error",
			"_harn/externalAgent.plan failed: Method not found"},
		{"malformed plan", func(p *fakePeer) { p.plan = jsontext.Value(`"a plan"`) }, delegation.KindProtocol, "tool_error",
			"_harn/externalAgent.plan: plan result is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := goodPeer(t)
			tc.setup(p)
			req := request("k")
			req.Checkpoint.Approved = true
			g := delegation.New(p, nil)
			_, err := g.Delegate(ctx, req)
			var e *delegation.Error
			if !errors.As(err, &e) || e.Kind != tc.kind {
				t.Fatalf("err = %v, want kind %s", err, tc.kind)
			}
			b, _ := json.Marshal(e)
			want, _ := json.Marshal(map[string]string{"error": "external_agent_error", "kind": string(tc.kind), "category": tc.category, "message": tc.msg})
			var gm, wm map[string]string
			_ = json.Unmarshal(b, &gm)
			_ = json.Unmarshal(want, &wm)
			if len(gm) != 4 || gm["error"] != wm["error"] || gm["kind"] != wm["kind"] || gm["category"] != wm["category"] || gm["message"] != wm["message"] {
				t.Errorf("document %s, want %s", b, want)
			}
			// Failures are not remembered: a retry reaches the peer again.
			before := len(strings.Split(p.Calls(), ","))
			g.Delegate(ctx, req)
			if len(strings.Split(p.Calls(), ",")) <= before {
				t.Error("failure was cached")
			}
		})
	}
	for _, k := range []delegation.Kind{delegation.KindInvalidRequest, delegation.KindDiscovery, delegation.KindDenied,
		delegation.KindTimeout, delegation.KindCancelled, delegation.KindTransport, delegation.KindProtocol} {
		err := error(&delegation.Error{Kind: k, Message: "m"})
		n := 0
		for _, s := range []error{delegation.ErrInvalidRequest, delegation.ErrDiscovery, delegation.ErrDenied, delegation.ErrTimeout,
			delegation.ErrCancelled, delegation.ErrTransport, delegation.ErrProtocol} {
			if errors.Is(err, s) {
				n++
			}
		}
		if n != 1 || delegation.DefaultCategory(k) == "generic" {
			t.Errorf("%s matches %d sentinels, category %s", k, n, delegation.DefaultCategory(k))
		}
	}
}

// Concurrent approved delegations with one key dispatch once.
func TestConcurrentOneDispatch(t *testing.T) {
	p := goodPeer(t)
	p.block = make(chan struct{})
	g := delegation.New(p, nil)
	req := request("k")
	req.Checkpoint.Approved = true
	var completed, replayed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := g.Delegate(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			switch env.Status {
			case delegation.StatusCompleted:
				completed.Add(1)
			case delegation.StatusReplayed:
				replayed.Add(1)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	close(p.block)
	wg.Wait()
	if completed.Load() != 1 || replayed.Load() != 7 || len(p.dispatched) != 1 {
		t.Fatalf("completed %d replayed %d dispatched %d", completed.Load(), replayed.Load(), len(p.dispatched))
	}

	// A delegation waiting for its key honours its context.
	p2 := goodPeer(t)
	p2.block = make(chan struct{})
	g2 := delegation.New(p2, nil)
	go g2.Delegate(context.Background(), req)
	for !strings.Contains(p2.Calls(), "dispatch") {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := g2.Delegate(ctx, req); !errors.Is(err, delegation.ErrTimeout) {
		t.Errorf("waiting delegation: %v", err)
	}
	close(p2.block)
	// Let the first finish before goleak looks.
	for !g2.Forget("k") {
		time.Sleep(time.Millisecond)
	}
}

func TestEviction(t *testing.T) {
	p := goodPeer(t)
	g := delegation.New(p, &delegation.Options{MaxEntries: 1})
	ctx := context.Background()
	req := request("a")
	req.Checkpoint.Approved = true
	g.Delegate(ctx, req)
	req2 := request("b")
	req2.Checkpoint.Approved = true
	g.Delegate(ctx, req2)
	if env, _ := g.Delegate(ctx, req); env.Status != delegation.StatusCompleted {
		t.Errorf("evicted key not started afresh: %s", env.Status)
	}
	if env, _ := g.Delegate(ctx, req); env.Status != delegation.StatusReplayed {
		t.Errorf("remembered key: %s", env.Status)
	}
}

// The envelopes remembered are bounded in bytes too: a large task pushes
// out the oldest, and one larger than the bound alone is not remembered.
func TestEvictionByBytes(t *testing.T) {
	p := goodPeer(t)
	g := delegation.New(p, &delegation.Options{MaxBytes: 8 << 10})
	ctx := context.Background()
	big := func(key string) delegation.Request {
		req := request(key)
		req.Task = strings.Repeat("t", 3<<10)
		req.Checkpoint.Approved = true
		return req
	}
	for _, k := range []string{"a", "b", "c"} {
		if env, err := g.Delegate(ctx, big(k)); err != nil || env.Status != delegation.StatusCompleted {
			t.Fatalf("%s: %+v %v", k, env, err)
		}
	}
	if env, _ := g.Delegate(ctx, big("c")); env.Status != delegation.StatusReplayed {
		t.Errorf("the newest key: %s", env.Status)
	}
	if env, _ := g.Delegate(ctx, big("a")); env.Status != delegation.StatusCompleted {
		t.Errorf("the oldest key, past the byte bound, was not started afresh: %s", env.Status)
	}
	huge := big("h")
	huge.Task = strings.Repeat("t", 9<<10)
	g.Delegate(ctx, huge)
	if env, _ := g.Delegate(ctx, huge); env.Status != delegation.StatusCompleted {
		t.Errorf("an envelope larger than the bound was remembered: %s", env.Status)
	}
}

func TestReturnedEnvelopesAreCopies(t *testing.T) {
	p := goodPeer(t)
	g := delegation.New(p, nil)
	req := request("k")
	env, _ := g.Delegate(context.Background(), req)
	env.Checkpoint.ID = "tampered"
	env.Checkpoint.ExpectedScope[0] = "tampered"
	req.Checkpoint.Approved = true
	g.Delegate(context.Background(), req)
	if p.dispatched[0].ID != "cp-1" || p.dispatched[0].ExpectedScope[0] != "tests/**" {
		t.Errorf("caller changed the guard's checkpoint: %+v", p.dispatched[0])
	}
}
