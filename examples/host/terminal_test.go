package main

import (
	"context"
	"errors"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

func terminalPolicy(allow ...string) *policy {
	p := &policy{}
	p.Terminal.Env.Allow = []string{"GREETING"} // the variable TestTerminals sets
	p.Terminal.Allow = append(p.Terminal.Allow, allow...)
	p.commands, _ = terminal.NewCommands(allow)
	return p
}

func TestTerminals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX commands")
	}
	a, out := testApp(t, terminalPolicy("sh -c *", "sleep *", "pwd"))
	defer a.terms.Close(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	create := func(command string, args ...string) (string, error) {
		res, err := a.term.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: command, Args: args, Env: []acp.EnvVariable{{Name: "GREETING", Value: "hi"}}})
		if err != nil {
			return "", err
		}
		return string(res.TerminalID), nil
	}

	// Output, the environment, the exit code.
	id, err := create("sh", "-c", `echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	exit, err := a.term.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if code, _ := exit.ExitCode.Get(); err != nil || code != 3 || !exit.Signal.IsAbsent() {
		t.Fatalf("wait_for_exit: %+v %v", exit, err)
	}
	res, err := a.term.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	status, ok := res.ExitStatus.Get()
	if code, _ := status.ExitCode.Get(); err != nil || res.Output != "hi from "+a.ws.Dir()+"\noops\n" || res.Truncated || !ok || code != 3 {
		t.Fatalf("output: %+v %v", res, err)
	}
	if _, err := a.term.Release(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.term.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); rpcCode(err) != files.CodeNotFound {
		t.Fatalf("a released terminal: %v", err)
	}

	// Kill: a running command, and what it started, get SIGKILL.
	id, err = create("sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	res, _ = a.term.Output(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if !res.ExitStatus.IsAbsent() {
		t.Fatalf("a running command has an exit status: %+v", res)
	}
	if _, err := a.term.Output(ctx, &acp.TerminalOutputRequest{SessionID: "other", TerminalID: acp.TerminalID(id)}); rpcCode(err) != files.CodeNotFound {
		t.Fatalf("another session's terminal: %v", err)
	}
	start := time.Now()
	if _, err := a.term.Kill(ctx, &acp.KillTerminalRequest{SessionID: "s", TerminalID: acp.TerminalID(id)}); err != nil {
		t.Fatal(err)
	}
	exit, err = a.term.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	if sig, _ := exit.Signal.Get(); err != nil || sig != "SIGKILL" || time.Since(start) > 5*time.Second {
		t.Fatalf("after kill: %+v %v", exit, err)
	}

	// wait_for_exit honours its context.
	id, _ = create("sleep", "30")
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = a.term.WaitForExit(short, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: acp.TerminalID(id)})
	stop()
	if err == nil {
		t.Fatal("wait_for_exit outlived its context")
	}

	// Denied commands, a cwd outside the workspace, a missing command.
	if _, err := create("rm", "-rf", "x"); rpcCode(err) != files.CodeDenied {
		t.Fatalf("rm: %v", err)
	}
	if _, err := create("sleep"); rpcCode(err) != files.CodeDenied {
		t.Fatalf("sleep without its argument: %v", err)
	}
	_, err = a.term.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "pwd", Cwd: wire.Some(t.TempDir())})
	if rpcCode(err) != files.CodeDenied {
		t.Fatalf("cwd outside: %v", err)
	}
	// A cwd inside the workspace that is missing, or is a file, is said to
	// be so (it used to read as the command missing: "fork/exec
	// /usr/bin/pwd: no such file or directory").
	_, err = a.term.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "pwd", Cwd: wire.Some(filepath.Join(a.ws.Dir(), "no-dir"))})
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Code != files.CodeNotFound || !strings.Contains(e.Message, "cwd") || !strings.Contains(string(e.Data), `"path"`) {
		t.Fatalf("a missing cwd: %v", err)
	}
	file := writeFile(t, filepath.Join(a.ws.Dir(), "a-file"), "x")
	_, err = a.term.Create(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "pwd", Cwd: wire.Some(file)})
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Code != rpc.CodeInvalidParams || !strings.Contains(e.Message, "not a directory") {
		t.Fatalf("a file as cwd: %v", err)
	}
	a.policy = terminalPolicy("no-such-command-here")
	a.term = newTerm(a.terms, a.files, a.policy, a.shells, a.render)
	if _, err := create("no-such-command-here"); rpcCode(err) != files.CodeNotFound {
		t.Fatalf("missing command: %v", err)
	}

	// closeAll kills what still runs.
	a.terms.Close(5 * time.Second)
	text := rendered(a, out)
	for _, want := range []string{"terminal term-1 sh -c echo", "allowed (terminal.allow sh -c *)", "terminal rm -rf x: denied (terminal.allow does not list it)"} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q:\n%s", want, text)
		}
	}
}
