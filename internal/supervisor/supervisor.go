// Package supervisor contains the processes bridgekit starts, on Linux, so
// that nothing they start outlives the program that started them (the
// host), whatever they do and however the host ends: end of input, a
// signal, SIGKILL.
//
// # How
//
// The host does not start the command itself: it starts a supervisor, a
// copy of its own program (/proc/self/exe) that this package's init
// recognises (by an argument and an environment variable) and turns into a
// small loop before main runs. The supervisor starts the command with the
// same stdin, stdout, stderr and extra files it was given (the very
// descriptors: nothing is copied through it), reports its end on a status
// pipe, and takes orders (kill) on a control pipe whose write end only the
// host has; when the host ends, however it ends, the kernel closes that
// pipe and the supervisor kills everything below it.
//
// How the supervisor holds what the command starts is its [Means], the
// strongest this system allows, chosen once per program ([Current] says
// which, and why not a stronger one):
//
//   - [PIDNamespace], the anchor (bubblewrap's --unshare-pid
//     --die-with-parent): the supervisor is the init of a PID namespace of
//     its own, in a user namespace of its own that maps only the host's
//     user and group. The kernel refuses SIGKILL and SIGSTOP sent to a
//     namespace's init from inside it, and kills everything in the
//     namespace when that init dies; the supervisor gets SIGKILL when the
//     host dies (PR_SET_PDEATHSIG, its parent being a thread of the host
//     that never exits). The supervisor is not dumpable and the command
//     runs in a nested user namespace without capabilities in the
//     supervisor's, so the command can neither trace nor signal it, and a
//     process cannot leave a PID namespace. Where it may, the supervisor
//     mounts a /proc of its own namespace, so that ps, pgrep and kill
//     inside see and name only the namespace's processes.
//   - [Cgroup]: where user namespaces are unavailable but the host may
//     create a cgroup (v2) below its own, the supervisor and everything
//     below it run in a cgroup of their own, which the host kills
//     (cgroup.kill, or freezing it and killing each process) on every exit
//     path but its own SIGKILL; the supervisor is also a subreaper (below).
//   - [Subreaper]: the supervisor is a child subreaper
//     (PR_SET_CHILD_SUBREAPER), so a process the command starts that loses
//     its parent (`sleep 100 &`, a daemon that double-forks or calls
//     setsid) becomes its child and is killed with the rest; the host also
//     kills the command's process group itself.
//
// BRIDGEKIT_CONTAINMENT in the host's environment (pidns, cgroup,
// subreaper) asks for one means: a weaker one than the system allows is
// used as asked, a stronger one that it does not allow fails every start
// (so that a test, or a deployment, that requires namespaces fails rather
// than silently runs with less). The README's "Containment" section says
// what a process with the runtime's user id can still do under each.
//
// Two kinds of supervision share the loop:
//
//   - [Start] (agents, runtimes, providers: every stdio child of
//     internal/child) is transparent: cmd.Process is the supervisor, which
//     leads the process group the command runs in, so a signal sent to the
//     group reaches the command and what it started directly; once the
//     command has exited, the supervisor kills what it left behind and
//     exits the way the command did, with the same exit code or by the
//     same signal, so that exec.Cmd.Wait and ProcessState report the
//     command's end.
//   - [StartTree] (terminals) keeps the command in a group of its own; the
//     command's status comes on the status pipe, the supervisor stays
//     while processes the command left behind run, and [Tree.Kill] and
//     [Tree.Release] end the whole tree. An order the supervisor does not
//     answer within [OrderTimeout] becomes a kill from the host itself.
//
// # What a program must do
//
// Nothing but link this package, which every program that starts children
// through internal/child or servers/host/terminal does: they import it.
// The hook is this package's init, so it runs before main, but after the
// init functions of the packages this one does not depend on that Go
// orders before it; an init that must not run twice, or that writes to
// stdout, must not be in such a program. A program built as a c-shared or
// c-archive library or a plugin (where /proc/self/exe is not a Go program
// that links this package) starts commands directly, as do systems without
// /proc/self/exe and other systems than Linux ([None]).
//
// # Costs
//
// A supervisor is a Go runtime: starting one adds the start of the
// program's own executable (a few milliseconds) to every Start, and a few
// megabytes of memory for as long as the command runs. The first start
// also probes which means the system allows (one more such start).
package supervisor

