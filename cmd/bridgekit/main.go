// Command bridgekit traces, validates, checks and replays the traffic of any
// implementation of the protocols bridgekit speaks: Harn's stdio bridge, ACP
// (v0.12.2 and the current stable v1), AgentPM's Harness machine protocol
// and agentpm-service providers.
//
//	bridgekit trace    [flags] -- COMMAND ARGS...   a transparent recording proxy
//	bridgekit inspect  [flags] DB|FILE              the web inspector
//	bridgekit validate [flags] FILE...|-            check recorded traffic
//	bridgekit conform  [flags] -- COMMAND ARGS...   scenario suites against an implementation
//	bridgekit replay   [flags] FILE -- COMMAND      play one side of a session again
//	bridgekit probe    [flags] -- COMMAND ARGS...   what an agent or runtime offers
//	bridgekit scaffold [flags]                      add a method or host/call operation
//	bridgekit generate [flags]                      regenerate gen/ and docs/reference/
//	bridgekit policy   check FILE...                 check a host policy file
//
// Every subcommand takes -h ("bridgekit help SUB" says the same), and the
// subcommands share one vocabulary of flags (vocab.go). "bridgekit
// --version" prints the version. Exit statuses: 0 success, 1 the check
// found problems (or the traced command's own status, for trace), 2 a
// usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
)

// A command is one subcommand. Each lives in a file of its own and adds
// itself to commands in an init function.
type command struct {
	name    string
	summary string
	// run runs the subcommand with its arguments (after the name). It
	// returns the process's exit status.
	run func(ctx context.Context, env *Env, args []string) int
	// ownSignals says the subcommand reads Env.Signals itself (trace
	// forwards them to its child); for the others the first signal
	// cancels ctx.
	ownSignals bool
	// subcommands names the subcommand's own subcommands, each with a
	// flag set of its own ("bridgekit scaffold method"): help reaches
	// them, and so does the test of the flag vocabulary.
	subcommands []string
}

// Env is what a subcommand reads and writes besides its arguments, so that
// tests run subcommands in-process.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Terminal reports whether Stderr is a terminal (progress is shown only then).
	Terminal bool
	// Signals delivers SIGINT, SIGTERM and SIGHUP as the process gets
	// them; nil in tests that run subcommands in-process.
	Signals <-chan os.Signal
	// Interactive reports whether Stdin is a terminal: a person runs the
	// command, not a client that spawned it.
	Interactive bool

	// flagSet, when set, is told of every flag set a subcommand makes,
	// by the subcommand's full name ("scaffold method"): the test of the
	// flag vocabulary reads them through it.
	flagSet func(name string, fs *flag.FlagSet)
}

var commands []command

func register(c command) {
	commands = append(commands, c)
	slices.SortFunc(commands, func(a, b command) int { return strings.Compare(a.name, b.name) })
}

// errUsage marks an error in a subcommand's arguments (exit status 2).
var errUsage = errors.New("usage")

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if mode := os.Getenv(uiKeeperEnv); mode != "" {
		os.Exit(runUIKeeper(mode, sigs))
	}
	env := &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: isTerminal(os.Stderr), Signals: sigs,
		Interactive: isTerminal(os.Stdin)}
	os.Exit(run(context.Background(), env, os.Args[1:]))
}

func run(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		usage(env.Stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(env.Stderr)
		return 0
	case "help":
		if len(args) == 1 {
			usage(env.Stderr)
			return 0
		}
		// bridgekit help SUB [SUBSUB] is bridgekit SUB [SUBSUB] -h.
		return run(ctx, env, append(slices.Clone(args[1:]), "-h"))
	case "-version", "--version":
		fmt.Fprintln(env.Stdout, versionLine())
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			if !c.ownSignals && env.Signals != nil {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-env.Signals:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.Stderr, "bridgekit: unknown command %q\n", args[0])
	usage(env.Stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bridgekit COMMAND [flags] [args]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'bridgekit help COMMAND' (or 'bridgekit COMMAND -h') for a command's flags,")
	fmt.Fprintln(w, "'bridgekit --version' for the version.")
}

// versionLine says which bridgekit this is: the module version it was
// installed at (go install …@VERSION), else "(devel)" with the commit the
// build recorded, then the SDK it was built with and the Go toolchain.
func versionLine() string {
	v, sdk := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		} else {
			var rev, dirty string
			for _, s := range bi.Settings {
				switch {
				case s.Key == "vcs.revision" && len(s.Value) >= 12:
					rev = s.Value[:12]
				case s.Key == "vcs.modified" && s.Value == "true":
					dirty = "+dirty"
				}
			}
			if rev != "" {
				v += " " + rev + dirty
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/bridgekit/bridgekit" && d.Version != "" && d.Version != "(devel)" {
				if d.Replace != nil {
					sdk = "SDK " + d.Version + " replaced by " + d.Replace.Path + ", "
				} else {
					sdk = "SDK " + d.Version + ", "
				}
			}
		}
	}
	return fmt.Sprintf("bridgekit %s (%s%s %s/%s)", v, sdk, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// newFlags returns a flag set for a subcommand that writes its usage to
// env.Stderr and returns errors instead of exiting.
//
// name is the subcommand's full name ("scaffold method"); env's flag-set
// hook, when set (tests), is told of the set.
func newFlags(env *Env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: bridgekit %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	if env.flagSet != nil {
		env.flagSet(name, fs)
	}
	return fs
}

// parseFlags parses args and returns the exit status to return at once (0
// for -h, 2 for a usage error) and whether to stop.
func parseFlags(fs *flag.FlagSet, args []string) (status int, stop bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
