//go:build linux

package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// exe is the program's own executable, as the kernel knows it (valid even
// when the file was replaced or removed since).
const exe = "/proc/self/exe"

// startTimeout bounds how long a supervisor may take to start its command.
const startTimeout = 10 * time.Second

// Available reports whether commands are started under a supervisor in
// this program: on Linux, with /proc/self/exe, in a program built as an
// executable.
var Available = sync.OnceValue(func() bool {
	if _, err := os.Stat(exe); err != nil {
		return false
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-buildmode" && s.Value != "exe" && s.Value != "pie" && s.Value != "default" {
				return false
			}
		}
	}
	return true
})

// lifeline is the control pipe of every Start: its write end is never
// written to nor closed, so its readers (the supervisors) see its end
// exactly when this program is gone.
var lifeline = sync.OnceValues(func() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	lifelineW = w // kept for the life of the program
	return r, nil
})

var lifelineW *os.File

// spawn runs start (an exec.Cmd's Start) on a thread of its own that
// never exits. A supervisor gets SIGKILL when the thread that started it
// ends (PR_SET_PDEATHSIG is a thread's, not a process's): on any thread a
// goroutine had locked and left, that would be before this program ends.
func spawn(start func() error) error {
	res := make(chan error, 1)
	spawner() <- func() { res <- start() }
	return <-res
}

var spawner = sync.OnceValue(func() chan<- func() {
	ch := make(chan func())
	go spawnLoop(ch)
	return ch
})

// spawnLoop runs what spawn is given, locked to its thread for ever (a
// goroutine leak checker must ignore it: SpawnLoop names it).
func spawnLoop(ch <-chan func()) {
	runtime.LockOSThread() // the thread never exits
	for f := range ch {
		f()
	}
}

// SpawnLoop is the name of the function of the goroutine that starts
// supervisors, for goleak.IgnoreTopFunction: it runs for the life of the
// program once a supervisor was started.
const SpawnLoop = "github.com/bridgekit/bridgekit/internal/supervisor.spawnLoop"

// Current reports the containment in force: BRIDGEKIT_CONTAINMENT's means
// if it asks for one this system allows, else the strongest it allows.
// The first call probes the system (it starts a supervisor).
func Current() Containment {
	want, err := asked()
	if err != nil {
		return Containment{Err: err}
	}
	c := Containment{Asked: want}
	if !Available() {
		c.Means = None
		c.Unavailable = []string{"no supervisor: this program is not an executable with /proc/self/exe"}
		if want != None {
			c.Err = fmt.Errorf("%s=%s: %s", containmentEnv, want, c.Unavailable[0])
		}
		return c
	}
	p := probeNamespaces()
	if want == None || want == PIDNamespace {
		if p.err == nil {
			c.Means, c.Procfs = PIDNamespace, p.procfs
			return c
		}
		c.Unavailable = append(c.Unavailable, "PID namespaces: "+p.err.Error())
		if want == PIDNamespace {
			c.Err = fmt.Errorf("%s=pidns: user and PID namespaces are unavailable: %w", containmentEnv, p.err)
			return c
		}
	}
	if want == None || want == Cgroup {
		if _, err := cgroupBase(); err == nil {
			c.Means = Cgroup
			return c
		} else {
			c.Unavailable = append(c.Unavailable, "cgroups: "+err.Error())
			if want == Cgroup {
				c.Err = fmt.Errorf("%s=cgroup: %w", containmentEnv, err)
				return c
			}
		}
	}
	c.Means = Subreaper
	return c
}

// nsProbe is what probing PIDNamespace found.
type nsProbe struct {
	procfs bool
	err    error
}

// probeNamespaces starts a supervisor as it would for PIDNamespace and has
// it start a command as it would (in a nested user namespace), once.
var probeNamespaces = sync.OnceValue(func() nsProbe {
	c := exec.Command(exe) // not run: the probe starts its own copy
	h, err := launch(c, modeProbe, nil, PIDNamespace)
	if err != nil {
		return nsProbe{err: err}
	}
	defer h.st.Close()
	flags := h.flags
	_ = c.Wait()
	return nsProbe{procfs: slices.Contains(flags, "procfs")}
})

