// Package terminal runs an agent's commands for a host (ACP's
// terminal/create, terminal/output, terminal/wait_for_exit, terminal/kill
// and terminal/release) so that a hostile peer can neither steer them nor
// make them outlive the host, nor make the host hold unbounded memory.
//
// # Commands
//
// [Commands] is the allow-list a host decides terminal/create with: word
// patterns for a command and its arguments, and, for a command line a
// shell is to run, a stricter rule (only a plain line is matched word by
// word; any other needs a wildcard-free pattern equal to it).
//
// # Environment
//
// A command's environment is built by an [EnvPolicy]: nothing of the
// host's environment is inherited unless the policy names it, the agent may
// set only the variables the policy allows by name, and the variables that
// change what a program runs or loads (BASH_ENV, ENV, GOFLAGS, GOENV,
// LD_*, DYLD_*, PYTHON*, NODE_OPTIONS, PERL5OPT, RUBYOPT, GIT_*, SHELL,
// PATH, ...: see [Steering]) only when the policy names them exactly.
// [Audit] renders an environment for an audit line with secret values
// masked (runtime/redact).
//
// # Containment
//
// Every command runs in a process group of its own; kill, release and
// [Manager.Close] end the whole tree. On Linux each command runs under a
// small supervisor (internal/supervisor's StartTree: a copy of the host's
// own program, recognised by that package's init before main runs, which
// every program importing this package links): where user namespaces are
// available, the init of a PID namespace of its own, which the command
// can neither stop nor kill, and whose death (with the host's, even by
// SIGKILL) kills everything in it; else a child subreaper, so that what
// the command leaves behind (`sleep 100 &`, a setsid daemon) stays in its
// tree. Kill and release never block: a supervisor that does not answer
// within a second has its tree killed by the host itself. The root
// README's "Containment" says what each means leaves possible. Elsewhere
// the command is started directly, in its own group where the platform
// has groups, and a host killed outright leaves it running.
//
// # Quotas
//
// [Limits] bound the terminals of a session and in all, the output kept per
// terminal (a ring of the last bytes), all terminals' output together, the
// size of the text in one reply (so that a reply stays under a peer's frame
// limit, JSON escaping counted), the pending waits, and the length of a
// session id. Past a bound a call fails with an error matching [ErrQuota]
// at once, nothing is started, and the host keeps serving.
//
// # Output
//
// On Linux a command's output is read by a collector (collect_linux.go)
// that coalesces reads: it reads what waits in the pipes, then lets more
// gather for a delay that grows while reads come back small, up to a
// second (the pipe, enlarged to 1 MiB where the system allows, holds it;
// a command that fills it waits). So a flood of small writes costs the
// host CPU per MiB like a bulk copy's, not per write (issue 33, finding
// 8: at most 3× io.Copy's, TestOutputFloodCPU and make bench-terminal).
// Nothing waits for the delay: Output reads what is in the pipes first,
// and an exit reads them to their end. Elsewhere os/exec copies the
// output as it comes.
//
// # Waiting
//
// [Manager.Wait] blocks until the command exits, its context ends, or
// [Manager.Close] (the host's end of input) ends every pending wait; at most
// Limits.MaxWaits waits are pending at once. A host serves wait_for_exit
// with it on a connection that has room for MaxWaits more concurrent
// requests than it otherwise needs, and serves output, kill and release
// (which never block) preempted, so that pending waits never hold the slots
// other requests need.
package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Defaults of Limits.
const (
	DefaultMaxTerminals      = 32
	DefaultMaxPerSession     = 16
	DefaultOutputBytes       = 1 << 20  // kept per terminal when the request names no limit
	DefaultMaxOutputBytes    = 4 << 20  // the most a request may ask to keep
	DefaultMaxTotalOutput    = 64 << 20 // all terminals' output together
	DefaultMaxReplyBytes     = 4 << 20  // JSON text of one reply's output members together
	DefaultMaxWaits          = 32
	DefaultMaxSessionIDBytes = 1 << 10
)

