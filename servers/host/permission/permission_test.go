package permission_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/go-json-experiment/json"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harnOptions are the two options a Harn runtime offers (seed example).
var harnOptions = []acp.PermissionOption{
	{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
	{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
}

func harnRequest() *acp.RequestPermissionRequest {
	return &acp.RequestPermissionRequest{SessionID: "session_123", Options: harnOptions,
		ToolCall: acp.ToolCallUpdate{ToolCallID: "tool-call_123"}}
}

func decode(t *testing.T, doc string) *acp.RequestPermissionResponse {
	t.Helper()
	var r acp.RequestPermissionResponse
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return &r
}

func encode(t *testing.T, r *acp.RequestPermissionResponse) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Only optionId "allow", exactly, grants; kinds grant nothing.
func TestGranted(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{`{"outcome":{"outcome":"selected","optionId":"allow"}}`, true},
		{`{"outcome":{"outcome":"selected","optionId":"allow","_meta":{"harn":{"permissionDecision":{}}}},"reason":"x"}`, true},
		{`{"outcome":{"outcome":"selected","optionId":"reject"}}`, false},
		{`{"outcome":{"outcome":"selected","optionId":"Allow"}}`, false},
		{`{"outcome":{"outcome":"selected","optionId":"allow "}}`, false},
		{`{"outcome":{"outcome":"selected","optionId":"allow_once"}}`, false},
		{`{"outcome":{"outcome":"selected","optionId":"allow-always"}}`, false},
		{`{"outcome":{"outcome":"cancelled"}}`, false},
		{`{"outcome":{"outcome":"approved","optionId":"allow"}}`, false},
	} {
		if got := permission.Granted(decode(t, tc.doc)); got != tc.want {
			t.Errorf("Granted(%s) = %v, want %v", tc.doc, got, tc.want)
		}
	}
	if permission.Granted(nil) {
		t.Error("Granted(nil) = true")
	}
}

func TestCheck(t *testing.T) {
	if err := permission.Check(decode(t, `{"outcome":{"outcome":"selected","optionId":"allow"}}`), nil); err != nil {
		t.Fatalf("grant: %v", err)
	}
	callErr := rpc.MethodNotFound("session/request_permission")
	for _, tc := range []struct {
		name      string
		resp      *acp.RequestPermissionResponse
		err       error
		cancelled bool
		outcome   string
		option    acp.PermissionOptionID
		reason    string
	}{
		{name: "reject", resp: decode(t, `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"not today"}`), outcome: "selected", option: "reject", reason: "not today"},
		{name: "allow_once kind under another id", resp: decode(t, `{"outcome":{"outcome":"selected","optionId":"proceed"}}`), outcome: "selected", option: "proceed"},
		{name: "cancelled", resp: decode(t, `{"outcome":{"outcome":"cancelled"}}`), cancelled: true, outcome: "cancelled"},
		{name: "unknown outcome", resp: decode(t, `{"outcome":{"outcome":"granted"}}`), outcome: "granted"},
		{name: "non-string reason", resp: decode(t, `{"outcome":{"outcome":"cancelled"},"reason":7}`), cancelled: true, outcome: "cancelled"},
		{name: "no answer", resp: nil},
		{name: "error answer", err: callErr},
		{name: "closed connection", err: rpc.ErrClosed},
		{name: "context", err: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := permission.Check(tc.resp, tc.err)
			if !errors.Is(err, permission.ErrDenied) {
				t.Fatalf("err = %v, want ErrDenied", err)
			}
			if errors.Is(err, permission.ErrCancelled) != tc.cancelled {
				t.Errorf("ErrCancelled = %v, want %v", !tc.cancelled, tc.cancelled)
			}
			var d *permission.DeniedError
			if !errors.As(err, &d) {
				t.Fatal("not a *DeniedError")
			}
			if d.Outcome != tc.outcome || d.OptionID != tc.option || d.Reason != tc.reason {
				t.Errorf("got %+v", d)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("%v does not wrap %v", err, tc.err)
			}
			if err.Error() == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	plain := &acp.RequestPermissionRequest{SessionID: "s", Options: []acp.PermissionOption{
		{OptionID: "proceed", Name: "Proceed", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionID: "always", Name: "Always", Kind: acp.PermissionOptionKindAllowAlways},
		{OptionID: "no-forever", Name: "Never", Kind: acp.PermissionOptionKindRejectAlways},
		{OptionID: "no", Name: "No", Kind: acp.PermissionOptionKindRejectOnce},
	}}
	noReject := &acp.RequestPermissionRequest{SessionID: "s", Options: []acp.PermissionOption{
		{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
	}}
	for _, tc := range []struct {
		name string
		req  *acp.RequestPermissionRequest
		d    permission.Decision
		want string
	}{
		{"harn grant", harnRequest(), permission.Decision{Allow: true}, `{"outcome":{"outcome":"selected","optionId":"allow"}}`},
		{"harn deny", harnRequest(), permission.Decision{}, `{"outcome":{"outcome":"selected","optionId":"reject"}}`},
		{"harn deny with reason", harnRequest(), permission.Decision{Reason: "policy: no edits"}, `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"policy: no edits"}`},
		{"grant reason is not written", harnRequest(), permission.Decision{Allow: true, Reason: "ok"}, `{"outcome":{"outcome":"selected","optionId":"allow"}}`},
		{"grant of a reject option denies", harnRequest(), permission.Decision{Allow: true, OptionID: "reject"}, `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"host granted option \"reject\", which the agent did not offer as a grant"}`},
		{"grant of an option not offered denies", harnRequest(), permission.Decision{Allow: true, OptionID: "yes"}, `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"host granted option \"yes\", which the agent did not offer as a grant"}`},
		{"plain agent: allow not offered", plain, permission.Decision{Allow: true}, `{"outcome":{"outcome":"selected","optionId":"no"},"reason":"host granted option \"allow\", which the agent did not offer as a grant"}`},
		{"plain agent: explicit grant", plain, permission.Decision{Allow: true, OptionID: "always"}, `{"outcome":{"outcome":"selected","optionId":"always"}}`},
		{"plain agent: deny prefers reject_once", plain, permission.Decision{}, `{"outcome":{"outcome":"selected","optionId":"no"}}`},
		{"plain agent: explicit reject option", plain, permission.Decision{OptionID: "no-forever"}, `{"outcome":{"outcome":"selected","optionId":"no-forever"}}`},
		{"deny never selects a grant option", plain, permission.Decision{OptionID: "proceed"}, `{"outcome":{"outcome":"selected","optionId":"no"}}`},
		{"no reject option: cancelled", noReject, permission.Decision{Reason: "r"}, `{"outcome":{"outcome":"cancelled"},"reason":"r"}`},
		{"no options at all", &acp.RequestPermissionRequest{}, permission.Decision{}, `{"outcome":{"outcome":"cancelled"}}`},
		{"nil request", nil, permission.Decision{Allow: true}, `{"outcome":{"outcome":"cancelled"},"reason":"host granted option \"allow\", which the agent did not offer as a grant"}`},
		{"invalid UTF-8 reason dropped", harnRequest(), permission.Decision{Reason: "\xff"}, `{"outcome":{"outcome":"selected","optionId":"reject"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := permission.Answer(tc.req, tc.d)
			if got := encode(t, resp); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if permission.Granted(resp) != (tc.want == `{"outcome":{"outcome":"selected","optionId":"allow"}}`) {
				t.Error("Granted disagrees with the document")
			}
		})
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestGateFailures(t *testing.T) {
	ctx := context.Background()
	block := func(ctx context.Context, _ *acp.RequestPermissionRequest) (permission.Decision, error) {
		<-ctx.Done()
		return permission.Decision{Allow: true}, nil // too late: must not grant
	}
	for _, tc := range []struct {
		name   string
		decide permission.DecideFunc
		opts   *permission.Options
		want   string
	}{
		{"allow", func(context.Context, *acp.RequestPermissionRequest) (permission.Decision, error) {
			return permission.Decision{Allow: true}, nil
		}, nil, `{"outcome":{"outcome":"selected","optionId":"allow"}}`},
		{"error", func(context.Context, *acp.RequestPermissionRequest) (permission.Decision, error) {
			return permission.Decision{Allow: true}, errors.New("policy file unreadable")
		}, nil, `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"host permission handler failed"}`},
		{"panic", func(context.Context, *acp.RequestPermissionRequest) (permission.Decision, error) {
			panic("boom")
		}, nil, `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"host permission handler panicked"}`},
		{"timeout", block, &permission.Options{Timeout: 20 * time.Millisecond},
			`{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"host permission decision timed out"}`},
		{"nil decide", nil, nil, `{"outcome":{"outcome":"selected","optionId":"reject"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, harn := range []bool{true, false} {
				opts := &permission.Options{Logger: quiet(), HarnPeer: func() bool { return harn }}
				if tc.opts != nil {
					opts.Timeout = tc.opts.Timeout
				}
				g := permission.New(tc.decide, opts)
				resp, err := g.Handle(ctx, harnRequest())
				if err != nil {
					t.Fatalf("Handle returned an error: %v", err)
				}
				// The reason is Harn's: a plain ACP peer never gets it.
				want := tc.want
				if before, _, found := strings.Cut(want, `,"reason"`); found && !harn {
					want = before + "}"
				}
				if got := encode(t, resp); got != want {
					t.Errorf("Harn peer %v: got  %s\nwant %s", harn, got, want)
				}
				if g.Pending("session_123") != 0 {
					t.Error("request still tracked")
				}
			}
		})
	}
	if resp, _ := permission.New(nil, nil).Handle(ctx, nil); encode(t, resp) != `{"outcome":{"outcome":"cancelled"}}` {
		t.Errorf("nil request: %s", encode(t, resp))
	}
}

// A request whose context ends, or whose session the host cancels, is
// answered with the cancelled outcome, even if the decision later grants.
func TestGateCancellation(t *testing.T) {
	started := make(chan struct{}, 4)
	var late atomic.Bool
	decide := func(ctx context.Context, _ *acp.RequestPermissionRequest) (permission.Decision, error) {
		started <- struct{}{}
		<-ctx.Done()
		late.Store(true)
		return permission.Decision{Allow: true}, nil
	}
	g := permission.New(decide, &permission.Options{Logger: quiet()})

	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *acp.RequestPermissionResponse)
		go func() { r, _ := g.Handle(ctx, harnRequest()); done <- r }()
		<-started
		cancel()
		if got := encode(t, <-done); got != `{"outcome":{"outcome":"cancelled"}}` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("CancelSession", func(t *testing.T) {
		done := make(chan *acp.RequestPermissionResponse, 2)
		other := harnRequest()
		other.SessionID = "other"
		for range 2 {
			go func() { r, _ := g.Handle(context.Background(), harnRequest()); done <- r }()
		}
		<-started
		<-started
		otherDone := make(chan *acp.RequestPermissionResponse, 1)
		go func() { r, _ := g.Handle(context.Background(), other); otherDone <- r }()
		<-started
		if n := g.CancelSession("session_123"); n != 2 {
			t.Errorf("CancelSession ended %d, want 2", n)
		}
		for range 2 {
			if got := encode(t, <-done); got != `{"outcome":{"outcome":"cancelled"}}` {
				t.Errorf("got %s", got)
			}
		}
		if g.Pending("other") != 1 {
			t.Errorf("other session: %d pending, want 1", g.Pending("other"))
		}
		if n := g.CancelSession("other"); n != 1 {
			t.Errorf("CancelSession(other) = %d", n)
		}
		<-otherDone
		if n := g.CancelSession("nobody"); n != 0 {
			t.Errorf("CancelSession(nobody) = %d", n)
		}
	})
	if !late.Load() {
		t.Error("decision function never saw its context end")
	}
}

// A decision that returns an error because it was cancelled answers
// cancelled, not a generic failure.
func TestGateErrorAfterCancel(t *testing.T) {
	started := make(chan struct{})
	g := permission.New(func(ctx context.Context, _ *acp.RequestPermissionRequest) (permission.Decision, error) {
		close(started)
		<-ctx.Done()
		return permission.Decision{}, ctx.Err()
	}, &permission.Options{Logger: quiet()})
	done := make(chan *acp.RequestPermissionResponse)
	go func() { r, _ := g.Handle(context.Background(), harnRequest()); done <- r }()
	<-started
	g.CancelSession("session_123")
	if got := encode(t, <-done); got != `{"outcome":{"outcome":"cancelled"}}` {
		t.Errorf("got %s", got)
	}
}

// End to end over the engine: an agent asks a client whose handler is a
// Gate; the handler's error reaches the agent as a deny.
func TestGateOverConnection(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	gate := permission.New(func(_ context.Context, req *acp.RequestPermissionRequest) (permission.Decision, error) {
		switch calls.Add(1) {
		case 1:
			return permission.Decision{Allow: true}, nil
		case 2:
			return permission.Decision{Reason: "rejected by user"}, nil
		}
		return permission.Decision{}, errors.New("handler error")
	}, &permission.Options{Logger: quiet(), HarnPeer: func() bool { return true }})

	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	client := acp.NewConn(clientIn, clientOut, &acp.ClientHandlers{SessionRequestPermission: gate.Handle}, nil)
	agent := acp.NewConn(agentIn, agentOut, &acp.AgentHandlers{}, nil)
	defer client.Close()
	defer agent.Close()
	peer := acp.NewClientPeer(agent)

	ask := func() error { return permission.Check(peer.SessionRequestPermission(ctx, harnRequest())) }
	if err := ask(); err != nil {
		t.Fatalf("first request: %v", err)
	}
	err := ask()
	var d *permission.DeniedError
	if !errors.As(err, &d) || d.OptionID != "reject" || d.Reason != "rejected by user" {
		t.Fatalf("second request: %v", err)
	}
	err = ask()
	if !errors.As(err, &d) || d.OptionID != "reject" || !strings.Contains(d.Reason, "failed") {
		t.Fatalf("third request: %v", err)
	}

	// A client that does not serve the method: the agent fails closed.
	bareIn, agent2Out := io.Pipe()
	agent2In, bareOut := io.Pipe()
	bare := acp.NewConn(bareIn, bareOut, &acp.ClientHandlers{}, nil)
	agent2 := acp.NewConn(agent2In, agent2Out, &acp.AgentHandlers{}, nil)
	defer bare.Close()
	defer agent2.Close()
	err = permission.Check(acp.NewClientPeer(agent2).SessionRequestPermission(ctx, harnRequest()))
	if !errors.Is(err, permission.ErrDenied) || !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("unserved: %v", err)
	}
}
