//go:build linux

package harnvm

import (
	"context"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A host started through a wrapper (an npm script, a shell) that leaves a
// process running in the background: nothing of it is left once Close has
// returned.
func TestCloseLeavesNothingRunning(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 5 * time.Second // cat exits at the end of its input; a loaded machine must not make it a SIGTERM
	mark := proctest.Mark(t)
	started := filepath.Join(t.TempDir(), "started")
	cmd := exec.Command("sh", "-c", `sleep 30 </dev/null >/dev/null 2>&1 & : > "$1"; exec cat >/dev/null`, "sh", started)
	cmd.Env = append(os.Environ(), mark)
	c, err := Start(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wrapper did not start its background process")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	proctest.MarkedGone(t, mark, 2*time.Second) // the background process must not outlive Close
}