// Limits are a Manager's quotas; zero members take the defaults.
type Limits struct {
	// MaxTerminals bounds the terminals held (running, or exited and not
	// yet released) in all; MaxPerSession those of one session.
	MaxTerminals, MaxPerSession int
	// DefaultOutputBytes is the output kept per terminal when the request
	// names no limit; MaxOutputBytes the most a request may ask for (a
	// larger outputByteLimit is lowered to it). A command whose stdout and
	// stderr are kept apart keeps each too, so it counts three times.
	DefaultOutputBytes, MaxOutputBytes int64
	// MaxTotalOutput bounds the output kept by all terminals together
	// (their limits, reserved when they start).
	MaxTotalOutput int64
	// MaxReplyBytes bounds the JSON-encoded text of one Output or Wait
	// answer (its members together); text beyond it is cut at the front.
	MaxReplyBytes int
	// MaxWaits bounds the Wait calls pending at once.
	MaxWaits int
	// MaxSessionIDBytes bounds a session id's length.
	MaxSessionIDBytes int
}

func (l *Limits) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxTerminals, DefaultMaxTerminals)
	def(&l.MaxPerSession, DefaultMaxPerSession)
	def64(&l.DefaultOutputBytes, DefaultOutputBytes)
	def64(&l.MaxOutputBytes, DefaultMaxOutputBytes)
	def64(&l.MaxTotalOutput, DefaultMaxTotalOutput)
	def(&l.MaxReplyBytes, DefaultMaxReplyBytes)
	def(&l.MaxWaits, DefaultMaxWaits)
	def(&l.MaxSessionIDBytes, DefaultMaxSessionIDBytes)
	l.DefaultOutputBytes = min(l.DefaultOutputBytes, l.MaxOutputBytes)
}

// Errors; the Manager's errors match them with errors.Is.
var (
	// ErrQuota: a Limits bound was reached.
	ErrQuota = errors.New("terminal quota reached")
	// ErrNotFound: no such terminal in the session.
	ErrNotFound = errors.New("no such terminal")
	// ErrClosed: the Manager was closed.
	ErrClosed = errors.New("terminals closed")
	// ErrInvalid: a Spec or a session id that cannot be used.
	ErrInvalid = errors.New("invalid terminal request")
)

// Spec is a command to run.
type Spec struct {
	// Session is the session the terminal belongs to; only calls naming
	// it reach the terminal.
	Session string
	// Program and Args: the command, run without a shell (a program name
	// without a separator is looked up in the host's PATH).
	Program string
	Args    []string
	// Dir is the working directory (absolute).
	Dir string
	// DirFile, if set, is Dir opened (see workspace.OpenDir). On Linux
	// the command then starts in that very directory, even if Dir's path
	// leads elsewhere by the time it starts (a directory replaced by a
	// link); elsewhere Dir is used. It must stay open until Start returns.
	DirFile *os.File
	// Env is the whole environment (build it with an EnvPolicy).
	Env []string
	// OutputBytes is the output to keep; 0 means Limits.DefaultOutputBytes,
	// a negative value nothing, and it is at most Limits.MaxOutputBytes.
	OutputBytes int64
	// Split keeps stdout and stderr apart besides their combined output
	// (through two pipes; the combined text then interleaves in the order
	// read, which can differ from the order written).
	Split bool
}

// Output is what a terminal printed, each text valid UTF-8, cut at the
// front when more was printed than is kept or fits a reply.
type Output struct {
	Combined  string
	Truncated bool
	// Split says the terminal keeps Stdout and Stderr apart, and they
	// hold them.
	Split          bool
	Stdout, Stderr string
	// Exited says the command has exited, with Status.
	Exited bool
	Status Status
}

// Manager runs the terminals of a host. It is safe for concurrent use.
type Manager struct {
	lim Limits

	mu        sync.Mutex
	closed    bool
	next      int
	terms     map[string]*term
	perSess   map[string]int
	reserved  int64
	waits     int
	closing   chan struct{} // closed by Close: ends pending waits
	closeOnce sync.Once
}

type term struct {
	session  string
	proc     *process
	out      *ring
	stdout   *ring // Split only
	stderr   *ring
	streams  []*streamWriter
	col      *collector // reads the output into out (or streams)
	reserved int64
	done     chan struct{} // closed once the status is in
	gone     chan struct{} // closed once the process is reaped and its output copied
	status   Status
}

func (t *term) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// New returns a Manager; lim may be nil.
func New(lim *Limits) *Manager {
	m := &Manager{terms: map[string]*term{}, perSess: map[string]int{}, closing: make(chan struct{})}
	if lim != nil {
		m.lim = *lim
	}
	m.lim.fill()
	return m
}

