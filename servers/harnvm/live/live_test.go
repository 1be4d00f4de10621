package live_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/harnvm/live"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1780000000, 0)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func must(t *testing.T) func(live.Change, error) live.Change {
	return func(ch live.Change, err error) live.Change {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
}

// sameJSON compares two documents structurally.
func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g, json.Deterministic(true))
	wb, _ := json.Marshal(w, json.Deterministic(true))
	if string(gb) != string(wb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}

// The seed's attach request and response: a portal observer joins a session
// whose controller is the TUI.
func TestSeedAttach(t *testing.T) {
	clk := newClock()
	r := live.New(&live.Options{Now: clk.Now})
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller}))
	ch := must(t)(r.Attach(live.AttachRequest{ClientID: "portal", Mode: live.Observer, Takeover: false,
		Metadata: jsontext.Value(`{"surface":"portal"}`)}))
	sameJSON(t, ch, `{
		"client": {"client_id":"portal","mode":"observer","attached_at":"1780000000","last_seen_at":"1780000000",
			"prompt_injection":false,"permission_routing":false,"metadata":{"surface":"portal"}},
		"previous_controller_id":"tui","active_controller_id":"tui",
		"clients":[
			{"client_id":"portal","mode":"observer","attached_at":"1780000000","last_seen_at":"1780000000",
			 "prompt_injection":false,"permission_routing":false,"metadata":{"surface":"portal"}},
			{"client_id":"tui","mode":"controller","attached_at":"1780000000","last_seen_at":"1780000000",
			 "prompt_injection":true,"permission_routing":true,"metadata":{}}]}`)
	if ch.Action != live.ActionAttached || ch.ClientID != "portal" {
		t.Errorf("change %+v", ch)
	}
}

func TestControllerRules(t *testing.T) {
	clk := newClock()
	r := live.New(&live.Options{Now: clk.Now})
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller}))
	must(t)(r.Attach(live.AttachRequest{ClientID: "portal"}))
	must(t)(r.Attach(live.AttachRequest{ClientID: "cli"}))

	// A second controller without takeover fails and changes nothing.
	_, err := r.Attach(live.AttachRequest{ClientID: "portal", Mode: live.Controller})
	if !errors.Is(err, live.ErrControllerConflict) || err.Error() != "live session already has controller 'tui'" {
		t.Fatalf("conflict: %v", err)
	}
	var e *live.Error
	if !errors.As(err, &e) || e.Controller != "tui" || e.ClientID != "portal" || e.Method != live.MethodAttach {
		t.Fatalf("error %+v", e)
	}
	if re := e.RPCError(); re.Code != rpc.CodeInvalidParams || re.Message != "live session already has controller 'tui'" {
		t.Errorf("RPCError %v", re)
	}
	if c, _ := r.Controller(); c.ID != "tui" {
		t.Fatalf("controller %q after a refused attach", c.ID)
	}

	// Takeover by attach demotes the previous controller.
	clk.Add(5 * time.Second)
	ch := must(t)(r.Attach(live.AttachRequest{ClientID: "portal", Mode: live.Controller, Takeover: true}))
	if ch.PreviousControllerID != "tui" || ch.ActiveControllerID != "portal" || ch.Client.Mode != live.Controller ||
		!ch.Client.PromptInjection || !ch.Client.PermissionRouting {
		t.Fatalf("takeover change %+v", ch)
	}
	tui := find(ch.Clients, "tui")
	if tui.Mode != live.Observer || tui.PromptInjection || tui.PermissionRouting || !tui.LastSeenAt.Equal(clk.Now()) {
		t.Fatalf("demoted controller %+v", tui)
	}
	if ch.Client.AttachedAt.Equal(clk.Now()) {
		t.Error("re-attach reset attached_at")
	}

	// session/takeover: controller with both capabilities, previous demoted.
	ch = must(t)(r.Takeover("cli", jsontext.Value(`{"surface":"cli"}`)))
	if ch.Action != live.ActionTakeover || ch.PreviousControllerID != "portal" || ch.ActiveControllerID != "cli" {
		t.Fatalf("takeover %+v", ch)
	}
	if p := find(ch.Clients, "portal"); p.Mode != live.Observer || p.PromptInjection {
		t.Fatalf("portal after takeover %+v", p)
	}
	// Takeover by a client that was never attached attaches it.
	ch = must(t)(r.Takeover("ide", nil))
	if ch.ActiveControllerID != "ide" || len(ch.Clients) != 5-1 {
		t.Fatalf("takeover by a new client %+v", ch)
	}
	// The controller re-attaching as observer releases control.
	ch = must(t)(r.Attach(live.AttachRequest{ClientID: "ide", Mode: live.Observer}))
	if ch.PreviousControllerID != "ide" || ch.ActiveControllerID != "" {
		t.Fatalf("release by re-attach %+v", ch)
	}
	b, _ := json.Marshal(ch)
	if !jsonHas(t, b, "active_controller_id", `null`) {
		t.Errorf("no controller is not null: %s", b)
	}
	// Now anyone may take control without takeover.
	must(t)(r.Attach(live.AttachRequest{ClientID: "portal", Mode: live.Controller}))
}

