package live_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/harnvm/live"
)

// liveHost is the host end of a real connection to a runtime whose
// live-session methods Sessions serves; it records the session/update
// notifications it gets.
type liveHost struct {
	conn     *rpc.Conn
	vm       *harn.VMPeer
	sessions *live.Sessions
	mu       sync.Mutex
	updates  []acp.SessionNotification
}

func (h *liveHost) seen() []acp.SessionNotification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]acp.SessionNotification(nil), h.updates...)
}

func connectLive(t *testing.T, opts *live.SessionsOptions) *liveHost {
	t.Helper()
	h := &liveHost{sessions: live.NewSessions(opts)}
	var bridge harn.VMHandlers
	h.sessions.Register(&bridge)
	hostIn, vmOut := io.Pipe()
	vmIn, hostOut := io.Pipe()
	vmConn := harn.NewBridgeConn(vmIn, vmOut, harn.VMHandler(&bridge, nil), nil)
	h.sessions.SetNotify(acp.NewClientPeer(vmConn).SessionUpdate)
	hostConn := harn.NewBridgeConn(hostIn, hostOut, harn.HostHandler(nil, &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.updates = append(h.updates, *n)
			return nil
		},
	}), nil)
	h.conn, h.vm = hostConn, harn.NewVMPeer(hostConn)
	t.Cleanup(func() {
		hostConn.Close()
		vmConn.Close()
		vmOut.Close()
		hostOut.Close()
	})
	return h
}

