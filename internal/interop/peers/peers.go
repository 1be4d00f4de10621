// Package peers locates the independent ACP peers of testdata/interop/acp-ts
// (agent.mjs and client.mjs, built on the official TypeScript ACP SDK) for
// the tests that start them as child processes.
package peers

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the absolute path of testdata/interop/acp-ts.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "interop", "acp-ts")
}

// Script returns the absolute path of one of the peers, such as "agent.mjs".
func Script(name string) string { return filepath.Join(Dir(), name) }

// Node returns the node binary. It skips t when node or the peers'
// dependencies (npm ci in Dir) are missing; in CI (CI set, as .ci/run does)
// that is a failure, so that the tests cannot pass by not running.
func Node(t testing.TB) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	bin, err := exec.LookPath("node")
	if err != nil {
		skip("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(Dir(), "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		skip("the ACP peers' node_modules are missing; run (cd testdata/interop/acp-ts && npm ci)")
	}
	return bin
}