func find(cs []live.Client, id string) live.Client {
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	return live.Client{}
}

func jsonHas(t *testing.T, doc []byte, member, want string) bool {
	t.Helper()
	var m map[string]jsontext.Value
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[member]) == want
}

func TestDetachAndHeartbeat(t *testing.T) {
	clk := newClock()
	var changes []live.Change
	r := live.New(&live.Options{Now: clk.Now, OnChange: func(c live.Change) { changes = append(changes, c) }})
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller, Metadata: jsontext.Value(`{"v":1}`)}))
	must(t)(r.Attach(live.AttachRequest{ClientID: "portal"}))

	clk.Add(time.Minute)
	ch := must(t)(r.Heartbeat("portal", nil))
	if !ch.Client.LastSeenAt.Equal(clk.Now()) || string(ch.Client.Metadata) != `{}` || ch.ActiveControllerID != "tui" || ch.PreviousControllerID != "tui" {
		t.Fatalf("heartbeat %+v", ch)
	}
	ch = must(t)(r.Heartbeat("tui", jsontext.Value(`null`)))
	if string(ch.Client.Metadata) != `{"v":1}` {
		t.Errorf("null metadata replaced: %s", ch.Client.Metadata)
	}
	ch = must(t)(r.Heartbeat("tui", jsontext.Value(`{"v":2}`)))
	if string(ch.Client.Metadata) != `{"v":2}` || ch.Client.Mode != live.Controller {
		t.Errorf("heartbeat changed %+v", ch.Client)
	}
	if _, err := r.Heartbeat("ghost", nil); !errors.Is(err, live.ErrNotAttached) || err.Error() != "live client 'ghost' is not attached" {
		t.Errorf("heartbeat of unknown: %v", err)
	}

	ch = must(t)(r.Detach("portal", "", nil))
	if ch.Client != nil || ch.Reason != live.ReasonClientDetached || ch.ActiveControllerID != "tui" || len(ch.Clients) != 1 {
		t.Fatalf("detach %+v", ch)
	}
	b, _ := json.Marshal(ch)
	if !jsonHas(t, b, "client", "null") {
		t.Errorf("detach result client is not null: %s", b)
	}
	ch = must(t)(r.Detach("tui", live.ReasonClientExit, jsontext.Value(`{"why":"eof"}`)))
	if ch.Reason != live.ReasonClientExit || ch.PreviousControllerID != "tui" || ch.ActiveControllerID != "" || len(ch.Clients) != 0 ||
		string(ch.Metadata) != `{"why":"eof"}` {
		t.Fatalf("controller exit %+v", ch)
	}
	if _, err := r.Detach("tui", "", nil); !errors.Is(err, live.ErrNotAttached) {
		t.Errorf("second detach: %v", err)
	}
	want := []live.Action{live.ActionAttached, live.ActionAttached, live.ActionHeartbeat, live.ActionHeartbeat, live.ActionHeartbeat,
		live.ActionDetached, live.ActionDetached}
	if len(changes) != len(want) {
		t.Fatalf("%d changes, want %d", len(changes), len(want))
	}
	for i, c := range changes {
		if c.Action != want[i] {
			t.Errorf("change %d is %s, want %s", i, c.Action, want[i])
		}
	}

	// Reconnect after an exit is a fresh attach: a new attached_at.
	clk.Add(time.Minute)
	ch = must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller}))
	if !ch.Client.AttachedAt.Equal(clk.Now()) || ch.ActiveControllerID != "tui" {
		t.Fatalf("reconnect %+v", ch)
	}
}

