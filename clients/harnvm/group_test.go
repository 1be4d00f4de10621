//go:build linux

package harnvm

import (
	"context"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"os"
	"os/exec"
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
	cmd := exec.Command("sh", "-c", `sleep 30 </dev/null >/dev/null 2>&1 & exec cat >/dev/null`)
	cmd.Env = append(os.Environ(), mark)
	c, err := Start(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	proctest.WaitMarked(t, mark, 2, 30*time.Second) // cat and the background sleep
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	proctest.MarkedGone(t, mark, 2*time.Second) // the background process must not outlive Close
}