// The seed's attach exchange over a real connection: the response is the
// seed's, and the live_session_client update carrying the same state
// reached the host before it.
func TestSessionsSeedAttachOverAConnection(t *testing.T) {
	clk := newClock()
	h := connectLive(t, &live.SessionsOptions{Now: clk.Now})
	h.sessions.Open("session_123")
	ctx := context.Background()
	if _, err := h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "session_123", ClientID: "tui", Mode: new(harn.LiveModeController)}); err != nil {
		t.Fatal(err)
	}
	var p harn.SessionAttachParams
	if err := json.Unmarshal([]byte(`{"sessionId":"session_123","clientId":"portal","mode":"observer","takeover":false,"_meta":{"harn":{"surface":"portal"}}}`), &p); err != nil {
		t.Fatal(err)
	}
	res, err := h.vm.SessionAttach(ctx, &p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"client":{"client_id":"portal","mode":"observer","attached_at":"1780000000","last_seen_at":"1780000000",
		"prompt_injection":false,"permission_routing":false,"metadata":{"surface":"portal"}},
		"previous_controller_id":"tui","active_controller_id":"tui","clients":[
		{"client_id":"portal","mode":"observer","attached_at":"1780000000","last_seen_at":"1780000000","prompt_injection":false,"permission_routing":false,"metadata":{"surface":"portal"}},
		{"client_id":"tui","mode":"controller","attached_at":"1780000000","last_seen_at":"1780000000","prompt_injection":true,"permission_routing":true,"metadata":{}}]}`
	sameJSON(t, res, want)

	updates := h.seen()
	if len(updates) != 2 {
		t.Fatalf("%d updates, want one per attach", len(updates))
	}
	u := updates[1]
	hu, err := harn.UpdateOf(u.Update)
	if u.SessionID != "session_123" || err != nil || hu.LiveSessionClient == nil {
		t.Fatalf("update %+v (%v)", u, err)
	}
	got := hu.LiveSessionClient.Meta.Harn
	if got.Action != live.ActionAttached {
		t.Errorf("action %s", got.Action)
	}
	sameJSON(t, got.State, want)
	raw, _ := json.Marshal(u.Update)
	var root map[string]jsontext.Value
	_ = json.Unmarshal(raw, &root)
	if string(root["sessionUpdate"]) != `"live_session_client"` || len(root) != 2 {
		t.Errorf("vendor fields must sit under _meta.harn only: %s", raw)
	}
}

func rpcError(t *testing.T, err error, msg string) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeInvalidParams || (msg != "" && re.Message != msg) {
		t.Errorf("got %v, want -32602 %q", err, msg)
	}
}

// Every operation over the wire, with Harn's refusals, and the updates in
// order.
func TestSessionsEveryOperationOverAConnection(t *testing.T) {
	clk := newClock()
	h := connectLive(t, &live.SessionsOptions{Now: clk.Now, Expiry: 30 * time.Second})
	h.sessions.Open("s")
	ctx := context.Background()
	ctrl := new(harn.LiveModeController)

	_, err := h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "other", ClientID: "tui"})
	rpcError(t, err, "Unknown session: other")
	if _, err := h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "tui", Mode: ctrl}); err != nil {
		t.Fatal(err)
	}
	_, err = h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "portal", Mode: ctrl})
	rpcError(t, err, "live session already has controller 'tui'")
	_, err = h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "  ", Mode: ctrl})
	rpcError(t, err, "session/attach requires clientId")
	// A mode outside the schema's is refused by the generated decoder (the
	// typed peer cannot send one).
	var raw jsontext.Value
	if err := h.conn.Call(ctx, harn.MethodSessionAttach, jsontext.Value(`{"sessionId":"s","clientId":"x","mode":"admin"}`), &raw); !errors.Is(err, rpc.ErrInvalidParams) {
		t.Errorf("unsupported mode: %v", err)
	}

	clk.Add(10 * time.Second)
	res, err := h.vm.SessionTakeover(ctx, &harn.SessionClientParams{SessionID: "s", ClientID: "portal", Meta: jsontext.Value(`{"harn":{"surface":"portal"}}`)})
	if err != nil || *res.ActiveControllerID != "portal" || *res.PreviousControllerID != "tui" || string(res.Client.Metadata) != `{"surface":"portal"}` {
		t.Fatalf("takeover %+v %v", res, err)
	}
	reg, ok := h.sessions.Registry("s")
	if !ok {
		t.Fatal("registry")
	}
	if _, err := reg.Authorize("tui", live.PromptInjection); !errors.Is(err, live.ErrNotController) {
		t.Errorf("demoted controller authorized: %v", err)
	}

	clk.Add(10 * time.Second)
	res, err = h.vm.SessionHeartbeat(ctx, &harn.SessionClientParams{SessionID: "s", ClientID: "portal", Metadata: jsontext.Value(`{"tab":2}`)})
	if err != nil || res.Client.LastSeenAt != "1780000020" || string(res.Client.Metadata) != `{"tab":2}` {
		t.Fatalf("heartbeat %+v %v", res, err)
	}
	_, err = h.vm.SessionHeartbeat(ctx, &harn.SessionClientParams{SessionID: "s", ClientID: "ghost"})
	rpcError(t, err, "live client 'ghost' is not attached")

	list, err := h.vm.SessionLiveClients(ctx, &harn.SessionIDParams{SessionID: "s"})
	if err != nil || len(list.Data) != 2 {
		t.Fatalf("live_clients %+v %v", list, err)
	}
	out, _ := json.Marshal(list)
	var obj map[string]jsontext.Value
	_ = json.Unmarshal(out, &obj)
	if string(obj["object"]) != `"list"` {
		t.Errorf("live_clients %s", out)
	}

	// tui was last seen when it was demoted, at 10 s; at 45 s it has
	// expired (portal, seen at 20 s, has not): the next operation's answer
	// and updates show its client_exit first.
	clk.Add(25 * time.Second)
	reason := harn.SessionDetachParamsReason("user_closed_tab")
	res, err = h.vm.SessionDetach(ctx, &harn.SessionDetachParams{SessionID: "s", ClientID: "portal", Reason: &reason})
	if err != nil || res.Client != nil || res.ActiveControllerID != nil || *res.PreviousControllerID != "portal" || len(res.Clients) != 0 {
		t.Fatalf("detach %+v %v", res, err)
	}
	var actions []string
	for _, u := range h.seen() {
		hu, err := harn.UpdateOf(u.Update)
		if err != nil || hu.LiveSessionClient == nil {
			t.Fatalf("update %+v (%v)", u.Update, err)
		}
		st := hu.LiveSessionClient.Meta.Harn
		who := ""
		if st.State.Client != nil {
			who = st.State.Client.ClientID
		}
		actions = append(actions, string(st.Action)+":"+who)
	}
	want := []string{"attached:tui", "takeover:portal", "heartbeat:portal", "detached:", "detached:"}
	if len(actions) != len(want) {
		t.Fatalf("updates %v, want %v", actions, want)
	}
	for i := range want {
		if actions[i] != want[i] {
			t.Fatalf("updates %v, want %v", actions, want)
		}
	}
	last := h.seen()
	hu, err := harn.UpdateOf(last[3].Update)
	if err != nil || hu.LiveSessionClient == nil {
		t.Fatalf("update %+v (%v)", last[3].Update, err)
	}
	if got := hu.LiveSessionClient.Meta.Harn.State; len(got.Clients) != 1 || got.Clients[0].ClientID != "portal" {
		t.Errorf("expiry update state %+v", got)
	}

	// A broker's client_exit, and Sweep's expirations, are sent at once.
	if _, err := h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sessions.Detach(ctx, "s", "cli", live.ReasonClientExit); err != nil {
		t.Fatal(err)
	}
	if _, err := h.vm.SessionAttach(ctx, &harn.SessionAttachParams{SessionID: "s", ClientID: "web"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	h.sessions.Sweep(ctx)
	if _, err := h.vm.SessionLiveClients(ctx, &harn.SessionIDParams{SessionID: "s"}); err != nil { // a round trip after the updates
		t.Fatal(err)
	}
	if n := len(h.seen()); n != 9 {
		t.Errorf("%d updates after the broker detach, an attach and a sweep, want 9", n)
	}
	if !h.sessions.Close("s") || h.sessions.Close("s") {
		t.Error("Close")
	}
	_, err = h.vm.SessionLiveClients(ctx, &harn.SessionIDParams{SessionID: "s"})
	rpcError(t, err, "Unknown session: s")
}