func TestInvalidInput(t *testing.T) {
	r := live.New(nil)
	for _, id := range []string{"", " ", "\t\n"} {
		for method, op := range map[string]func() error{
			live.MethodAttach:    func() error { _, err := r.Attach(live.AttachRequest{ClientID: id}); return err },
			live.MethodTakeover:  func() error { _, err := r.Takeover(id, nil); return err },
			live.MethodDetach:    func() error { _, err := r.Detach(id, "", nil); return err },
			live.MethodHeartbeat: func() error { _, err := r.Heartbeat(id, nil); return err },
		} {
			err := op()
			if !errors.Is(err, live.ErrInvalidClientID) || err.Error() != method+" requires clientId" {
				t.Errorf("%s %q: %v", method, id, err)
			}
		}
	}
	_, err := r.Attach(live.AttachRequest{ClientID: "x", Mode: "owner"})
	if !errors.Is(err, live.ErrUnsupportedMode) || err.Error() != "session/attach: unsupported mode `owner`; expected `observer` or `controller`" {
		t.Errorf("mode: %v", err)
	}
	for in, want := range map[string]live.Mode{"": live.Observer, "observer": live.Observer, "controller": live.Controller} {
		if m, err := live.ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, m, err)
		}
	}
	if _, err := live.ParseMode("Controller"); !errors.Is(err, live.ErrUnsupportedMode) {
		t.Error("ParseMode is case-insensitive")
	}
	// Opaque ids: " tui" and "tui" are different clients.
	must(t)(r.Attach(live.AttachRequest{ClientID: " tui", Mode: live.Controller}))
	if _, err := r.Heartbeat("tui", nil); !errors.Is(err, live.ErrNotAttached) {
		t.Error("client id trimmed")
	}
	if len(r.Clients()) != 1 {
		t.Errorf("state changed by refused operations: %+v", r.Clients())
	}
}

func TestAuthorize(t *testing.T) {
	r := live.New(nil)
	no := false
	yes := true
	must(t)(r.Attach(live.AttachRequest{ClientID: "watcher", PromptInjection: &yes}))
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller, PermissionRouting: &no}))

	if _, err := r.Authorize("watcher", live.PromptInjection); !errors.Is(err, live.ErrNotController) ||
		err.Error() != "live client 'watcher' is not the active controller" {
		t.Errorf("observer injecting: %v", err)
	}
	if c, err := r.Authorize("tui", live.PromptInjection); err != nil || c.ID != "tui" {
		t.Errorf("controller injecting: %v", err)
	}
	if _, err := r.Authorize("tui", live.PermissionRouting); !errors.Is(err, live.ErrNotPermitted) ||
		err.Error() != "live client 'tui' cannot route permissions for this session" {
		t.Errorf("controller without routing: %v", err)
	}
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller, PromptInjection: &no}))
	if _, err := r.Authorize("tui", live.PromptInjection); !errors.Is(err, live.ErrNotPermitted) ||
		err.Error() != "live client 'tui' cannot inject prompts for this session" {
		t.Errorf("controller without injection: %v", err)
	}
	if _, err := r.Authorize("", live.PromptInjection); !errors.Is(err, live.ErrNotController) {
		t.Errorf("empty id: %v", err)
	}
	must(t)(r.Detach("tui", "", nil))
	if _, err := r.Authorize("tui", live.PermissionRouting); !errors.Is(err, live.ErrNotController) {
		t.Errorf("after detach: %v", err)
	}
}

// Heartbeat expiry on the injected clock: a silent client is detached with
// reason client_exit, a silent controller releases control.
func TestExpiry(t *testing.T) {
	clk := newClock()
	var changes []live.Change
	r := live.New(&live.Options{Now: clk.Now, Expiry: 30 * time.Second, OnChange: func(c live.Change) { changes = append(changes, c) }})
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller}))
	must(t)(r.Attach(live.AttachRequest{ClientID: "portal"}))
	clk.Add(20 * time.Second)
	must(t)(r.Heartbeat("portal", nil))
	clk.Add(20 * time.Second) // tui silent for 40s, portal for 20s
	if gone := r.Sweep(); len(gone) != 1 || gone[0].ClientID != "tui" || gone[0].Reason != live.ReasonClientExit ||
		gone[0].ActiveControllerID != "" || gone[0].PreviousControllerID != "tui" {
		t.Fatalf("sweep %+v", gone)
	}
	if _, ok := r.Controller(); ok {
		t.Fatal("expired controller still in control")
	}
	if len(r.Sweep()) != 0 {
		t.Error("second sweep detached again")
	}
	// Operations expire lazily too: portal goes silent, and another
	// client's attach as controller needs no takeover.
	clk.Add(31 * time.Second)
	ch := must(t)(r.Attach(live.AttachRequest{ClientID: "ide", Mode: live.Controller}))
	if len(ch.Clients) != 1 || ch.Clients[0].ID != "ide" {
		t.Fatalf("lazy expiry: %+v", ch.Clients)
	}
	if _, err := r.Heartbeat("portal", nil); !errors.Is(err, live.ErrNotAttached) {
		t.Errorf("expired client heartbeat: %v", err)
	}
	var exits []string
	for _, c := range changes {
		if c.Action == live.ActionDetached {
			if c.Reason != live.ReasonClientExit {
				t.Errorf("expiry reason %q", c.Reason)
			}
			exits = append(exits, c.ClientID)
		}
	}
	if len(exits) != 2 || exits[0] != "tui" || exits[1] != "portal" {
		t.Errorf("exits %v", exits)
	}
	// Exactly at the limit is still alive.
	clk.Add(30 * time.Second)
	if len(r.Clients()) != 1 {
		t.Error("expired at exactly Expiry")
	}
}

