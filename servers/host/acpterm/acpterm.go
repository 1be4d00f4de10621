// Package acpterm serves ACP's terminal/* methods (terminal/create,
// terminal/output, terminal/wait_for_exit, terminal/kill and
// terminal/release) with a servers/host/terminal Manager, under a command
// allow-list and an environment policy, in a workspace
// (servers/host/files' WS).
//
// terminal/create runs ACP's command and args without a shell, decided by
// terminal.Commands.Match; a command with blanks and no args (what
// claude-code-acp sends) is a command line, run as /bin/sh -c LINE and
// decided by terminal.Commands.MatchShellLine, the strict rule for shell
// lines (plain words, or a wildcard-free pattern equal to the line); and
// a request with Harn's shell member runs its command line through that
// shell, provided it is one of Shells with the same id and path, built
// the way process.shell_invocation builds it. The environment is
// Env.Build's (nothing inherited but what it names). terminal/wait_for_exit
// also answers the members Harn reads: combined, success and, for a
// Harn shell command, stdout and stderr. ConnOptions sets a connection up
// so that pending waits never starve other requests. Refusals are -32001 with data
// {command, reason} (data.reason "quota" past a Manager quota), a missing
// terminal or program -32002.
package acpterm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/shells"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// Server serves terminal/*. Its fields are set before use and not
// changed after.
type Server struct {
	// Terms runs the commands.
	Terms *terminal.Manager
	// Files gives the workspace commands run in (a request's cwd must be
	// a directory inside it) and maps its errors.
	Files *files.Server
	// Commands is the allow-list; nil allows nothing.
	Commands *terminal.Commands
	// Env builds each command's environment from Environ (nil:
	// os.Environ) and the request's env.
	Env     terminal.EnvPolicy
	Environ func() []string
	// Shells are the shells a Harn runtime may name; nil refuses Harn's
	// shell member.
	Shells *shells.Provider
	// Observe, when set, is told every terminal/create decided or failed.
	Observe func(Event)
}

// Event is one terminal/create, for an audit line.
type Event struct {
	// ID is the terminal started; "" when none was.
	ID string
	// Via is the shell the line ran through ("sh -c", a Harn shell's id),
	// "" for a command run without one.
	Via string
	// Line is the command and its arguments, as the request gave them.
	Line string
	// Allowed says a terminal started; Reason says which pattern allowed
	// it, or why the request failed.
	Allowed bool
	Reason  string
	// Env is the environment it got (terminal.Audit: secrets masked).
	Env string
}

func (s *Server) observe(e Event) {
	if s.Observe != nil {
		s.Observe(e)
	}
}

// Preempt are the terminal/* methods that never block (output, kill and
// release): ConnOptions has a connection handle them on its preempted
// lane, so that pending waits never hold them up.
var Preempt = []string{acp.MethodTerminalOutput, acp.MethodTerminalKill, acp.MethodTerminalRelease}

// ConnOptions sets o for a connection that serves s: room for every
// terminal/wait_for_exit that s.Terms lets be pending at once
// (terminal.Limits.MaxWaits) besides others concurrent requests (at least
// one) for everything else, and Preempt on the preempted lane. Pending
// waits then never take the slots other requests need. (Every slot is
// also memory that a peer which stops reading can make a handler hold:
// keep others modest.)
func (s *Server) ConnOptions(o *rpc.Options, others int) {
	o.MaxConcurrentRequests = max(others, 1) + s.Terms.Limits().MaxWaits
	for _, m := range Preempt {
		if !slices.Contains(o.Preempt, m) {
			o.Preempt = append(o.Preempt, m)
		}
	}
}

// Register sets h's terminal/* handlers to s's.
func (s *Server) Register(h *acp.ClientHandlers) {
	h.TerminalCreate, h.TerminalOutput, h.TerminalWaitForExit = s.Create, s.Output, s.WaitForExit
	h.TerminalKill, h.TerminalRelease = s.Kill, s.Release
}

// DecideCommand decides a command and its arguments run without a shell
// in the workspace directory dir (slash-separated, "." the root; see
// terminal.Commands.MatchIn).
func (s *Server) DecideCommand(dir, command string, args []string) (ok bool, reason string) {
	if s.Commands != nil {
		if pat, ok := s.Commands.MatchIn(dir, command, args); ok {
			return true, "terminal.allow " + pat
		}
	}
	return false, "terminal.allow does not list it" + s.where(dir)
}

// where is " in DIR" when the allow-list has rules for some directories
// only, so that a denial says where it was asked.
func (s *Server) where(dir string) string {
	if s.Commands.Scoped() {
		return " in " + dir
	}
	return ""
}

// DecideLine decides a command line a shell is to run in the workspace
// directory dir (terminal.Commands.MatchShellLineIn): a plain line word by
// word, any other only by a pattern without wildcards equal to it.
func (s *Server) DecideLine(dir, line string) (ok bool, reason string) {
	var pat string
	var exact bool
	if s.Commands != nil {
		pat, exact, ok = s.Commands.MatchShellLineIn(dir, line)
	}
	switch {
	case ok && exact:
		return true, "terminal.allow " + pat + " (exactly)"
	case ok:
		return true, "terminal.allow " + pat
	case terminal.PlainShellLine(line) && strings.TrimSpace(line) == "":
		return false, "an empty command line"
	case terminal.PlainShellLine(line):
		return false, "terminal.allow does not list it" + s.where(dir)
	}
	return false, "terminal.allow does not list it; a shell command line with shell syntax (quotes, ;, &, |, $, backticks, redirections, globs, newlines, ...) is allowed only by a pattern without wildcards equal to it"
}

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

