package shells

import (
	clist "container/list"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Configured is a shell the host lists explicitly, ahead of every discovered
// shell (source "configured").
type Configured struct {
	// ID is the shell's id. Empty: derived from the executable name like a
	// discovered shell's. Non-empty ids must be unique within Config.Shells.
	ID string
	// Label is the human name. Empty: derived from the executable name.
	Label string
	// Path is the executable, required. A relative path is looked up on the
	// search path; if that fails it is reported as given.
	Path string
	// DefaultArgs is placed before the command. Nil: the convention of the
	// shell family ("-c" for sh-like shells, "-NoProfile -Command" for
	// PowerShell, "/C" for cmd).
	DefaultArgs []string
	// LoginArgs is placed before the command for a login shell. Nil: the
	// family convention ("-l -c" for sh-like shells, none otherwise). A
	// non-nil empty slice declares that the shell has no login mode.
	LoginArgs []string
}

// Config configures a Provider.
type Config struct {
	// Platform describes the machine. Nil means OS().
	Platform Platform
	// Shells are listed first, in order, before anything discovered.
	Shells []Configured
	// MaxSessions bounds the sessions whose default shell is remembered
	// (default DefaultMaxSessions).
	MaxSessions int
	// MaxSessionBytes bounds the bytes of the session ids (and shell ids)
	// remembered, together (default DefaultMaxSessionBytes): a peer sends
	// ids of any size. A selection larger than it all is refused.
	MaxSessionBytes int
}

// Provider serves the process.* shell operations; Register installs them
// in a harn.HostHandlers.
//
// Discovery runs once, in New; the list is then fixed until Refresh. Default
// shells are kept per session, for at most MaxSessions sessions: selecting a
// shell for one more forgets the session whose selection was used least
// recently. A Provider is safe for concurrent use.
type Provider struct {
	platform Platform
	conf     []Configured
	max      int
	maxBytes int

	mu       sync.Mutex
	bytes    int // of the selections remembered
	shells   []harn.Shell
	byID     map[string]int
	sessions map[string]*clist.Element // session id -> element of lru
	lru      clist.List                // *selection, most recently used first
}

// selection is a session's default shell.
type selection struct{ session, shellID string }

// Defaults of Config.MaxSessions and Config.MaxSessionBytes.
const (
	DefaultMaxSessions     = 1024
	DefaultMaxSessionBytes = 256 << 10
)

// Register sets h's process.* operation fields to p's.
func (p *Provider) Register(h *harn.HostHandlers) {
	h.ProcessListShells = p.ProcessListShells
	h.ProcessGetDefaultShell = p.ProcessGetDefaultShell
	h.ProcessSetDefaultShell = p.setDefaultShell
	h.ProcessShellInvocation = p.ProcessShellInvocation
}

// New validates cfg and discovers the machine's shells.
func New(cfg Config) (*Provider, error) {
	ids := map[string]bool{}
	for i, c := range cfg.Shells {
		if strings.TrimSpace(c.Path) == "" {
			return nil, fmt.Errorf("shells: configured shell %d has no path", i)
		}
		if c.ID != "" {
			if ids[c.ID] {
				return nil, fmt.Errorf("shells: configured shell id %q is used twice", c.ID)
			}
			ids[c.ID] = true
		}
	}
	p := &Provider{platform: cfg.Platform, max: cfg.MaxSessions, sessions: map[string]*clist.Element{}}
	if p.max <= 0 {
		p.max = DefaultMaxSessions
	}
	if p.maxBytes = cfg.MaxSessionBytes; p.maxBytes <= 0 {
		p.maxBytes = DefaultMaxSessionBytes
	}
	if p.platform == nil {
		p.platform = OS()
	}
	p.conf = make([]Configured, len(cfg.Shells))
	for i, c := range cfg.Shells {
		c.DefaultArgs = cloneKeepNil(c.DefaultArgs)
		c.LoginArgs = cloneKeepNil(c.LoginArgs)
		p.conf[i] = c
	}
	p.Refresh()
	return p, nil
}

// Refresh discovers the shells again (say after the user installed one).
// Session selections whose shell id still exists are kept; the others fall
// back to the initial default.
func (p *Provider) Refresh() {
	list := discover(p.platform, p.conf)
	byID := make(map[string]int, len(list))
	for i, s := range list {
		byID[s.ID] = i
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shells, p.byID = list, byID
	for sess, e := range p.sessions {
		if _, ok := byID[e.Value.(*selection).shellID]; !ok {
			p.forgetLocked(sess)
		}
	}
}

// Shells returns a copy of the discovered shells in discovery order.
func (p *Provider) Shells() []harn.Shell {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]harn.Shell, len(p.shells))
	for i, s := range p.shells {
		out[i] = cloneShell(s)
	}
	return out
}

