// Package supervisor contains the processes bridgekit starts, on Linux, so
// that nothing they start outlives the program that started them, even
// when that program is killed with SIGKILL and can clean nothing up.
//
// # How
//
// The program does not start the command itself: it starts a supervisor,
// a copy of its own program (/proc/self/exe) that this package's init
// recognises (by an argument and an environment variable) and turns into a
// small loop before main runs. The supervisor is a child subreaper
// (PR_SET_CHILD_SUBREAPER), so every process the command starts that
// loses its parent (`sleep 100 &` in a shell, the real agent behind an npm
// wrapper, a daemon that double-forks or calls setsid) becomes its child
// rather than init's. It starts the command with the same stdin, stdout,
// stderr and extra files it was given (the very descriptors: nothing is
// copied through it) and with Pdeathsig SIGKILL, and it holds the read end
// of a control pipe whose write end only the starting program has: when
// the program ends (exits, or is SIGKILLed: the kernel closes its
// descriptors in every case) the supervisor sees the end of the pipe,
// kills every process below it, and exits.
//
// Two kinds of supervision share that loop:
//
//   - [Start] (agents, runtimes, providers: every stdio child of
//     internal/child) is transparent: cmd.Process is the supervisor, which
//     leads the process group the command runs in, so a signal sent to the
//     group reaches the command and what it started directly (the
//     supervisor survives every signal but SIGKILL); once the command has
//     exited, the supervisor kills what it left behind and exits the way
//     the command did, with the same exit code or by the same signal, so
//     that exec.Cmd.Wait and ProcessState report the command's end. All of
//     a program's supervisors watch one control pipe, made once.
//   - [StartTree] (terminals) keeps the supervisor in a group of its own
//     and the command in another; the command's status comes on a status
//     pipe, the supervisor stays while processes the command left behind
//     run, and [Tree.Kill] and [Tree.Release] end the whole tree.
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
// /proc/self/exe and other systems than Linux.
//
// # Costs
//
// A supervisor is a Go runtime: starting one adds the start of the
// program's own executable (a few milliseconds) to every Start, and a few
// megabytes of memory for as long as the command runs.
package supervisor

// Names by which the supervisor's init recognises its copy of the program.
const (
	envVar  = "BRIDGEKIT_SUPERVISOR"
	argMark = "bridgekit-supervisor"
)

// Modes of the supervisor.
const (
	modeMirror = "mirror" // Start
	modeTree   = "tree"   // StartTree
)
