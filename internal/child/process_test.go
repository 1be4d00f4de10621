//go:build linux

package child

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/internal/supervisor"
)

// helperEnv makes the test binary a host that starts `sleep` and waits to
// be killed (TestMain).
const helperEnv = "BRIDGEKIT_CHILD_TEST_HOST"

// keep holds what the helper host must keep open.
var keep *os.File

func TestMain(m *testing.M) {
	proctest.RunRole()
	switch os.Getenv(helperEnv) {
	case "":
	case "grandchildren":
		// An agent that leaves a grandchild in its group and one that left
		// it (setsid), says their pids and its own, and serves its input.
		cmd := exec.Command("sh", "-c", `sleep 30 & echo $!; setsid sleep 30 & echo $!; echo $$; exec cat`)
		stdin, stdout, err := Start(cmd)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		keep = stdin // cat serves it: it must not be closed when collected
		r := bufio.NewReader(stdout)
		var pids []string
		for range 3 {
			line, _ := r.ReadString('\n')
			pids = append(pids, strings.TrimSpace(line))
		}
		fmt.Println(strings.Join(pids, " "))
		// Not select {}: a program whose goroutines all block on nothing
		// dies at once ("all goroutines are asleep"); a sleep holds a timer.
		time.Sleep(proctest.RoleLife)
		os.Exit(0)
	case "attack":
		// A runtime that attacks containment (proctest.AttackEnv); at the
		// end of this host's stdin it is stopped as a host stops its
		// runtime at the end of its own input.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), proctest.AttackEnv)
		p, err := Spawn(cmd, Spec{Group: true})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if line, _ := bufio.NewReader(p.Stdout).ReadString('\n'); line != "attacked\n" {
			fmt.Printf("error the attacker said %q\n", line)
			os.Exit(1)
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		signalled := Stop(p.Cmd.Process, p.Exited(), 200*time.Millisecond, 500*time.Millisecond)
		fmt.Println("stopped", signalled)
		os.Exit(0)
	default:
		cmd := exec.Command("sleep", "30")
		if _, _, err := Start(cmd); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		// Not select {}: a program whose goroutines all block on nothing
		// dies at once ("all goroutines are asleep"); a sleep holds a timer.
		time.Sleep(proctest.RoleLife)
		os.Exit(0)
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
		// exitGrace is how long Stop waits for the child to exit on its
		// own: generous for the one that does, so that a loaded machine
		// does not make it look like one that does not.
		exitGrace time.Duration
	}{
		{"exits at EOF", `sleep 30 & echo started; exec cat >/dev/null`, false, 10 * time.Second},
		{"ignores EOF", `sleep 30 & echo started; exec sleep 30 </dev/null`, true, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			mark := proctest.Mark(t)
			cmd := exec.Command("sh", "-c", c.script)
			cmd.Env = append(os.Environ(), mark)
			stdin, stdout, exited := startWatched(t, cmd)
			if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
				t.Errorf("the child's group is %d (%v), want its own %d", pgid, err, cmd.Process.Pid)
			}
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("the child said %q (%v)", line, err)
			}
			proctest.WaitMarked(t, mark, 2, 30*time.Second)
			stdin.Close()
			began := time.Now()
			signalled := Stop(cmd.Process, exited, c.exitGrace, TermGrace)
			took := time.Since(began)
			if signalled != c.signalled {
				t.Errorf("signalled = %v", signalled)
			}
			if c.signalled && (took > 800*time.Millisecond || !ByUs(cmd.ProcessState)) {
				t.Errorf("stopping a child that ignores EOF took %v (state %v, by us %v)", took, cmd.ProcessState, ByUs(cmd.ProcessState))
			}
			proctest.MarkedGone(t, mark, 2*time.Second)
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
	mark := proctest.Mark(t)
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), helperEnv+"=1", proctest.PassMark(mark))
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	readPid(t, bufio.NewReader(out)) // the supervisor's
	proctest.WaitMarked(t, mark, 1, 30*time.Second)
	_ = host.Process.Kill()
	_ = host.Wait()
	proctest.MarkedGone(t, mark, 2*time.Second)
}

// A SIGKILLed host leaves nothing its child started running either: a
// grandchild in the child's group, and one that left it (setsid), are
// gone within a second or two (the supervisor sees the host's end).
func TestGrandchildrenDieWithTheirHost(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	mark := proctest.Mark(t)
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), helperEnv+"=grandchildren", proctest.PassMark(mark))
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// The child (cat, the shell's exec) and its two sleeps.
	proctest.WaitMarked(t, mark, 3, 30*time.Second)
	_ = host.Process.Kill()
	_ = host.Wait()
	proctest.MarkedGone(t, mark, 2*time.Second)
}

// The child's stdin and stdout are our pipes themselves (nothing copies
// them through the supervisor), and it gets no other descriptor: none of
// the supervisor's pipes.
func TestStartGivesTheChildOurPipesOnly(t *testing.T) {
	cmd := exec.Command("sh", "-c", `readlink /proc/$$/fd/0 /proc/$$/fd/1; for fd in 3 4 5 6 7 8 9; do [ -e /proc/$$/fd/$fd ] && echo "fd $fd: $(readlink /proc/$$/fd/$fd)"; done; exit 0`)
	stdin, stdout, exited := startWatched(t, cmd)
	defer stdin.Close()
	out, err := io.ReadAll(stdout)
	if err != nil {
		t.Fatal(err)
	}
	<-exited
	ino := func(f *os.File) string {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("pipe:[%d]", st.Ino)
	}
	if want := ino(stdin) + "\n" + ino(stdout) + "\n"; string(out) != want {
		t.Fatalf("the child's descriptors:\n%s\nwant its stdin and stdout to be our pipes:\n%s", out, want)
	}
}

