package hookpolicy_test

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/examples/providers/internal/hookpolicy"
)

func Example() {
	engine, err := hookpolicy.Parse([]byte(`{
		"default": {"decision": "continue"},
		"rules": [
			{"id": "no-secrets", "hooks": ["before_tool_call"], "paths": ["**/.env"], "decision": "reject",
			 "reason": "tools may not read secrets"},
			{"id": "hide-keys", "redact": ["sk-[A-Za-z0-9]{8,}"], "patterns": ["sk-"], "decision": "continue"}
		]}`))
	if err != nil {
		panic(err)
	}
	for _, input := range []string{
		`{"phase_id":"build","tool":"@zack/read-file","arguments":{"path":"app/.env"}}`,
		`{"phase_id":"build","tool":"@zack/http","arguments":{"auth":"sk-0123456789"}}`,
		`{"phase_id":"build","tool":"@zack/http","arguments":{"url":"https://example.test"}}`,
	} {
		d, err := engine.Evaluate(hookpolicy.BeforeToolCall, jsontext.Value(input))
		if err != nil {
			panic(err)
		}
		result, _ := d.Result()
		fmt.Printf("%s (%s %s)\n", result, d.Reason.Code, d.Reason.RuleID)
	}
	// Output:
	// {"decision":"reject","reason":"tools may not read secrets"} (rule_matched no-secrets)
	// {"decision":"continue","patch":{"arguments":{"auth":"[REDACTED]"}}} (rule_matched hide-keys)
	// {"decision":"continue"} (default )
}

// Policies are checked whole before use; errors name the rule and field.
func ExampleParse() {
	_, err := hookpolicy.Parse([]byte(`{"rules":[{"hooks":["before_tool_call"],"max_top_k":3,"decision":"continue"}]}`))
	fmt.Println(err)
	// Output:
	// hookpolicy: invalid policy: rule 1 max_top_k: applies to none of the rule's hooks [before_tool_call]
}