// Create serves terminal/create: it runs a command the policy
// allows in the workspace (or Cwd inside it), with the environment the
// policy builds: the ACP command and args without a shell, or, when the
// request carries Harn's shell, the command line through that shell
// (harnShell).
func (s *Server) Create(ctx context.Context, p *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	line := strings.Join(append([]string{p.Command}, p.Args...), " ")
	program, argv := p.Command, p.Args
	via := ""
	fail := func(what string, err error) error {
		s.observe(Event{Via: via, Line: line, Reason: what})
		return err
	}
	// The command starts in the directory checked here, even if the agent
	// swaps a link in for its path before the start; the policy decides on
	// where that directory is (its real path in the workspace).
	cwd, ok := p.Cwd.Get()
	if !ok {
		cwd = "."
	}
	dirFile, dir, err := s.Files.WS.OpenDir(cwd)
	if err != nil {
		return nil, fail("cwd "+err.Error(), s.Files.Error("terminal/create: cwd", "terminal/create cwd", cwd, err))
	}
	defer dirFile.Close()
	rel, err := filepath.Rel(s.Files.WS.Dir(), dir)
	if err != nil {
		return nil, fail("cwd "+err.Error(), err)
	}
	rel = filepath.ToSlash(rel)
	var reason string
	sh, err := harnShell(p)
	if err != nil {
		return nil, err
	}
	if sh != nil {
		via = sh.ID
		if s.Shells == nil {
			return nil, fail("no shells", rpc.InvalidParams(errors.New("terminal/create: this host runs no shell")))
		}
		if program, argv, err = s.shellArgv(ctx, p, sh); err != nil {
			return nil, fail(err.Error(), err)
		}
		ok, reason = s.DecideLine(rel, p.Command)
	} else if commandLine(p) {
		// claude-code-acp sends its Bash tool's whole command line as the
		// command: it runs through sh, decided as a shell line.
		via, program, argv = "sh -c", "/bin/sh", []string{"-c", p.Command}
		ok, reason = s.DecideLine(rel, p.Command)
	} else {
		ok, reason = s.DecideCommand(rel, p.Command, p.Args)
	}
	if !ok {
		return nil, fail("denied ("+reason+")", rpc.NewError(files.CodeDenied, fmt.Sprintf("terminal/create %s denied: %s", p.Command, reason), map[string]string{"command": p.Command, "reason": reason}))
	}
	vars := make([]terminal.Var, len(p.Env))
	for i, e := range p.Env {
		vars[i] = terminal.Var{Name: e.Name, Value: e.Value}
	}
	environ := os.Environ
	if s.Environ != nil {
		environ = s.Environ
	}
	env, err := s.Env.Build(environ(), vars)
	if err != nil {
		return nil, fail("denied ("+err.Error()+")", rpc.NewError(files.CodeDenied, "terminal/create "+p.Command+" denied: "+err.Error(), map[string]string{"command": p.Command, "reason": err.Error()}))
	}
	limit, set := p.OutputByteLimit.Get()
	if limit < 0 {
		return nil, rpc.InvalidParams(errors.New("terminal/create: outputByteLimit must not be negative"))
	}
	if set && limit == 0 {
		limit = -1 // keep nothing
	}
	id, err := s.Terms.Start(ctx, terminal.Spec{
		Session: string(p.SessionID), Program: program, Args: argv, Dir: dir, DirFile: dirFile, Env: env,
		OutputBytes: limit, Split: sh != nil,
	})
	if err != nil {
		return nil, fail(err.Error(), terminalError("terminal/create", err))
	}
	s.observe(Event{ID: id, Via: via, Line: line, Allowed: true, Reason: reason, Env: terminal.Audit(env)})
	return &acp.CreateTerminalResponse{TerminalID: acp.TerminalID(id)}, nil
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

// Output serves terminal/output.
func (s *Server) Output(_ context.Context, p *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	o, err := s.Terms.Output(string(p.SessionID), string(p.TerminalID))
	if err != nil {
		return nil, terminalError("terminal/output", err)
	}
	res := &acp.TerminalOutputResponse{Output: o.Combined, Truncated: o.Truncated}
	if o.Exited {
		res.ExitStatus = wire.Some(exitStatus(o.Status))
	}
	return res, nil
}

// WaitForExit serves terminal/wait_for_exit, with the members
// a Harn runtime reads its result from:
// combined, success and, for a command run through Harn's shell, stdout
// and stderr.
func (s *Server) WaitForExit(ctx context.Context, p *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	o, err := s.Terms.Wait(ctx, string(p.SessionID), string(p.TerminalID))
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

// Kill serves terminal/kill: the command and every process it
// started are killed; the terminal stays.
func (s *Server) Kill(_ context.Context, p *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	if err := s.Terms.Kill(string(p.SessionID), string(p.TerminalID)); err != nil {
		return nil, terminalError("terminal/kill", err)
	}
	return &acp.KillTerminalResponse{}, nil
}

// Release serves terminal/release: it kills what still runs and
// forgets the terminal.
func (s *Server) Release(_ context.Context, p *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	if err := s.Terms.Release(string(p.SessionID), string(p.TerminalID)); err != nil {
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
func (s *Server) shellArgv(ctx context.Context, p *acp.CreateTerminalRequest, sh *harn.Shell) (string, []string, error) {
	session := string(p.SessionID)
	inv, err := s.Shells.ProcessShellInvocation(ctx, &harn.HostCallParams{SessionID: &session}, &harn.ShellInvocationRequest{ShellID: &sh.ID, Command: &p.Command})
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
