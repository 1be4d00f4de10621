// Package child starts the programs bridgekit's clients and servers speak
// to over stdio (a Harn runtime, an ACP agent, a Harness, a provider),
// contains them, ends them whole, and keeps the end of what they write on
// stderr with secrets masked.
//
// # Containment
//
// Start puts every child in a process group of its own (Contain): a
// terminal's Ctrl-C (SIGINT to the foreground group) then reaches only this
// process, which stops the child through its protocol, and Signal, Stop
// and Reap reach every process the child started that stayed in its group
// (a wrapper such as npm or a shell that starts the real program). On
// Linux the child runs under a supervisor (internal/supervisor's Start: a
// copy of this program, recognised by that package's init before main
// runs, which every program importing this package links), in a PID
// namespace of its own where the system allows (else a child subreaper):
// it leads the child's group, gives the child its stdio descriptors
// themselves, exits the way the child did once it has killed whatever the
// child left behind, and kills the whole tree (a grandchild that left the
// group included) when this process ends, even by SIGKILL.
// So cmd.Process is the supervisor's (its pid is the group's), and signals
// are to be sent to the group, as Signal does. Without a supervisor (other
// systems; a program built as a library) the child gets SIGKILL when this
// process dies (Pdeathsig, on Linux), and a grandchild is only reached
// through the group, which a dead host can no longer signal.
//
// # Stopping
//
// Stop is the one stop sequence: the caller has closed the child's input
// (every protocol here ends a session at end of input); the child gets
// ExitGrace to exit, then its group gets SIGTERM, then after the term
// grace SIGKILL; once the child has exited, whatever is left of its group
// is killed. Stop reports whether it had to signal, so that an exit status
// caused by our own signal (143, or killed by SIGTERM) is not reported as
// the child's failure.
//
// # Environment
//
// Environ builds a child's environment from an allow-list: BaselineEnv and
// the names the caller passes, taken from this process's environment, then
// NAME=value entries; nothing else is inherited. Redactor returns the
// redact.Redactor that masks the values so passed, for every error and log
// line that quotes the child.
package child

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/internal/supervisor"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// BaselineEnv are the environment variables every child gets from this
// process's environment, when set: what a program needs to find its
// executables, home, temporary folder, locale and time zone, and nothing
// that usually holds a secret.
var BaselineEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
	"LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "TZ", "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT",
}

// Environ returns a child's environment: BaselineEnv and names, each taken
// from this process's environment when set there (the first occurrence of
// a name wins), then set, entries of the form NAME=value added as given.
func Environ(names []string, set []string) []string {
	var env []string
	seen := map[string]bool{}
	for _, name := range slices.Concat(BaselineEnv, names) {
		if seen[name] {
			continue
		}
		if v, ok := os.LookupEnv(name); ok {
			seen[name] = true
			env = append(env, name+"="+v)
		}
	}
	return append(env, set...)
}

// Redactor returns the redactor for what a child started with env (a
// NAME=value list, as exec.Cmd.Env) writes: it masks the values of env's
// secret-looking variables (redact.FromEnv), every value of passed (the
// names given to the child on purpose, whatever they are called) and set
// (NAME=value entries), and token shapes.
func Redactor(env, passed, set []string) *redact.Redactor {
	r := redact.FromEnv(env)
	for _, name := range passed {
		if v, ok := os.LookupEnv(name); ok && !slices.Contains(BaselineEnv, name) {
			r.Add(v)
		}
	}
	for _, kv := range set {
		if _, v, ok := strings.Cut(kv, "="); ok {
			r.Add(v)
		}
	}
	return r
}

// Start starts cmd with its stdin and stdout on pipes of our own and
// returns our ends: stdin to write to the child, stdout to read from it.
// The child runs contained (Contain), on Linux under a supervisor (see
// the package documentation). Pipes of our own rather than
// cmd.StdinPipe/StdoutPipe, because exec.Cmd.Wait closes those as soon as
// the child exits, losing what it wrote last; and these are pollable, so a
// read deadline can bound the wait for a grandchild that keeps the pipe
// open. cmd.Stdin and cmd.Stdout must be nil; on error nothing is left
// open.
func Start(cmd *exec.Cmd) (stdin, stdout *os.File, err error) {
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	Contain(cmd)
	err = supervisor.Start(cmd)
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, nil, err
	}
	return stdin, stdout, nil
}

