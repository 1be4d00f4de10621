//go:build unix

package terminal

import (
	"bufio"
	"context"
	"fmt"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain doubles as the host TestHostKilled kills: with
// TERMINAL_TEST_HOST set it starts a command that leaves processes behind,
// prints their pids and waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("TERMINAL_TEST_HOST") == "1" {
		mgr := New(nil)
		id, err := mgr.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", `sleep 100 & echo $!; if command -v setsid >/dev/null; then setsid sleep 100 & echo $!; fi; echo $$; sleep 100`}, Env: []string{"PATH=" + os.Getenv("PATH")}})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		want := 2
		if _, err := exec.LookPath("setsid"); err == nil {
			want = 3
		}
		for {
			o, _ := mgr.Output("s", id)
			if n := len(strings.Fields(o.Combined)); n >= want {
				fmt.Println(strings.Join(strings.Fields(o.Combined), " "))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		// Not select {}: a program whose goroutines all block on nothing
		// dies at once ("all goroutines are asleep"); a sleep holds a timer.
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestHostKilled: a host killed with SIGKILL, which can clean nothing up,
// leaves none of its terminals' processes running.
func TestHostKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), "TERMINAL_TEST_HOST=1")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("host said %q", line)
		}
		pids = append(pids, n)
	}
	for _, p := range pids {
		if !proctest.Alive(p) {
			t.Fatalf("%d not running before the kill", p)
		}
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	for _, p := range pids {
		proctest.Gone(t, p, 10*time.Second)
	}
}

// TestSupervisorKilledByTheCommand: a command may kill its own supervisor
// (it runs as the same user), before its end or, from a process it left
// behind, after it. What is left in its process group is killed all the
// same: the host sees the supervisor's status pipe end without its last
// word. (A command that kills it before the supervisor has reported its
// start, within moments of the exec, fails the start and is not found:
// the scripts wait a moment first.)
func TestSupervisorKilledByTheCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	for name, script := range map[string]string{
		"before its end": `sleep 100 </dev/null >/dev/null 2>&1 & echo $!; sleep 0.2; kill -9 $PPID; sleep 1`,
		"after its end":  `sup=$PPID; (sleep 0.3; kill -9 $sup; exec sleep 100) </dev/null >/dev/null 2>&1 & echo $!; exit 0`,
	} {
		t.Run(name, func(t *testing.T) {
			m := New(nil)
			defer m.Close(2 * time.Second)
			id, err := m.Start(context.Background(), Spec{Session: "s", Program: "/bin/sh", Args: []string{"-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			o, err := m.Wait(context.Background(), "s", id)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(o.Combined))
			if err != nil {
				t.Fatalf("output %q", o.Combined)
			}
			proctest.Gone(t, pid, 10*time.Second)
		})
	}
}
