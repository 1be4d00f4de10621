package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCmd runs the command in-process and returns its status and output.
func runCmd(t *testing.T, stdin string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}
	status = run(context.Background(), env, args)
	return status, out.String(), errb.String()
}

func TestEveryCommandHasHelp(t *testing.T) {
	if status, _, stderr := runCmd(t, "", "-h"); status != 0 || !strings.Contains(stderr, "usage: bridgekit") {
		t.Fatalf("bridgekit -h: status %d, %q", status, stderr)
	}
	for _, c := range commands {
		status, _, stderr := runCmd(t, "", c.name, "-h")
		if status != 0 || !strings.Contains(stderr, "usage: bridgekit "+c.name) {
			t.Errorf("bridgekit %s -h: status %d, stderr %q", c.name, status, stderr)
		}
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	if status, _, _ := runCmd(t, "", "nope"); status != 2 {
		t.Fatalf("status %d, want 2", status)
	}
}