func TestRun(t *testing.T) {
	clk := newClock()
	exited := make(chan string, 1)
	r := live.New(&live.Options{Now: clk.Now, Expiry: time.Second, OnChange: func(c live.Change) {
		if c.Reason == live.ReasonClientExit {
			exited <- c.ClientID
		}
	}})
	must(t)(r.Attach(live.AttachRequest{ClientID: "tui"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, time.Millisecond) }()
	clk.Add(2 * time.Second)
	select {
	case id := <-exited:
		if id != "tui" {
			t.Errorf("exited %s", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not sweep")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
	if err := r.Run(context.Background(), 0); err == nil {
		t.Error("Run accepted a zero interval")
	}
}

// Returned values do not alias the registry's state.
func TestNoAliasing(t *testing.T) {
	r := live.New(nil)
	md := jsontext.Value(`{"a":1}`)
	ch := must(t)(r.Attach(live.AttachRequest{ClientID: "c", Metadata: md}))
	md[2] = 'X'
	ch.Client.Metadata[2] = 'Y'
	ch.Clients[0].Metadata[2] = 'Z'
	if got := string(r.Clients()[0].Metadata); got != `{"a":1}` {
		t.Errorf("state changed through a returned value: %s", got)
	}
}

// The clients are bounded in number and in bytes: a peer cannot attach
// without end, nor store a frame's worth of metadata per client; a refused
// attach changes nothing, a controller included.
func TestClientBounds(t *testing.T) {
	clk := newClock()
	r := live.New(&live.Options{Now: clk.Now, MaxClients: 2, MaxBytes: 4096})
	must(t)(r.Attach(live.AttachRequest{ClientID: "a", Mode: live.Controller}))
	must(t)(r.Attach(live.AttachRequest{ClientID: "b"}))
	_, err := r.Attach(live.AttachRequest{ClientID: "c", Mode: live.Controller, Takeover: true})
	if !errors.Is(err, live.ErrTooManyClients) || !strings.Contains(err.Error(), "'c'") {
		t.Fatalf("a third client: %v", err)
	}
	if ctl, ok := r.Controller(); !ok || ctl.ID != "a" || len(r.Clients()) != 2 {
		t.Fatalf("a refused takeover changed the session: %+v %v", r.Clients(), ok)
	}
	// Re-attaching a client replaces it: no new room needed.
	must(t)(r.Attach(live.AttachRequest{ClientID: "b", Metadata: jsontext.Value(`{"n":1}`)}))
	big := jsontext.Value(`{"x":"` + strings.Repeat("y", 4000) + `"}`)
	if _, err := r.Heartbeat("b", big); !errors.Is(err, live.ErrTooManyClients) {
		t.Fatalf("metadata past the byte bound: %v", err)
	}
	if _, err := r.Attach(live.AttachRequest{ClientID: "b", Metadata: big}); !errors.Is(err, live.ErrTooManyClients) {
		t.Fatalf("an attach past the byte bound: %v", err)
	}
	for _, c := range r.Clients() {
		if c.ID == "b" && string(c.Metadata) != `{"n":1}` {
			t.Errorf("a refused heartbeat changed the metadata: %s", c.Metadata)
		}
	}
	must(t)(r.Detach("a", "", nil))
	must(t)(r.Attach(live.AttachRequest{ClientID: "c"}))
}
