//go:build unix

package terminal

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/internal/supervisor"
)

// TestMain doubles as a host the tests kill (TERMINAL_TEST_HOST) and as
// the red team's attacker (proctest.RunRole).
//
// The host starts one terminal: "background" a shell that leaves
// processes behind, "attack" this binary as proctest's attacker. Once its
// processes run it prints "ready", then carries out each line of its
// stdin ("kill", "release", "close") and prints "done"; at the end of its
// stdin it closes the Manager (a host's end of input) and exits.
func TestMain(m *testing.M) {
	proctest.RunRole()
	if role := os.Getenv("TERMINAL_TEST_HOST"); role != "" {
		os.Exit(testHost(role))
	}
	goleak.VerifyTestMain(m, proctest.IgnoreSpawner())
}

func testHost(role string) int {
	mgr := New(nil)
	spec := Spec{Session: "s", Program: "sh", Args: []string{"-c", `sleep 100 & if command -v setsid >/dev/null; then setsid sleep 100 & fi; echo started; sleep 100`},
		Env: []string{"PATH=" + os.Getenv("PATH"), proctest.Inherited()}}
	want := "started"
	if role == "attack" {
		spec.Program, spec.Args = os.Args[0], nil
		spec.Env = append(spec.Env, proctest.AttackEnv)
		want = "attacked"
	}
	id, err := mgr.Start(context.Background(), spec)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	for o, _ := mgr.Output("s", id); !strings.Contains(o.Combined, want); o, _ = mgr.Output("s", id) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("ready", supervisor.Current().Means, os.Getuid())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "kill":
			_ = mgr.Kill("s", id)
		case "release":
			_ = mgr.Release("s", id)
		case "close":
			mgr.Close(5 * time.Second)
		}
		fmt.Println("done")
	}
	mgr.Close(5 * time.Second)
	return 0
}

// helperHost starts the test host in role with a fresh mark and waits for
// it to be ready.
func helperHost(t *testing.T, role string) (host *exec.Cmd, stdin *os.File, mark string) {
	t.Helper()
	return helperHostAs(t, role, os.Args[0], nil)
}

