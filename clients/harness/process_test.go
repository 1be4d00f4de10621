//go:build linux

package harness_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

// ctrlCEnv makes the test binary a program that drives the fake Harness
// (its path and script in the variable) and stops its Run on SIGINT, as a
// terminal program does on Ctrl-C.
const ctrlCEnv = "BRIDGEKIT_HARNESS_CTRLC"

func ctrlCClient() int {
	bin, script, _ := strings.Cut(os.Getenv(ctrlCEnv), "\n")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := harness.Start(context.Background(), &harness.Options{Path: bin, Config: script, StopGrace: 2 * time.Second})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	defer c.Close()
	if _, err := c.Initialize(context.Background()); err != nil {
		fmt.Println("initialize:", err)
		return 1
	}
	res, err := c.StartRun(ctx, "wait", func(ev harness.Event) {
		if ev.Harness != nil && ev.Harness.EventType == agentpmmachine.EventTypePhaseStarted {
			fmt.Println("ready")
		}
	})
	status := "none"
	if res != nil {
		status = string(res.Status)
	}
	fmt.Printf("status %s canceled %v err %v\n", status, errors.Is(err, context.Canceled), err)
	return 0
}

// A terminal's Ctrl-C (SIGINT to the foreground process group) reaches
// only the client: the Harness runs in a group of its own, so the client
// sends cancel_run and reports the Run's terminal result, cancelled.
func TestCtrlCReachesOnlyTheClient(t *testing.T) {
	path := script(t, `{"required_host_services": [], "runs": [{"input": "wait", "steps": [
		{"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}},
		{"wait_cancel": true}]}]}`)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ctrlCEnv+"="+fakeHarness+"\n"+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the terminal's foreground group
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the client said %q", lines.Text())
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		var rest []string
		for lines.Scan() {
			rest = append(rest, lines.Text())
		}
		done <- strings.Join(rest, "\n")
	}()
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "status cancelled canceled true") {
			t.Fatalf("after Ctrl-C the client reported %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the client did not end after Ctrl-C")
	}
	_ = cmd.Wait()
}

// A Harness whose Run fails while it is being cancelled: its own error is
// reported, not only the context's.
func TestChildErrorWinsOverTheCancel(t *testing.T) {
	c := start(t, `{"required_host_services": [], "runs": [{"input": "die", "steps": [
		{"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}},
		{"exit": {"code": 3, "stderr": "engine lost its state", "after_cancel": true}}]}]}`, nil)
	ctx := timeout(t, 20*time.Second)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	_, err := c.StartRun(runCtx, "die", func(ev harness.Event) {
		if ev.Harness != nil && ev.Harness.EventType == agentpmmachine.EventTypePhaseStarted {
			cancel()
		}
	})
	if !strings.Contains(fmt.Sprint(err), "engine lost its state") {
		t.Fatalf("StartRun: %v", err)
	}
}

// With a nil Env the Harness gets the allow-listed environment: no secret
// of this process, but PassEnv's names; and what it echoes of them on
// stderr is masked in the client's errors.
func TestEnvironmentIsAllowListed(t *testing.T) {
	const secret = "sk-this-process-0123456789abcdef"
	const passed = "passed-key-0123456789"
	t.Setenv("BRIDGEKIT_TEST_DATABASE_URL", "postgres://u:"+secret+"@h/db")
	t.Setenv("BRIDGEKIT_TEST_PASSED", passed)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	bin := filepath.Join(dir, "harness")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nenv > "+envFile+"\necho \"fatal: bad key $BRIDGEKIT_TEST_PASSED\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := harness.Start(timeout(t, 20*time.Second), &harness.Options{Path: bin, PassEnv: []string{"BRIDGEKIT_TEST_PASSED"}})
	if !errors.Is(err, harness.ErrNoFrame) || strings.Contains(err.Error(), passed) || !strings.Contains(err.Error(), "fatal: bad key [REDACTED]") {
		t.Fatalf("Start: %v", err)
	}
	env, rerr := os.ReadFile(envFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if strings.Contains(string(env), secret) || !strings.Contains(string(env), "BRIDGEKIT_TEST_PASSED="+passed) || !strings.Contains(string(env), "PATH=") {
		t.Fatalf("the Harness's environment:\n%s", env)
	}
}

// A bad frame that quotes a passed secret is reported masked.
func TestBadFrameIsMasked(t *testing.T) {
	const key = "frame-key-0123456789"
	t.Setenv("BRIDGEKIT_TEST_FRAME_TOKEN", key)
	bin := filepath.Join(t.TempDir(), "harness")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho '"+preflightFrame+"'\necho \"garbage $BRIDGEKIT_TEST_FRAME_TOKEN\"\nexec cat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := harness.Start(timeout(t, 20*time.Second), &harness.Options{Path: bin, PassEnv: []string{"BRIDGEKIT_TEST_FRAME_TOKEN"}, StopGrace: time.Second})
	if err == nil { // else the bad frame came in before Start returned
		<-c.Done()
		err = c.Close()
	}
	if !errors.Is(err, harness.ErrBadFrame) || strings.Contains(err.Error(), key) {
		t.Fatalf("Close: %v", err)
	}
}
