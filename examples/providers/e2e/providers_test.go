package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/clients/service"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func docsRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../internal/knowledge/testdata/docs")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// The knowledge provider indexes the folder the handshake names, attests
// it, and answers retrieve with ranked chunks and citations; a package it
// cannot index is unavailable at preflight.
func TestKnowledgeProvider(t *testing.T) {
	c := startClient(t, service.Config{
		Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "kb", Command: command("knowledge"),
		Initialize: &agentpmservice.KnowledgeInitialize{Packages: []agentpmservice.KnowledgeRuntimeSnapshot{
			{Name: "@zack/docs", Version: "1.2.3", Mode: "vector", Root: ptr(docsRoot(t))},
			{Name: "@zack/gone", Version: "0.1.0", Mode: "vector", Root: ptr(filepath.Join(t.TempDir(), "missing"))},
		}},
	})
	if pf := c.Preflight(); len(pf.Unavailable) != 1 || pf.Unavailable[0].Package != "@zack/gone" {
		t.Fatalf("preflight: %+v", pf.Unavailable)
	}
	ctx := context.Background()
	query := func(q agentpmservice.KnowledgeRuntimeRequest) *agentpmservice.KnowledgeRuntimeResult {
		t.Helper()
		if q.Package == "" {
			q.Package, q.Version = "@zack/docs", "1.2.3"
		}
		res, err := c.Retrieve(ctx, &agentpmservice.RetrievePayload{Request: q})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := query(agentpmservice.KnowledgeRuntimeRequest{Mode: "vector_query", Query: ptr("How does Harness route Knowledge?"), TopK: ptr(int64(3))})
	if err := res.Err(); err != nil || len(res.Results) == 0 || len(res.Results) > 3 || len(res.Citations) != len(res.Results) {
		t.Fatalf("vector_query: %v %+v", err, res)
	}
	first := res.Results[0]
	if first.Rank != 1 || first.SourceID != "guide.md" || !strings.Contains(*first.Text, "KnowledgeRuntime") || *first.SourceTitle != "Harness Guide" ||
		first.Score <= 0 || first.Score >= 1 || res.Citations[0].ChunkID != first.ChunkID || !strings.HasSuffix(*res.Citations[0].URI, "guide.md#L12-L14") {
		t.Errorf("best hit: %+v, citation %+v", first, res.Citations[0])
	}
	for i := 1; i < len(res.Results); i++ {
		if r := res.Results[i]; r.Rank != int64(i+1) || r.Score > res.Results[i-1].Score {
			t.Errorf("hits out of order: %+v", res.Results)
		}
	}
	var meta struct {
		Headings  []string `json:"headings"`
		StartLine int      `json:"start_line"`
	}
	if err := json.Unmarshal(first.ChunkMetadata, &meta); err != nil || !slices.Equal(meta.Headings, []string{"Harness", "Knowledge"}) || meta.StartLine != 12 {
		t.Errorf("chunk metadata %s: %v", first.ChunkMetadata, err)
	}

	res = query(agentpmservice.KnowledgeRuntimeRequest{Mode: "vector_query", Query: ptr("restarted provider"), ReturnCitations: ptr(false), ScoreThreshold: ptr(0.05)})
	if res.Err() != nil || len(res.Results) == 0 || res.Results[0].SourceID != "runtime/providers.md" || res.Citations != nil {
		t.Errorf("without citations: %+v", res)
	}
	res = query(agentpmservice.KnowledgeRuntimeRequest{Mode: "context_document", Document: ptr("runtime/providers.md")})
	if res.Err() != nil || !strings.Contains(*res.Content, "The failed\nrequest is never replayed.") {
		t.Errorf("context_document: %+v", res)
	}
	for _, tc := range []struct {
		req  agentpmservice.KnowledgeRuntimeRequest
		want error
	}{
		{agentpmservice.KnowledgeRuntimeRequest{Mode: "vector_query"}, agentpmservice.ErrMissingQuery},
		{agentpmservice.KnowledgeRuntimeRequest{Mode: "vector_query", Query: ptr("?! …")}, agentpmservice.ErrMissingQuery},
		{agentpmservice.KnowledgeRuntimeRequest{Mode: "context_document"}, agentpmservice.ErrMissingDocument},
		{agentpmservice.KnowledgeRuntimeRequest{Mode: "context_document", Document: ptr("nope.md")}, agentpmservice.ErrUndeclaredDocument},
		{agentpmservice.KnowledgeRuntimeRequest{Package: "@zack/other", Version: "1", Mode: "vector_query", Query: ptr("x")}, agentpmservice.ErrKnowledgeUnavailable},
	} {
		if res := query(tc.req); res.Ok || !errors.Is(res.Err(), tc.want) {
			t.Errorf("%+v: %v, want %v", tc.req, res.Err(), tc.want)
		}
	}
	_, err := c.Retrieve(ctx, &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{Package: "@zack/gone", Version: "0.1.0", Mode: "vector_query", Query: ptr("x")}})
	if !errors.Is(err, service.ErrUnavailable) {
		t.Errorf("an unavailable package: %v", err)
	}
}

