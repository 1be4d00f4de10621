package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// terminalError maps a terminal.Manager error onto this host's answers.
func terminalError(method string, err error) error {
	switch {
	case errors.Is(err, terminal.ErrNotFound):
		return rpc.NewError(files.CodeNotFound, method+": "+err.Error(), nil)
	case errors.Is(err, terminal.ErrQuota):
		return rpc.NewError(files.CodeDenied, method+": "+err.Error(), map[string]string{"reason": "quota"})
	case errors.Is(err, terminal.ErrInvalid):
		return rpc.InvalidParams(fmt.Errorf("%s: %w", method, err))
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return rpc.NewError(files.CodeNotFound, method+": "+err.Error(), nil)
	}
	return err
}

// terminalCreate serves terminal/create: it runs a command the policy
// allows in the workspace (or Cwd inside it), with the environment the
// policy builds: the ACP command and args without a shell, or, when the
// request carries Harn's shell, the command line through that shell
// (harnShell).
func (a *app) terminalCreate(ctx context.Context, p *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	line := clean(strings.Join(append([]string{p.Command}, p.Args...), " "))
	program, argv := p.Command, p.Args
	via := ""
	fail := func(what string, err error) error {
		a.render.line(a.render.paint("terminal", cRed) + via + " " + line + ": " + what)
		return err
	}
	var d decision
	sh, err := harnShell(p)
	if err != nil {
		return nil, err
	}
	if sh != nil {
		via = " [" + clean(sh.ID) + "]"
		if program, argv, err = a.shellArgv(ctx, p, sh); err != nil {
			return nil, fail(clean(err.Error()), err)
		}
		d = a.policy.shellCommand(p.Command)
	} else if commandLine(p) {
		// claude-code-acp sends its Bash tool's whole command line as the
		// command: it runs through sh, decided as a shell line.
		via, program, argv = " [sh -c]", "/bin/sh", []string{"-c", p.Command}
		d = a.policy.shellCommand(p.Command)
	} else {
		d = a.policy.command(p.Command, p.Args)
	}
	if !d.Allow {
		return nil, fail("denied ("+d.Reason+")", rpc.NewError(files.CodeDenied, fmt.Sprintf("terminal/create %s denied: %s", p.Command, d.Reason), map[string]string{"command": p.Command, "reason": d.Reason}))
	}
	vars := make([]terminal.Var, len(p.Env))
	for i, e := range p.Env {
		vars[i] = terminal.Var{Name: e.Name, Value: e.Value}
	}
	env, err := a.policy.Terminal.Env.Build(os.Environ(), vars)
	if err != nil {
		return nil, fail("denied ("+clean(err.Error())+")", rpc.NewError(files.CodeDenied, "terminal/create "+p.Command+" denied: "+err.Error(), map[string]string{"command": p.Command, "reason": err.Error()}))
	}
	dir := a.ws.Dir()
	if cwd, ok := p.Cwd.Get(); ok {
		if dir, err = a.ws.Dirname(cwd); err != nil {
			return nil, fail("cwd "+clean(err.Error()), a.files.Error("terminal/create: cwd", "terminal/create cwd", cwd, err))
		}
	}
	limit, set := p.OutputByteLimit.Get()
	if limit < 0 {
		return nil, rpc.InvalidParams(errors.New("terminal/create: outputByteLimit must not be negative"))
	}
	if set && limit == 0 {
		limit = -1 // keep nothing
	}
	id, err := a.terms.Start(ctx, terminal.Spec{
		Session: string(p.SessionID), Program: program, Args: argv, Dir: dir, Env: env,
		OutputBytes: limit, Split: sh != nil,
	})
	if err != nil {
		return nil, fail(clean(err.Error()), terminalError("terminal/create", err))
	}
	a.render.line(a.render.paint("terminal", cDim) + " " + id + via + " " + line + ": allowed (" + d.Reason + ") env: " + clean(cmpOr(terminal.Audit(env), "(empty)")))
	return &acp.CreateTerminalResponse{TerminalID: acp.TerminalID(id)}, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// exitStatus is a terminal.Status in ACP's shape.
func exitStatus(s terminal.Status) acp.TerminalExitStatus {
	var e acp.TerminalExitStatus
	if s.ExitCode != nil {
		e.ExitCode = wire.Some(int64(*s.ExitCode))
	}
	if s.Signal != "" {
		e.Signal = wire.Some(s.Signal)
	}
	return e
}

// terminalOutput serves terminal/output.
func (a *app) terminalOutput(_ context.Context, p *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	o, err := a.terms.Output(string(p.SessionID), string(p.TerminalID))
	if err != nil {
		return nil, terminalError("terminal/output", err)
	}
	res := &acp.TerminalOutputResponse{Output: o.Combined, Truncated: o.Truncated}
	if o.Exited {
		res.ExitStatus = wire.Some(exitStatus(o.Status))
	}
	return res, nil
}

// terminalWaitForExit serves terminal/wait_for_exit, with the members
// Harn reads its result from (see README.md, "Harn compatibility"):
// combined, success and, for a command run through Harn's shell, stdout
// and stderr.
func (a *app) terminalWaitForExit(ctx context.Context, p *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	o, err := a.terms.Wait(ctx, string(p.SessionID), string(p.TerminalID))
	if err != nil {
		return nil, terminalError("terminal/wait_for_exit", err)
	}
	st := exitStatus(o.Status)
	res := &acp.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}
	text := func(name, s string) {
		v, _ := jsontext.AppendQuote(nil, s) // valid UTF-8: always quotes
		res.Extra.Set(name, v)
	}
	if o.Split {
		text("stdout", o.Stdout)
		text("stderr", o.Stderr)
	}
	text("combined", o.Combined)
	res.Extra.Set("success", jsontext.Value(strconv.FormatBool(o.Status.ExitCode != nil && *o.Status.ExitCode == 0)))
	return res, nil
}

