// Command host is a runnable Harn bridge host and ACP client: it serves a
// runtime the tools, skills, files, commands and permissions that its
// configuration and policy allow, renders what the runtime reports, and can
// run a whole prompt.
//
//	host [flags]                              serve the bridge on this process's stdin/stdout
//	host [flags] -- harn serve acp            start the runtime as a child and serve the bridge
//	                                          over the child's pipes (its stderr shown line by line, visibly)
//	host [flags] -prompt TEXT -- COMMAND ...  start the runtime, run initialize, session/new and
//	                                          session/prompt TEXT as its ACP client, serve it meanwhile,
//	                                          and exit with a status that says how the prompt ended
//
// It serves shell discovery (host/call process.*) and host/capabilities;
// host/tools/list from the -config file's tools, and builtin_call running
// them with the host's builtins; skills/list and skills/fetch from its
// skills folder; skill/match with a BM25 ranking;
// session/request_permission, fs/read_text_file, fs/write_text_file and
// terminal/* as the -policy file allows, failing closed; and it renders
// every session/update, and the runtime's progress, log, output, agent/idle
// and _harn/agentEvent notifications, on stderr, in colour on a terminal
// and plain in a pipe. README.md documents the file formats and the exit
// statuses.
//
// Serving a stream, it stops on SIGINT, SIGTERM or SIGHUP: at once when
// serving its own stdin/stdout; a child first gets SIGTERM, then SIGKILL
// after -grace. A second signal, or the grace period passing, forces the
// exit. The exit status says why it ended: 0 after the peer ended its input
// (or the child exited cleanly), the child's status (128+n when signal n
// killed it), 128+n after this process got signal n, 1 after an error such
// as a closed stdout.
//
// The runtime it starts gets nothing of its environment but the baseline
// (PATH, HOME, the locale, ...) and the variables the policy's agent.env
// and -pass-env name: no other secret of the host's reaches it.
//
// Running a prompt, it authenticates as the agent's authMethods allow
// (servers/host/auth: -auth ID, else an env_var method whose variables are
// set and passed to the agent, else an API-key method whose key variable
// is, else with -auth-terminal a terminal login); a missing credential
// exits 11 with the agent's methods and the variables each needs, saying
// which the policy withholds.
//
// Running a prompt, the first SIGINT (Ctrl-C), SIGTERM or SIGHUP sends
// session/cancel and the host exits once the agent has answered, or after
// -grace; a second one exits at once.
//
// Diagnostics go to stderr, never to the protocol stream.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/internal/recorder"
	"github.com/bridgekit/bridgekit/internal/tty"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host"
	"github.com/bridgekit/bridgekit/servers/host/auth"
	"github.com/bridgekit/bridgekit/servers/host/prompt"
)

// slowInitialize is how long initialize may take before the host says, on
// a terminal, that it is waiting.
const slowInitialize = 2 * time.Second

// options are the command line's.
type options struct {
	config, policy, workspace string
	prompt                    string
	color                     string
	maxFrame                  int
	grace                     time.Duration
	verbose                   bool
	rawStderr                 bool
	auth                      string
	authTerminal              bool
	gateway, gatewayProtocol  string
	gatewayHeaders            headerFlags
	gatewayAuth               *auth.Gateway // from gateway and gatewayHeaders, set by run
	passEnv                   envFlags
	record                    string
}

// headerFlags are -gateway-header's NAME=VAR: a header whose value is
// environment variable VAR's, so that the secret is in neither argv nor
// a log.
type headerFlags []string

func (h *headerFlags) String() string { return strings.Join(*h, ",") }

func (h *headerFlags) Set(v string) error {
	name, env, ok := strings.Cut(v, "=")
	if !ok || name == "" || env == "" {
		return errors.New("want NAME=VAR: the header NAME, its value taken from the environment variable VAR")
	}
	*h = append(*h, v)
	return nil
}

// envFlags are -pass-env's entries: variable names or PREFIX* patterns.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, ",") }

func (e *envFlags) Set(v string) error {
	if err := checkEnvEntry(v); err != nil {
		return err
	}
	*e = append(*e, v)
	return nil
}

