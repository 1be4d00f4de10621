package service_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/service"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// config is a knowledge client of the fake provider in mode.
func config(t *testing.T, mode string) service.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return service.Config{
		Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "kb", Command: []string{exe},
		SetEnv:         []string{"BRIDGEKIT_FAKE_PROVIDER=" + mode},
		StartupTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second,
		Restart: service.Restart{Backoff: 10 * time.Millisecond},
	}
}

func start(t *testing.T, cfg service.Config) *service.Client {
	t.Helper()
	c, err := service.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func retrieve(c *service.Client, query string) (*agentpmservice.KnowledgeRuntimeResult, error) {
	return retrieveCtx(context.Background(), c, query)
}

func retrieveCtx(ctx context.Context, c *service.Client, query string) (*agentpmservice.KnowledgeRuntimeResult, error) {
	return c.Retrieve(ctx, &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: "@zack/docs", Version: "1.2.3", Mode: agentpmservice.KnowledgeRequestModeVectorQuery, Query: &query}})
}

// A protocol version written 1.0 is version 1 (JSON Schema's integers).
func TestPreflightVersionWrittenAsFloat(t *testing.T) {
	c, err := service.Start(context.Background(), config(t, "readiness-version-float"))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Close()
	if pf := c.Preflight(); !strings.Contains(string(pf.Readiness), `"protocol_version":1.0`) {
		t.Fatalf("preflight readiness %s", pf.Readiness)
	}
}

// A provider that reports the wrong role, registry id or protocol, or is
// not ready, or does not advertise what its role needs, is unavailable at
// preflight with a typed reason, and stopped.
func TestPreflightReasons(t *testing.T) {
	for mode, want := range map[string]service.Reason{
		"readiness-role":             service.ReasonRole,
		"frame-service":              service.ReasonRole,
		"frame-no-service":           service.ReasonRole,
		"embedding":                  service.ReasonRole, // answers unsupported_capability for the knowledge role
		"readiness-version":          service.ReasonVersion,
		"readiness-version-fraction": service.ReasonVersion,
		"frame-version":              service.ReasonVersion,
		"frame-protocol":             service.ReasonProtocol,
		"readiness-registry":         service.ReasonRegistry,
		"readiness-not-ready":        service.ReasonNotReady,
		"readiness-no-modes":         service.ReasonCapability,
		"readiness-malformed":        service.ReasonHandshake,
		"exit":                       service.ReasonExited,
		"silent":                     service.ReasonTimeout,
	} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cfg := config(t, mode)
			// A provider that says what is wrong is refused at once, well
			// before the startup timeout, which only a silent one reaches.
			cfg.StartupTimeout = 20 * time.Second
			if mode == "silent" {
				cfg.StartupTimeout = 2 * time.Second
			}
			var statuses []string
			var mu sync.Mutex
			cfg.OnLifecycle = func(l service.Lifecycle) { mu.Lock(); statuses = append(statuses, l.Status); mu.Unlock() }
			begun := time.Now()
			c, err := service.Start(context.Background(), cfg)
			u, ok := errors.AsType[*service.UnavailableError](err)
			if c != nil || !ok || !errors.Is(err, service.ErrUnavailable) || u.Reason != want || u.Role != "knowledge" || u.RegistryID != "kb" {
				t.Fatalf("Start: %v, want reason %s", err, want)
			}
			if mode != "silent" && time.Since(begun) > cfg.StartupTimeout/2 {
				t.Errorf("preflight took %v, as if it had waited for the startup timeout", time.Since(begun))
			}
			if mode == "exit" && !strings.Contains(u.Stderr, "permission denied") {
				t.Errorf("no stderr in %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(statuses, []string{service.StatusStarting, service.StatusHandshaking, service.StatusFailed}) {
				t.Errorf("lifecycle %v", statuses)
			}
		})
	}
}