// Defaults of Stop's graces.
const (
	// ExitGrace is how long a child whose input was closed gets to exit
	// on its own before its group is sent SIGTERM. The protocols here end
	// a session at end of input, and the ACP agents of today exit by
	// themselves then, some after seconds of shutting down (codex-acp
	// takes about 2 s; qwen writes a last frame of hundreds of KB): a
	// shorter grace kills agents that are stopping cleanly, mid-frame.
	ExitGrace = 5 * time.Second
	// TermGrace is how long the group gets after SIGTERM before SIGKILL.
	TermGrace = 2 * time.Second
)

// Terminate asks p's process group to stop (SIGTERM) or, where it cannot
// be asked, kills p.
func Terminate(p *os.Process) {
	if err := Signal(p, syscall.SIGTERM); err != nil {
		_ = p.Kill()
	}
}

// Kill kills p's process group (or p alone where it has none), and
// everything p's supervisor holds (its cgroup, its PID namespace).
func Kill(p *os.Process) {
	// The supervisor's tree first: killing its group first would kill the
	// supervisor before it, and hand what a stopped one holds to init.
	supervisor.KillAll(p)
	if err := Signal(p, syscall.SIGKILL); err != nil {
		_ = p.Kill()
	}
}

// Stop ends the child p, whose input the caller has closed; exited is
// closed once its Wait has returned. It waits exitGrace for p to exit,
// then sends its group SIGTERM and waits termGrace, then sends SIGKILL and
// waits for the exit; a grace <= 0 skips that step's wait. Once p has
// exited, the rest of its group is killed (Reap). signalled reports
// whether Stop had to signal p: an exit status then is our doing.
func Stop(p *os.Process, exited <-chan struct{}, exitGrace, termGrace time.Duration) (signalled bool) {
	defer Reap(p)
	if wait(exited, exitGrace) {
		return false
	}
	Terminate(p)
	if wait(exited, termGrace) {
		return true
	}
	Kill(p)
	<-exited
	return true
}

// Reap kills whatever is left of p's process group once p has exited: a
// background grandchild, the real program behind a wrapper. It is safe to
// call at any time; on systems without process groups it does nothing.
func Reap(p *os.Process) {
	if p != nil {
		supervisor.KillAll(p) // before the group: see Kill
		_ = signalGroup(p.Pid, syscall.SIGKILL)
	}
}

// ByUs reports whether state is the exit of a child that ended because of
// our signal: killed by SIGTERM or SIGKILL, or exiting with 128 plus one
// of them as a shell does.
func ByUs(state *os.ProcessState) bool {
	if state == nil {
		return false
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL
	}
	code := state.ExitCode()
	return code == 128+int(syscall.SIGTERM) || code == 128+int(syscall.SIGKILL)
}

func wait(ch <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// Tail is an io.Writer that keeps the last Max bytes written to it (a
// child's stderr) and copies everything to Tee when set. A failing Tee
// never fails or blocks the write: the child must not stall on it. String
// masks secrets with Redact (a nil Redact masks token shapes only).
type Tail struct {
	Max    int
	Tee    io.Writer
	Redact *redact.Redactor

	mu  sync.Mutex
	buf []byte
	cut bool // bytes were dropped from the front
}

// Write implements io.Writer; it never fails.
func (t *Tail) Write(b []byte) (int, error) {
	if t.Tee != nil {
		_, _ = t.Tee.Write(b)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(b) >= t.Max {
		t.cut = t.cut || len(t.buf) > 0 || len(b) > t.Max
		t.buf = append(t.buf[:0], b[len(b)-max(t.Max, 0):]...)
		return len(b), nil
	}
	if over := len(t.buf) + len(b) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	t.buf = append(t.buf, b...)
	return len(b), nil
}

// String returns what was kept, from a rune boundary, trimmed, made valid
// UTF-8 and with secrets masked, with "…" in front when its start was
// dropped. When it was, the first word kept is dropped too: it may be the
// end of a secret whose start is gone, which no exact match could mask.
func (t *Tail) String() string {
	t.mu.Lock()
	b := t.buf
	cut := t.cut
	if cut { // start at a rune: the front of this one was dropped
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	t.mu.Unlock()
	if cut {
		if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
			s = s[i:]
		} else {
			s = ""
		}
	}
	s = strings.TrimSpace(t.Redact.String(s))
	if cut && s != "" {
		s = "…" + s
	}
	return s
}