// Wait and ProcessState report the child's own end, exit code or signal,
// and a child whose group got SIGTERM, and that handles it, keeps running
// until it exits by itself.
func TestStartReportsTheChildsEnd(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{
		{"exit 0", 0, 0}, {"exit 3", 3, 0}, {"exit 143", 143, 0},
		{"kill -TERM $$", -1, syscall.SIGTERM}, {"kill -INT $$", -1, syscall.SIGINT},
		{"kill -SEGV $$", -1, syscall.SIGSEGV}, {"kill -KILL $$", -1, syscall.SIGKILL},
	} {
		cmd := exec.Command("sh", "-c", c.script)
		stdin, _, exited := startWatched(t, cmd)
		stdin.Close()
		<-exited
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if cmd.ProcessState.ExitCode() != c.code || (c.sig != 0) != ws.Signaled() || (c.sig != 0 && ws.Signal() != c.sig) {
			t.Errorf("%s: %v", c.script, cmd.ProcessState)
		}
		if want := c.code == 143 || c.sig == syscall.SIGTERM || c.sig == syscall.SIGKILL; ByUs(cmd.ProcessState) != want {
			t.Errorf("%s: ByUs = %v", c.script, !want)
		}
	}
	cmd := exec.Command("sh", "-c", `trap 'echo got TERM; sleep 0.2; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	stdin, stdout, exited := startWatched(t, cmd)
	defer stdin.Close()
	r := bufio.NewReader(stdout)
	if line, _ := r.ReadString('\n'); line != "ready\n" {
		t.Fatalf("the child said %q", line)
	}
	if err := Signal(cmd.Process, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if line, _ := r.ReadString('\n'); line != "got TERM\n" {
		t.Fatalf("after SIGTERM the child said %q", line)
	}
	<-exited
	if cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("after SIGTERM: %v, want the child's exit 7", cmd.ProcessState)
	}
}

// A program that cannot be started fails Start with cmd.Start's error.
func TestStartFailures(t *testing.T) {
	_, _, err := Start(exec.Command("/no/such/program"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/no/such/program") {
		t.Errorf("a missing program: %v", err)
	}
	notExec := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(notExec, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = Start(exec.Command(notExec))
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), notExec) {
		t.Errorf("a file that is not executable: %v", err)
	}
	cmd := exec.Command("sh", "-c", "exit 0")
	cmd.Dir = filepath.Join(t.TempDir(), "none")
	_, _, err = Start(cmd)
	if !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "/proc/self/exe") {
		t.Errorf("a missing directory: %v", err)
	}
	if cmd.Path == "/proc/self/exe" || cmd.ExtraFiles != nil || cmd.Env != nil {
		t.Errorf("cmd changed: %s %q %v", cmd.Path, cmd.Args, cmd.Env)
	}
}

// BenchmarkStart measures Start, from the call until it returns with the
// child running.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		stdin, stdout, err := Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		stdin.Close()
		_ = cmd.Wait()
		stdout.Close()
		b.StartTimer()
	}
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

// TestRedTeamRuntimeStopsSupervisor is finding 1 of issue 33's red team
// against a runtime: it stops its supervisor, leaves a daemon in a
// session of its own and keeps its group from being orphaned. The host's
// stop at the end of its input, and a SIGKILL of the host, must each
// leave none of its processes running. Under PIDNamespace nothing in the
// namespace can stop the supervisor; under the other means the host kills
// the tree itself, but a SIGKILLed host leaves it (README, "Containment").
func TestRedTeamRuntimeStopsSupervisor(t *testing.T) {
	proctest.EachMeans(t, func(t *testing.T, means supervisor.Means) {
		for _, how := range []string{"end of input", "SIGKILL"} {
			t.Run(how, func(t *testing.T) {
				mark := proctest.Mark(t)
				host := exec.Command(os.Args[0], "-test.run=^$")
				host.Env = append(os.Environ(), helperEnv+"=attack", proctest.PassMark(mark))
				in, err := host.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				out, err := host.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := host.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
				r := bufio.NewReader(out)
				if line, err := r.ReadString('\n'); line != "ready\n" {
					t.Fatalf("the host said %q (%v)", line, err)
				}
				proctest.WaitMarked(t, mark, 4, 30*time.Second) // the attacker, its daemon, bridge and joiner
				if how == "SIGKILL" {
					_ = host.Process.Kill()
					if means != supervisor.PIDNamespace {
						time.Sleep(3 * time.Second)
						t.Logf("%v: as the README says, a stopped supervisor and a SIGKILLed host leave %d processes", means, len(proctest.Marked(mark)))
						proctest.KillMarked(mark)
						t.SkipNow()
					}
				} else {
					in.Close()
					line, _ := r.ReadString('\n')
					t.Logf("the host: %s", strings.TrimSpace(line))
				}
				proctest.MarkedGone(t, mark, 10*time.Second)
			})
		}
	})
}