// The capability checks of the hook and memory roles.
func TestPreflightCapabilities(t *testing.T) {
	hooks := &agentpmservice.HookInitialize{Hooks: []agentpmservice.HookID{"before_tool_call", "before_model_request"}}
	spaces := func(sp ...agentpmservice.MemorySpaceRuntimeSnapshot) *agentpmservice.MemoryInitialize {
		return &agentpmservice.MemoryInitialize{Spaces: sp}
	}
	notes := agentpmservice.MemorySpaceRuntimeSnapshot{Package: "@a/notes", PackageVersion: "1.0.0", Space: "n", Model: "collection"}
	other := agentpmservice.MemorySpaceRuntimeSnapshot{Package: "@b/log", PackageVersion: "2.0.0", Space: "l", Model: "sequence"}
	fullText := notes
	fullText.RetrievalModes = []agentpmservice.MemoryReadMode{"full_text"}
	for _, tc := range []struct {
		name, mode string
		role       agentpmservice.ServiceRole
		init       any
		want       service.Reason
	}{
		{"a configured hook not served", "hook-partial", "hook", hooks, service.ReasonCapability},
		{"every configured hook served", "hook-partial", "hook", &agentpmservice.HookInitialize{Hooks: []agentpmservice.HookID{"before_tool_call"}}, ""},
		{"an unknown hook id", "hook-unknown", "hook", nil, service.ReasonCapability},
		{"routed packages attested", "memory-partial", "memory", spaces(notes), ""},
		{"a routed package not attested", "memory-partial", "memory", spaces(notes, other), service.ReasonCapability},
		{"a retrieval mode not advertised", "memory-partial", "memory", spaces(fullText), service.ReasonCapability},
	} {
		cfg := config(t, tc.mode)
		cfg.Role, cfg.Initialize = tc.role, tc.init
		c, err := service.Start(context.Background(), cfg)
		u, _ := errors.AsType[*service.UnavailableError](err)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (u == nil || u.Reason != tc.want):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
		if c != nil {
			c.Close()
		}
	}
}

// The handshake is not sent when it would carry the value of a secret
// environment variable; the provider's environment holds the baseline and
// the allowed names only.
func TestNoSecretsProjectedFromTheEnvironment(t *testing.T) {
	const secret = "s3cr3t-hunter2-value"
	t.Setenv("BRIDGEKIT_TEST_API_TOKEN", secret)
	t.Setenv("BRIDGEKIT_TEST_ALLOWED", "allowed-value")
	t.Setenv("BRIDGEKIT_TEST_OTHER", "other-value")

	cfg := config(t, "knowledge")
	cfg.Initialize = &agentpmservice.KnowledgeInitialize{Packages: []agentpmservice.KnowledgeRuntimeSnapshot{
		{Name: "@zack/docs", Version: "1.2.3", Mode: "vector", Description: "token " + secret}}}
	_, err := service.Start(context.Background(), cfg)
	if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Reason != service.ReasonUnsafeMetadata ||
		!strings.Contains(err.Error(), "BRIDGEKIT_TEST_API_TOKEN") || strings.Contains(err.Error(), secret) {
		t.Fatalf("Start: %v", err)
	}

	// A secret given to the provider through SetEnv is projected through
	// its environment too.
	const set = "s3t-by-config-0xdeadbeef"
	cfg = config(t, "knowledge")
	cfg.SetEnv = append(cfg.SetEnv, "BRIDGEKIT_TEST_SET_SECRET="+set)
	cfg.Initialize = &agentpmservice.KnowledgeInitialize{Packages: []agentpmservice.KnowledgeRuntimeSnapshot{
		{Name: "@zack/docs", Version: "1.2.3", Mode: "vector", Description: "secret " + set}}}
	_, err = service.Start(context.Background(), cfg)
	if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Reason != service.ReasonUnsafeMetadata ||
		!strings.Contains(err.Error(), "BRIDGEKIT_TEST_SET_SECRET") || strings.Contains(err.Error(), set) {
		t.Fatalf("Start with a SetEnv secret in the payload: %v", err)
	}

	cfg = config(t, "knowledge")
	cfg.Env = []string{"BRIDGEKIT_TEST_ALLOWED", "BRIDGEKIT_TEST_UNSET"}
	cfg.Session = &service.Session{ID: "session-1", Workspace: "demo"}
	c := start(t, cfg)
	res, err := retrieve(c, "env")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(*res.Content, "\n")
	for _, want := range []string{"BRIDGEKIT_TEST_ALLOWED=allowed-value", "BRIDGEKIT_FAKE_PROVIDER=knowledge", "PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(env, want) {
			t.Errorf("the provider's environment lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, secret) || strings.HasPrefix(kv, "BRIDGEKIT_TEST_OTHER=") || strings.HasPrefix(kv, "BRIDGEKIT_TEST_UNSET=") {
			t.Errorf("the provider's environment has %s", kv)
		}
	}
}