// Limits returns the limits in force.
func (m *Manager) Limits() Limits { return m.lim }

func quota(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrQuota}, args...)...)
}

// Start runs spec and returns the new terminal's id ("term-N"). It fails
// with ErrQuota past a bound, ErrInvalid for an unusable spec, or the
// error starting the program (exec.ErrNotFound for a missing one).
func (m *Manager) Start(_ context.Context, spec Spec) (string, error) {
	if len(spec.Session) > m.lim.MaxSessionIDBytes {
		return "", fmt.Errorf("%w: a session id of %d bytes (at most %d)", ErrInvalid, len(spec.Session), m.lim.MaxSessionIDBytes)
	}
	if spec.Program == "" {
		return "", fmt.Errorf("%w: no command", ErrInvalid)
	}
	keep := spec.OutputBytes
	switch {
	case keep == 0:
		keep = m.lim.DefaultOutputBytes
	case keep < 0:
		keep = 0
	}
	keep = min(keep, m.lim.MaxOutputBytes)
	reserve := keep
	if spec.Split {
		reserve *= 3
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return "", ErrClosed
	case len(m.terms) >= m.lim.MaxTerminals:
		m.mu.Unlock()
		return "", quota("%d terminals held (release some)", m.lim.MaxTerminals)
	case m.perSess[spec.Session] >= m.lim.MaxPerSession:
		m.mu.Unlock()
		return "", quota("%d terminals held by the session", m.lim.MaxPerSession)
	case m.reserved+reserve > m.lim.MaxTotalOutput:
		m.mu.Unlock()
		return "", quota("the terminals' output would pass %d bytes", m.lim.MaxTotalOutput)
	}
	// Reserve the slot before starting, so that concurrent starts cannot
	// pass the bounds together.
	m.next++
	id := "term-" + strconv.Itoa(m.next)
	t := &term{session: spec.Session, out: newRing(int(keep)), reserved: reserve, done: make(chan struct{}), gone: make(chan struct{})}
	m.terms[id] = t
	m.perSess[spec.Session]++
	m.reserved += reserve
	m.mu.Unlock()

	cmd := exec.Command(spec.Program, spec.Args...)
	cmd.Dir = spec.Dir
	if spec.DirFile != nil {
		cmd.Dir = openDir(spec.DirFile, spec.Dir)
	}
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	sinks := []io.Writer{t.out}
	if spec.Split {
		t.stdout, t.stderr = newRing(int(keep)), newRing(int(keep))
		var mu sync.Mutex
		t.streams = []*streamWriter{{mu: &mu, own: t.stdout, all: t.out}, {mu: &mu, own: t.stderr, all: t.out}}
		sinks = []io.Writer{t.streams[0], t.streams[1]}
	}
	cmd.WaitDelay = outputDrain // a background process keeping the output open
	if cmd.Err != nil {
		m.forget(id, t)
		return "", cmd.Err
	}
	col, err := newCollector(cmd, sinks...)
	if err != nil {
		m.forget(id, t)
		return "", startError(spec.Program, err)
	}
	p, err := startSupervised(cmd)
	runtime.KeepAlive(spec.DirFile) // its descriptor names cmd.Dir until the start
	if err != nil {
		col.abort()
		m.forget(id, t)
		if cmd.Dir != spec.Dir {
			// A start that fails to change into the directory reads as the
			// program missing ("fork/exec PROGRAM: ..."): say which it was.
			if aerr := enterable(cmd.Dir); aerr != nil {
				err = &fs.PathError{Op: "chdir", Path: spec.Dir, Err: aerr}
			}
		}
		return "", startError(spec.Program, err)
	}
	col.start()
	t.col = col
	m.mu.Lock()
	t.proc = p
	closed := m.closed
	m.mu.Unlock()
	if closed { // Close ran meanwhile and could not see this one
		p.release()
	}
	go func() {
		t.status = p.status()
		// The output pipe drains once the process tree is gone; a process
		// left in the background may hold it open, so wait for that only
		// a moment.
		drain := time.NewTimer(outputDrain)
		defer drain.Stop()
		select {
		case <-t.gone:
		case <-drain.C:
		}
		close(t.done)
	}()
	go func() {
		p.wait()                // the supervisor (or the command): reaped
		col.finish(outputDrain) // the output: read to its end
		for _, w := range t.streams {
			w.flush()
		}
		close(t.gone)
	}()
	return id, nil
}