// ForgetSession drops the default shell selected for a session, which then
// sees the initial default again. Hosts call it when a session ends.
func (p *Provider) ForgetSession(sessionID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetLocked(sessionID)
}

func (p *Provider) forgetLocked(session string) {
	if e, ok := p.sessions[session]; ok {
		sel := e.Value.(*selection)
		p.bytes -= len(sel.session) + len(sel.shellID)
		p.lru.Remove(e)
		delete(p.sessions, session)
	}
}

// selectLocked records session's default shell, forgetting the least
// recently used sessions beyond the bounds. A selection larger than
// MaxSessionBytes on its own is refused.
func (p *Provider) selectLocked(session, shellID string) error {
	if n := len(session) + len(shellID); n > p.maxBytes {
		return rpc.NewError(rpc.CodeInvalidParams, fmt.Sprintf("shells: a session id of %d bytes is more than this host remembers (%d)", len(session), p.maxBytes), nil)
	}
	p.forgetLocked(session)
	p.sessions[session] = p.lru.PushFront(&selection{session, shellID})
	p.bytes += len(session) + len(shellID)
	for len(p.sessions) > p.max || p.bytes > p.maxBytes {
		p.forgetLocked(p.lru.Back().Value.(*selection).session)
	}
	return nil
}

// ProcessListShells lists every shell and the session's default shell id
// (nil when no shell is available).
func (p *Provider) ProcessListShells(_ context.Context, call *harn.HostCallParams, _ *harn.NoArgs) (*harn.ListShellsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := &harn.ListShellsResponse{Shells: make([]harn.Shell, len(p.shells))}
	for i, s := range p.shells {
		resp.Shells[i] = cloneShell(s)
	}
	if i, ok := p.defaultLocked(sessionOf(call)); ok {
		id := p.shells[i].ID
		resp.DefaultShellID = &id
	}
	return resp, nil
}

// ProcessGetDefaultShell returns the session's default shell: the one set
// with ProcessSetDefaultShell, or else the first available shell in
// discovery order. ErrNoShell when there is none.
func (p *Provider) ProcessGetDefaultShell(_ context.Context, call *harn.HostCallParams, _ *harn.NoArgs) (*harn.Shell, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.defaultLocked(sessionOf(call))
	if !ok {
		return nil, newError(ErrNoShell, codeServerError, "no usable shell on this host", nil)
	}
	s := cloneShell(p.shells[i])
	return &s, nil
}