import (
	"fmt"
	"os"
	"strings"
)

// Names by which the supervisor's init recognises its copy of the program.
const (
	envVar  = "BRIDGEKIT_SUPERVISOR"
	argMark = "bridgekit-supervisor"
)

// Modes of the supervisor.
const (
	modeMirror = "mirror" // Start
	modeTree   = "tree"   // StartTree
	modeProbe  = "probe"  // the probe of PIDNamespace
	modeNoop   = "noop"   // exits 0: what the probe starts in a nested user namespace
)

// Means is how the processes a command starts are held, from the weakest.
type Means int

const (
	// None: the command is started directly, in a process group of its
	// own; on Linux it gets SIGKILL when the host dies (Pdeathsig), what
	// it started does not.
	None Means = iota
	// Subreaper: a supervisor that is a child subreaper, and the host
	// kills the command's process group itself.
	Subreaper
	// Cgroup: Subreaper, in a cgroup of the command's own that the host
	// kills.
	Cgroup
	// PIDNamespace: the supervisor is the init of a PID namespace (in a
	// user namespace) of the command's own, and dies with the host.
	PIDNamespace
)

// String is the means' name, as BRIDGEKIT_CONTAINMENT spells it ("none"
// for None).
func (m Means) String() string {
	switch m {
	case None:
		return "none"
	case Subreaper:
		return "subreaper"
	case Cgroup:
		return "cgroup"
	case PIDNamespace:
		return "pidns"
	}
	return fmt.Sprintf("Means(%d)", int(m))
}

// Containment is the means in force in this program, and why not a
// stronger one.
type Containment struct {
	Means Means
	// Asked is the means BRIDGEKIT_CONTAINMENT asks for; None when it is
	// unset (the strongest available is used).
	Asked Means
	// Procfs says a PIDNamespace supervisor mounts a /proc of its own
	// namespace (else the command sees the host's /proc, where it can
	// name but not signal the host's processes).
	Procfs bool
	// Unavailable says why each stronger means is not in force (empty
	// when Means is the strongest).
	Unavailable []string
	// Err, when set, fails every start: BRIDGEKIT_CONTAINMENT asks for a
	// means this system does not allow, or names none.
	Err error
}

// String is one line for a host to report at start, for example
// "pidns (a PID namespace per child, its own /proc)".
func (c Containment) String() string {
	if c.Err != nil {
		return "unavailable: " + c.Err.Error()
	}
	var s string
	switch c.Means {
	case PIDNamespace:
		s = "pidns (a PID and user namespace per child, whose init dies with the host"
		if c.Procfs {
			s += "; its own /proc"
		}
		s += ")"
	case Cgroup:
		s = "cgroup (a cgroup per child, killed by the host; a subreaper supervisor)"
	case Subreaper:
		s = "subreaper (a subreaper supervisor per child; the host kills its process group)"
	default:
		s = "none (a process group per child)"
	}
	if c.Asked != None {
		s += ", as BRIDGEKIT_CONTAINMENT asks"
	}
	if len(c.Unavailable) > 0 {
		s += "; " + strings.Join(c.Unavailable, "; ")
	}
	return s
}

// containmentEnv is the variable that asks for a means.
const containmentEnv = "BRIDGEKIT_CONTAINMENT"

// asked reads containmentEnv: None when unset or "auto".
func asked() (Means, error) {
	switch v := os.Getenv(containmentEnv); v {
	case "", "auto":
		return None, nil
	case "pidns":
		return PIDNamespace, nil
	case "cgroup":
		return Cgroup, nil
	case "subreaper":
		return Subreaper, nil
	default:
		return None, fmt.Errorf("%s=%q: want pidns, cgroup, subreaper or auto", containmentEnv, v)
	}
}
