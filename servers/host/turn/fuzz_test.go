package turn_test

import (
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host/turn"
	"github.com/go-json-experiment/json"
)

// FuzzClassify: any prompt result the ACP decoder accepts classifies
// without panicking, and a completion always has a terminal of kind natural
// read from _meta.harn.
func FuzzClassify(f *testing.F) {
	for _, seed := range []string{
		`{"stopReason":"end_turn","_meta":{"harn":{"terminal":{"kind":"natural","reason":"r","owner":"agent"}}}}`,
		`{"stopReason":"cancelled","_meta":{"harn":{"terminal":{"kind":"user_cancelled","reason":"r","owner":"user"}}}}`,
		`{"stopReason":"end_turn","_meta":{"harn":{"terminal":{"kind":"natural"}}}}`,
		`{"stopReason":"end_turn","_meta":{"harn":null}}`,
		`{"stopReason":"refusal"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var resp acp.PromptResponse
		if json.Unmarshal(in, &resp) != nil {
			return
		}
		o, err := turn.Classify(&resp)
		if o.Completed() {
			if err != nil || o.Terminal == nil || o.Terminal.Kind != harn.TerminalKindNatural || o.Err() != nil {
				t.Fatalf("completion without a natural terminal: %+v %v", o, err)
			}
			typed, _ := resp.Meta.Get()
			meta, err := json.Marshal(&typed)
			if err != nil {
				t.Fatal(err)
			}
			again, err := turn.ReadTerminal(meta)
			if err != nil || again == nil || again.Kind != harn.TerminalKindNatural || again.Reason != o.Terminal.Reason {
				t.Fatalf("ReadTerminal disagrees: %v", err)
			}
		} else if o.Err() == nil {
			t.Fatal("not completed but Err is nil")
		}
	})
}