// terminalKill serves terminal/kill: the command and every process it
// started are killed; the terminal stays.
func (a *app) terminalKill(_ context.Context, p *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	if err := a.terms.Kill(string(p.SessionID), string(p.TerminalID)); err != nil {
		return nil, terminalError("terminal/kill", err)
	}
	return &acp.KillTerminalResponse{}, nil
}

// terminalRelease serves terminal/release: it kills what still runs and
// forgets the terminal.
func (a *app) terminalRelease(_ context.Context, p *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	if err := a.terms.Release(string(p.SessionID), string(p.TerminalID)); err != nil {
		return nil, terminalError("terminal/release", err)
	}
	return &acp.ReleaseTerminalResponse{}, nil
}

// commandLine reports whether an ACP terminal/create names a command
// line rather than a program: no args, and blanks in the command (no
// program this host would run has them in its name).
func commandLine(p *acp.CreateTerminalRequest) bool {
	return len(p.Args) == 0 && strings.ContainsAny(strings.TrimSpace(p.Command), " \t\n")
}

// harnShell decodes the shell member Harn adds to terminal/create (a
// Shell of its shell discovery, strictly: every member, nothing else). Nil
// when there is none. A shell runs the command as one command line, so
// args must be empty.
func harnShell(p *acp.CreateTerminalRequest) (*harn.Shell, error) {
	raw, ok := p.Extra.Get("shell")
	if !ok {
		return nil, nil
	}
	var sh harn.Shell
	if err := wire.Unmarshal(raw, &sh); err != nil {
		return nil, rpc.InvalidParams(fmt.Errorf("terminal/create: shell is not a Shell of Harn's shell discovery: %w", err))
	}
	if len(p.Args) > 0 {
		return nil, rpc.InvalidParams(errors.New("terminal/create: with shell, command is the whole command line: args must be empty"))
	}
	return &sh, nil
}

// shellArgv builds the argv that runs the command line with sh the way
// process.shell_invocation does, provided sh is a shell this host offers
// (same id, same path): the runtime cannot name its own program as the
// shell. The host's description of the shell is used, not the runtime's.
func (a *app) shellArgv(ctx context.Context, p *acp.CreateTerminalRequest, sh *harn.Shell) (string, []string, error) {
	session := string(p.SessionID)
	inv, err := a.shells.ProcessShellInvocation(ctx, &harn.HostCallParams{SessionID: &session}, &harn.ShellInvocationRequest{ShellID: &sh.ID, Command: &p.Command})
	if err != nil {
		if e, ok := errors.AsType[*rpc.Error](err); ok {
			return "", nil, rpc.NewError(e.Code, "terminal/create: "+e.Message, e.Data)
		}
		return "", nil, err
	}
	if inv.Shell.Path != sh.Path {
		return "", nil, rpc.NewError(rpc.CodeInvalidParams,
			fmt.Sprintf("terminal/create: shell %s is %s on this host, not %s", strconv.Quote(sh.ID), inv.Shell.Path, sh.Path),
			map[string]string{"shell_id": sh.ID, "path": sh.Path})
	}
	return inv.Program, inv.Args, nil
}
