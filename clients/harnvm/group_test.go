//go:build linux

package harnvm

import (
	"context"
	"fmt"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A host started through a wrapper (an npm script, a shell) that leaves a
// process running in the background: nothing of it is left once Close has
// returned.
func TestCloseLeavesNothingRunning(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 5 * time.Second // cat exits at the end of its input; a loaded machine must not make it a SIGTERM
	pidPath := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`sleep 30 </dev/null >/dev/null 2>&1 & echo $! > %s; exec cat >/dev/null`, pidPath))
	c, err := Start(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidPath)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	proctest.Gone(t, pid, 2*time.Second) // the background process must not outlive Close
}
