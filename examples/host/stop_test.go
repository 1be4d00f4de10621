package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/proctest"
)

// These tests use the example host the way its users do: input piped in
// and closed, signals, a child that misbehaves, a stdout or stderr nobody
// reads. Each one failed on the previous engine.

func request(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"host/call","params":{"name":"process.list_shells","args":{}}}`, id)
}

// answeredIDs runs the host with input on its stdin, closed after it, and
// returns the ids of the replies on stdout.
func answeredIDs(t *testing.T, bin, input string) []string {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host: %v\n%s", err, stderr.String())
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Result == nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		ids = append(ids, string(r.ID))
	}
	return ids
}

func TestPipedInputIsAnsweredBeforeExit(t *testing.T) {
	bin := buildHost(t)
	// printf '<one request>\n' | host: answered, every time.
	for i := range 20 {
		if ids := answeredIDs(t, bin, request(1)+"\n"); len(ids) != 1 || ids[0] != "1" {
			t.Fatalf("run %d: one piped request got replies %q", i, ids)
		}
	}
	var in strings.Builder
	for i := 1; i <= 100; i++ {
		in.WriteString(request(i) + "\n")
	}
	if ids := answeredIDs(t, bin, in.String()); len(ids) != 100 {
		t.Fatalf("100 piped requests got %d replies", len(ids))
	}
	// An unterminated last line is a request too.
	if ids := answeredIDs(t, bin, request(1)+"\n"+request(2)); len(ids) != 2 {
		t.Fatalf("unterminated last line: replies %q", ids)
	}
}

// running is a host process with its pipes.
type running struct {
	mark   string // the runtime's, from childScript
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *os.File // a file, so that nothing waits for the pipe's other writers
	exited chan struct{}
	err    error
}

func start(t *testing.T, cmd *exec.Cmd, stdout io.Writer) *running {
	t.Helper()
	r := &running{cmd: cmd, exited: make(chan struct{})}
	var err error
	if r.stderr, err = os.Create(filepath.Join(t.TempDir(), "stderr")); err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = r.stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if cmd.Stdin == nil {
		if r.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.exited
	})
	return r
}

// wait waits for the host to exit within d and returns its exit status.
func (r *running) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(d):
		t.Fatalf("host still running after %v; stderr:\n%s", d, r.stderrText())
	}
	if ee, ok := r.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return 0
}

func (r *running) stderrText() string {
	b, _ := os.ReadFile(r.stderr.Name())
	return string(b)
}

// waitStderr waits until the host's stderr contains s.
func (r *running) waitStderr(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.stderrText(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q:\n%s", s, r.stderrText())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sendSignal(t *testing.T, r *running, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func skipWithoutSignals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX signals")
	}
}

func TestSignalStopsIdleHost(t *testing.T) {
	skipWithoutSignals(t)
	bin := buildHost(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		pr, pw, _ := os.Pipe()
		r := start(t, exec.Command(bin), pw)
		pw.Close()
		// Make sure it serves, then leave stdin open and idle.
		io.WriteString(r.stdin, request(1)+"\n")
		if line, err := bufio.NewReader(pr).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
			t.Fatalf("first reply %q: %v", line, err)
		}
		start := time.Now()
		sendSignal(t, r, sig)
		if got := r.wait(t, 3*time.Second); got != 128+int(sig) {
			t.Fatalf("%v: exit status %d, want %d", sig, got, 128+int(sig))
		}
		t.Logf("%v: exited after %v", sig, time.Since(start))
		pr.Close()
	}
}

func TestSignalStopsHostWhoseStdoutIsFull(t *testing.T) {
	skipWithoutSignals(t)
	bin := buildHost(t)
	pr, pw, _ := os.Pipe()
	defer pr.Close() // never read
	r := start(t, exec.Command(bin), pw)
	pw.Close()
	// Far more replies than the stdout pipe holds; our writes block in turn.
	go func() {
		for i := range 20000 {
			if _, err := io.WriteString(r.stdin, request(i)+"\n"); err != nil {
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	sendSignal(t, r, syscall.SIGTERM)
	if got := r.wait(t, 3*time.Second); got != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit status %d", got)
	}
}

func TestClosedStdoutEndsWithAMessage(t *testing.T) {
	bin := buildHost(t)
	pr, pw, _ := os.Pipe()
	pr.Close() // nobody will ever read: writes get EPIPE
	r := start(t, exec.Command(bin), pw)
	pw.Close()
	io.WriteString(r.stdin, request(1)+"\n")
	if got := r.wait(t, 5*time.Second); got != 1 {
		t.Fatalf("exit status %d, want 1", got)
	}
	if !strings.Contains(r.stderrText(), "broken pipe") {
		t.Fatalf("stderr does not say why:\n%s", r.stderrText())
	}
}

// childScript runs a shell script as the host's child and returns the
// running host.
func childScript(t *testing.T, bin, script string, hostArgs ...string) *running {
	t.Helper()
	// The mark reaches the runtime and what it starts through env, not
	// the host (proctest.Marked must not count the host).
	mark := proctest.Mark(t)
	args := append(append([]string{}, hostArgs...), "--", "/usr/bin/env", mark, "/bin/sh", "-c", script)
	r := start(t, exec.Command(bin, args...), nil)
	r.mark = mark
	t.Cleanup(func() { proctest.KillMarked(mark) })
	return r
}

func TestChildExitEndsHostDespiteGrandchild(t *testing.T) {
	skipWithoutSignals(t)
	bin := buildHost(t)
	// The grandchild inherits the child's stdin and stdout and outlives it.
	r := childScript(t, bin, `sleep 30 & echo "grandchild-started" >&2; exit 0`)
	r.waitStderr(t, "grandchild-started")
	if got := r.wait(t, 5*time.Second); got != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
}

// TestHostSIGKILLLeavesNothingRunning: a host killed with SIGKILL, which
// can clean nothing up, leaves neither its runtime nor what the runtime
// started running: a background process in the runtime's group and one
// that left it (setsid) are gone within two seconds.
func TestHostSIGKILLLeavesNothingRunning(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor is Linux's")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	r := childScript(t, buildHost(t), `sleep 30 & setsid sleep 30 & echo "runtime-started" >&2; exec sleep 30`)
	r.waitStderr(t, "runtime-started")
	proctest.WaitMarked(t, r.mark, 3, 30*time.Second)
	sendSignal(t, r, syscall.SIGKILL)
	r.wait(t, 5*time.Second)
	proctest.MarkedGone(t, r.mark, 2*time.Second)
}

// stubbornChild runs, as the host's child, a script that ignores SIGTERM
// and says "stubborn-ready"; it is killed when the test ends.
func stubbornChild(t *testing.T, hostArgs ...string) *running {
	t.Helper()
	r := childScript(t, buildHost(t), `trap '' TERM; echo "stubborn-ready" >&2; while :; do sleep 0.05; done`, hostArgs...)
	r.waitStderr(t, "stubborn-ready")
	return r
}

func TestSignalsAreForwardedAsSIGTERM(t *testing.T) {
	skipWithoutSignals(t)
	bin := buildHost(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		r := childScript(t, bin, `trap 'echo "got TERM" >&2; exit 7' TERM; echo ready >&2; while :; do sleep 0.05; done`)
		r.waitStderr(t, "ready")
		sendSignal(t, r, sig)
		if got := r.wait(t, 5*time.Second); got != 7 {
			t.Fatalf("%v: exit status %d, want the child's 7; stderr:\n%s", sig, got, r.stderrText())
		}
		if !strings.Contains(r.stderrText(), "got TERM") {
			t.Fatalf("%v: the child's SIGTERM handler did not run:\n%s", sig, r.stderrText())
		}
	}
}

func TestChildIgnoringSIGTERMIsKilledAfterGrace(t *testing.T) {
	skipWithoutSignals(t)
	r := stubbornChild(t, "-grace", "300ms")
	start := time.Now()
	sendSignal(t, r, syscall.SIGTERM)
	if got := r.wait(t, 5*time.Second); got != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", got, 128+int(syscall.SIGKILL), r.stderrText())
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("killed after %v, before the grace period", d)
	}
	if !strings.Contains(r.stderrText(), "killed by signal 9") {
		t.Fatalf("stderr does not report the signal:\n%s", r.stderrText())
	}
}

func TestSecondSignalForcesExit(t *testing.T) {
	skipWithoutSignals(t)
	r := stubbornChild(t, "-grace", "1m")
	sendSignal(t, r, syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	sendSignal(t, r, syscall.SIGTERM)
	if got := r.wait(t, 3*time.Second); got != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit status %d", got)
	}
	// Exiting at once must not leave the runtime running behind it.
	proctest.MarkedGone(t, r.mark, time.Second)
}

// A child that ignores SIGTERM is killed before the host gives up on it,
// also with -grace 0 (the host used to exit after 1s, leaving it running).
func TestGraceZeroDoesNotOrphanTheChild(t *testing.T) {
	skipWithoutSignals(t)
	r := stubbornChild(t, "-grace", "0")
	sendSignal(t, r, syscall.SIGTERM)
	if got := r.wait(t, 10*time.Second); got != 128+int(syscall.SIGTERM) && got != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	proctest.MarkedGone(t, r.mark, time.Second)
}

func TestChildKilledBySignalIsReported(t *testing.T) {
	skipWithoutSignals(t)
	bin := buildHost(t)
	r := childScript(t, bin, `kill -KILL $$`)
	if got := r.wait(t, 5*time.Second); got != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit status %d; stderr:\n%s", got, r.stderrText())
	}
	if !strings.Contains(r.stderrText(), "killed by signal 9 (killed)") {
		t.Fatalf("stderr:\n%s", r.stderrText())
	}
}

// rss returns the resident set size of process pid, from /proc.
func rss(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.Fields(v)[0])
			return kb << 10, true
		}
	}
	return 0, false
}

func TestPeerThatNeverReadsStdoutCannotGrowTheHost(t *testing.T) {
	if _, ok := rss(os.Getpid()); !ok {
		t.Skip("no /proc to measure RSS")
	}
	bin := buildHost(t)
	for _, size := range []int{1 << 20, 8 << 20} {
		pr, pw, _ := os.Pipe()
		r := start(t, exec.Command(bin), pw)
		pw.Close()
		big := strings.Repeat("m", size)
		// Error replies that could each echo the whole line, and lines that
		// are not JSON.
		lines := []string{
			`{"jsonrpc":"2.0","id":1,"method":"` + big + `"}`,
			`{"jsonrpc":"2.0","id":2,"method":"host/call","params":{"name":"process.` + big + `","args":{}}}`,
			`{"jsonrpc":"2.0","id":"` + big + `","method":"nope"}`, // a reply that must echo the id
			`{"not json` + big,
		}
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			for i := 0; i < 2000; i++ {
				if _, err := io.WriteString(r.stdin, lines[i%len(lines)]+"\n"); err != nil {
					return
				}
			}
		}()
		peak := 0
		for range 30 {
			time.Sleep(100 * time.Millisecond)
			if n, ok := rss(r.cmd.Process.Pid); ok && n > peak {
				peak = n
			}
		}
		t.Logf("%d MiB lines: peak RSS %d MiB while the peer read nothing", size>>20, peak>>20)
		if peak > 512<<20 {
			t.Errorf("%d MiB lines: host RSS reached %d MiB", size>>20, peak>>20)
		}
		r.cmd.Process.Kill()
		r.stdin.Close()
		<-sent
		pr.Close()
	}
}

func TestUndrainedStderrDoesNotStopTheHost(t *testing.T) {
	bin := buildHost(t)
	cmd := exec.Command(bin, "-v") // log everything
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	errR, errW, _ := os.Pipe()
	defer errR.Close() // never read
	cmd.Stderr = errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Garbage lines, each a warning, far more than the stderr pipe holds,
	// with a 10 MiB one among them; then a request.
	go func() {
		w := bufio.NewWriter(stdin)
		for i := range 50000 {
			fmt.Fprintf(w, "garbage %d\n", i)
			if i == 100 {
				w.WriteString("{\"jsonrpc\":" + strings.Repeat("9", 10<<20) + "\n")
			}
		}
		w.WriteString(request(424242) + "\n")
		w.Flush()
	}()
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"id":424242,"result"`) {
				found <- true
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatal("stdout ended without the reply")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request after the garbage was not answered while stderr was full")
	}
}
