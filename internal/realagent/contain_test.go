package realagent

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command that ignores SIGTERM, outlives its stdin and leaves children
// behind, one in a session of its own (out of the process group), is
// ended whole by Stop: nothing is left in its namespace. The namespace's
// only interface is its loopback.
func TestStopKillsEverythingInTheNamespace(t *testing.T) {
	Require(t, "codex-acp") // for the namespace; the agent itself is not run
	t.Setenv(ContainmentEnv, Containment)
	a, err := Prepare("codex-acp", Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	script := `trap "" TERM; setsid sleep 300 & (sleep 300) & cat >/dev/null; sleep 300`
	args := append(append([]string(nil), a.Argv[:3]...), "/bin/sh", "-c", script)
	a.Cmd = &exec.Cmd{Path: a.Argv[0], Args: args, Env: a.Env, Dir: a.Workspace, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if _, _, err := a.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(a.Procs()) < 4 && time.Now().Before(deadline) { // sh, two sleeps, cat
		time.Sleep(10 * time.Millisecond)
	}
	procs := a.Procs()
	if len(procs) < 4 {
		t.Fatalf("processes in the namespace: %v", procs)
	}
	// A process of the namespace: Cmd.Process is the agent's supervisor
	// (internal/supervisor), which runs outside it.
	dev, err := os.ReadFile("/proc/" + itoa(procs[0].PID) + "/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	var ifaces []string
	for _, l := range strings.Split(string(dev), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			ifaces = append(ifaces, name)
		}
	}
	if strings.Join(ifaces, ",") != "lo" {
		t.Errorf("interfaces in the agent's namespace: %v", ifaces)
	}
	start := time.Now()
	if err := a.Stop(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if left := a.Procs(); len(left) > 0 {
		t.Fatalf("left after Stop: %v", left)
	}
	for _, p := range procs {
		if err := syscall.Kill(p.PID, 0); err == nil {
			if st, _ := os.ReadFile("/proc/" + itoa(p.PID) + "/stat"); !strings.Contains(string(st), ") Z") {
				t.Errorf("process %v still exists", p)
			}
		}
	}
	if d := time.Since(start); d > 6*time.Second { // 0.1 s grace, 1 s after SIGTERM, then scans of /proc (about 0.1 s each on a busy machine)
		t.Errorf("Stop took %v", d)
	}
	if err := a.Close(); err != nil {
		t.Error(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
