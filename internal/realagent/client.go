package realagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Decision is a permission decision: Allow, or not.
type Decision struct {
	Allow bool
}

// Client is a small ACP client for tests: it serves fs/read_text_file and
// fs/write_text_file inside Workspace (a path outside it is refused),
// terminal/* by running the command in the workspace in a process group of
// its own (killed on release), and session/request_permission through
// Decide. It records the permission requests it decided and the file
// operations it served. Handlers returns its ACP handlers.
type Client struct {
	Workspace string
	// Decide decides a permission request; nil allows everything.
	Decide func(*acp.RequestPermissionRequest) Decision
	// Env is the environment of terminal commands; when empty, only
	// PATH=/usr/local/bin:/usr/bin:/bin (nothing of the test's own).
	Env []string

	mu        sync.Mutex
	Log       []string // what the client did, in order ("read notes.txt", "allow ...", ...)
	terminals map[string]*terminal
	nextTerm  int
}

type terminal struct {
	cmd    *exec.Cmd
	out    *capped
	done   chan struct{}
	status *acp.TerminalExitStatus
}

// capped is a buffer that keeps the last max bytes written.
type capped struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(b)
	if over := c.buf.Len() - c.max; over > 0 {
		c.buf.Next(over)
		c.truncated = true
	}
	return len(b), nil
}

func (c *capped) read() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(c.buf.String(), "\uFFFD"), c.truncated
}

func (c *Client) log(format string, args ...any) {
	c.mu.Lock()
	c.Log = append(c.Log, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// Logged returns a copy of the log.
func (c *Client) Logged() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.Log...)
}

// resolve returns the absolute path of p, which must be in the workspace.
func (c *Client) resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Workspace, p)
	}
	p = filepath.Clean(p)
	ws := filepath.Clean(c.Workspace)
	if p != ws && !strings.HasPrefix(p, ws+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the workspace", p)
	}
	// Refuse links: a test workspace has none, and following one could leave it.
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("%s is a symbolic link", p)
	}
	return p, nil
}

