package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Output kept per terminal: the agent's outputByteLimit, at most
// maxTerminalOutput; defaultTerminalOutput when it gives none.
const (
	defaultTerminalOutput = 1 << 20
	maxTerminalOutput     = 16 << 20
)

// terminals runs the commands of terminal/create.
type terminals struct {
	mu   sync.Mutex
	next int
	m    map[string]*terminal
}

// terminal is one command and its output.
type terminal struct {
	session acp.SessionID
	cmd     *exec.Cmd
	out     *tailBuffer   // stdout and stderr
	stdout  *tailBuffer   // stdout alone, for a command run with Harn's shell
	stderr  *tailBuffer   // likewise stderr
	done    chan struct{} // closed once the command has exited
	exit    acp.TerminalExitStatus
}

func (t *terminal) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// get finds a session's terminal.
func (ts *terminals) get(session acp.SessionID, id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.m[id]
	if !ok || t.session != session {
		return nil, rpc.NewError(codeNotFound, fmt.Sprintf("no terminal %q in session %q", id, session), map[string]string{"terminalId": id})
	}
	return t, nil
}

// closeAll kills every command still running and waits for them, up to
// timeout.
func (ts *terminals) closeAll(timeout time.Duration) {
	ts.mu.Lock()
	all := ts.m
	ts.m = nil
	ts.mu.Unlock()
	deadline := time.After(timeout)
	for _, t := range all {
		if !t.exited() {
			_ = killGroup(t.cmd.Process)
		}
		select {
		case <-t.done:
		case <-deadline:
			return
		}
	}
}

// terminalCreate serves terminal/create: it runs a command the policy
// allows in the workspace (or Cwd inside it): the ACP command and args
// without a shell, or, when the request carries Harn's shell, the command
// line through that shell (harnShell).
func (a *app) terminalCreate(ctx context.Context, p *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	line := clean(strings.Join(append([]string{p.Command}, p.Args...), " "))
	program, argv := p.Command, p.Args
	via := ""
	var d decision
	sh, err := harnShell(p)
	if err != nil {
		return nil, err
	}
	if sh != nil {
		if program, argv, err = a.shellArgv(ctx, p, sh); err != nil {
			a.render.line(a.render.paint("terminal", cRed) + " [" + clean(sh.ID) + "] " + line + ": " + clean(err.Error()))
			return nil, err
		}
		via = " [" + clean(sh.ID) + "]"
		d = a.policy.shellCommand(p.Command)
	} else {
		d = a.policy.command(p.Command, p.Args)
	}
	if !d.Allow {
		a.render.line(a.render.paint("terminal", cRed) + via + " " + line + ": denied (" + d.Reason + ")")
		return nil, rpc.NewError(codeDenied, fmt.Sprintf("terminal/create %s denied: %s", p.Command, d.Reason), map[string]string{"command": p.Command, "reason": d.Reason})
	}
	dir := a.ws.root
	if cwd, ok := p.Cwd.Get(); ok {
		_, real, err := a.ws.resolve(cwd)
		if err != nil {
			return nil, denied("terminal/create cwd", cwd, "outside the workspace")
		}
		// Checked here: exec would report a missing cwd as the command
		// missing.
		fi, err := os.Stat(real)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, rpc.NewError(codeNotFound, fmt.Sprintf("terminal/create: cwd %s does not exist", cwd), map[string]string{"path": cwd})
		case err != nil:
			return nil, err
		case !fi.IsDir():
			return nil, rpc.InvalidParams(fmt.Errorf("terminal/create: cwd %s is not a directory", cwd))
		}
		dir = real
	}
	limit := int64(defaultTerminalOutput)
	if l, ok := p.OutputByteLimit.Get(); ok {
		if l < 0 {
			return nil, rpc.InvalidParams(errors.New("terminal/create: outputByteLimit must not be negative"))
		}
		limit = min(l, maxTerminalOutput)
	}
	cmd := exec.Command(program, argv...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for _, e := range p.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	t := &terminal{session: p.SessionID, cmd: cmd, out: &tailBuffer{limit: int(limit)}, done: make(chan struct{})}
	var streams []*streamWriter
	if sh != nil {
		// Harn reads stdout and stderr apart: two pipes. (A command
		// without Harn's shell keeps writing both into one pipe, so that
		// terminal/output has them exactly in the order written.)
		t.stdout, t.stderr = &tailBuffer{limit: int(limit)}, &tailBuffer{limit: int(limit)}
		streams = []*streamWriter{{own: t.stdout, all: t.out}, {own: t.stderr, all: t.out}}
		cmd.Stdout, cmd.Stderr = streams[0], streams[1]
	} else {
		cmd.Stdout, cmd.Stderr = t.out, t.out
	}
	cmd.WaitDelay = time.Second // a background process keeping the output open
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		a.render.line(a.render.paint("terminal", cRed) + via + " " + line + ": " + clean(err.Error()))
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, rpc.NewError(codeNotFound, "terminal/create: "+err.Error(), map[string]string{"command": p.Command})
		}
		return nil, err
	}
	a.terms.mu.Lock()
	if a.terms.m == nil {
		a.terms.m = map[string]*terminal{}
	}
	a.terms.next++
	id := fmt.Sprintf("term-%d", a.terms.next)
	a.terms.m[id] = t
	a.terms.mu.Unlock()
	a.render.line(a.render.paint("terminal", cDim) + " " + id + via + " " + line + ": allowed (" + d.Reason + ")")
	go func() {
		err := cmd.Wait()
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.exit.Signal = wire.Some(signalName(ws.Signal()))
			} else {
				t.exit.ExitCode = wire.Some(int64(ee.ExitCode()))
			}
		} else if cmd.ProcessState != nil {
			t.exit.ExitCode = wire.Some(int64(cmd.ProcessState.ExitCode()))
		}
		// Wait has copied all output: what a stream held back of a
		// character it never finished goes in now.
		for _, w := range streams {
			w.flush()
		}
		close(t.done)
	}()
	return &acp.CreateTerminalResponse{TerminalID: acp.TerminalID(id)}, nil
}