// Start starts cmd as cmd.Start does, under a supervisor when Available
// and cmd asks for a process group of its own (SysProcAttr.Setpgid with
// Pgid 0, as internal/child.Contain sets) and for nothing else of
// SysProcAttr but Pdeathsig; otherwise it calls cmd.Start.
//
// Under a supervisor, cmd.Process is the supervisor's: it leads the
// command's process group (signal the group, as internal/child does: a
// signal sent to the supervisor alone is not passed on, but SIGKILL kills
// it and everything it contains), and cmd.Wait and cmd.ProcessState
// report the command's exit, after the supervisor has killed whatever the
// command left behind. The command gets cmd's stdio and ExtraFiles
// themselves, cmd's Dir and environment; when this program ends, however
// it ends, everything below the supervisor is killed. A start that fails
// (a program that is missing or cannot be run) fails Start with the error
// cmd.Start would have returned; so does every start when
// BRIDGEKIT_CONTAINMENT asks for a means this system does not allow.
// cmd's Path, Args, Env, ExtraFiles and SysProcAttr are as they were once
// Start returns.
func Start(cmd *exec.Cmd) error {
	if !supervisable(cmd) {
		return cmd.Start()
	}
	cur := Current()
	if cur.Err != nil {
		return cur.Err
	}
	ctl, err := lifeline()
	if err != nil {
		return err
	}
	h, err := launch(cmd, modeMirror, ctl, cur.Means)
	if err != nil {
		return err
	}
	if h.means == PIDNamespace {
		h.st.Close() // the relay closes it once started
		return nil
	}
	held.Store(cmd.Process.Pid, h)
	go h.mirror(cmd.Process)
	return nil
}

// held maps the supervisor pid of a Start under Cgroup or Subreaper to its
// handle while it runs, for KillAll.
var held sync.Map

