package attest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
	"github.com/bridgekit/bridgekit/servers/host/attest"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	fpA = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	fpB = "sha256:" + "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func ptr(s string) *string { return &s }

func binding(receipt string) attest.Binding {
	return attest.Binding{AuthorityKind: attest.NativeApproval, EventFingerprint: fpA, PlanFingerprint: fpB,
		HypothesisID: "hyp-1", OperationReceiptID: receipt, RunID: ptr("run-1")}
}

func TestSuccessDocument(t *testing.T) {
	want := `{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}}`
	a, b := attest.Success(), attest.Success()
	if string(a) != want {
		t.Fatalf("Success() = %s", a)
	}
	a[0] = 'x' // callers get a copy
	if string(b) != want || string(attest.Success()) != want {
		t.Fatal("Success() shares its bytes")
	}
	if err := attest.CheckSuccess([]byte(want)); err != nil {
		t.Fatal(err)
	}
	if gen, err := json.Marshal(harn.HypothesisAttestation{}); err != nil || string(gen) != want {
		t.Fatalf("gen/harn's HypothesisAttestation encodes as %s, %v", gen, err)
	}
}

func TestCheckSuccess(t *testing.T) {
	good := []string{
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}}`,
		` { "_meta" : { "harn" : { "hostResult" : { "kind" : "hypothesis_native_attestation" , "schema" : "harn.host-result.v1" } } } } `,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}}` + "\n",
	}
	for _, doc := range good {
		if err := attest.CheckSuccess([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	bad := []string{
		``, `null`, `[]`, `"ok"`, `{}`, `{"_meta":null}`, `{"_meta":{}}`,
		`{"_meta":{"harn":{}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1"}}}}`,
		`{"_meta":{"harn":{"hostResult":{"kind":"hypothesis_native_attestation"}}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v2","kind":"hypothesis_native_attestation"}}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation","denied":false}}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"},"x":1}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}},"other":{}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}},"status":"ok"}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":1}}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation","kind":"hypothesis_native_attestation"}}}}`,
		`{"_meta":{"harn":{"hostResult":{"schema":"harn.host-result.v1","kind":"hypothesis_native_attestation"}}}`,
		`{"_meta":{"harn":{"hostResult":"harn.host-result.v1"}}}`,
	}
	for _, doc := range bad {
		if err := attest.CheckSuccess([]byte(doc)); !errors.Is(err, attest.ErrInvalidResult) {
			t.Errorf("%q: err = %v, want ErrInvalidResult", doc, err)
		}
	}
}

func TestParseArgs(t *testing.T) {
	valid := `{"authority_kind":"native_approval","event_fingerprint":"` + fpA + `","plan_fingerprint":"` + fpB +
		`","hypothesis_id":"hyp-1","operation_receipt_id":"rcpt-1","run_id":"run-1"}`
	b, err := attest.ParseArgs([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if !attest.Equal(b, binding("rcpt-1")) {
		t.Fatalf("got %+v", b)
	}
	out, _ := json.Marshal(b)
	if string(out) != valid {
		t.Errorf("re-encoded\n%s\nwant\n%s", out, valid)
	}
	nullRun := strings.Replace(valid, `"run-1"`, `null`, 1)
	b, err = attest.ParseArgs([]byte(nullRun))
	if err != nil || b.RunID != nil {
		t.Fatalf("null run_id: %+v %v", b, err)
	}
	if out, _ := json.Marshal(b); string(out) != nullRun {
		t.Errorf("re-encoded %s", out)
	}
	for _, k := range []attest.AuthorityKind{attest.PlanAdmission, attest.NativeApproval, attest.NativeObservation, attest.LifecycleAudit} {
		if _, err := attest.ParseArgs([]byte(strings.Replace(valid, "native_approval", string(k), 1))); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}

	bad := map[string]string{
		"not an object":       `[]`,
		"empty":               ``,
		"missing run_id":      strings.Replace(valid, `,"run_id":"run-1"`, ``, 1),
		"missing receipt":     strings.Replace(valid, `"operation_receipt_id":"rcpt-1",`, ``, 1),
		"extra member":        strings.Replace(valid, `}`, `,"approved":true}`, 1),
		"duplicate member":    strings.Replace(valid, `}`, `,"run_id":null}`, 1),
		"unknown kind":        strings.Replace(valid, "native_approval", "root", 1),
		"kind not a string":   strings.Replace(valid, `"native_approval"`, `1`, 1),
		"uppercase hex":       strings.Replace(valid, fpA, strings.ToUpper(fpA[:7])+strings.ToUpper(fpA[7:]), 1),
		"short fingerprint":   strings.Replace(valid, fpA, fpA[:70], 1),
		"no sha256 prefix":    strings.Replace(valid, fpB, "sha512:"+fpB[7:], 1),
		"empty hypothesis":    strings.Replace(valid, `"hyp-1"`, `""`, 1),
		"empty receipt":       strings.Replace(valid, `"rcpt-1"`, `""`, 1),
		"empty run_id":        strings.Replace(valid, `"run-1"`, `""`, 1),
		"run_id number":       strings.Replace(valid, `"run-1"`, `7`, 1),
		"receipt not string":  strings.Replace(valid, `"rcpt-1"`, `["rcpt-1"]`, 1),
		"hypothesis null":     strings.Replace(valid, `"hyp-1"`, `null`, 1),
		"truncated":           valid[:len(valid)-1],
		"invalid utf-8 value": strings.Replace(valid, `hyp-1`, "hyp-\xff", 1),
	}
	for name, doc := range bad {
		_, err := attest.ParseArgs([]byte(doc))
		if !errors.Is(err, attest.ErrInvalidRequest) {
			t.Errorf("%s: err = %v, want ErrInvalidRequest", name, err)
		}
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestReceiptBinding(t *testing.T) {
	ctx := context.Background()
	var verified atomic.Int32
	a := attest.New(&attest.Options{Verify: func(context.Context, attest.Binding) error {
		verified.Add(1)
		return nil
	}})
	if err := a.Issue("rcpt-1"); err != nil {
		t.Fatal(err)
	}
	first, err := a.Attest(ctx, binding("rcpt-1"))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := a.Attest(ctx, binding("rcpt-1"))
	if err != nil {
		t.Fatalf("exact retry: %v", err)
	}
	if !bytes.Equal(first, retry) || !bytes.Equal(first, attest.Success()) {
		t.Fatalf("retry answered %s, first %s", retry, first)
	}
	if verified.Load() != 1 {
		t.Errorf("verified %d times, want 1", verified.Load())
	}

	variants := map[string]func(*attest.Binding){
		"authority_kind":    func(b *attest.Binding) { b.AuthorityKind = attest.LifecycleAudit },
		"event_fingerprint": func(b *attest.Binding) { b.EventFingerprint = fpB },
		"plan_fingerprint":  func(b *attest.Binding) { b.PlanFingerprint = fpA },
		"hypothesis_id":     func(b *attest.Binding) { b.HypothesisID = "hyp-2" },
		"run_id value":      func(b *attest.Binding) { b.RunID = ptr("run-2") },
		"run_id null":       func(b *attest.Binding) { b.RunID = nil },
	}
	for name, change := range variants {
		b := binding("rcpt-1")
		change(&b)
		_, err := a.Attest(ctx, b)
		if !errors.Is(err, attest.ErrReceiptReused) {
			t.Errorf("%s changed: err = %v, want ErrReceiptReused", name, err)
		}
		var e *attest.Error
		if errors.As(err, &e) && e.ReceiptID != "rcpt-1" {
			t.Errorf("ReceiptID = %q", e.ReceiptID)
		}
	}
	// The binding still holds after the refused reuses.
	if _, err := a.Attest(ctx, binding("rcpt-1")); err != nil {
		t.Errorf("retry after refusals: %v", err)
	}
	if _, err := a.Attest(ctx, binding("never-issued")); !errors.Is(err, attest.ErrUnknownReceipt) {
		t.Errorf("unknown receipt: %v", err)
	}
	bad := binding("rcpt-1")
	bad.EventFingerprint = "sha256:xyz"
	if _, err := a.Attest(ctx, bad); !errors.Is(err, attest.ErrInvalidRequest) {
		t.Errorf("invalid binding: %v", err)
	}
	if verified.Load() != 1 {
		t.Errorf("verified %d times, want 1", verified.Load())
	}
}

func TestVerifyOutcomes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		verify attest.VerifyFunc
		want   error
	}{
		{"denied", func(context.Context, attest.Binding) error { return attest.Errorf(attest.ReasonDenied, "user said no") }, attest.ErrDenied},
		{"mismatch", func(context.Context, attest.Binding) error {
			return attest.Errorf(attest.ReasonReceiptMismatch, "event fingerprint differs from the operation's")
		}, attest.ErrReceiptMismatch},
		{"stale by the adapter", func(context.Context, attest.Binding) error {
			return attest.Errorf(attest.ReasonStaleReceipt, "operation superseded")
		}, attest.ErrStaleReceipt},
		{"native failure", func(context.Context, attest.Binding) error { return errors.New("disk full") }, attest.ErrOperationFailed},
		{"panic", func(context.Context, attest.Binding) error { panic("bug") }, attest.ErrOperationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fail := true
			a := attest.New(&attest.Options{Verify: func(ctx context.Context, b attest.Binding) error {
				if fail {
					return tc.verify(ctx, b)
				}
				return nil
			}})
			_ = a.Issue("r")
			_, err := a.Attest(ctx, binding("r"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var e *attest.Error
			if !errors.As(err, &e) || e.ReceiptID != "r" {
				t.Fatalf("err %#v", err)
			}
			// A refused request does not bind the receipt: a corrected
			// request may still bind it.
			fail = false
			other := binding("r")
			other.HypothesisID = "hyp-corrected"
			if _, err := a.Attest(ctx, other); err != nil {
				t.Fatalf("after refusal: %v", err)
			}
			if _, err := a.Attest(ctx, binding("r")); !errors.Is(err, attest.ErrReceiptReused) {
				t.Fatalf("original after rebinding: %v", err)
			}
		})
	}
	t.Run("verify sees the binding and its context", func(t *testing.T) {
		type key struct{}
		a := attest.New(&attest.Options{Verify: func(ctx context.Context, b attest.Binding) error {
			if ctx.Value(key{}) != "v" || b.HypothesisID != "hyp-1" {
				return errors.New("wrong inputs")
			}
			return nil
		}})
		_ = a.Issue("r")
		if _, err := a.Attest(context.WithValue(ctx, key{}, "v"), binding("r")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("context error passes through", func(t *testing.T) {
		a := attest.New(&attest.Options{Verify: func(ctx context.Context, b attest.Binding) error { return ctx.Err() }})
		_ = a.Issue("r")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := a.Attest(cctx, binding("r")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestIssueRevokeExpireEvict(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Unix(1780000000, 0)}
	a := attest.New(&attest.Options{TTL: time.Minute, MaxReceipts: 3, Now: clock.Now})
	if err := a.Issue(""); err == nil {
		t.Error("empty receipt id issued")
	}
	if err := a.Issue("r1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Issue("r1"); !errors.Is(err, attest.ErrAlreadyIssued) {
		t.Errorf("duplicate issue: %v", err)
	}
	if _, err := a.Attest(ctx, binding("r1")); err != nil {
		t.Fatal(err)
	}

	// TTL: even an exact retry of a bound receipt goes stale.
	clock.Add(time.Minute + time.Second)
	if _, err := a.Attest(ctx, binding("r1")); !errors.Is(err, attest.ErrStaleReceipt) {
		t.Errorf("after TTL: %v", err)
	}
	if _, err := a.Attest(ctx, binding("r1")); !errors.Is(err, attest.ErrUnknownReceipt) {
		t.Errorf("stale receipt forgotten: %v", err)
	}

	// Issue drops expired receipts before it counts.
	_ = a.Issue("old")
	clock.Add(2 * time.Minute)
	for _, id := range []string{"r2", "r3", "r4"} {
		if err := a.Issue(id); err != nil {
			t.Fatal(err)
		}
	}
	if a.Len() != 3 {
		t.Errorf("Len = %d, want 3", a.Len())
	}
	// Eviction: one more forgets the oldest, which then fails closed.
	_ = a.Issue("r5")
	if _, err := a.Attest(ctx, binding("r2")); !errors.Is(err, attest.ErrUnknownReceipt) {
		t.Errorf("evicted receipt: %v", err)
	}
	if _, err := a.Attest(ctx, binding("r3")); err != nil {
		t.Errorf("r3: %v", err)
	}
	if !a.Revoke("r3") || a.Revoke("r3") {
		t.Error("Revoke reports wrongly")
	}
	if _, err := a.Attest(ctx, binding("r3")); !errors.Is(err, attest.ErrUnknownReceipt) {
		t.Errorf("revoked receipt: %v", err)
	}
	// A fresh stale check within TTL: an unbound receipt past TTL is stale.
	clock.Add(2 * time.Minute)
	if _, err := a.Attest(ctx, binding("r4")); !errors.Is(err, attest.ErrStaleReceipt) {
		t.Errorf("unbound past TTL: %v", err)
	}
}

// Many concurrent requests on one receipt, with different bindings: exactly
// one binding wins, its copies succeed, every other fails as reused, and
// Verify runs once.
func TestConcurrentBinding(t *testing.T) {
	ctx := context.Background()
	var verified atomic.Int32
	release := make(chan struct{})
	a := attest.New(&attest.Options{Verify: func(context.Context, attest.Binding) error {
		verified.Add(1)
		<-release
		return nil
	}})
	_ = a.Issue("r")
	const n = 32
	type res struct {
		hyp string
		err error
	}
	results := make(chan res, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := binding("r")
			b.HypothesisID = fmt.Sprintf("hyp-%d", i%4)
			_, err := a.Attest(ctx, b)
			results <- res{b.HypothesisID, err}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	close(release)
	wg.Wait()
	close(results)
	winner := ""
	for r := range results {
		if r.err == nil {
			if winner != "" && winner != r.hyp {
				t.Fatalf("two bindings succeeded: %s and %s", winner, r.hyp)
			}
			winner = r.hyp
		} else if !errors.Is(r.err, attest.ErrReceiptReused) {
			t.Errorf("unexpected error %v", r.err)
		}
	}
	if winner == "" {
		t.Fatal("nothing bound")
	}
	if verified.Load() != 1 {
		t.Errorf("verified %d times", verified.Load())
	}
}

func TestWaitHonoursContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	a := attest.New(&attest.Options{Verify: func(context.Context, attest.Binding) error {
		close(started)
		<-release
		return nil
	}})
	_ = a.Issue("r")
	done := make(chan error)
	go func() { _, err := a.Attest(context.Background(), binding("r")); done <- err }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := a.Attest(ctx, binding("r")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting request: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRPCErrors(t *testing.T) {
	for _, tc := range []struct {
		err  *attest.Error
		code int64
		data string
	}{
		{&attest.Error{Reason: attest.ReasonInvalidRequest, Detail: "x"}, -32602, `{"reason":"invalid_request"}`},
		{&attest.Error{Reason: attest.ReasonDenied, ReceiptID: "r"}, -32001, `{"reason":"denied","operation_receipt_id":"r"}`},
		{&attest.Error{Reason: attest.ReasonUnknownReceipt, ReceiptID: "r"}, -32001, `{"reason":"unknown_receipt","operation_receipt_id":"r"}`},
		{&attest.Error{Reason: attest.ReasonStaleReceipt, ReceiptID: "r"}, -32001, `{"reason":"stale_receipt","operation_receipt_id":"r"}`},
		{&attest.Error{Reason: attest.ReasonReceiptMismatch, ReceiptID: "r"}, -32001, `{"reason":"receipt_mismatch","operation_receipt_id":"r"}`},
		{&attest.Error{Reason: attest.ReasonReceiptReused, ReceiptID: "r"}, -32001, `{"reason":"receipt_reused","operation_receipt_id":"r"}`},
		{&attest.Error{Reason: attest.ReasonOperationFailed, ReceiptID: "r", Err: errors.New("io")}, -32000, `{"reason":"operation_failed","operation_receipt_id":"r"}`},
	} {
		e := tc.err.RPCError()
		if e.Code != tc.code || string(e.Data) != tc.data || !strings.HasPrefix(e.Message, "hypothesis.attest_event: "+string(tc.err.Reason)) {
			t.Errorf("%s: got %d %q %s", tc.err.Reason, e.Code, e.Message, e.Data)
		}
	}
	long := &attest.Error{Reason: attest.ReasonDenied, ReceiptID: strings.Repeat("r", 1000), Detail: strings.Repeat("d", 5000)}
	if e := long.RPCError(); len(e.Data) > 300 || len(e.Message) > 4*rpc.MaxEcho+8 {
		t.Errorf("peer input echoed unbounded: %d %d", len(e.Data), len(e.Message))
	}
}

// End to end: a host serving host/call answers hypothesis.attest_event with
// HandleArgs; a VM client sees the exact document or a JSON-RPC error.
func TestOverBridge(t *testing.T) {
	ctx := context.Background()
	a := attest.New(&attest.Options{Verify: func(_ context.Context, b attest.Binding) error {
		if b.AuthorityKind == attest.PlanAdmission {
			return attest.Errorf(attest.ReasonDenied, "plan admission needs a person")
		}
		return nil
	}})
	_ = a.Issue("rcpt-1")
	_ = a.Issue("rcpt-2")
	h := &harn.HostHandlers{HostCall: func(ctx context.Context, p *harn.HostCallParams) (jsontext.Value, error) {
		if p.Name != attest.Operation {
			return nil, rpc.UnsupportedOperation(harn.MethodHostCall, p.Name)
		}
		return a.HandleArgs(ctx, p.Args)
	}}
	srv := host.New(h, &host.Options{Capabilities: map[string][]string{attest.Capability: {attest.Op}}})
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, hostIn, hostOut) }()
	vm := harnvm.New(vmIn, vmOut, nil, nil)

	ok, err := vm.Supports(ctx, attest.Capability, attest.Op)
	if err != nil || !ok {
		t.Fatalf("not advertised: %v %v", ok, err)
	}
	call := func(b attest.Binding) (jsontext.Value, error) {
		args, _ := json.Marshal(b)
		return vm.HostCall(ctx, &harn.HostCallParams{Name: attest.Operation, Args: args})
	}
	res, err := call(binding("rcpt-1"))
	if err != nil || attest.CheckSuccess(res) != nil {
		t.Fatalf("attest: %s %v", res, err)
	}
	if again, err := call(binding("rcpt-1")); err != nil || !bytes.Equal(again, res) {
		t.Fatalf("retry: %s %v", again, err)
	}
	other := binding("rcpt-1")
	other.RunID = nil
	_, err = call(other)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != attest.CodeRejected || string(re.Data) != `{"reason":"receipt_reused","operation_receipt_id":"rcpt-1"}` {
		t.Fatalf("reuse: %v", err)
	}
	denied := binding("rcpt-2")
	denied.AuthorityKind = attest.PlanAdmission
	if _, err = call(denied); !errors.As(err, &re) || !strings.Contains(string(re.Data), `"denied"`) {
		t.Fatalf("denied: %v", err)
	}
	_, err = vm.HostCall(ctx, &harn.HostCallParams{Name: attest.Operation, Args: jsontext.Value(`{"authority_kind":"native_approval"}`)})
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidParams {
		t.Fatalf("invalid args: %v", err)
	}
	vm.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// The adapter on the typed field: Register installs it, servers/host then
// advertises hypothesis.attest_event (and not before), and a VM gets the
// exact document, the same bytes on an exact retry, and Harn's errors.
func TestRegisteredOnTheTypedField(t *testing.T) {
	ctx := context.Background()
	serve := func(h *harn.HostHandlers) (*harnvm.Client, func()) {
		hostIn, vmOut := io.Pipe()
		vmIn, hostOut := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- host.New(h, nil).Serve(ctx, hostIn, hostOut) }()
		vm := harnvm.New(vmIn, vmOut, nil, nil)
		return vm, func() {
			vm.Close()
			if err := <-served; err != nil {
				t.Error(err)
			}
		}
	}
	vm, stop := serve(&harn.HostHandlers{})
	if ok, err := vm.Supports(ctx, attest.Capability, attest.Op); err != nil || ok {
		t.Fatalf("advertised without an adapter: %v %v", ok, err)
	}
	if _, err := vm.HypothesisAttestEvent(ctx, nil, new(binding("rcpt-1"))); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("served without an adapter: %v", err)
	}
	stop()

	a := attest.New(nil)
	_ = a.Issue("rcpt-1")
	var h harn.HostHandlers
	a.Register(&h)
	vm, stop = serve(&h)
	defer stop()
	if ok, err := vm.Supports(ctx, attest.Capability, attest.Op); err != nil || !ok {
		t.Fatalf("not advertised: %v %v", ok, err)
	}
	var raw jsontext.Value
	args, _ := json.Marshal(binding("rcpt-1"))
	for range 2 {
		if err := vm.Conn().Call(ctx, harn.MethodHostCall, &harn.HostCallParams{Name: attest.Operation, Args: args}, &raw); err != nil ||
			!bytes.Equal(raw, attest.Success()) {
			t.Fatalf("attest: %s %v", raw, err)
		}
	}
	if res, err := vm.HypothesisAttestEvent(ctx, nil, new(binding("rcpt-1"))); err != nil || res == nil {
		t.Fatalf("typed peer: %v", err)
	}
	other := binding("rcpt-1")
	other.HypothesisID = "hyp-2"
	_, err := vm.HypothesisAttestEvent(ctx, nil, &other)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != attest.CodeRejected || string(re.Data) != `{"reason":"receipt_reused","operation_receipt_id":"rcpt-1"}` {
		t.Fatalf("reuse: %v", err)
	}
	_, err = vm.HypothesisAttestEvent(ctx, nil, new(binding("rcpt-9")))
	if !errors.As(err, &re) || re.Code != attest.CodeRejected || !strings.Contains(re.Message, "unknown_receipt") {
		t.Fatalf("unknown receipt: %v", err)
	}
	// Invalid args never reach the adapter: the generated decoder answers.
	err = vm.Conn().Call(ctx, harn.MethodHostCall, jsontext.Value(`{"name":"hypothesis.attest_event","args":{"authority_kind":"root"}}`), nil)
	if !errors.Is(err, rpc.ErrInvalidParams) {
		t.Fatalf("invalid args: %v", err)
	}
}

// A bound receipt holds a digest of its request, not the request: the
// hypothesis and run ids are the runtime's, of any length. Exact retries
// and reuse are still told apart.
func TestBindingHoldsLittle(t *testing.T) {
	a := attest.New(nil)
	long := func(n int) string { return strings.Repeat("h", 512<<10-n) }
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 16 {
		id := fmt.Sprintf("rcpt-%d", i)
		if err := a.Issue(id); err != nil {
			t.Fatal(err)
		}
		b := binding(id)
		b.HypothesisID = long(i)
		if _, err := a.Attest(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2<<20 {
		t.Errorf("16 bindings of 512 KiB ids hold %d bytes", grew)
	}
	b := binding("rcpt-3")
	b.HypothesisID = long(3)
	if _, err := a.Attest(context.Background(), b); err != nil {
		t.Errorf("an exact retry: %v", err)
	}
	b.HypothesisID = long(4)
	if _, err := a.Attest(context.Background(), b); !errors.Is(err, attest.ErrReceiptReused) {
		t.Errorf("another request on a bound receipt: %v", err)
	}
}