// gatewayOption is the -gateway flags' auth.Gateway, nil without
// -gateway; each header's value is read from its variable, which must be
// set.
func gatewayOption(o options, lookup func(string) (string, bool)) (*auth.Gateway, error) {
	if o.gateway == "" {
		if len(o.gatewayHeaders) > 0 {
			return nil, errors.New("-gateway-header needs -gateway")
		}
		if o.gatewayProtocol != "" {
			return nil, errors.New("-gateway-protocol needs -gateway")
		}
		return nil, nil
	}
	g := &auth.Gateway{BaseURL: o.gateway, Protocol: o.gatewayProtocol, Headers: map[string]string{}}
	for _, h := range o.gatewayHeaders {
		name, env, _ := strings.Cut(h, "=")
		v, ok := lookup(env)
		if !ok || v == "" {
			return nil, fmt.Errorf("-gateway-header %s: the variable %s is not set", name, env)
		}
		g.Headers[name] = v
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

func main() {
	var o options
	flag.StringVar(&o.config, "config", "", "configuration `file`: tools, skills folder, workspace (see README.md)")
	flag.StringVar(&o.policy, "policy", "", "policy `file` deciding permissions, file access and commands; without one everything is denied")
	flag.StringVar(&o.workspace, "workspace", "", "workspace `dir` (default: the config's, else the current directory)")
	flag.StringVar(&o.prompt, "prompt", "", "run one prompt with the runtime given after --, as its ACP client")
	flag.StringVar(&o.color, "color", "auto", "colour the rendering on stderr: auto, always or never")
	flag.IntVar(&o.maxFrame, "max-frame", ndjson.DefaultMaxFrame, "largest inbound line in bytes")
	flag.DurationVar(&o.grace, "grace", host.DefaultStopGrace, "how long to wait for a clean stop after a signal")
	flag.BoolVar(&o.verbose, "v", false, "log diagnostics to stderr")
	flag.BoolVar(&o.rawStderr, "raw-stderr", false, "pass the runtime's stderr through untouched (by default each line is shown visibly, after \"stderr:\", like the rest of its text)")
	flag.StringVar(&o.record, "record", "", "with a runtime after --: write every frame exchanged with it to `file` when the host exits, one JSON object per line ({seq, ms, dir, method, id, line, cut}, as testdata/acp/traffic)")
	flag.Var(&o.passEnv, "pass-env", "pass the runtime the host's environment variable `NAME` (or those a PREFIX* pattern matches), beside the baseline and the policy's agent.env (repeatable)")
	flag.StringVar(&o.auth, "auth", "", "authenticate with the agent's method `ID` (default: an env_var or API-key method whose variables are set and passed to the agent)")
	flag.BoolVar(&o.authTerminal, "auth-terminal", false, "allow running the agent's terminal authentication method (an interactive login)")
	flag.StringVar(&o.gateway, "gateway", "", "with -prompt: authenticate with the agent's gateway method, sending its model requests to the gateway at `URL`")
	flag.StringVar(&o.gatewayProtocol, "gateway-protocol", "", "with -gateway: the API the gateway speaks (`NAME`: anthropic, openai, google, bedrock, as the agent's gateway methods name it); the agent's gateway method for it is used")
	flag.Var(&o.gatewayHeaders, "gateway-header", "with -gateway: a header every request to the gateway carries, `NAME=VAR`, its value read from the environment variable VAR (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: host [flags] [-- COMMAND ARGS...]\n       host [flags] -prompt TEXT -- COMMAND ARGS...")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(flag.Args(), o))
}

// memoryLimit is the host's soft memory limit (runtime/debug's, unless
// GOMEMLIMIT sets one): every queue a runtime can fill is bounded in bytes,
// but the buffers a flood of large frames leaves would otherwise let the
// heap grow to twice their size before the collector runs.
const memoryLimit = 128 << 20

func run(args []string, o options) int {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	color, err := colorMode(o.color, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		return exitUsage
	}
	if o.maxFrame < 1 {
		fmt.Fprintf(os.Stderr, "host: -max-frame must be at least 1, not %d\n", o.maxFrame)
		return exitUsage
	}
	if o.grace < 0 {
		fmt.Fprintf(os.Stderr, "host: -grace must not be negative, not %v\n", o.grace)
		return exitUsage
	}
	gateway, err := gatewayOption(o, os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		return exitUsage
	}
	if gateway != nil {
		o.gatewayAuth = gateway
	}
	if o.prompt != "" && len(args) == 0 {
		fmt.Fprintln(os.Stderr, "host: -prompt needs the runtime's command after --")
		flag.Usage()
		return exitUsage
	}
	render := newRenderer(os.Stderr, color)
	defer render.close(time.Second)
	// Diagnostics go through the renderer's bounded queue: a stderr nobody
	// reads never blocks a log call, nor grows the host.
	log := slog.New(slog.NewTextHandler(logWriter{render}, &slog.HandlerOptions{Level: level}))
	if gateway != nil {
		// Header values are secrets: masked in every diagnostic.
		log = child.Logger(log, gateway.Redactor())
	}
	// Which means keeps the runtime and every command from outliving this
	// host (README.md, "Containment"); one that cannot be had is an error.
	if c := host.CurrentContainment(); c.Err != nil {
		render.Status("containment: %v", c.Err)
		return exitHostError
	} else {
		render.Status("containment: %s", c)
	}

	a, err := newApp(appOptions{config: o.config, policy: o.policy, workspace: o.workspace, render: render, log: log})
	if err != nil {
		// One line each (a policy's findings are several), each shown
		// visibly.
		for line := range strings.SplitSeq(err.Error(), "\n") {
			render.Status("%s", line)
		}
		return exitHostError
	}
	defer a.terms.Close(o.grace)
	if o.policy == "" {
		render.Status("no -policy: every permission request, file access and command is denied")
	}
	// One connection carries the bridge and ACP (the runtime's
	// session/update, permission, fs and terminal requests; in -prompt mode
	// our calls), with both protocols' cancel rules (harn.NewBridgeConn).
	//
	// Pending terminal/wait_for_exit calls must not hold the slots other
	// requests need: the connection has room for every wait the terminals
	// allow (maxWaits) besides otherSlots for everything else, and
	// terminal/output, kill and release, which never block, are handled on
	// the preempted lane (acpterm's ConnOptions).
	conn := rpc.Options{MaxFrame: o.maxFrame, Logger: log}
	a.term.ConnOptions(&conn, otherSlots)
	var tap func(io.Reader, io.Writer) (io.Reader, io.Writer)
	if o.record != "" {
		rec := recorder.New()
		tap = func(r io.Reader, w io.Writer) (io.Reader, io.Writer) {
			return rec.Reader(recorder.Recv, r), rec.Writer(recorder.Send, w)
		}
		defer func() {
			if err := recorder.WriteFile(o.record, rec.Frames()); err != nil {
				render.Status("-record: %v", err)
			}
		}()
	}
	// The runtime gets the baseline and what the policy and -pass-env
	// name of our environment, nothing else.
	passEnv := agentEnv(os.Environ(), slices.Concat(a.policy.Agent.Env.Inherit, o.passEnv))
	log.Debug("the runtime's environment", "passed", passEnv)
	srv := host.New(a.bridge(), &host.Options{
		PassEnv:   passEnv,
		Tap:       tap,
		Conn:      conn,
		Client:    a.client(),
		StopGrace: o.grace,
		// At the end of its input a runtime exits by itself, some after
		// seconds of shutting down: it gets -grace before SIGTERM.
		ExitGrace: o.grace,
		// At the end of its input the host answers what it has read and
		// exits; a wait_for_exit still pending then would hold it for
		// ever, so the terminals are closed (their waits answered) a
		// moment after.
		InputEnded: func() { time.AfterFunc(time.Second, func() { a.terms.Close(o.grace) }) },
	})

	// A write to a closed stdout must fail with EPIPE, and end the session
	// with a message, rather than kill the process without one. (Notify,
	// unlike Ignore, is not inherited by the child.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	if o.prompt != "" {
		return runPrompt(a, srv, sigs, o, args)
	}
	return serve(a, srv, sigs, o.grace, o.rawStderr, args)
}