func (c *Client) rel(p string) string {
	if r, err := filepath.Rel(c.Workspace, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

// Handlers returns the client's ACP handlers; update, when set, receives
// every session/update.
func (c *Client) Handlers(update func(context.Context, *acp.SessionNotification) error) *acp.ClientHandlers {
	if update == nil {
		update = func(context.Context, *acp.SessionNotification) error { return nil }
	}
	return &acp.ClientHandlers{
		SessionUpdate:            update,
		FsReadTextFile:           c.readTextFile,
		FsWriteTextFile:          c.writeTextFile,
		SessionRequestPermission: c.requestPermission,
		TerminalCreate:           c.terminalCreate,
		TerminalOutput:           c.terminalOutput,
		TerminalWaitForExit:      c.terminalWaitForExit,
		TerminalKill:             c.terminalKill,
		TerminalRelease:          c.terminalRelease,
	}
}

// maxFile bounds the bytes of a file the client reads.
const maxFile = 4 << 20

func (c *Client) readTextFile(_ context.Context, r *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	p, err := c.resolve(r.Path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFile {
		return nil, fmt.Errorf("%s is not a regular file under %d bytes", c.rel(p), maxFile)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	text := string(data)
	line, hasLine := r.Line.Get()
	limit, hasLimit := r.Limit.Get()
	if hasLine || hasLimit {
		lines := strings.SplitAfter(text, "\n")
		start := 0
		if hasLine && line > 1 {
			start = min(int(line-1), len(lines))
		}
		end := len(lines)
		if hasLimit && limit >= 0 {
			end = min(start+int(limit), len(lines))
		}
		text = strings.Join(lines[start:end], "")
	}
	c.log("read %s", c.rel(p))
	return &acp.ReadTextFileResponse{Content: text}, nil
}

func (c *Client) writeTextFile(_ context.Context, r *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	p, err := c.resolve(r.Path)
	if err != nil {
		return nil, err
	}
	if len(r.Content) > maxFile {
		return nil, fmt.Errorf("content over %d bytes", maxFile)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p, []byte(r.Content), 0o600); err != nil {
		return nil, err
	}
	c.log("write %s", c.rel(p))
	return &acp.WriteTextFileResponse{}, nil
}

func (c *Client) requestPermission(_ context.Context, r *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	d := Decision{Allow: true}
	if c.Decide != nil {
		d = c.Decide(r)
	}
	want := []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	if d.Allow {
		want = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	}
	title, _ := r.ToolCall.Title.Get()
	for _, k := range want {
		for _, o := range r.Options {
			if o.Kind == k {
				c.log("%s %q with %s", map[bool]string{true: "allow", false: "deny"}[d.Allow], title, o.OptionID)
				return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}, nil
			}
		}
	}
	// No option of the kind wanted: a denial cancels rather than pick
	// anything that could read as a grant.
	c.log("cancel %q", title)
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

const maxTerminalOutput = 1 << 20

func (c *Client) terminalCreate(_ context.Context, r *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	dir := c.Workspace
	if cwd, ok := r.Cwd.Get(); ok {
		p, err := c.resolve(cwd)
		if err != nil {
			return nil, err
		}
		dir = p
	}
	limit := maxTerminalOutput
	if l, ok := r.OutputByteLimit.Get(); ok && l >= 0 && l < int64(limit) {
		limit = int(l)
	}
	cmd := exec.Command(r.Command, r.Args...)
	if !strings.Contains(r.Command, "/") && len(r.Args) == 0 && strings.ContainsAny(r.Command, " |&;<>$") {
		cmd = exec.Command("/bin/sh", "-c", r.Command) // a whole command line, as agents send
	}
	cmd.Dir = dir
	cmd.Env = append([]string(nil), c.Env...)
	if len(cmd.Env) == 0 {
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	}
	for _, e := range r.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	out := &capped{max: limit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &terminal{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		st := &acp.TerminalExitStatus{}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				st.Signal = wire.Some(ws.Signal().String())
			} else {
				st.ExitCode = wire.Some(int64(ee.ExitCode()))
			}
		} else if err == nil {
			st.ExitCode = wire.Some(int64(0))
		}
		t.status = st
		close(t.done)
	}()
	c.mu.Lock()
	if c.terminals == nil {
		c.terminals = map[string]*terminal{}
	}
	c.nextTerm++
	id := fmt.Sprintf("term-%d", c.nextTerm)
	c.terminals[id] = t
	c.mu.Unlock()
	c.log("terminal %s: %s", id, strings.Join(cmd.Args, " "))
	return &acp.CreateTerminalResponse{TerminalID: acp.TerminalID(id)}, nil
}

func (c *Client) terminal(id string) (*terminal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.terminals[id]
	if !ok {
		return nil, fmt.Errorf("no terminal %q", id)
	}
	return t, nil
}

func (c *Client) terminalOutput(_ context.Context, r *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	t, err := c.terminal(string(r.TerminalID))
	if err != nil {
		return nil, err
	}
	out, trunc := t.out.read()
	res := &acp.TerminalOutputResponse{Output: out, Truncated: trunc}
	select {
	case <-t.done:
		res.ExitStatus = wire.Some(*t.status)
	default:
	}
	return res, nil
}

func (c *Client) terminalWaitForExit(ctx context.Context, r *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	t, err := c.terminal(string(r.TerminalID))
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &acp.WaitForTerminalExitResponse{ExitCode: t.status.ExitCode, Signal: t.status.Signal}, nil
}

func (c *Client) terminalKill(_ context.Context, r *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	t, err := c.terminal(string(r.TerminalID))
	if err != nil {
		return nil, err
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	return &acp.KillTerminalResponse{}, nil
}

func (c *Client) terminalRelease(_ context.Context, r *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	t, err := c.terminal(string(r.TerminalID))
	if err != nil {
		return nil, err
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	<-t.done
	c.mu.Lock()
	delete(c.terminals, string(r.TerminalID))
	c.mu.Unlock()
	return &acp.ReleaseTerminalResponse{}, nil
}

// Close kills every terminal left and waits for them.
func (c *Client) Close() {
	c.mu.Lock()
	ts := c.terminals
	c.terminals = nil
	c.mu.Unlock()
	for _, t := range ts {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	}
}
