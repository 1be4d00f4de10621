package main

import (
	"strings"
	"testing"
)

// TestPolicyCheck: `bridgekit policy check` passes examples/host's policy
// (the README's) and reports the red team's finding 5 (issue 33): an
// allowed `git status` beside a write under its cwd, both rules named.
func TestPolicyCheck(t *testing.T) {
	status, out, errs := runCmd(t, "", "policy", "check", "../../examples/host/example/policy.json")
	if status != 0 || !strings.HasSuffix(out, "policy.json: ok\n") {
		t.Fatalf("the example policy: status %d, %q %q", status, out, errs)
	}
	status, out, _ = runCmd(t, "", "policy", "check", "../../servers/host/policy/testdata/finding5.json", "../../examples/host/example/policy.json")
	if status != 1 {
		t.Fatalf("finding 5: status %d", status)
	}
	for _, want := range []string{
		`finding5.json: terminal.allow[1] "git status" runs code from the workspace (git runs hooks, core.* config commands (core.fsmonitor`,
		`where fs.write "src/**" lets the runtime write`,
		`where permissions[edit-src] "src/**" lets the runtime write`,
		"example/policy.json: ok\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if status, _, _ := runCmd(t, "", "policy", "check"); status != 2 {
		t.Errorf("no file: status %d", status)
	}
	if status, out, _ := runCmd(t, "", "policy", "check", "main.go"); status != 1 || !strings.Contains(out, "main.go: ") {
		t.Errorf("not a policy: status %d %q", status, out)
	}
}
