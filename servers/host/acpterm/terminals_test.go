package acpterm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/runtime/wire/wiretest"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/shells"
)

// These tests were examples/host's (terminal_test.go and
// terminal_shell_test.go) before the handlers moved here.

func posix(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("POSIX commands")
	}
}

// testShellID is the shell shellServer offers: /bin/sh.
const testShellID = "test-sh"

// shellServer is testServer that also offers Harn's shells, the test
// shell first.
func shellServer(t *testing.T, allow ...string) (*Server, func() []Event) {
	t.Helper()
	s, events := testServer(t, allow...)
	provider, err := shells.New(shells.Config{Shells: []shells.Configured{{ID: testShellID, Path: "/bin/sh"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Shells = provider
	return s, events
}

// harnWait is wait_for_exit's answer read the two ways: as ACP's type and
// as the members Harn reads.
type harnWait struct {
	acp      acp.WaitForTerminalExitResponse
	raw      string
	Stdout   *string `json:"stdout"`
	Stderr   *string `json:"stderr"`
	Combined *string `json:"combined"`
	Success  *bool   `json:"success"`
	ExitCode *int64  `json:"exitCode"`
}

// createFromWire decodes terminal/create params as the connection does and
// serves them.
func createFromWire(ctx context.Context, t *testing.T, s *Server, params string) (string, error) {
	t.Helper()
	var p acp.CreateTerminalRequest
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	res, err := s.Create(ctx, &p)
	if err != nil {
		return "", err
	}
	return string(res.TerminalID), nil
}

// waitFromWire serves terminal/wait_for_exit and decodes the encoded
// answer both as acp.WaitForTerminalExitResponse and as Harn reads it.
func waitFromWire(ctx context.Context, t *testing.T, s *Server, id string) harnWait {
	t.Helper()
	res, err := s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if err != nil {
		t.Fatalf("wait_for_exit %s: %v", id, err)
	}
	data, err := wire.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var w harnWait
	if err := json.Unmarshal(data, &w.acp); err != nil {
		t.Fatalf("%s does not decode as acp.WaitForTerminalExitResponse: %v", data, err)
	}
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	w.raw = string(data)
	return w
}

// shellJSON is a Shell as Harn sends it, with changes applied.
func shellJSON(t *testing.T, sh harn.Shell, change func(map[string]jsontext.Value)) string {
	t.Helper()
	data, err := wire.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	if change == nil {
		return string(data)
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	change(m)
	out, err := json.Marshal(m, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func testShell(t *testing.T, s *Server) harn.Shell {
	t.Helper()
	for _, sh := range s.Shells.Shells() {
		if sh.ID == testShellID {
			return sh
		}
	}
	t.Fatal("the configured test shell is not listed")
	return harn.Shell{}
}

func quoteJSON(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// hasEvent reports whether events hold one with via, line, allowed and a
// reason that starts with reason.
func hasEvent(events []Event, via, line string, allowed bool, reason string) bool {
	for _, e := range events {
		if e.Via == via && e.Line == line && e.Allowed == allowed && strings.HasPrefix(e.Reason, reason) && (e.ID != "") == allowed {
			return true
		}
	}
	return false
}

// The terminal/* methods end to end: output, the environment, the exit
// code, release, kill, a wait's context, refusals, a missing program.
func TestTerminals(t *testing.T) {
	posix(t)
	s, events := testServer(t, "sh -c *", "sleep *", "pwd")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	create := func(command string, args ...string) (string, error) {
		res, err := s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: command, Args: args, Env: []acp.EnvVariable{{Name: "GREETING", Value: "hi"}}})
		if err != nil {
			return "", err
		}
		return string(res.TerminalID), nil
	}
	dir := s.Files.WS.Dir()

	// Output, the environment, the exit code.
	id, err := create("sh", "-c", `echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	exit, err := s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if code, _ := exit.ExitCode.Get(); err != nil || code != 3 || !exit.Signal.IsAbsent() {
		t.Fatalf("wait_for_exit: %+v %v", exit, err)
	}
	res, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	status, ok := res.ExitStatus.Get()
	if code, _ := status.ExitCode.Get(); err != nil || res.Output != "hi from "+dir+"\noops\n" || res.Truncated || !ok || code != 3 {
		t.Fatalf("output: %+v %v", res, err)
	}
	if _, err := s.Release(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); code(err) != files.CodeNotFound {
		t.Fatalf("a released terminal: %v", err)
	}
	if !hasEvent(events(), "", `sh -c echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`, true, "terminal.allow sh -c *") {
		t.Errorf("events: %+v", events())
	}

	// Kill: a running command, and what it started, get SIGKILL.
	id, err = create("sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	res, _ = s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if !res.ExitStatus.IsAbsent() {
		t.Fatalf("a running command has an exit status: %+v", res)
	}
	if _, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "other", TerminalID: acp.TerminalID(id)}); code(err) != files.CodeNotFound {
		t.Fatalf("another session's terminal: %v", err)
	}
	start := time.Now()
	if _, err := s.Kill(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); err != nil {
		t.Fatal(err)
	}
	exit, err = s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if sig, _ := exit.Signal.Get(); err != nil || sig != "SIGKILL" || time.Since(start) > 5*time.Second {
		t.Fatalf("after kill: %+v %v", exit, err)
	}

	// wait_for_exit honours its context.
	id, _ = create("sleep", "30")
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.WaitForExit(short, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	stop()
	if err == nil {
		t.Fatal("wait_for_exit outlived its context")
	}

	// Denied commands, a cwd outside the workspace, a missing command.
	if _, err := create("rm", "-rf", "x"); code(err) != files.CodeDenied {
		t.Fatalf("rm: %v", err)
	}
	if !hasEvent(events(), "", "rm -rf x", false, "denied (terminal.allow does not list it)") {
		t.Errorf("events: %+v", events())
	}
	if _, err := create("sleep"); code(err) != files.CodeDenied {
		t.Fatalf("sleep without its argument: %v", err)
	}
	_, err = s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "pwd", Cwd: wire.Some(t.TempDir())})
	if code(err) != files.CodeDenied {
		t.Fatalf("cwd outside: %v", err)
	}
	// A cwd inside the workspace that is missing, or is a file, is said to
	// be so (it used to read as the command missing: "fork/exec
	// /usr/bin/pwd: no such file or directory").
	_, err = s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "pwd", Cwd: wire.Some(filepath.Join(dir, "no-dir"))})
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Code != files.CodeNotFound || !strings.Contains(e.Message, "cwd") || !strings.Contains(string(e.Data), `"path"`) {
		t.Fatalf("a missing cwd: %v", err)
	}
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "pwd", Cwd: wire.Some(file)})
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Code != rpc.CodeInvalidParams || !strings.Contains(e.Message, "not a directory") {
		t.Fatalf("a file as cwd: %v", err)
	}
	s.Commands = server("no-such-command-here").Commands
	if _, err := create("no-such-command-here"); code(err) != files.CodeNotFound {
		t.Fatalf("missing command: %v", err)
	}
}

// A Harn runtime's terminal/create (a whole command line and the shell it
// chose from the host's shell discovery) runs the line through that shell,
// and wait_for_exit answers with the members Harn reads.
func TestHarnShell(t *testing.T) {
	posix(t)
	s, events := shellServer(t,
		"echo a && echo b",
		"printf out; printf err >&2; exit 3",
		`printf 'x\303\251\342\202\254'`,
		"echo **",
		"sleep *",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sh := shellJSON(t, testShell(t, s), nil)
	harnCreate := func(line string) string {
		return `{"sessionId":"s","command":` + quoteJSON(line) + `,"shell":` + sh + `}`
	}

	for _, tc := range []struct {
		name, params   string
		stdout, stderr string
		combined       []string // the interleavings that may be
		exit           int64
		limit          int
		success        bool
		exactJSON      string
		line, reason   string // the event expected
	}{
		{
			name: "an exactly allowed line with &&", params: harnCreate("echo a && echo b"),
			stdout: "a\nb\n", combined: []string{"a\nb\n"}, success: true,
			exactJSON: `{"exitCode":0,"stdout":"a\nb\n","stderr":"","combined":"a\nb\n","success":true}`,
			line:      "echo a && echo b", reason: "terminal.allow echo a && echo b (exactly)",
		},
		{
			name: "stdout and stderr apart, an exit code", params: harnCreate("printf out; printf err >&2; exit 3"),
			stdout: "out", stderr: "err", combined: []string{"outerr", "errout"}, exit: 3,
		},
		{
			name: "a plain line allowed by a wildcard pattern", params: harnCreate("echo hello   world"),
			stdout: "hello world\n", combined: []string{"hello world\n"}, success: true,
			line: "echo hello   world", reason: "terminal.allow echo **",
		},
		{
			name: "output cut to the byte limit on a character boundary", params: `{"sessionId":"s","command":` + quoteJSON(`printf 'x\303\251\342\202\254'`) + `,"outputByteLimit":4,"shell":` + sh + `}`,
			stdout: "€", combined: []string{"€"}, success: true, limit: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := createFromWire(ctx, t, s, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			w := waitFromWire(ctx, t, s, id)
			if w.Stdout == nil || *w.Stdout != tc.stdout || w.Stderr == nil || *w.Stderr != tc.stderr || w.Combined == nil || w.Success == nil || *w.Success != tc.success {
				t.Fatalf("wait_for_exit: %s", w.raw)
			}
			found := false
			for _, c := range tc.combined {
				found = found || *w.Combined == c
			}
			if !found {
				t.Errorf("combined %q, want one of %q", *w.Combined, tc.combined)
			}
			if code, ok := w.acp.ExitCode.Get(); !ok || code != tc.exit || w.ExitCode == nil || *w.ExitCode != tc.exit {
				t.Errorf("exit code: %s", w.raw)
			}
			if tc.exactJSON != "" && !wiretest.EqualJSON(t, []byte(w.raw), []byte(tc.exactJSON)) {
				t.Errorf("answer %s, want %s", w.raw, tc.exactJSON)
			}
			if tc.limit > 0 && (len(*w.Stdout) > tc.limit || !utf8.ValidString(*w.Stdout)) {
				t.Errorf("stdout beyond the limit or not UTF-8: %q", *w.Stdout)
			}
			// terminal/output still answers the combined output.
			res, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
			if err != nil || res.Output != *w.Combined || res.Truncated != (tc.limit > 0) {
				t.Errorf("terminal/output: %+v %v", res, err)
			}
			if tc.line != "" && !hasEvent(events(), testShellID, tc.line, true, tc.reason) {
				t.Errorf("no event for %q allowed by %q: %+v", tc.line, tc.reason, events())
			}
		})
	}

	// A signal: no exit code, success false.
	id, err := createFromWire(ctx, t, s, harnCreate("sleep 30"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kill(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); err != nil {
		t.Fatal(err)
	}
	if w := waitFromWire(ctx, t, s, id); w.Success == nil || *w.Success || !w.acp.ExitCode.IsAbsent() || w.acp.Signal.IsAbsent() {
		t.Errorf("killed: %s", w.raw)
	}
}

// What terminal/create refuses of a Harn shell: a shell the host does not
// offer (an unknown id, a known id with another path), shell with args, a
// shell that is not a Shell; and every shell command line that would slip
// more than its words past a wildcard pattern. Nothing refused runs.
func TestHarnShellRefused(t *testing.T) {
	posix(t)
	s, events := shellServer(t, "echo **", "go test **", "git status", "touch *", "echo a && echo b", "echo *", "ls -?")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	known := testShell(t, s)
	sh := shellJSON(t, known, nil)
	with := func(name string, v any) string {
		return shellJSON(t, known, func(m map[string]jsontext.Value) {
			if v == nil {
				delete(m, name)
				return
			}
			data, _ := json.Marshal(v)
			m[name] = data
		})
	}
	pwned := filepath.Join(s.Files.WS.Dir(), "pwned")
	for _, tc := range []struct {
		name, params string
		code         int64
		message      string
	}{
		{"an unknown shell id", `{"sessionId":"s","command":"echo hi","shell":` + with("id", "no-such-shell") + `}`, rpc.CodeInvalidParams, `unknown shell "no-such-shell"`},
		{"a known id with another path", `{"sessionId":"s","command":"touch pwned","shell":` + with("path", "/tmp/not-the-shell") + `}`, rpc.CodeInvalidParams, `is /bin/sh on this host, not /tmp/not-the-shell`},
		{"a known id with another path to a shell", `{"sessionId":"s","command":"echo hi","shell":` + with("path", "/bin/bash") + `}`, rpc.CodeInvalidParams, "not /bin/bash"},
		{"shell and args", `{"sessionId":"s","command":"echo","args":["hi"],"shell":` + sh + `}`, rpc.CodeInvalidParams, "args must be empty"},
		{"shell null", `{"sessionId":"s","command":"echo hi","shell":null}`, rpc.CodeInvalidParams, "not a Shell"},
		{"shell a string", `{"sessionId":"s","command":"echo hi","shell":"/bin/sh"}`, rpc.CodeInvalidParams, "not a Shell"},
		{"shell without a path", `{"sessionId":"s","command":"echo hi","shell":` + with("path", nil) + `}`, rpc.CodeInvalidParams, "missing required member"},
		{"shell with a member Shell lacks", `{"sessionId":"s","command":"echo hi","shell":` + with("argv0", "x") + `}`, rpc.CodeInvalidParams, "unknown member"},
		{"shell with a wrong kind", `{"sessionId":"s","command":"echo hi","shell":` + with("default_args", "-c") + `}`, rpc.CodeInvalidParams, "not a Shell"},
		{"a NUL in the line", `{"sessionId":"s","command":"echo a\u0000b","shell":` + sh + `}`, rpc.CodeInvalidParams, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createFromWire(ctx, t, s, tc.params)
			if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Fatalf("got %v, want code %d with %q", err, tc.code, tc.message)
			}
		})
	}

	// Bypass attempts: each starts with words a wildcard pattern allows.
	for _, line := range []string{
		"go test x; touch pwned",
		"go test x;touch pwned",
		"go test x && touch pwned",
		"go test x || touch pwned",
		"go test x | sh",
		"go test x & touch pwned",
		"go test $(touch pwned)",
		"go test `touch pwned`",
		"go test ${HOME}",
		"echo $HOME",
		"go test x > pwned",
		"go test x>pwned",
		"go test x >> pwned",
		"go test < /etc/passwd",
		"go test x 2>pwned",
		"go test x\ntouch pwned",
		"go test x\rtouch pwned",
		"go test x\n",
		"echo (touch pwned)",
		"echo {a,b}",
		"echo ~",
		"echo ~root",
		"echo *",   // glob: the pattern echo * means one argument, literally
		"ls -?",    // glob ? in the line
		"echo [a]", // glob class
		`echo "$(touch pwned)"`,
		`echo 'a'`,
		`echo a\;touch`,
		"echo =touch",
		"echo a # b",
		"echo !!",
		"echo %PATH%",
		"echo a,b",
		"echo @args",
		"echo a^&touch",
		"echo\u00a0a",
		"echo a\u2028b",
		"echo a && echo b; touch pwned", // an exact pattern allows exactly its line
		"echo a && echo b && touch pwned",
		"echo a && echo b\ntouch pwned",
		"echo a &&  echo b", // not the same line
		"git status;",
		"",
		"   ",
	} {
		t.Run("bypass "+line, func(t *testing.T) {
			_, err := createFromWire(ctx, t, s, `{"sessionId":"s","command":`+quoteJSON(line)+`,"shell":`+sh+`}`)
			if code(err) != files.CodeDenied {
				t.Fatalf("%q: %v, want denied (%d)", line, err, files.CodeDenied)
			}
		})
	}
	s.Terms.Close(5 * time.Second)
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a refused command ran")
	}
	if !hasEvent(events(), testShellID, "go test x; touch pwned", false, "denied (terminal.allow does not list it; a shell command line with shell syntax") {
		t.Errorf("no denial event: %+v", events())
	}
}

// A terminal without a shell (plain ACP) is decided and run as before:
// stdout and stderr share one pipe, so terminal/output has them in the
// order written, and its wait_for_exit adds combined and success (not
// stdout and stderr, which were not captured apart).
func TestACPWaitHasHarnMembers(t *testing.T) {
	posix(t)
	s, _ := testServer(t, "sh -c *", "echo a && echo b")
	// 10s per command: under the race detector each command's supervisor
	// is this race-built test binary, which takes about a second to start
	// on a loaded machine.
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		id, err := createFromWire(ctx, t, s, `{"sessionId":"s","command":"sh","args":["-c","echo out; echo err >&2; echo out2; exit 1"]}`)
		if err != nil {
			t.Fatal(err)
		}
		w := waitFromWire(ctx, t, s, id)
		if !wiretest.EqualJSON(t, []byte(w.raw), []byte(`{"exitCode":1,"combined":"out\nerr\nout2\n","success":false}`)) {
			t.Fatalf("wait_for_exit: %s", w.raw)
		}
		res, err := s.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
		if err != nil || res.Output != "out\nerr\nout2\n" {
			t.Fatalf("terminal/output: %+v %v", res, err)
		}
		// Released, or the session's terminal quota would stop the loop.
		if _, err := s.Release(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); err != nil {
			t.Fatal(err)
		}
	}
	// An ACP command with blanks and no args is a command line (what
	// claude-code-acp sends): it runs through sh, decided by the rule for
	// shell lines, so only a plain line or an exact pattern allows it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := createFromWire(ctx, t, s, `{"sessionId":"s","command":"echo a && echo b"}`)
	if err != nil {
		t.Fatalf("an allowed command line as ACP's command: %v", err)
	}
	if w := waitFromWire(ctx, t, s, id); !strings.Contains(w.raw, `"combined":"a\nb\n"`) {
		t.Fatalf("wait_for_exit: %s", w.raw)
	}
	for _, line := range []string{"echo a && echo b; id", "echo $HOME", "echo a  && echo b"} {
		if id, err := createFromWire(ctx, t, s, fmt.Sprintf(`{"sessionId":"s","command":%q}`, line)); code(err) != files.CodeDenied {
			t.Errorf("command line %q: %q %v", line, id, err)
		}
	}
}