// serve serves the bridge on stdin/stdout, or over a child's pipes. The
// peer speaks Harn's bridge, so it gets Harn's members in answers.
func serve(a *app, srv *host.Server, sigs chan os.Signal, grace time.Duration, rawStderr bool, args []string) int {
	a.harnPeer.Store(true)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	got := make(chan os.Signal, 1)
	var process atomic.Pointer[os.Process] // the child, once started
	go func() {
		sig := <-sigs
		got <- sig
		stop()
		select {
		case sig = <-sigs:
			a.render.Status("second signal (%v): exiting now", sig)
		case <-time.After(grace + time.Second):
			a.render.Status("did not stop within %v of %v: exiting now", grace, sig)
		}
		// Exiting now must not leave the child running behind us.
		if p := process.Load(); p != nil {
			_ = p.Kill()
		}
		a.terms.Close(100 * time.Millisecond)
		a.render.close(100 * time.Millisecond)
		os.Exit(signalStatus(sig))
	}()

	var err error
	if len(args) > 0 {
		cmd := exec.Command(args[0], args[1:]...)
		defer runtimeStderr(a, cmd, rawStderr)()
		err = srv.ServeCommandConn(ctx, cmd, func(*rpc.Conn) { process.Store(cmd.Process) })
	} else {
		err = srv.Serve(ctx, os.Stdin, os.Stdout)
	}
	var exit *host.ExitError
	if cut, ok := errors.AsType[*host.CutFrameError](err); ok {
		a.render.Status("%v", cut)
	}
	switch {
	case errors.As(err, &exit):
		a.render.Status("%v", exit)
		return exit.Status()
	case errors.Is(err, context.Canceled):
		return signalStatus(<-got)
	case err != nil:
		a.render.Status("%v", err)
		return exitHostError
	}
	return 0
}

