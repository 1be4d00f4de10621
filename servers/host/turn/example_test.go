package turn_test

import (
	"fmt"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/servers/host/turn"
	"github.com/go-json-experiment/json"
)

// Three prompt results, all with stopReason end_turn: only the one whose
// Harn terminal kind is natural is a completion.
func ExampleClassify() {
	for _, doc := range []string{
		`{"stopReason":"end_turn","_meta":{"harn":{"terminal":{"kind":"natural","reason":"done","owner":"agent"}}}}`,
		`{"stopReason":"end_turn","_meta":{"harn":{"terminal":{"kind":"policy_budget","reason":"cost cap","owner":"policy"}}}}`,
		`{"stopReason":"end_turn"}`,
	} {
		var resp acp.PromptResponse
		_ = json.Unmarshal([]byte(doc), &resp)
		o, _ := turn.Classify(&resp)
		fmt.Printf("%-10s completed=%-5v %v\n", o.Class(), o.Completed(), o.Err())
	}
	// Output:
	// completed  completed=true  <nil>
	// incomplete completed=false turn did not complete: policy_budget (owner policy): cost cap
	// end_turn   completed=false turn ended (end_turn) without a Harn terminal outcome: no completion evidence
}