// KillAll kills p, a process Start started, and everything it contains:
// under Cgroup, its cgroup; under Cgroup and Subreaper, every process
// below the supervisor, walking the tree, before the supervisor itself
// (a subreaper, stopped or not, holds every process whose parent dies
// below it only while it lives: killed first, it would hand them to init,
// out of reach); then its process group and the supervisor (under
// PIDNamespace its death kills the rest). It blocks for the walk: a few
// milliseconds, two seconds at most.
func KillAll(p *os.Process) {
	if p == nil {
		return
	}
	if v, ok := held.Load(p.Pid); ok {
		h := v.(*handle)
		if h.cg != nil {
			h.cg.kill()
		}
		killBelowFor(p.Pid, 2*time.Second)
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}

// mirror waits for a Start's supervisor to be gone (its status pipe to
// end), then kills and removes its cgroup, if any.
func (h *handle) mirror(p *os.Process) {
	defer h.st.Close()
	for h.st.line() != "" {
	}
	held.Delete(p.Pid)
	if h.cg != nil {
		h.cg.remove()
	}
}

// supervisable reports whether Start may put cmd under a supervisor.
func supervisable(cmd *exec.Cmd) bool {
	if !Available() || cmd.Err != nil || cmd.Process != nil || cmd.Path == "" || cmd.SysProcAttr == nil {
		return false
	}
	a := *cmd.SysProcAttr
	if !a.Setpgid || a.Pgid != 0 {
		return false
	}
	a.Setpgid, a.Pdeathsig = false, 0
	return reflect.ValueOf(a).IsZero()
}

// handle is a launched supervisor: its status pipe, positioned after the
// "started" line, the command's pid (in the supervisor's namespace), the
// flags the supervisor reported, and its cgroup under Cgroup.
type handle struct {
	st    *statusPipe
	pid   int
	flags []string
	means Means
	cg    *cgroup
}

// launch starts c's program under a supervisor in mode, held by means,
// with ctl (the read end of a control pipe; nil for none) as its control
// pipe, and waits for the supervisor to have started it. c is changed to
// start the supervisor and changed back before launch returns.
func launch(c *exec.Cmd, mode string, ctl *os.File, means Means) (*handle, error) {
	stR, stW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	h := &handle{means: means}
	path, args, env, extra, attr := c.Path, c.Args, c.Env, c.ExtraFiles, c.SysProcAttr
	supEnv := slices.DeleteFunc(c.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envVar+"=") })
	var supAttr syscall.SysProcAttr
	if attr != nil {
		supAttr = *attr
	}
	// The supervisor leads a group of its own.
	supAttr.Setpgid, supAttr.Pgid, supAttr.Pdeathsig = true, 0, 0
	how := "subreaper"
	switch means {
	case PIDNamespace:
		// The init of a PID namespace, in a user namespace where it is
		// root (so that it may mount /proc and map the command's nested
		// user namespace back to this user), and dies with this program.
		// A Start's supervisor is a relay that starts that init (see
		// relay): an init cannot die by the command's signal.
		uid, gid := os.Geteuid(), os.Getegid()
		if mode != modeMirror {
			supAttr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
			supAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
			supAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
			supAttr.GidMappingsEnableSetgroups = false
		}
		supAttr.Pdeathsig = syscall.SIGKILL
		how = "ns:" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
	case Cgroup:
		// It must not die with this program: it outlives it for as long as
		// it takes to kill the command's tree.
		if g, err := newCgroup(); err == nil {
			h.cg = g
			supAttr.UseCgroupFD, supAttr.CgroupFD = true, int(g.f.Fd())
			how = "cgroup"
		}
	}
	argv0 := path
	if len(args) > 0 {
		argv0 = args[0]
	}
	var rest []string
	if len(args) > 1 {
		rest = args[1:]
	}
	c.Path = exe
	c.Args = append([]string{argv0, argMark, mode, strconv.Itoa(len(extra)), how, path}, rest...)
	c.Env = append(supEnv, envVar+"=1")
	if ctl == nil {
		ctl = stW // the probe: any descriptor will do
	}
	c.ExtraFiles = append(slices.Clip(extra), ctl, stW)
	c.SysProcAttr = &supAttr
	err = spawn(c.Start)
	if h.cg != nil {
		runtime.KeepAlive(h.cg.f)
		h.cg.f.Close() // the supervisor is in it: the descriptor was for the start only
	}
	c.Path, c.Args, c.Env, c.ExtraFiles, c.SysProcAttr = path, args, env, extra, attr
	stW.Close()
	if err != nil {
		stR.Close()
		if h.cg != nil {
			h.cg.remove()
		}
		if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == exe {
			pe.Path = path // a bad Dir: say so of the command, as cmd.Start would
		}
		return nil, err
	}
	h.st = &statusPipe{f: stR, r: bufio.NewReader(stR)}
	// The supervisor's first report: "started PID FLAGS..." or "error
	// ERRNO TEXT".
	first := make(chan string, 1)
	go func() { first <- h.st.line() }()
	var line string
	select {
	case line = <-first:
	case <-time.After(startTimeout):
		line = "error 0 the supervisor did not start " + path + " within " + startTimeout.String()
	}
	if rest, ok := strings.CutPrefix(line, "started "); ok {
		f := strings.Fields(rest)
		if len(f) > 0 {
			h.pid, _ = strconv.Atoi(f[0])
			h.flags = f[1:]
		}
		return h, nil
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	h.st.Close()
	if h.cg != nil {
		h.cg.remove()
	}
	if rest, ok := strings.CutPrefix(line, "error "); ok {
		code, msg, _ := strings.Cut(rest, " ")
		if n, err := strconv.Atoi(code); err == nil && n > 0 {
			return nil, &fs.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
		}
		return nil, errors.New(msg)
	}
	return nil, fmt.Errorf("fork/exec %s: the supervisor ended before starting it (%v)", path, c.ProcessState)
}

// statusPipe is the read end of a supervisor's status pipe.
type statusPipe struct {
	f *os.File
	r *bufio.Reader
}

// line reads one report, "" at the end of the pipe.
func (s *statusPipe) line() string {
	l, _ := s.r.ReadString('\n')
	return strings.TrimSpace(l)
}

func (s *statusPipe) Close() { s.f.Close() }