// runPrompt starts the runtime, runs the prompt as its ACP client while
// serving it, and returns the prompt's exit status.
func runPrompt(a *app, srv *host.Server, sigs chan os.Signal, o options, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	defer runtimeStderr(a, cmd, o.rawStderr)()
	// A Ctrl-C at the terminal must reach only us: the runtime is cancelled
	// through the protocol, not killed by the terminal's SIGINT.
	child.Contain(cmd)
	serveCtx, stopServe := context.WithCancel(context.Background())
	defer stopServe()
	runCtx, abandon := context.WithCancel(context.Background())
	defer abandon()

	// The agent's credentials are what its environment holds: a method is
	// chosen only when the agent will see its variables, and one the
	// policy withholds is reported as such.
	env := srv.Environ()
	lookup := func(name string) (string, bool) {
		for _, kv := range slices.Backward(env) {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v, true
			}
		}
		return "", false
	}
	withheld := func(name string) bool {
		v, set := os.LookupEnv(name)
		_, passed := lookup(name)
		return set && v != "" && !passed
	}
	pr := prompt.New(prompt.Options{
		Text: o.prompt, Cwd: a.ws.Dir(), Argv: args, Env: env,
		Capabilities: &acp.ClientCapabilities{Fs: &acp.FileSystemCapabilities{ReadTextFile: new(true), WriteTextFile: new(true)}, Terminal: new(true)},
		Auth:         auth.Options{Method: acp.AuthMethodID(o.auth), Terminal: o.authTerminal, Gateway: o.gatewayAuth, LookupEnv: lookup, Withheld: withheld},
		AuthHint:     "(choose a method with -auth ID; an env_var or API-key method needs its variables set in the host's environment and passed to the agent by the policy's agent.env or -pass-env NAME; -auth-terminal lets the host run a terminal method; -gateway URL a gateway method)",
		Status:       a.render.Status,
		OnHarn: func(adv *harn.AgentCapabilities) {
			a.harnPeer.Store(true)
			if len(adv.SessionUpdateExtensions) > 0 {
				a.render.setHarnExtensions(adv.SessionUpdateExtensions)
			}
		},
		PromptDone: a.render.endStream,
		OnCancel:   a.perms.Cancel,
		Denied:     a.perms.LastDenied,
	})
	if tty.Is(os.Stderr) {
		pr.SetSlow(slowInitialize)
	}
	var (
		result   prompt.Outcome
		started  atomic.Bool
		process  atomic.Pointer[os.Process]
		finished = make(chan struct{})
	)
	use := func(conn *rpc.Conn) {
		started.Store(true)
		process.Store(cmd.Process)
		result = pr.Run(runCtx, conn)
		close(finished)
		// End the runtime's input: a runtime exits at the end of it; one
		// that does not is stopped after -grace.
		conn.Close()
	}

	go func() {
		sig := <-sigs
		if pr.Cancel(sig) {
			a.render.Status("%v: sent session/cancel; waiting up to %v for the agent to answer (again to quit now)", sig, o.grace)
			timer := time.NewTimer(o.grace)
			defer timer.Stop()
			select {
			case <-finished:
			case <-timer.C:
				a.render.Status("the agent did not answer session/cancel within %v: stopping it", o.grace)
				abandon()
				stopServe()
			case sig = <-sigs:
				forceExit(a, &process, sig)
			}
		} else {
			a.render.Status("%v: stopping the runtime", sig)
			abandon()
			stopServe()
		}
		forceExit(a, &process, <-sigs)
	}()
	go func() {
		// The server stops a runtime that has not exited -grace after the
		// end of its input (host.Options.ExitGrace); say so.
		<-finished
		select {
		case <-serveCtx.Done():
		case <-time.After(o.grace):
			a.render.Status("the runtime did not exit within %v of the end of its input: stopping it", o.grace)
		}
	}()

	err := srv.ServeCommandConn(serveCtx, cmd, use)
	stopServe() // the runtime is gone: the goroutine above says nothing more
	var exit *host.ExitError
	cut, cutShort := errors.AsType[*host.CutFrameError](err)
	switch {
	case !started.Load():
		if sig := pr.Signalled(); sig != nil {
			return signalStatus(sig)
		}
		a.render.Status("%v", err)
		return exitCannotStart
	case result.Kind == prompt.RuntimeDied && errors.As(err, &exit):
		result.Summary += " (" + exit.Error() + ")"
	case errors.As(err, &exit) && result.Kind != prompt.RuntimeDied:
		a.log.Warn("the runtime exited uncleanly after the prompt", "err", exit)
	}
	if cutShort {
		// A frame lost is never silent: the agent stopped, or was stopped,
		// while it wrote it.
		a.render.Status("%v", cut)
	}
	if u := result.Usage; u != nil {
		a.render.line(a.render.paint("usage:", cBlue) + " the turn used " + u.String())
	} else if u := a.metaUsage.total(); u != nil {
		a.render.line(a.render.paint("usage:", cBlue) + " the turn used " + u.String() + " (as the agent's updates report it)")
	}
	status := exitStatus(result)
	label := a.render.paint("done:", cGreen, cBold)
	if status != exitCompleted {
		label = a.render.paint("failed:", cRed, cBold)
	}
	a.render.Status("%s %s (exit status %d)", hostText(label), result.Summary, status)
	return status
}