// helperHostAs is helperHost running the binary bin, as cred when not nil.
func helperHostAs(t *testing.T, role, bin string, cred *syscall.Credential) (host *exec.Cmd, stdin *os.File, mark string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	mark = proctest.Mark(t)
	host = exec.Command(bin, "-test.run=^$")
	host.Env = append(os.Environ(), "TERMINAL_TEST_HOST="+role, proctest.PassMark(mark))
	host.Dir = "/"
	if cred != nil {
		host.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stdin = inR
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	t.Cleanup(func() {
		inW.Close()
		_ = host.Process.Kill()
		_ = host.Wait()
	})
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); !strings.HasPrefix(line, "ready ") {
		t.Fatalf("the host said %q (%v)", line, err)
	} else {
		t.Logf("the host: %s", strings.TrimSpace(line))
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return host, inW, mark
}

// TestHostKilled: a host killed with SIGKILL, which can clean nothing up,
// leaves none of its terminals' processes running, under every means.
func TestHostKilled(t *testing.T) {
	proctest.EachMeans(t, func(t *testing.T, _ supervisor.Means) {
		host, _, mark := helperHost(t, "background")
		proctest.WaitMarked(t, mark, 3, 30*time.Second)
		if err := host.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = host.Wait()
		proctest.MarkedGone(t, mark, 10*time.Second)
	})
}

// TestRedTeamStoppedSupervisor is finding 1 of issue 33's red team
// through a terminal: the command stops its supervisor, leaves a daemon
// in a session of its own and keeps its group from being orphaned; then
// terminal/kill, terminal/release, the host's Close, the host's end of
// input and a SIGKILL of the host must each leave none of its processes
// running. Under PIDNamespace the supervisor cannot be stopped from
// inside at all; under the other means the host kills the tree itself
// when the supervisor does not answer, but a SIGKILL of the host finds
// nothing left to do that (README, "Containment"): that case is held
// under PIDNamespace only.
func TestRedTeamStoppedSupervisor(t *testing.T) {
	proctest.EachMeans(t, func(t *testing.T, means supervisor.Means) {
		for _, how := range []string{"kill", "release", "close", "end of input", "SIGKILL"} {
			t.Run(how, func(t *testing.T) {
				host, stdin, mark := helperHost(t, "attack")
				// The attacker, its daemon, the bridge and the joiner.
				proctest.WaitMarked(t, mark, 4, 30*time.Second)
				switch how {
				case "end of input":
					stdin.Close()
				case "SIGKILL":
					_ = host.Process.Signal(syscall.SIGKILL)
					if means != supervisor.PIDNamespace {
						time.Sleep(3 * time.Second)
						if left := proctest.Marked(mark); len(left) > 0 {
							t.Logf("%v: as the README says, a stopped supervisor and a SIGKILLed host leave %d processes", means, len(left))
						}
						proctest.KillMarked(mark)
						t.SkipNow()
					}
				default:
					fmt.Fprintln(stdin, how)
				}
				proctest.MarkedGone(t, mark, 10*time.Second)
			})
		}
	})
}

// TestSupervisorKilledByTheCommand: a command may try to kill its own
// supervisor (it runs as the same user), before its end or, from a
// process it left behind, after it. Under PIDNamespace the kernel refuses
// (the supervisor is its namespace's init); otherwise what is left in its
// process group is killed all the same: the host sees the supervisor's
// status pipe end without its last word. (A command that kills it before
// the supervisor has reported its start, within moments of the exec,
// fails the start and is not found: the scripts wait a moment first.)
func TestSupervisorKilledByTheCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	proctest.EachMeans(t, func(t *testing.T, _ supervisor.Means) {
		for name, script := range map[string]string{
			"before its end": `sleep 100 </dev/null >/dev/null 2>&1 & sleep 0.2; kill -9 $PPID; sleep 1`,
			"after its end":  `sup=$PPID; (sleep 0.3; kill -9 $sup; exec sleep 100) </dev/null >/dev/null 2>&1 & exit 0`,
		} {
			t.Run(name, func(t *testing.T) {
				mark := proctest.Mark(t)
				m := New(nil)
				defer m.Close(2 * time.Second)
				id, err := m.Start(context.Background(), Spec{Session: "s", Program: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=" + os.Getenv("PATH"), mark}})
				if err != nil {
					t.Fatal(err)
				}
				proctest.WaitMarked(t, mark, 1, 30*time.Second)
				if _, err := m.Wait(context.Background(), "s", id); err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond) // the kill of "after its end"
				m.Release("s", id)
				proctest.MarkedGone(t, mark, 10*time.Second)
			})
		}
	})
}

// TestKillFloodWithStoppedSupervisor is finding 2 of issue 33's red team:
// with a terminal's supervisor stopped, 66,000 kills of that terminal
// neither block nor hold anything another terminal or Close needs: every
// Kill returns at once, another terminal's output is read within a
// second meanwhile, the unanswered order becomes a kill from the host (the
// terminal's processes are gone), and Close returns within its time.
func TestKillFloodWithStoppedSupervisor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	proctest.EachMeans(t, func(t *testing.T, _ supervisor.Means) {
		m := New(nil)
		closed := false
		defer func() {
			if !closed {
				m.Close(5 * time.Second)
			}
		}()
		mark := proctest.Mark(t)
		env := []string{"PATH=" + os.Getenv("PATH"), mark}
		victim, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", "sleep 100 & sleep 100"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		other, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", "echo other; exec sleep 100"}, Env: []string{"PATH=" + os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		proctest.WaitMarked(t, mark, 2, 30*time.Second)
		tv, err := m.get("s", victim)
		if err != nil {
			t.Fatal(err)
		}
		sup := tv.proc.tree.Cmd.Process
		if err := sup.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer sup.Signal(syscall.SIGCONT)

		flooded := make(chan time.Duration, 1)
		go func() {
			began := time.Now()
			for range 66000 {
				_ = m.Kill("s", victim)
			}
			flooded <- time.Since(began)
		}()
		var slowest time.Duration
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			began := time.Now()
			o, err := m.Output("s", other)
			if took := time.Since(began); took > slowest {
				slowest = took
			}
			if err != nil || !strings.Contains(o.Combined, "other") && time.Since(began) > time.Second {
				t.Fatalf("the other terminal: %+v %v", o, err)
			}
		}
		if slowest > time.Second {
			t.Errorf("the other terminal's output took %v during the flood", slowest)
		}
		select {
		case took := <-flooded:
			t.Logf("66,000 kills took %v; the other terminal's output at most %v", took, slowest)
		case <-time.After(10 * time.Second):
			t.Fatal("66,000 kills did not return within 10s")
		}
		// Unanswered, the order became a kill from the host.
		proctest.MarkedGone(t, mark, 10*time.Second)
		began := time.Now()
		m.Close(3 * time.Second)
		closed = true
		if took := time.Since(began); took > 4*time.Second {
			t.Errorf("Close took %v", took)
		}
	})
}

// TestRedTeamUnprivileged runs the red team's attack through a terminal
// of a host that is not root (here, as root, the host runs as nobody):
// the unprivileged path to PID namespaces (an unprivileged user namespace)
// holds on every exit path too. Run by a user that is not root, the other
// tests take that path already.
func TestRedTeamUnprivileged(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	if os.Getuid() != 0 {
		t.Skip("not root: every other test runs the unprivileged path")
	}
	// The test binary, where nobody may run it.
	dir, err := os.MkdirTemp("", "bridgekit-unprivileged")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := dir + "/terminal.test"
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRIDGEKIT_CONTAINMENT", "pidns") // fails rather than falls back
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, how := range []string{"kill", "release", "end of input", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			host, stdin, mark := helperHostAs(t, "attack", bin, nobody)
			proctest.WaitMarked(t, mark, 4, 30*time.Second)
			switch how {
			case "end of input":
				stdin.Close()
			case "SIGKILL":
				_ = host.Process.Signal(syscall.SIGKILL)
			default:
				fmt.Fprintln(stdin, how)
			}
			proctest.MarkedGone(t, mark, 10*time.Second)
		})
	}
}
