package live_test

import (
	"fmt"
	"time"

	"github.com/bridgekit/bridgekit/servers/harnvm/live"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A TUI controls the session and a portal observes; the portal's controller
// attach fails until it asks for takeover, which demotes the TUI. When the
// TUI's heartbeats stop, it is detached with reason client_exit.
func Example() {
	now := time.Unix(1780000000, 0)
	r := live.New(&live.Options{
		Now:    func() time.Time { return now },
		Expiry: 30 * time.Second,
		OnChange: func(ch live.Change) {
			fmt.Printf("update: %s %s (controller %q)\n", ch.Action, ch.ClientID, ch.ActiveControllerID)
		},
	})
	r.Attach(live.AttachRequest{ClientID: "tui", Mode: live.Controller})
	r.Attach(live.AttachRequest{ClientID: "portal", Metadata: jsontext.Value(`{"surface":"portal"}`)})

	_, err := r.Attach(live.AttachRequest{ClientID: "portal", Mode: live.Controller})
	fmt.Println("error:", err)

	ch, _ := r.Attach(live.AttachRequest{ClientID: "portal", Mode: live.Controller, Takeover: true})
	result, _ := json.Marshal(ch)
	fmt.Println(string(result))

	now = now.Add(20 * time.Second)
	r.Heartbeat("portal", nil)
	now = now.Add(20 * time.Second)
	for _, gone := range r.Sweep() {
		fmt.Println("gone:", gone.ClientID, gone.Reason)
	}
	// Output:
	// update: attached tui (controller "tui")
	// update: attached portal (controller "tui")
	// error: live session already has controller 'tui'
	// update: attached portal (controller "portal")
	// {"client":{"client_id":"portal","mode":"controller","attached_at":"1780000000","last_seen_at":"1780000000","prompt_injection":true,"permission_routing":true,"metadata":{}},"previous_controller_id":"tui","active_controller_id":"portal","clients":[{"client_id":"portal","mode":"controller","attached_at":"1780000000","last_seen_at":"1780000000","prompt_injection":true,"permission_routing":true,"metadata":{}},{"client_id":"tui","mode":"observer","attached_at":"1780000000","last_seen_at":"1780000000","prompt_injection":false,"permission_routing":false,"metadata":{}}]}
	// update: heartbeat portal (controller "portal")
	// update: detached tui (controller "portal")
	// gone: tui client_exit
}
