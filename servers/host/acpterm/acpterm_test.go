package acpterm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

func code(err error) int64 {
	var e *rpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

// testServer serves terminals in a temporary workspace with allow, the
// environment PATH and GREETING (allowed), recording its events.
func testServer(t *testing.T, allow ...string) (*Server, func() []Event) {
	t.Helper()
	ws, err := workspace.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	terms := terminal.New(nil)
	t.Cleanup(func() { terms.Close(5 * time.Second) })
	s := server(allow...)
	s.Terms, s.Files = terms, &files.Server{WS: ws}
	s.Env = terminal.EnvPolicy{Inherit: []string{"PATH"}, Allow: []string{"GREETING"}}
	s.Environ = func() []string { return []string{"PATH=" + os.Getenv("PATH"), "SECRET_TOKEN=x"} }
	var mu sync.Mutex
	var events []Event
	s.Observe = func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	return s, func() []Event { mu.Lock(); defer mu.Unlock(); return append([]Event(nil), events...) }
}

func TestCreateWaitOutputRelease(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX commands")
	}
	s, events := testServer(t, "sh -c *", "printf %s ok")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sh", Args: []string{"-c", `echo "$GREETING" "${SECRET_TOKEN:-none}"; exit 3`},
		Env: []acp.EnvVariable{{Name: "GREETING", Value: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: res.TerminalID})
	if code, _ := w.ExitCode.Get(); err != nil || code != 3 {
		t.Fatalf("wait: %+v %v", w, err)
	}
	if v, ok := w.Extra.Get("success"); !ok || string(v) != "false" {
		t.Errorf("success: %s", v)
	}
	out, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: res.TerminalID})
	if err != nil || out.Output != "hi none\n" {
		t.Fatalf("output %+v %v (the host's other variables must not pass)", out, err)
	}
	if _, err := s.Release(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: res.TerminalID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: res.TerminalID}); code(err) != files.CodeNotFound {
		t.Errorf("after release: %v", err)
	}
	// A command line (claude-code-acp's shape) runs through sh when the
	// shell-line rule allows it.
	res, err = s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "printf %s ok"})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: res.TerminalID}); err != nil || !strings.Contains(string(mustGet(w.Extra.Get("combined"))), "ok") {
		t.Fatalf("command line: %+v %v", w, err)
	}
	ev := events()
	if len(ev) != 2 || !ev[0].Allowed || ev[0].Via != "" || !strings.Contains(ev[0].Env, "GREETING=hi") || ev[1].Via != "sh -c" || ev[1].Reason != "terminal.allow printf %s ok (exactly)" {
		t.Errorf("events %+v", ev)
	}
}

func mustGet[T any](v T, _ bool) T { return v }

func TestCreateRefused(t *testing.T) {
	s, events := testServer(t, "echo **", "sleep 30")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  acp.CreateTerminalRequest
		code int64
	}{
		{"not listed", acp.CreateTerminalRequest{SessionID: "s", Command: "rm", Args: []string{"-rf", "/"}}, files.CodeDenied},
		{"a line with syntax", acp.CreateTerminalRequest{SessionID: "s", Command: "echo a; id"}, files.CodeDenied},
		{"a variable not allowed", acp.CreateTerminalRequest{SessionID: "s", Command: "echo", Env: []acp.EnvVariable{{Name: "BASH_ENV", Value: "/tmp/x"}}}, files.CodeDenied},
		{"cwd outside", acp.CreateTerminalRequest{SessionID: "s", Command: "echo", Cwd: wire.Some(t.TempDir())}, files.CodeDenied},
		{"cwd missing", acp.CreateTerminalRequest{SessionID: "s", Command: "echo", Cwd: wire.Some(filepath.Join(s.Files.WS.Dir(), "none"))}, files.CodeNotFound},
		{"a Harn shell without shells", acp.CreateTerminalRequest{SessionID: "s", Command: "echo", Extra: shellExtra()}, rpc.CodeInvalidParams},
	} {
		if _, err := s.Create(ctx, &tc.req); code(err) != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
	for _, e := range events() {
		if e.Allowed || e.ID != "" || e.Reason == "" {
			t.Errorf("event %+v", e)
		}
	}
	if _, err := s.Kill(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: "term-9"}); code(err) != files.CodeNotFound {
		t.Errorf("kill of no terminal: %v", err)
	}
}

func shellExtra() (x wire.Extras) {
	x.Set("shell", []byte(`{"id":"sh","label":"sh","path":"/bin/sh","kind":"posix","platform":"linux","default_args":["-c"],"source":"host","available":true,"default":true}`))
	return x
}