// ProcessSetDefaultShell selects the session's default shell by id and
// returns it (Register's field answers it encoded: the operation's result
// is any JSON). ErrUnknownShell when the id names no listed shell. A listed
// but unavailable shell may be selected; invoking it fails until it appears.
func (p *Provider) ProcessSetDefaultShell(_ context.Context, call *harn.HostCallParams, args *harn.SetDefaultShellRequest) (*harn.Shell, error) {
	id := ""
	if args != nil {
		id = args.ShellID
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.byID[id]
	if !ok {
		return nil, unknownShell(id)
	}
	if err := p.selectLocked(sessionOf(call), id); err != nil {
		return nil, err
	}
	s := cloneShell(p.shells[i])
	return &s, nil
}

// setDefaultShell serves process.set_default_shell, whose result Harn
// leaves unspecified (any JSON): it answers the selected shell.
func (p *Provider) setDefaultShell(ctx context.Context, call *harn.HostCallParams, args *harn.SetDefaultShellRequest) (jsontext.Value, error) {
	s, err := p.ProcessSetDefaultShell(ctx, call, args)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(s, wire.Fidelity)
	if err != nil {
		return nil, fmt.Errorf("shells: encoding shell %q: %w", s.ID, err)
	}
	return raw, nil
}

// ProcessShellInvocation turns a shell and a command into argv. The shell is
// args.Shell when given (used as-is, even when this host does not list it),
// else the listed shell args.ShellID, else the session's default. The
// command is always exactly one element of Args, at CommandArgIndex:
//
//	sh -c CMD          default
//	sh -l -c CMD       login
//	sh -i -c CMD       interactive ("-i" goes right before the final "-c")
//	sh -l -i -c CMD    login and interactive
//	pwsh -NoProfile -Command CMD
//	cmd.exe /C CMD
//
// On Windows the program receives one command line, not an argv. Runners
// must quote Args for the program: cmd.exe does not follow the usual
// quoting rules, so a runner starting cmd should pass "/C " + CMD verbatim
// (syscall.SysProcAttr.CmdLine) rather than rely on automatic quoting.
func (p *Provider) ProcessShellInvocation(_ context.Context, call *harn.HostCallParams, args *harn.ShellInvocationRequest) (*harn.ShellInvocationResponse, error) {
	if args == nil || args.Command == nil {
		return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams, "command is required", nil)
	}
	cmd := *args.Command
	if strings.IndexByte(cmd, 0) >= 0 {
		return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams, "command contains a NUL byte, which no argv element can hold", nil)
	}

	var sh harn.Shell
	switch {
	case args.Shell != nil:
		sh = cloneShell(*args.Shell)
		if args.ShellID != nil && *args.ShellID != sh.ID {
			return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams,
				fmt.Sprintf("shell_id %s does not match shell.id %s", strconv.Quote(*args.ShellID), strconv.Quote(sh.ID)), args.ShellID)
		}
		if sh.Path == "" {
			return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams, "shell.path is empty", &sh.ID)
		}
	case args.ShellID != nil:
		p.mu.Lock()
		i, ok := p.byID[*args.ShellID]
		if ok {
			sh = cloneShell(p.shells[i])
		}
		p.mu.Unlock()
		if !ok {
			return nil, unknownShell(*args.ShellID)
		}
	default:
		p.mu.Lock()
		i, ok := p.defaultLocked(sessionOf(call))
		if ok {
			sh = cloneShell(p.shells[i])
		}
		p.mu.Unlock()
		if !ok {
			return nil, newError(ErrNoShell, codeServerError, "no usable shell on this host", nil)
		}
	}

	prefix := sh.DefaultArgs
	if args.GetLogin() {
		if !sh.SupportsLogin {
			return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams,
				fmt.Sprintf("shell %s has no login mode", strconv.Quote(sh.ID)), &sh.ID)
		}
		prefix = sh.LoginArgs
	}
	argv := make([]string, 0, len(prefix)+2)
	argv = append(argv, prefix...)
	if args.GetInteractive() {
		if !sh.SupportsInteractive {
			return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams,
				fmt.Sprintf("shell %s has no interactive mode", strconv.Quote(sh.ID)), &sh.ID)
		}
		n := len(argv)
		if n == 0 || argv[n-1] != "-c" {
			return nil, newError(ErrInvalidInvocation, rpc.CodeInvalidParams,
				fmt.Sprintf("shell %s: cannot add -i because its arguments do not end with -c", strconv.Quote(sh.ID)), &sh.ID)
		}
		argv = slices.Insert(argv, n-1, "-i")
	}
	if !sh.Available {
		return nil, newError(ErrShellUnavailable, codeServerError,
			fmt.Sprintf("shell %s (%s) is not available on this machine", strconv.Quote(sh.ID), sh.Path), &sh.ID)
	}
	argv = append(argv, cmd)
	return &harn.ShellInvocationResponse{
		Program:         sh.Path,
		Args:            argv,
		CommandArgIndex: int64(len(argv) - 1),
		Shell:           sh,
	}, nil
}

// defaultLocked returns the index of the session's default shell.
func (p *Provider) defaultLocked(session string) (int, bool) {
	if e, ok := p.sessions[session]; ok {
		if i, ok := p.byID[e.Value.(*selection).shellID]; ok {
			p.lru.MoveToFront(e)
			return i, true
		}
	}
	for i, s := range p.shells {
		if s.Available {
			return i, true
		}
	}
	return -1, false
}

func sessionOf(call *harn.HostCallParams) string {
	if call == nil || call.SessionID == nil {
		return ""
	}
	return *call.SessionID
}

func unknownShell(id string) error {
	return newError(ErrUnknownShell, rpc.CodeInvalidParams, "unknown shell "+strconv.Quote(id), &id)
}

// cloneShell copies a shell so that callers never share slices with the
// provider. Nil argument lists become empty ones, which encode as [].
func cloneShell(s harn.Shell) harn.Shell {
	s.DefaultArgs = append([]string{}, s.DefaultArgs...)
	s.LoginArgs = append([]string{}, s.LoginArgs...)
	return s
}

func cloneKeepNil(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}