// Calls of the role go through with the provider's answers; a method of
// another role is refused without a round trip, and so is a knowledge
// package the provider did not attest.
func TestCalls(t *testing.T) {
	cfg := config(t, "knowledge")
	cfg.Initialize = &agentpmservice.KnowledgeInitialize{Packages: []agentpmservice.KnowledgeRuntimeSnapshot{
		{Name: "@zack/docs", Version: "1.2.3", Mode: "vector"}, {Name: "missing-docs", Version: "0.1.0", Mode: "vector"}}}
	c := start(t, cfg)
	pf := c.Preflight()
	if len(pf.Unavailable) != 1 || pf.Unavailable[0].Package != "missing-docs" || !strings.Contains(string(pf.Readiness), `"role":"knowledge"`) {
		t.Fatalf("preflight %+v", pf)
	}
	if cfg.Initialize.(*agentpmservice.KnowledgeInitialize).RegistryID != "" {
		t.Error("the caller's Initialize was changed")
	}
	res, err := retrieve(c, "auth")
	if err != nil || *res.Content != "about auth" {
		t.Fatal(res, err)
	}
	res, err = retrieve(c, "id")
	if err != nil || *res.Content != `"knowledge-kb-3"` {
		t.Fatalf("ids are <role>-<registry id>-<n>, initialize first: %v %v", *res.Content, err)
	}
	_, err = c.Retrieve(context.Background(), &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{Package: "missing-docs", Version: "0.1.0", Mode: "vector_query"}})
	if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Package != "missing-docs" {
		t.Errorf("an unattested package: %v", err)
	}
	_, err = c.Embed(context.Background(), &agentpmservice.EmbedPayload{Provider: "p", Model: "m", Dimensions: 1, Text: "x"})
	if !errors.Is(err, agentpmservice.ErrUnsupportedCapability) || !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Errorf("another role's method: %v", err)
	}
	if _, err := c.InitializeKnowledge(context.Background(), &agentpmservice.KnowledgeInitialize{}); !errors.Is(err, service.ErrConfig) {
		t.Errorf("a second handshake: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve(c, "after"); !errors.Is(err, service.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// A call that times out fails with a typed error; the reply that arrives
// later is dropped and reported, and the next call gets its own reply.
func TestLateReplyIsDroppedAndReported(t *testing.T) {
	cfg := config(t, "knowledge")
	cfg.RequestTimeout = 300 * time.Millisecond
	late := make(chan *rpc.FrameError, 1)
	cfg.OnFrameError = func(fe *rpc.FrameError) {
		if fe.Kind == rpc.FrameUnknownResponse {
			select {
			case late <- fe:
			default:
				t.Errorf("a second late reply: %v", fe)
			}
		}
	}
	c := start(t, cfg)
	begun := time.Now()
	_, err := retrieve(c, "slow:700")
	if te, ok := errors.AsType[*service.TimeoutError](err); !ok || !errors.Is(err, service.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || te.Method != "retrieve" {
		t.Fatalf("slow call: %v", err)
	}
	if d := time.Since(begun); d > 600*time.Millisecond {
		t.Errorf("the timeout took %v", d)
	}
	// The provider answers one request at a time: once it has answered the
	// slow call, too late, the next call gets its own reply.
	select {
	case fe := <-late:
		if fe.ID.String() != `"knowledge-kb-2"` {
			t.Errorf("late reply %v", fe.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the late reply was not reported")
	}
	res, err := retrieve(c, "fast")
	if err != nil || *res.Content != "about fast" {
		t.Fatalf("the next call: %v %v", res, err)
	}
	if n := c.Stats().LateReplies; n != 1 {
		t.Errorf("LateReplies = %d", n)
	}
}

// The late reply of a call that timed out arrives while the next call
// waits for its own answer: it is dropped and reported, and the next call
// still gets its own reply.
func TestLateReplyWhileTheNextCallWaits(t *testing.T) {
	cfg := config(t, "knowledge")
	var next atomic.Bool // the next call is outstanding
	type report struct {
		fe          *rpc.FrameError
		nextPending bool
	}
	late := make(chan report, 2)
	cfg.OnFrameError = func(fe *rpc.FrameError) { late <- report{fe, next.Load()} }
	c := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := retrieveCtx(ctx, c, "slow:600"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the slow call: %v", err)
	}
	next.Store(true)
	res, err := retrieve(c, "slow:1200")
	next.Store(false)
	if err != nil || *res.Content != "about slow:1200" {
		t.Fatalf("the next call: %v %v", res, err)
	}
	select {
	case r := <-late:
		if r.fe.Kind != rpc.FrameUnknownResponse || r.fe.ID.String() != `"knowledge-kb-2"` || !r.nextPending {
			t.Errorf("late reply %v (id %v), while the next call was outstanding: %v", r.fe, r.fe.ID, r.nextPending)
		}
	default:
		t.Fatal("the late reply was not reported")
	}
	if len(late) != 0 {
		t.Errorf("another line was rejected: %v", (<-late).fe)
	}
	if n := c.Stats().LateReplies; n != 1 {
		t.Errorf("LateReplies = %d", n)
	}
}

// A call waits for the one before it, within its context; Close fails the
// call outstanding and the calls waiting with ErrClosed.
func TestCallsWaitTheirTurn(t *testing.T) {
	cfg := config(t, "knowledge")
	sent := make(chan struct{}, 1)
	cfg.Conn.Observe = func(tr rpc.Traffic) {
		if tr.Dir == rpc.Out && strings.Contains(string(tr.Line), "slow:3000") {
			select {
			case sent <- struct{}{}:
			default:
			}
		}
	}
	c := start(t, cfg)
	first := make(chan error, 1)
	go func() { _, err := retrieve(c, "slow:3000"); first <- err }()
	select {
	case <-sent: // the first call is outstanding
	case <-time.After(5 * time.Second):
		t.Fatal("the first call was not sent")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	begun := time.Now()
	if _, err := retrieveCtx(ctx, c, "impatient"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call whose context ends while it waits: %v", err)
	}
	if d := time.Since(begun); d > time.Second {
		t.Errorf("the waiting call returned after %v", d)
	}
	waiting, calling := make(chan error, 2), make(chan struct{}, 2)
	for range 2 {
		go func() {
			calling <- struct{}{}
			_, err := retrieve(c, "patient")
			waiting <- err
		}()
	}
	<-calling // both calls are made before Close: they wait, or are about to
	<-calling
	c.Close()
	for _, ch := range []chan error{first, waiting, waiting} {
		select {
		case err := <-ch:
			if !errors.Is(err, service.ErrClosed) {
				t.Errorf("after Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a call still waits after Close")
		}
	}
}

// A provider that dies mid-request fails the pending call at once with
// its exit status and stderr; the client restarts it (the call is not
// replayed, ids go on), and once the budget is spent the provider is
// unavailable.
func TestDiesMidRequest(t *testing.T) {
	cfg := config(t, "knowledge")
	var mu sync.Mutex
	var statuses []string
	cfg.OnLifecycle = func(l service.Lifecycle) { mu.Lock(); statuses = append(statuses, l.Status); mu.Unlock() }
	c := start(t, cfg)
	begun := time.Now()
	_, err := retrieve(c, "die")
	ee, ok := errors.AsType[*service.ExitError](err)
	if !ok || !errors.Is(err, service.ErrExited) || !errors.Is(err, rpc.ErrClosed) || ee.Method != "retrieve" {
		t.Fatalf("the pending call: %v", err)
	}
	d := time.Since(begun)
	if d > 2*time.Second {
		t.Errorf("the pending call failed after %v", d)
	}
	t.Logf("the pending call failed %v after it was made (the provider exits at once)", d)
	if !strings.Contains(ee.Stderr, "fatal: the index is corrupt") || ee.State == nil || ee.State.ExitCode() != 3 {
		t.Errorf("exit: %v (state %v)", err, ee.State)
	}
	res, err := retrieve(c, "id")
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(*res.Content, `"knowledge-kb-`), `"`)); n != 4 {
		t.Errorf("the restarted provider's ids go on after the last (initialize is 3): %s", *res.Content)
	}
	if c.Stats().Restarts != 1 {
		t.Errorf("stats %+v", c.Stats())
	}
	if _, err := retrieve(c, "die"); !errors.Is(err, service.ErrExited) {
		t.Fatal(err)
	}
	_, err = retrieve(c, "after")
	if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Reason != service.ReasonRestarts {
		t.Fatalf("restarts spent: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"service_starting", "service_handshaking", "service_ready", "service_unhealthy", "service_restarting",
		"service_starting", "service_handshaking", "service_ready", "service_unhealthy", "service_failed"}
	if !slices.Equal(statuses, want) {
		t.Errorf("lifecycle\n got %v\nwant %v", statuses, want)
	}
}

// A provider killed between calls is restarted; calls made meanwhile wait
// for it.
func TestKilledBetweenCalls(t *testing.T) {
	c := start(t, config(t, "knowledge"))
	pid := c.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.PID() == pid && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	res, err := retrieve(c, "again")
	if err != nil || *res.Content != "about again" || c.PID() == pid || c.PID() == 0 {
		t.Fatalf("after the kill: %v %v (pid %d -> %d)", res, err, pid, c.PID())
	}
}

// Frames that fail the protocol fail the call they answer at once, with a
// typed error; the client goes on.
func TestBadReplies(t *testing.T) {
	c := start(t, config(t, "knowledge"))
	for query, want := range map[string]error{
		"garbage":           envelope.ErrMalformed,
		"numeric":           envelope.ErrMalformed,
		"malformed-with-id": envelope.ErrMalformed,
		"wrong-protocol":    envelope.ErrProtocol,
		"wrong-version":     envelope.ErrVersion,
		"wrong-service":     service.ErrWrongRole,
		"event-with-id":     envelope.ErrKind,
	} {
		begun := time.Now()
		_, err := retrieve(c, query)
		if _, ok := errors.AsType[*rpc.FrameError](err); !ok || !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", query, err, want)
		}
		if d := time.Since(begun); d > 2*time.Second {
			t.Errorf("%s: failed after %v", query, d)
		}
	}
	if res, err := retrieve(c, "fine"); err != nil || *res.Content != "about fine" {
		t.Fatalf("after the bad replies: %v %v", res, err)
	}
}

// With RestartOnTimeout a provider that does not answer in time is killed
// and restarted.
func TestRestartOnTimeout(t *testing.T) {
	cfg := config(t, "knowledge")
	cfg.RequestTimeout, cfg.RestartOnTimeout = time.Second, true
	c := start(t, cfg)
	pid := c.PID()
	if _, err := retrieve(c, "slow:5000"); !errors.Is(err, service.ErrTimeout) {
		t.Fatal(err)
	}
	// The next call's timeout counts its wait for the restart: let the
	// restart finish first, so that a loaded machine cannot fail it.
	for deadline := time.Now().Add(10 * time.Second); c.PID() == 0 || c.PID() == pid; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the provider was not restarted: pid %d, %+v", c.PID(), c.Stats())
		}
	}
	res, err := retrieve(c, "next")
	if err != nil || *res.Content != "about next" || c.PID() == pid || c.Stats().Restarts != 1 {
		t.Fatalf("%v %v", res, err)
	}
}

// With RestartOnError an error frame restarts the provider, as the Harness
// does; by default the provider is kept.
func TestRestartOnError(t *testing.T) {
	for _, restart := range []bool{false, true} {
		cfg := config(t, "knowledge")
		cfg.RestartOnError = restart
		c := start(t, cfg)
		pid := c.PID()
		_, err := retrieve(c, "refuse")
		if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Name != "request_failed" {
			t.Fatalf("restart %v: %v", restart, err)
		}
		res, err := retrieve(c, "next")
		if err != nil || *res.Content != "about next" {
			t.Fatalf("restart %v: %v %v", restart, res, err)
		}
		if restarted := c.PID() != pid; restarted != restart || c.Stats().Restarts != map[bool]int{false: 0, true: 1}[restart] {
			t.Errorf("restart %v: restarted %v, %d restarts", restart, restarted, c.Stats().Restarts)
		}
	}
}

// Close during a restart's backoff returns at once; the waiting call fails
// with ErrClosed.
func TestCloseDuringBackoff(t *testing.T) {
	cfg := config(t, "knowledge")
	cfg.Restart.Backoff = time.Minute
	c := start(t, cfg)
	if _, err := retrieve(c, "die"); !errors.Is(err, service.ErrExited) {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() { _, err := retrieve(c, "waits"); waiting <- err }()
	time.Sleep(50 * time.Millisecond)
	begun := time.Now()
	c.Close()
	if d := time.Since(begun); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := <-waiting; !errors.Is(err, service.ErrClosed) {
		t.Errorf("the waiting call: %v", err)
	}
}

// A call, or a handshake, whose frame the provider does not read (a pipe
// that stays full) fails at its timeout; it does not hang in the write.
func TestTimeoutWhileTheProviderDoesNotRead(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	within := func(what string, d time.Duration, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(d):
			t.Fatalf("%s still blocked after %v", what, d)
			return nil
		}
	}

	cfg := config(t, "deaf")
	cfg.StartupTimeout = 300 * time.Millisecond
	cfg.Initialize = &agentpmservice.KnowledgeInitialize{Packages: []agentpmservice.KnowledgeRuntimeSnapshot{
		{Name: "@zack/docs", Version: "1.2.3", Mode: "vector", Description: big}}}
	err := within("Start", 10*time.Second, func() error {
		c, err := service.Start(context.Background(), cfg)
		if err == nil {
			c.Close()
		}
		return err
	})
	if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Reason != service.ReasonTimeout {
		t.Fatalf("Start: %v, want a handshake timeout", err)
	}

	cfg = config(t, "no-read")
	cfg.RequestTimeout = 300 * time.Millisecond
	c := start(t, cfg)
	err = within("the call", 10*time.Second, func() error { _, err := retrieve(c, big); return err })
	if !errors.Is(err, service.ErrTimeout) {
		t.Fatalf("the call: %v, want a timeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = within("the cancelled call", 10*time.Second, func() error { _, err := retrieveCtx(ctx, c, big); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the cancelled call: %v", err)
	}
}

// Close gives a provider StopGrace to finish after the end of its input
// before it kills it.
func TestCloseWaitsStopGrace(t *testing.T) {
	mark := t.TempDir() + "/saved"
	cfg := config(t, "slow-exit")
	cfg.SetEnv = append(cfg.SetEnv, "BRIDGEKIT_FAKE_MARK="+mark)
	cfg.StopGrace = 10 * time.Second
	c := start(t, cfg)
	begun := time.Now()
	c.Close()
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the provider was killed %v after its input ended, within its StopGrace of %v: %v", time.Since(begun), cfg.StopGrace, err)
	}
	if d := time.Since(begun); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]service.Config{
		"no command":   {Role: "knowledge", RegistryID: "kb"},
		"unknown role": {Role: "oracle", RegistryID: "x", Command: []string{"x"}},
		"wrong initialize": {Role: "knowledge", RegistryID: "kb", Command: []string{"x"},
			Initialize: &agentpmservice.MemoryInitialize{}},
	} {
		if _, err := service.Start(context.Background(), cfg); !errors.Is(err, service.ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := service.Start(context.Background(), service.Config{Role: "knowledge", RegistryID: "kb", Command: []string{"/nonexistent/provider"}})
	if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Reason != service.ReasonStart {
		t.Errorf("a command that cannot start: %v", err)
	}
}

// A retrieve round trip through the client to a provider child process
// over real pipes (the fake knowledge provider, on servers/service).
func BenchmarkRoundTrip(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	c, err := service.Start(context.Background(), service.Config{Role: "knowledge", RegistryID: "kb", Command: []string{exe},
		SetEnv: []string{"BRIDGEKIT_FAKE_PROVIDER=knowledge"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := retrieve(c, "q"); err != nil {
			b.Fatal(err)
		}
	}
}

// Secrets named DATABASE_URL and SLACK_WEBHOOK are recognized: a handshake
// payload that would carry one is not sent.
func TestUnsafeMetadataNames(t *testing.T) {
	for _, name := range []string{"DATABASE_URL", "SLACK_WEBHOOK", "SENTRY_DSN"} {
		const value = "postgres://app:pw-0123456789@db.internal/app"
		cfg := config(t, "knowledge")
		cfg.SetEnv = append(cfg.SetEnv, name+"="+value)
		cfg.Initialize = &agentpmservice.KnowledgeInitialize{Packages: []agentpmservice.KnowledgeRuntimeSnapshot{
			{Name: "@zack/docs", Version: "1.2.3", Mode: "vector", Description: "db " + value}}}
		_, err := service.Start(context.Background(), cfg)
		if u, ok := errors.AsType[*service.UnavailableError](err); !ok || u.Reason != service.ReasonUnsafeMetadata || strings.Contains(err.Error(), value) {
			t.Errorf("%s: Start: %v", name, err)
		}
	}
}

// A key passed to the provider through Config.Env (or SetEnv) and echoed
// by it on stderr, in an error frame or in a bad frame, never appears in
// an error or a log line.
func TestProviderSecretsAreMasked(t *testing.T) {
	const key = "pk-live-0123456789abcdef"
	const other = "other-0123456789abcdef"
	t.Setenv("BRIDGEKIT_TEST_PROVIDER_KEY", key)
	var logs strings.Builder
	var mu sync.Mutex
	cfg := config(t, "knowledge")
	cfg.Env = []string{"BRIDGEKIT_TEST_PROVIDER_KEY"}
	cfg.SetEnv = append(cfg.SetEnv, "BRIDGEKIT_TEST_OTHER_VALUE="+other)
	cfg.Logger = slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(b)
	}), nil))
	cfg.Restart.MaxAttempts = -1
	c := start(t, cfg)
	var errs []string
	for _, q := range []string{"echo-refuse", "echo-die"} {
		_, err := retrieve(c, q)
		if err == nil {
			t.Fatalf("%s: no error", q)
		}
		errs = append(errs, err.Error())
		if s := c.Stats(); s.Restarts > 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(errs, "\n") + logs.String()
	if strings.Contains(all, key) || strings.Contains(all, other) {
		t.Errorf("a secret leaked:\n%s", all)
	}
	if !strings.Contains(all, "[REDACTED]") {
		t.Errorf("nothing was quoted:\n%s", all)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