func (m *Manager) forget(id string, t *term) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.terms[id] == t {
		delete(m.terms, id)
		m.reserved -= t.reserved
		if m.perSess[t.session]--; m.perSess[t.session] <= 0 {
			delete(m.perSess, t.session)
		}
	}
}

func (m *Manager) get(session, id string) (*term, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.terms[id]
	if !ok || t.session != session || t.proc == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return t, nil
}

// Output returns what the terminal printed so far, and its status once it
// has exited. It never blocks.
func (m *Manager) Output(session, id string) (Output, error) {
	t, err := m.get(session, id)
	if err != nil {
		return Output{}, err
	}
	return m.output(t), nil
}

func (m *Manager) output(t *term) Output {
	var o Output
	o.Exited = t.exited() // before reading, so that all output is in
	if o.Exited {
		o.Status = t.status
	}
	if !o.Exited {
		t.col.drain() // what the command has written so far
	}
	budget := m.lim.MaxReplyBytes
	var cut bool
	o.Combined, o.Truncated = t.out.read()
	if t.stdout != nil {
		o.Split = true
		budget /= 3
		o.Stdout, _ = t.stdout.read()
		o.Stderr, _ = t.stderr.read()
		o.Stdout, _ = fitJSON(o.Stdout, budget)
		o.Stderr, _ = fitJSON(o.Stderr, budget)
	}
	o.Combined, cut = fitJSON(o.Combined, budget)
	o.Truncated = o.Truncated || cut
	return o
}

// Wait blocks until the terminal's command exits, then returns its output
// and status. It fails with ctx's error when ctx ends, ErrClosed when the
// Manager is closed meanwhile, and ErrQuota when Limits.MaxWaits waits are
// already pending.
func (m *Manager) Wait(ctx context.Context, session, id string) (Output, error) {
	t, err := m.get(session, id)
	if err != nil {
		return Output{}, err
	}
	m.mu.Lock()
	if m.waits >= m.lim.MaxWaits {
		m.mu.Unlock()
		return Output{}, quota("%d waits pending", m.lim.MaxWaits)
	}
	m.waits++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.waits--
		m.mu.Unlock()
	}()
	select {
	case <-t.done:
		return m.output(t), nil
	case <-ctx.Done():
		return Output{}, ctx.Err()
	case <-m.closing:
		return Output{}, ErrClosed
	}
}

// Kill ends the terminal's command and every process it started; the
// terminal stays, with its output. It never blocks.
func (m *Manager) Kill(session, id string) error {
	t, err := m.get(session, id)
	if err != nil {
		return err
	}
	t.proc.kill()
	return nil
}

// Release kills what still runs of the terminal and forgets it.
func (m *Manager) Release(session, id string) error {
	t, err := m.get(session, id)
	if err != nil {
		return err
	}
	t.proc.release()
	m.forget(id, t)
	return nil
}

// Pending reports how many Wait calls are pending.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waits
}

// Held reports how many terminals are held.
func (m *Manager) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.terms)
}

// Close ends every pending Wait, kills every terminal's processes and
// waits up to timeout for them to be gone and reaped. Later calls fail with
// ErrClosed.
func (m *Manager) Close(timeout time.Duration) {
	m.closeOnce.Do(func() { close(m.closing) })
	m.mu.Lock()
	m.closed = true
	all := m.terms
	m.terms = map[string]*term{}
	m.perSess = map[string]int{}
	m.reserved = 0
	m.mu.Unlock()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, t := range all {
		if t.proc != nil {
			t.proc.release()
		}
	}
	for _, t := range all {
		if t.proc == nil {
			continue
		}
		select {
		case <-t.gone:
		case <-deadline.C:
			// Out of time: what is left is killed from here, without
			// waiting for its supervisor.
			for _, t := range all {
				if t.proc != nil {
					t.proc.killNow()
				}
			}
			return
		}
	}
}

// outputDrain bounds how long a terminal's exit waits for its output pipe
// to drain after the command's status is in.
const outputDrain = time.Second

// startError words a failure to start the program.
func startError(program string, err error) error {
	return fmt.Errorf("start %s: %w", program, err)
}