// terminalOutput serves terminal/output.
func (a *app) terminalOutput(_ context.Context, p *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	t, err := a.terms.get(p.SessionID, string(p.TerminalID))
	if err != nil {
		return nil, err
	}
	exited := t.exited() // before reading, so that all output is in
	text, truncated := t.out.read()
	res := &acp.TerminalOutputResponse{Output: text, Truncated: truncated}
	if exited {
		res.ExitStatus = wire.Some(t.exit)
	}
	return res, nil
}

// terminalWaitForExit serves terminal/wait_for_exit.
func (a *app) terminalWaitForExit(ctx context.Context, p *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	t, err := a.terms.get(p.SessionID, string(p.TerminalID))
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &acp.WaitForTerminalExitResponse{ExitCode: t.exit.ExitCode, Signal: t.exit.Signal}
	// Harn's members (see README.md, "Harn compatibility"): it reads the
	// output from this answer, not from terminal/output. stdout and stderr
	// only where they were captured apart. (read returns valid UTF-8, which
	// always quotes.)
	text := func(name string, b *tailBuffer) {
		s, _ := b.read()
		v, _ := jsontext.AppendQuote(nil, s)
		res.Extra.Set(name, v)
	}
	if t.stdout != nil {
		text("stdout", t.stdout)
		text("stderr", t.stderr)
	}
	text("combined", t.out)
	code, exited := t.exit.ExitCode.Get()
	res.Extra.Set("success", jsontext.Value(strconv.FormatBool(exited && code == 0)))
	return res, nil
}

// terminalKill serves terminal/kill: the command and every process it
// started are killed; the terminal stays.
func (a *app) terminalKill(_ context.Context, p *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	t, err := a.terms.get(p.SessionID, string(p.TerminalID))
	if err != nil {
		return nil, err
	}
	if !t.exited() {
		_ = killGroup(t.cmd.Process)
	}
	return &acp.KillTerminalResponse{}, nil
}

// terminalRelease serves terminal/release: it kills a running command and
// forgets the terminal.
func (a *app) terminalRelease(_ context.Context, p *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	t, err := a.terms.get(p.SessionID, string(p.TerminalID))
	if err != nil {
		return nil, err
	}
	if !t.exited() {
		_ = killGroup(t.cmd.Process)
	}
	a.terms.mu.Lock()
	delete(a.terms.m, string(p.TerminalID))
	a.terms.mu.Unlock()
	return &acp.ReleaseTerminalResponse{}, nil
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

// streamWriter is a command's stdout or stderr: it keeps the stream in
// own and adds it to all, the output of both. So that all never has a
// character of one stream cut by the other's output, a character split
// between two writes is added to all once complete (or by flush).
type streamWriter struct {
	own, all *tailBuffer
	partial  []byte // the start of a character, not yet in all
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.own.Write(p)
	buf := p
	if len(w.partial) > 0 {
		buf = append(w.partial, p...)
	}
	// Hold back a character that the next write completes.
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	w.all.Write(buf[:cut])
	w.partial = bytes.Clone(buf[cut:])
	return len(p), nil
}

// flush adds what Write held back to all.
func (w *streamWriter) flush() {
	if len(w.partial) > 0 {
		w.all.Write(w.partial)
		w.partial = nil
	}
}

// tailBuffer keeps the last limit bytes written to it, cut at a character
// boundary.
type tailBuffer struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		// Drop from the front, then up to the next character's start.
		for over < len(b.buf) && !utf8.RuneStart(b.buf[over]) {
			over++
		}
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.truncated = true
	}
	return len(p), nil
}

// read returns the output as valid UTF-8 text (a character split between
// two writes is completed by the second; invalid bytes become U+FFFD).
func (b *tailBuffer) read() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "\uFFFD"), b.truncated
}

// signalName is a signal's conventional name ("SIGKILL").
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGABRT: "SIGABRT", syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
