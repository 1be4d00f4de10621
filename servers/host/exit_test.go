package host_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/testio"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
)

// A runtime that shuts down cleanly at the end of its input, taking a
// second to do it, is left to exit by itself: by default ServeCommand
// waits 5 s before SIGTERM (problem 4 of issue 34: a 200 ms grace
// SIGTERMed every codex-acp, which exits about 2 s after its input ends).
func TestServeCommandLetsTheRuntimeExitByItself(t *testing.T) {
	if host.DefaultExitGrace < 5*time.Second {
		t.Errorf("DefaultExitGrace %v", host.DefaultExitGrace)
	}
	var stderr testio.Buffer
	cmd := exec.Command("sh", "-c", `trap 'echo terminated >&2; exit 7' TERM; cat >/dev/null; sleep 1; echo clean >&2`)
	cmd.Stderr = &stderr
	start := time.Now()
	err := host.New(generic(), nil).ServeCommandConn(context.Background(), cmd, func(c *rpc.Conn) { c.Close() })
	if err != nil || strings.Contains(stderr.String(), "terminated") || !strings.Contains(stderr.String(), "clean") {
		t.Fatalf("ServeCommand: %v; stderr %q", err, stderr.String())
	}
	// Not past the grace: the runtime exited by itself (no "terminated"
	// above). The time counts the supervised runtime's start too (three
	// race-built processes per child under PID namespaces), which took
	// seconds on a loaded machine, so only the grace bounds it.
	if d := time.Since(start); d < time.Second || d > host.DefaultExitGrace+10*time.Second {
		t.Errorf("returned after %v", d)
	}
	// One that does not exit is stopped after ExitGrace.
	cmd = exec.Command("sh", "-c", `trap 'echo terminated >&2; exit 143' TERM; cat >/dev/null; while :; do sleep 0.05; done`)
	var stderr2 testio.Buffer
	cmd.Stderr = &stderr2
	start = time.Now()
	err = host.New(generic(), &host.Options{ExitGrace: 300 * time.Millisecond}).ServeCommandConn(context.Background(), cmd, func(c *rpc.Conn) { c.Close() })
	if d := time.Since(start); err != nil || d < 300*time.Millisecond || !strings.Contains(stderr2.String(), "terminated") {
		t.Fatalf("a runtime that ignores its end of input: %v after %v; stderr %q", err, d, stderr2.String())
	}
}

// A runtime whose output ends in the middle of a frame (it was killed, or
// exited, while writing one) is reported as such: a *CutFrameError with
// the bytes that came, and no malformed frame read from them. A whole last
// frame without its newline is still a frame.
func TestServeCommandReportsACutFrame(t *testing.T) {
	partial := `{"jsonrpc":"2.0","method":"_x/note","params":{"text":"a \"quoted\" [brace { in a string`
	for _, tc := range []struct {
		name, out string
		cut       int64
	}{
		{"cut in a string", `{"jsonrpc":"2.0","method":"_x/note","params":{}}` + "\n" + partial, int64(len(partial))},
		{"cut after a value", `{"jsonrpc":"2.0","method":"_x/note","params":{"a":[1,2]`, 55},
		{"whole, no newline", `{"jsonrpc":"2.0","method":"_x/note","params":{}}`, 0},
		{"whole, then blanks", `{"jsonrpc":"2.0","method":"_x/note","params":{}}` + "\n  \t", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var malformed atomic.Int32
			opts := &host.Options{Conn: rpc.Options{OnFrameError: func(fe *rpc.FrameError) {
				if fe.Kind == rpc.FrameMalformed {
					malformed.Add(1)
				}
			}}}
			cmd := exec.Command("sh", "-c", `printf '%s' "$OUT"`)
			cmd.Env = []string{"OUT=" + tc.out}
			err := host.New(generic(), opts).ServeCommand(context.Background(), cmd)
			var cut *host.CutFrameError
			switch {
			case tc.cut == 0 && err != nil:
				t.Errorf("a whole frame: %v", err)
			case tc.cut != 0 && (!errors.As(err, &cut) || cut.Bytes != tc.cut):
				t.Errorf("got %v (%+v), want %d bytes cut", err, cut, tc.cut)
			case tc.cut != 0 && !strings.Contains(err.Error(), "in the middle of a frame"):
				t.Errorf("%v", err)
			}
			if n := malformed.Load(); n != 0 {
				t.Errorf("%d malformed frames reported", n)
			}
		})
	}
}