// The knowledge provider also serves a folder named by its flags.
func TestKnowledgeProviderFlags(t *testing.T) {
	c := startClient(t, service.Config{
		Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "kb",
		Command: command("knowledge", "-root", docsRoot(t), "-package", "local-docs", "-version", "2.0.0", "-cache", filepath.Join(t.TempDir(), "index.cache")),
	})
	res, err := c.Retrieve(context.Background(), &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: "local-docs", Version: "2.0.0", Mode: "vector_query", Query: ptr("memory spaces scope")}})
	if err != nil || res.Err() != nil || res.Results[0].SourceID != "guide.md" || !strings.HasPrefix(*res.Results[0].SourceURI, "agentpm://knowledge/local-docs/2.0.0/") {
		t.Fatalf("%v %+v", err, res)
	}
}

// The embedding provider advertises its space and answers embed with
// vectors that pass the Harness's checks and rank texts by shared words.
func TestEmbeddingProvider(t *testing.T) {
	c := startClient(t, service.Config{Role: agentpmservice.ServiceRoleEmbedding, RegistryID: "hash", Command: command("embedding", "-dimensions", "64")})
	var ready agentpmservice.EmbeddingReadiness
	if err := json.Unmarshal(c.Preflight().Readiness, &ready); err != nil || len(ready.EmbeddingSpaces) != 1 || ready.EmbeddingSpaces[0].Dimensions != 64 {
		t.Fatalf("readiness %s: %v", c.Preflight().Readiness, err)
	}
	space := ready.EmbeddingSpaces[0]
	embed := func(text string) []float64 {
		t.Helper()
		p := &agentpmservice.EmbedPayload{Provider: space.Provider, Model: space.Model, Dimensions: space.Dimensions, Normalized: true, Text: text}
		res, err := c.Embed(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		v, err := agentpmservice.CheckEmbedding(p, res)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	dot := func(a, b []float64) (s float64) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	a, b, unrelated := embed("Harness routes Knowledge requests"), embed("routing knowledge requests in the harness"), embed("bananas are yellow fruit")
	if dot(a, b) <= dot(a, unrelated) || !slices.Equal(a, embed("Harness routes Knowledge requests")) {
		t.Errorf("similar %.3f, unrelated %.3f", dot(a, b), dot(a, unrelated))
	}
	_, err := c.Embed(context.Background(), &agentpmservice.EmbedPayload{Provider: space.Provider, Model: "another-model", Dimensions: 64, Normalized: true, Text: "x"})
	if e, ok := errors.AsType[*rpc.Error](err); !ok || !errors.Is(err, agentpmservice.ErrEmbeddingSpaceMismatch) || e.Retryable == nil || *e.Retryable {
		t.Errorf("another space: %v", err)
	}
}

// The hook provider rejects by policy, with the rule's reason, and patches
// what its rules ask for; invoke reaches the same hooks.
func TestHookProvider(t *testing.T) {
	c := startClient(t, service.Config{
		Role: agentpmservice.ServiceRoleHook, RegistryID: "policy", Command: command("hook", "-policy", "../hook/testdata/policy.json"),
		Initialize: &agentpmservice.HookInitialize{Hooks: []agentpmservice.HookID{"before_tool_call", "before_knowledge_request"}},
	})
	if !strings.Contains(string(c.Preflight().Readiness), `"before_memory_operation"`) {
		t.Errorf("readiness %s", c.Preflight().Readiness)
	}
	ctx := context.Background()
	call := func(tool, args string) *agentpmservice.BeforeToolCallDecision {
		t.Helper()
		d, err := c.BeforeToolCall(ctx, &agentpmservice.BeforeToolCallHook{Input: agentpmservice.BeforeToolCallInput{PhaseID: "act", Tool: tool, Arguments: jsontext.Value(args)}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := call("@zack/cat", `{"path":"/etc/shadow"}`); d.Reject == nil || *d.Reject.Reason != "tools may not touch secrets or system files" {
		t.Errorf("a secret file: %+v", d)
	}
	if d := call("shell", `{}`); d.Reject == nil {
		t.Errorf("a shell: %+v", d)
	}
	d := call("@zack/echo", `{"text":"use sk-abcdefghijkl please"}`)
	if d.Continue == nil || d.Continue.Patch == nil || !strings.Contains(string(d.Continue.Patch.Arguments), `use [REDACTED] please`) {
		t.Errorf("a redaction: %+v", d)
	}
	if d := call("@zack/echo", `{"text":"hello"}`); d.Continue == nil || d.Continue.Patch != nil {
		t.Errorf("nothing to change: %+v", d)
	}
	// invoke is legacy-tolerated: no generated caller, but providers still
	// answer it, so it is sent as the old Harness sent it.
	var inv agentpmservice.HookDecision
	err := c.Send(ctx, rpc.Outbound{Method: agentpmservice.MethodInvoke, Qualifier: "hook", Params: &agentpmservice.HookInvocation{Hook: "before_knowledge_request",
		Input: jsontext.Value(`{"phase_id":"answer","request":{"package":"@zack/docs","version":"1.2.3","mode":"vector_query","query":"q","top_k":10}}`)}}, &inv)
	if err != nil || inv.Continue == nil || !strings.Contains(string(inv.Continue.Patch), `"top_k":3`) {
		t.Errorf("invoke: %+v %v", inv, err)
	}
}

// The memory provider is killed (SIGKILL) twice while a writer writes;
// the client restarts it each time, and every write it answered is still
// there, in a new client too. A write in flight at the kill fails with the
// provider's exit and is not replayed.
func TestMemoryProviderKilledAndRestarted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	route := agentpmservice.MemorySpaceRuntimeSnapshot{Package: "@zack/notes", PackageVersion: "1.0.0", Space: "notes", Model: "collection"}
	cfg := service.Config{
		Role: agentpmservice.ServiceRoleMemory, RegistryID: "m", Command: command("memory", "-db", db),
		Initialize: &agentpmservice.MemoryInitialize{Spaces: []agentpmservice.MemorySpaceRuntimeSnapshot{route}},
		Restart:    service.Restart{MaxAttempts: 2, Backoff: 20 * time.Millisecond},
	}
	var mu sync.Mutex
	var statuses []string
	cfg.OnLifecycle = func(l service.Lifecycle) { mu.Lock(); statuses = append(statuses, l.Status); mu.Unlock() }
	c := startClient(t, cfg)
	ctx := context.Background()
	scope := agentpmservice.MemoryScope{"user": "u1"}
	write := func(i int) (string, error) {
		res, err := c.MemoryWrite(ctx, &agentpmservice.MemoryWritePayload{Request: agentpmservice.MemoryWriteRequest{
			Package: route.Package, PackageVersion: route.PackageVersion, Space: route.Space, SpaceModel: "collection",
			RecordType: "note", SchemaVersion: "1", Scope: scope, Operation: "create",
			Content: jsontext.Value(fmt.Sprintf(`{"n":%d,"text":"note number %d"}`, i, i)), Provenance: jsontext.Value(`{}`), Now: "2026-11-30T12:00:00Z"}})
		if err != nil {
			return "", err
		}
		if err := res.Err(); err != nil {
			return "", err
		}
		id, _ := res.RecordID.Get()
		return id, nil
	}
	state := &agentpmservice.MemoryOperationState{Scope: scope, Armed: ptr(true), Watermark: jsontext.Value(`{"n":1}`)}
	key := agentpmservice.MemoryOperationStateKey{Package: route.Package, PackageVersion: route.PackageVersion, Operation: "summarize", Scope: scope}
	if res, err := c.MemoryStoreOperationState(ctx, &agentpmservice.MemoryStoreStatePayload{Request: key, State: state}); err != nil || res.Err() != nil {
		t.Fatal(res, err)
	}

	var acked []string
	var failed int
	kills := map[int]bool{15: true, 40: true}
	for i := 0; len(acked) < 60; i++ {
		if kills[i] {
			pid := c.PID()
			if pid == 0 {
				t.Fatal("no provider to kill")
			}
			// Kill while a write is (most likely) in flight.
			go func() {
				time.Sleep(time.Millisecond)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}()
		}
		id, err := write(i)
		switch {
		case err == nil:
			acked = append(acked, id)
		case errors.Is(err, service.ErrExited):
			failed++
			if ee, _ := errors.AsType[*service.ExitError](err); ee.State == nil || ee.State.String() != "signal: killed" {
				t.Errorf("exit: %v", err)
			}
		default:
			t.Fatalf("write %d: %v", i, err)
		}
		if i > 200 {
			t.Fatal("too many failed writes")
		}
	}
	t.Logf("%d writes acknowledged, %d failed with the provider's death", len(acked), failed)
	if c.Stats().Restarts != 2 {
		t.Errorf("stats %+v, %d writes failed", c.Stats(), failed)
	}
	check := func(c *service.Client) {
		t.Helper()
		res, err := c.MemoryRead(ctx, &agentpmservice.MemoryReadPayload{Request: agentpmservice.MemoryReadRequest{
			Package: route.Package, PackageVersion: route.PackageVersion, Space: route.Space, Scope: scope, Mode: "chronological", Now: "2026-11-30T12:00:00Z"}})
		if err != nil || res.Err() != nil {
			t.Fatal(res, err)
		}
		have := map[string]bool{}
		for _, r := range res.Records {
			have[r.ID] = true
		}
		for _, id := range acked {
			if !have[id] {
				t.Errorf("acknowledged record %s is lost", id)
			}
		}
		// A write in flight at a kill may have been committed without its
		// answer: at most one per kill.
		if extra := len(res.Records) - len(acked); extra < 0 || extra > failed {
			t.Errorf("%d records, %d acknowledged, %d failed", len(res.Records), len(acked), failed)
		}
		st, err := c.MemoryLoadOperationState(ctx, &agentpmservice.MemoryLoadStatePayload{Request: key})
		if got, ok := st.State.Get(); err != nil || !ok || string(got.Watermark) != `{"n":1}` || !*got.Armed {
			t.Errorf("operation state after restarts: %+v %v", st, err)
		}
	}
	check(c)
	mu.Lock()
	if n := strings.Count(strings.Join(statuses, " "), "service_restarting"); n != 2 {
		t.Errorf("lifecycle %v", statuses)
	}
	mu.Unlock()
	// A new client on the same database: the data survives the provider.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.OnLifecycle = nil
	check(startClient(t, cfg))
}

// The memory provider's other primitives over the wire: count, lifecycle
// commits (all or nothing), typed failures and an unadvertised mode.
func TestMemoryProviderPrimitives(t *testing.T) {
	route := agentpmservice.MemorySpaceRuntimeSnapshot{Package: "@zack/notes", PackageVersion: "1.0.0", Space: "log", Model: "sequence", AppendOnly: ptr(true)}
	c := startClient(t, service.Config{
		Role: agentpmservice.ServiceRoleMemory, RegistryID: "m", Command: command("memory", "-db", filepath.Join(t.TempDir(), "m.db")),
		Initialize: &agentpmservice.MemoryInitialize{Spaces: []agentpmservice.MemorySpaceRuntimeSnapshot{route}},
	})
	if r := string(c.Preflight().Readiness); !strings.Contains(r, `"atomic_batches":true`) || strings.Contains(r, "semantic") || !strings.Contains(r, `"package":"@zack/notes"`) {
		t.Errorf("readiness %s", r)
	}
	ctx := context.Background()
	scope := agentpmservice.MemoryScope{"project": "p"}
	w := agentpmservice.MemoryWriteRequest{Package: route.Package, PackageVersion: route.PackageVersion, Space: route.Space, SpaceModel: "sequence",
		RecordType: "event", SchemaVersion: "1", Scope: scope, Operation: "create", Content: jsontext.Value(`{"e":1}`), Provenance: jsontext.Value(`{}`), Now: "2026-11-30T12:00:00Z"}
	res, err := c.MemoryWrite(ctx, &agentpmservice.MemoryWritePayload{Request: w})
	if err != nil || res.Err() != nil {
		t.Fatal(res, err)
	}
	id, _ := res.RecordID.Get()
	del := w
	del.Operation, del.RecordID = "delete", &id
	res, err = c.MemoryWrite(ctx, &agentpmservice.MemoryWritePayload{Request: del})
	if err != nil || !errors.Is(res.Err(), agentpmservice.ErrConstraintViolation) {
		t.Errorf("delete in an append-only space: %v %v", res.Err(), err)
	}
	commit, err := c.MemoryCommitLifecycle(ctx, &agentpmservice.MemoryCommitPayload{Request: agentpmservice.CommitLifecycleRequest{
		Package: route.Package, PackageVersion: route.PackageVersion, Operation: "digest",
		ExpectedSources: []agentpmservice.ExpectedSource{{ID: &id, ContentHash: "sha256:0000"}},
		OutputWrites:    []agentpmservice.MemoryWriteRequest{w}, SourceMutations: []agentpmservice.MemoryWriteRequest{}}})
	if err != nil || !errors.Is(commit.Err(), agentpmservice.ErrCommitFailed) {
		t.Errorf("a commit from a changed source: %+v %v", commit, err)
	}
	count, err := c.MemoryCount(ctx, &agentpmservice.MemoryCountPayload{Request: agentpmservice.MemoryCountRequest{
		Package: route.Package, PackageVersion: route.PackageVersion, Space: route.Space, Scope: scope}})
	if err != nil || count.Err() != nil || *count.Count != 1 {
		t.Errorf("count after the failed commit: %+v %v", count, err)
	}
	read, err := c.MemoryRead(ctx, &agentpmservice.MemoryReadPayload{Request: agentpmservice.MemoryReadRequest{
		Package: route.Package, PackageVersion: route.PackageVersion, Space: route.Space, Scope: scope, Mode: "semantic", Query: ptr("x"), Now: "2026-11-30T12:00:00Z"}})
	if err != nil || !errors.Is(read.Err(), agentpmservice.ErrUnsupportedCapability) {
		t.Errorf("a semantic read: %+v %v", read, err)
	}
	if strings.Contains(string(c.Preflight().Readiness), `"capacity":true`) {
		t.Errorf("capacity advertised without -capacity: %s", c.Preflight().Readiness)
	}
}

// -capacity limits every scope's live records, and only then is capacity
// advertised.
func TestMemoryProviderCapacity(t *testing.T) {
	route := agentpmservice.MemorySpaceRuntimeSnapshot{Package: "@zack/notes", PackageVersion: "1.0.0", Space: "notes", Model: "collection"}
	c := startClient(t, service.Config{
		Role: agentpmservice.ServiceRoleMemory, RegistryID: "m", Command: command("memory", "-db", filepath.Join(t.TempDir(), "m.db"), "-capacity", "2"),
		Initialize: &agentpmservice.MemoryInitialize{Spaces: []agentpmservice.MemorySpaceRuntimeSnapshot{route}},
	})
	if r := string(c.Preflight().Readiness); !strings.Contains(r, `"capacity":true`) {
		t.Errorf("readiness %s", r)
	}
	w := agentpmservice.MemoryWriteRequest{Package: route.Package, PackageVersion: route.PackageVersion, Space: route.Space, SpaceModel: "collection",
		RecordType: "note", SchemaVersion: "1", Scope: agentpmservice.MemoryScope{"project": "p"}, Operation: "create", Content: jsontext.Value(`{"n":1}`), Provenance: jsontext.Value(`{}`), Now: "2026-11-30T12:00:00Z"}
	for i := range 3 {
		res, err := c.MemoryWrite(context.Background(), &agentpmservice.MemoryWritePayload{Request: w})
		if err != nil {
			t.Fatal(err)
		}
		if full := errors.Is(res.Err(), agentpmservice.ErrCapacityExceeded); full != (i == 2) {
			t.Fatalf("write %d: %v", i+1, res.Err())
		}
	}
}

// Bad input over real pipes, to each example provider: a frame with the
// wrong protocol or version, a numeric id, a malformed line, an unknown
// method and another role's method each get a typed error frame, and the
// provider goes on serving.
func TestProvidersRefuseBadInput(t *testing.T) {
	for _, p := range []struct {
		name, role string
		argv       []string
		init       string
	}{
		{"embedding", "embedding", command("embedding"), `{"role":"embedding","registry_id":"e","protocol_version":1}`},
		{"knowledge", "knowledge", command("knowledge"), `{"role":"knowledge","registry_id":"k","protocol_version":1,"packages":[]}`},
		{"memory", "memory", command("memory", "-db", filepath.Join(t.TempDir(), "m.db")), `{"role":"memory","registry_id":"m","protocol_version":1,"spaces":[]}`},
		{"hook", "hook", command("hook", "-policy", "../hook/testdata/policy.json"), `{"role":"hook","registry_id":"h","protocol_version":1,"hooks":[]}`},
		{"approval", "approval", command("approval"), `{"role":"approval","registry_id":"controller","protocol_version":1}`},
	} {
		t.Run(p.name, func(t *testing.T) {
			r := startRaw(t, p.argv...)
			frame := func(protocol string, version, kind, id, role, method, payload string) string {
				return fmt.Sprintf(`{"protocol":%q,"version":%s,"kind":%q,"id":%s,"service":%q,"method":%q,"payload":%s}`, protocol, version, kind, id, role, method, payload)
			}
			expect := func(name, answer, kind, id, code string) {
				t.Helper()
				var f struct {
					Kind    string         `json:"kind"`
					ID      jsontext.Value `json:"id"`
					Service string         `json:"service"`
					Error   *struct {
						Code      string `json:"code"`
						Retryable *bool  `json:"retryable"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(answer), &f); err != nil {
					t.Fatalf("%s: %s: %v", name, answer, err)
				}
				if f.Kind != kind || string(f.ID) != id || f.Service == "" || (code != "" && (f.Error == nil || f.Error.Code != code || f.Error.Retryable == nil)) {
					t.Errorf("%s: %s, want %s %s %s", name, answer, kind, id, code)
				}
			}
			expect("before the handshake", r.ask(frame("agentpm-service", "1", "request", `"x-0"`, p.role, "count", `{}`)), "error", `"x-0"`, "protocol_error")
			expect("wrong protocol", r.ask(frame("agentpm-harness-machine", "1", "initialize", `"x-1"`, p.role, "initialize", p.init)), "error", `"x-1"`, "protocol_error")
			expect("wrong version", r.ask(frame("agentpm-service", "2", "initialize", `"x-2"`, p.role, "initialize", p.init)), "error", `"x-2"`, "protocol_error")
			expect("numeric id", r.ask(frame("agentpm-service", "1", "initialize", `3`, p.role, "initialize", p.init)), "error", ``, "malformed_frame")
			expect("malformed line", r.ask(`{"protocol":"agentpm-service","version":1,"kind":"initialize","id":"x-4","payload":{`), "error", `"x-4"`, "malformed_frame")
			expect("initialize", r.ask(frame("agentpm-service", "1", "initialize", `"x-5"`, p.role, "initialize", p.init)), "initialized", `"x-5"`, "")
			expect("unknown method", r.ask(frame("agentpm-service", "1", "request", `"x-6"`, p.role, "teleport", `{}`)), "error", `"x-6"`, "unsupported_capability")
			other := "approval"
			if p.role == "approval" {
				other = "knowledge"
			}
			expect("another role's method", r.ask(frame("agentpm-service", "1", "request", `"x-7"`, other, "request_approval", `{}`)), "error", `"x-7"`, "unsupported_capability")
			expect("params that do not fit", r.ask(frame("agentpm-service", "1", "request", `"x-8"`, p.role, methods[p.role], `{"request":7}`)), "error", `"x-8"`, "invalid_request")
		})
	}
}

// methods names a method of each role.
var methods = map[string]string{"embedding": "embed", "knowledge": "retrieve", "memory": "read", "hook": "before_tool_call", "approval": "request_approval"}

// The approval controller decides by its patterns: deny first, then
// approve, then the default (pending).
func TestApprovalProvider(t *testing.T) {
	c := startClient(t, service.Config{Role: agentpmservice.ServiceRoleApproval, RegistryID: "controller",
		Command: command("approval", "-approve", "review-*,docs", "-deny", "deploy-*")})
	if r := string(c.Preflight().Readiness); !strings.Contains(r, `"request_approval":true`) {
		t.Errorf("readiness %s", r)
	}
	for _, tc := range []struct {
		id, phase string
		want      agentpmservice.ApprovalDecisionValue
	}{
		{"review-1", "write", agentpmservice.ApprovalDecisionValueApprove},
		{"cp-2", "docs", agentpmservice.ApprovalDecisionValueApprove},
		{"deploy-prod", "review-3", agentpmservice.ApprovalDecisionValueDeny},
		{"cp-4", "ship", agentpmservice.ApprovalDecisionValuePending},
	} {
		d, err := c.RequestApproval(context.Background(), &agentpmservice.RequestApprovalPayload{Checkpoint: agentpmservice.LoopCheckpoint{
			ID: tc.id, Type: ptr("approval"), BeforePhase: tc.phase, OnReject: "stop"}})
		if err != nil || d.Outcome() != tc.want {
			t.Errorf("%s before %s: %v %v, want %s", tc.id, tc.phase, d, err, tc.want)
		}
	}
}

// A provider stops on SIGTERM with status 128+15, closing what it holds:
// the memory provider's database is free for the next one at once.
func TestProviderStopsOnSignal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	r := startRaw(t, command("memory", "-db", db, "-lock-timeout", "100ms")...)
	if line := r.ask(`{"protocol":"agentpm-service","version":1,"kind":"initialize","id":"memory-m-1","service":"memory","method":"initialize","payload":{"role":"memory","registry_id":"m","protocol_version":1,"spaces":[]}}`); !strings.Contains(line, `"kind":"initialized"`) {
		t.Fatalf("handshake: %s", line)
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ee, ok := errors.AsType[*exec.ExitError](r.wait()); !ok || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit after SIGTERM: %v", r.wait())
	}
	// The lock is released: a new provider opens the database within its
	// 100ms lock timeout.
	c := startClient(t, service.Config{Role: agentpmservice.ServiceRoleMemory, RegistryID: "m", Command: command("memory", "-db", db, "-lock-timeout", "100ms")})
	if c.PID() == 0 {
		t.Fatal("no provider")
	}
}