// runtimeStderr sets the runtime's stderr: the host's own, untouched, with
// raw; else the renderer's filter, which shows each line visibly. It
// returns what shows the filter's unfinished last line, once the runtime
// is gone.
func runtimeStderr(a *app, cmd *exec.Cmd, raw bool) func() {
	if raw {
		cmd.Stderr = os.Stderr
		return func() {}
	}
	w := a.render.stderr()
	cmd.Stderr = w
	return w.Flush
}

// Exit statuses of -prompt (README.md, "Exit statuses"). 128+n reports
// signal n.
const (
	exitCompleted       = 0
	exitHostError       = 1
	exitUsage           = 2
	exitAgentError      = 3
	exitRefused         = 4
	exitMaxTokens       = 5
	exitMaxTurnRequests = 6
	exitNotCompleted    = 7
	exitAgentCancelled  = 8
	exitRuntimeDied     = 9
	exitProtocol        = 10
	exitAuth            = 11
	exitDeniedCancelled = 12
	exitCannotStart     = 127
)

// exitStatus is the exit status of a prompt's outcome.
func exitStatus(o prompt.Outcome) int {
	if o.Kind == prompt.Signalled {
		return signalStatus(o.Signal)
	}
	return map[prompt.Kind]int{
		prompt.Completed: exitCompleted, prompt.HostError: exitHostError, prompt.AgentError: exitAgentError,
		prompt.Refused: exitRefused, prompt.MaxTokens: exitMaxTokens, prompt.MaxTurnRequests: exitMaxTurnRequests,
		prompt.NotCompleted: exitNotCompleted, prompt.AgentCancelled: exitAgentCancelled, prompt.RuntimeDied: exitRuntimeDied,
		prompt.Protocol: exitProtocol, prompt.Auth: exitAuth, prompt.DeniedCancelled: exitDeniedCancelled,
	}[o.Kind]
}

// signalStatus is the conventional exit status after signal sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// forceExit ends the host at once after a second signal, killing the
// runtime and every process it started.
func forceExit(a *app, process *atomic.Pointer[os.Process], sig os.Signal) {
	a.render.Status("second signal (%v): exiting now", sig)
	if p := process.Load(); p != nil {
		child.Kill(p)
	}
	a.terms.Close(100 * time.Millisecond)
	a.render.close(100 * time.Millisecond)
	os.Exit(signalStatus(sig))
}
