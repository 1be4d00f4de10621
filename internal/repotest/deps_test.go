package repotest

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that speaks only stdio compiles none of the network transports: the WebSocket library, the
// bbolt store and the packages around them are linked only into programs that import them.
func TestStdioLinksNoNetworkTransport(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./examples/acp-agent", "./examples/host", "./clients/acpcmd", "./servers/host", "./clients/harnvm")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/coder/websocket", "go.etcd.io/bbolt", module + "runtime/remote", module + "runtime/wsframe", module + "runtime/eventlog"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("a stdio program links %s", pkg)
			}
		}
	}
	// And the remote client does link them (the check above would pass on a misspelt name).
	cmd = exec.Command("go", "list", "-deps", "./clients/acpremote")
	cmd.Dir = "../.."
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), "github.com/coder/websocket\n") {
		t.Fatalf("clients/acpremote does not link coder/websocket: %v", err)
	}
}
