//go:build linux

package child

import (
	"bufio"
	"fmt"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a host that starts `sleep` and waits to
// be killed (TestMain).
const helperEnv = "BRIDGEKIT_CHILD_TEST_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		cmd := exec.Command("sleep", "30")
		if _, _, err := Start(cmd); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		select {}
	}
	os.Exit(m.Run())
}

// startWatched starts cmd and returns a channel closed once it has exited.
func startWatched(t *testing.T, cmd *exec.Cmd) (stdin, stdout *os.File, exited chan struct{}) {
	t.Helper()
	stdin, stdout, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close() })
	exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return stdin, stdout, exited
}

func readPid(t *testing.T, r *bufio.Reader) int {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("reading a pid: %q", line)
	}
	return pid
}

// A child runs in a group of its own, and Stop ends the whole group: a
// grandchild started in the background does not outlive it, whether the
// child exits at end of input or has to be signalled.
func TestStopEndsTheWholeGroup(t *testing.T) {
	for _, c := range []struct {
		name, script string
		signalled    bool
	}{
		{"exits at EOF", `sleep 30 & echo $!; exec cat >/dev/null`, false},
		{"ignores EOF", `sleep 30 & echo $!; exec sleep 30 </dev/null`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", c.script)
			stdin, stdout, exited := startWatched(t, cmd)
			if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
				t.Errorf("the child's group is %d (%v), want its own %d", pgid, err, cmd.Process.Pid)
			}
			grandchild := readPid(t, bufio.NewReader(stdout))
			stdin.Close()
			began := time.Now()
			signalled := Stop(cmd.Process, exited, ExitGrace, TermGrace)
			took := time.Since(began)
			if signalled != c.signalled {
				t.Errorf("signalled = %v", signalled)
			}
			if c.signalled && (took > 800*time.Millisecond || !ByUs(cmd.ProcessState)) {
				t.Errorf("stopping a child that ignores EOF took %v (state %v, by us %v)", took, cmd.ProcessState, ByUs(cmd.ProcessState))
			}
			proctest.Gone(t, grandchild, 2*time.Second)
		})
	}
}

// A child that ignores SIGTERM is killed after the term grace.
func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap '' TERM; echo ready; while :; do sleep 1; done`)
	stdin, stdout, exited := startWatched(t, cmd)
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	began := time.Now()
	if !Stop(cmd.Process, exited, 50*time.Millisecond, 200*time.Millisecond) {
		t.Error("not signalled")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	if !ByUs(cmd.ProcessState) {
		t.Errorf("state %v not taken for ours", cmd.ProcessState)
	}
}

// A SIGKILLed host leaves no child running (Pdeathsig).
func TestChildDiesWithItsHost(t *testing.T) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), helperEnv+"=1")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, bufio.NewReader(out))
	if !proctest.Alive(pid) {
		t.Fatalf("the host's child %d is not running", pid)
	}
	_ = host.Process.Kill()
	_ = host.Wait()
	proctest.Gone(t, pid, 2*time.Second)
}

func TestByUs(t *testing.T) {
	for _, c := range []struct {
		script string
		want   bool
	}{
		{"exit 0", false}, {"exit 1", false}, {"exit 143", true}, {"exit 137", true}, {"kill -TERM $$", true}, {"kill -INT $$", false},
	} {
		cmd := exec.Command("sh", "-c", c.script)
		_ = cmd.Run()
		if got := ByUs(cmd.ProcessState); got != c.want {
			t.Errorf("%s: ByUs = %v", c.script, got)
		}
	}
	if ByUs(nil) {
		t.Error("ByUs(nil)")
	}
}
