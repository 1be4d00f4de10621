package policy_test

import (
	"fmt"

	"github.com/bridgekit/bridgekit/servers/host/policy"
)

// A policy that lets the runtime write src/ and run `git status` lets it
// run anything: it writes src/.git/config with core.fsmonitor, then runs
// git status in src. Check names both rules; a cwd that keeps git out of
// what the runtime writes cannot help git (it finds its repository
// above), but it does help make.
func ExamplePolicy_Check() {
	p, err := policy.Parse([]byte(`{
		"fs": {"write": ["src/**"]},
		"terminal": {"allow": [
			"echo **",
			"git status",
			{"command": "make test", "cwd": ["build"]},
			{"command": "go test ./...", "cwd": ["src"], "trust_workspace_code": true}
		]}
	}`))
	if err != nil {
		panic(err)
	}
	for _, f := range p.Check() {
		fmt.Println(f.Command, "|", f.Write)
	}
	// Output:
	// terminal.allow[1] "git status" | fs.write "src/**"
}
