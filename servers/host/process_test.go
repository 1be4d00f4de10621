//go:build linux

package host_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
)

// A runtime (or an npm wrapper) that starts a background process: nothing
// is left running once ServeCommand has returned, whether the child exits
// by itself or is stopped because ctx ended.
func TestServeCommandLeavesNothingRunning(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("ctx ends %v", stop), func(t *testing.T) {
			mark := proctest.Mark(t)
			script := `sleep 30 </dev/null >/dev/null 2>&1 & echo started >&2; exit 0`
			if stop {
				script = `sleep 30 </dev/null >/dev/null 2>&1 & echo started >&2; exec sleep 30`
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), mark)
			cmd.Stderr = io.Discard
			go func() {
				done <- host.New(generic(), &host.Options{StopGrace: time.Second}).ServeCommand(ctx, cmd)
			}()
			if stop {
				proctest.WaitMarked(t, mark, 2, 30*time.Second)
				cancel()
			}
			select {
			case err := <-done:
				if !stop && err != nil {
					t.Errorf("ServeCommand: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ServeCommand did not return")
			}
			proctest.MarkedGone(t, mark, 2*time.Second)
		})
	}
}

// An agent that ignores the end of its input is stopped right after
// ExitGrace (here 200 ms) from when the host closes it, and the stop,
// caused by our own SIGTERM (exit 143 from a shell, or killed by the
// signal), is no error.
func TestServeCommandStopsAChildThatIgnoresEOF(t *testing.T) {
	for _, script := range []string{"exec sleep 30", "trap 'exit 143' TERM; sleep 30 & wait"} {
		t.Run(script, func(t *testing.T) {
			var logs bytes.Buffer
			var mu sync.Mutex
			log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var closed time.Time
			srv := host.New(generic(), &host.Options{Conn: rpc.Options{Logger: log}, ExitGrace: 200 * time.Millisecond})
			err := srv.ServeCommandConn(ctx, exec.Command("sh", "-c", script), func(conn *rpc.Conn) {
				time.Sleep(100 * time.Millisecond) // the shell has set its trap
				closed = time.Now()
				conn.Close()
			})
			took := time.Since(closed)
			if err != nil || took > 800*time.Millisecond {
				t.Errorf("ServeCommandConn: %v, %v after the input was closed", err, took)
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(logs.String(), "WARN") || strings.Contains(logs.String(), "ERROR") {
				t.Errorf("logged %s", logs.String())
			}
		})
	}
}

// The connection's diagnostics never quote a secret of the child's
// environment, even in a bad frame the child echoes it in.
func TestServeCommandMasksSecretsInDiagnostics(t *testing.T) {
	const key = "sk-proj-0123456789abcdefghij"
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	cmd := exec.Command("sh", "-c", `echo "not json $MY_SERVICE_CREDENTIAL"; echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"$MY_SERVICE_CREDENTIAL\"} oops"; sleep 0.5`)
	cmd.Env = append(os.Environ(), "MY_SERVICE_CREDENTIAL=plain-"+key[8:])
	err := host.New(generic(), &host.Options{Conn: rpc.Options{Logger: log}}).ServeCommand(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "bad inbound frame") || strings.Contains(logs.String(), key[8:]) {
		t.Errorf("logged %s", logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// A child whose cmd.Env is nil gets the baseline and Options.PassEnv of
// the host's environment, nothing else: not a secret of the host's it was
// not given (it used to get os.Environ whole). Its stderr shows what it
// got.
func TestServeCommandPassesOnlyTheAllowListedEnvironment(t *testing.T) {
	t.Setenv("BRIDGEKIT_TEST_SERVICE_TOKEN", "tok-secret")
	t.Setenv("BRIDGEKIT_TEST_PASSED", "yes")
	var stderr lockedWriter
	stderr.w, stderr.mu = &bytes.Buffer{}, &sync.Mutex{}
	srv := host.New(generic(), &host.Options{PassEnv: []string{"BRIDGEKIT_TEST_PASSED", "BRIDGEKIT_TEST_UNSET"}})
	cmd := exec.Command("/bin/sh", "-c", `env >&2`)
	cmd.Stderr = &stderr
	if err := srv.ServeCommand(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	stderr.mu.Lock()
	got := stderr.w.String()
	stderr.mu.Unlock()
	if !strings.Contains(got, "BRIDGEKIT_TEST_PASSED=yes\n") || strings.Contains(got, "BRIDGEKIT_TEST_SERVICE_TOKEN") || strings.Contains(got, "BRIDGEKIT_TEST_UNSET") {
		t.Errorf("the child's environment:\n%s", got)
	}
	if want := os.Getenv("PATH"); !strings.Contains(got, "PATH="+want+"\n") {
		t.Errorf("the child lacks the baseline's PATH:\n%s", got)
	}
	for _, kv := range srv.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "BRIDGEKIT_TEST_PASSED" && !slices.Contains(child.BaselineEnv, name) {
			t.Errorf("Environ has %s", kv)
		}
	}
}
