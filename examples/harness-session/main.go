// Command harness-session runs an AgentPM Harness session end to end from
// Go: it starts `agentpm harness --machine` (clients/harness), serves the
// Run's host services in Go and shows the Run's progress.
//
//	harness-session [flags] QUESTION...
//
// The host services: a model ("default") that looks the question up in the
// docs, then answers from what it found; a knowledge service ("docs") that
// ranks the sections of a folder of Markdown files (-docs, default a few
// sample runbooks built in) by the question's words, with citations; a
// before_knowledge_request hook ("query-policy") that tidies queries and
// caps their results; an approval controller that approves (-deny to
// deny) any checkpoint of the agent.
//
// The Harness is -agentpm, else $AGENTPM, else the fake Harness of
// servers/harness built into this program (it starts itself as the child).
// On a terminal the progress is a live status line under the milestones;
// piped (or with -plain) it is one line per event and host-service call.
// The first interrupt cancels the Run (cancel_run), the second closes the
// session and exits (within about a second: the Harness is sent SIGTERM
// if it has not exited a second after its stdin closed). Output is never
// held up by a stdout nobody reads: lines are dropped, and counted.
//
// Exit status: 0 when the Run ended (or handed off), 1 when it did not or
// the session failed, 2 for bad flags (0 for -h), 130 after an interrupt.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/internal/tty"
	sim "github.com/bridgekit/bridgekit/servers/harness"
)

// fakeEnv makes this program the fake Harness (servers/harness.Command)
// instead of the session: how it starts itself as the child when no
// agentpm is given.
const fakeEnv = "HARNESS_SESSION_FAKE_HARNESS"

//go:embed testdata/docs
var sampleDocs embed.FS

func main() {
	if os.Getenv(fakeEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := sim.Command(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, sigs))
}

// scopes is the repeatable -scope flag.
type scopes map[string]string

func (s scopes) String() string { return fmt.Sprint(map[string]string(s)) }

func (s scopes) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", kv)
	}
	s[k] = v
	return nil
}

// run runs the session; sigs delivers interrupts.
func run(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	flags := flag.NewFlagSet("harness-session", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var (
		agentpm  = flags.String("agentpm", "", "the agentpm binary (default $AGENTPM, else the fake Harness built in)")
		agent    = flags.String("agent", "", "the agent selector")
		config   = flags.String("config", "", "the Harness configuration (for the fake Harness: a servers/harness script)")
		stateDir = flags.String("state-dir", "", "the Harness state directory (Run reports go under it)")
		docsDir  = flags.String("docs", "", "a folder of Markdown files for the docs service (default: the sample runbooks)")
		plain    = flags.Bool("plain", false, "one line per event, even on a terminal")
		deny     = flags.Bool("deny", false, "deny approval checkpoints")
		limit    = flags.Duration("timeout", 2*time.Minute, "how long the whole session may take")
		verbose  = flags.Bool("v", false, "log the client's diagnostics to stderr")
	)
	sc := scopes{}
	flags.Var(sc, "scope", "a scope KEY=VALUE for the Harness (repeatable)")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: harness-session [flags] QUESTION...")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	input := strings.Join(flags.Args(), " ")
	if strings.TrimSpace(input) == "" {
		flags.Usage()
		return 2
	}

	var docsFS fs.FS
	root := *docsDir
	if root == "" {
		docsFS, _ = fs.Sub(sampleDocs, "testdata/docs")
		root = "sample"
	} else {
		docsFS = os.DirFS(root)
	}
	d, err := loadDocs(docsFS, root)
	if err != nil {
		fmt.Fprintf(stderr, "harness-session: %v\n", err)
		return 1
	}

	o := &harness.Options{Path: *agentpm, Agent: *agent, Config: *config, StateDir: *stateDir, Scopes: sc, Stderr: stderr, StopGrace: time.Second}
	if *verbose {
		o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	show := newDisplay(stdout, !*plain && tty.Is(stdout))
	defer func() { _ = show.finish(displayFlush) }()
	o.OnEvent = show.event
	if o.Path == "" && os.Getenv(harness.EnvBinary) == "" {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "harness-session: no agentpm, and this program cannot start itself: %v\n", err)
			return 1
		}
		o.Path, o.Env = self, append(os.Environ(), fakeEnv+"=1")
		show.note("no -agentpm or $%s: using the fake Harness built into this program", harness.EnvBinary)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *limit)
	defer cancel()
	// The first interrupt cancels the Run, the second ends the session:
	// closing the client fails its pending calls (StartRun's wait for the
	// cancelled Run's end included) at once.
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var (
		interrupted atomic.Bool
		client      atomic.Pointer[harness.Client]
		quit        = make(chan struct{})
	)
	go func() {
		defer close(quit)
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		interrupted.Store(true)
		cancelRun()
		show.note("interrupted: cancelling the Run (again to quit)")
		select {
		case <-sigs:
			cancel()
			if c := client.Load(); c != nil {
				c.Close()
			}
		case <-ctx.Done():
		}
	}()
	// Wait for the interrupt goroutine: a Close it started ends before
	// the program does.
	defer func() { <-quit }()
	defer cancel()

	c, err := harness.Start(ctx, o)
	if err != nil {
		code := fail(show, stderr, err)
		if interrupted.Load() {
			code = 130
		}
		return code
	}
	client.Store(c)
	if ctx.Err() != nil {
		// An interrupt came while Start returned.
		c.Close()
	}
	defer c.Close()
	init, err := c.Initialize(ctx)
	if err != nil {
		return fail(show, stderr, err)
	}
	for _, s := range services(d, !*deny, show) {
		if _, err := c.RegisterHostService(ctx, s); err != nil {
			// A Harness registers only what its configuration names (and SDK
			// hooks and the approval controller): the others are optional.
			show.note("%s/%s not registered: %v", s.Role, s.RegistryID, err)
			continue
		}
		show.note("serving %s/%s", s.Role, s.RegistryID)
	}
	for _, m := range c.Unregistered(init.RequiredHostServices) {
		show.note("the Harness needs %s/%s, which this program does not serve", m.Role, m.RegistryID)
	}

	res, err := c.StartRun(runCtx, input, show.event)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the session ran past -timeout %v, so the Run was cancelled: %w", *limit, err)
	}
	if err != nil && res == nil {
		code := fail(show, stderr, err)
		if interrupted.Load() {
			code = 130
		}
		return code
	}
	show.close()
	var sum strings.Builder
	summary(&sum, res, *stateDir)
	show.print(sum.String())
	if err != nil && !interrupted.Load() {
		fmt.Fprintf(stderr, "harness-session: %v\n", err)
	}
	// The session's time limit may have run out: shutting down has a few
	// seconds of its own (a second interrupt still closes the client).
	sctx, stopShutdown := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stopShutdown()
	if err := c.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "harness-session: shutdown: %v\n", err)
	}
	if err := show.finish(displayFlush); err != nil {
		// The summary was lost: the session must not look fine.
		fmt.Fprintf(stderr, "harness-session: writing to stdout: %v\n", err)
		return 1
	}
	switch {
	case interrupted.Load():
		return 130
	case res.Status == agentpmmachine.TerminalStatusEnded || res.Status == agentpmmachine.TerminalStatusHandedOff:
		return 0
	}
	return 1
}

func fail(show *display, stderr io.Writer, err error) int {
	show.close()
	fmt.Fprintf(stderr, "harness-session: %v\n", err)
	return 1
}

// summary prints how the Run ended.
func summary(w io.Writer, res *harness.Result, stateDir string) {
	rep := &res.Report
	fmt.Fprintf(w, "\nRun %s: %s", shown(rep.RunID), shown(string(res.Status)))
	if rep.DurationMS != nil {
		fmt.Fprintf(w, " in %d ms", *rep.DurationMS)
	}
	fmt.Fprintln(w)
	switch res.OutputContent {
	case agentpmmachine.ContentPresent:
		fmt.Fprintf(w, "output: %s\n", indent(res.Output))
	case agentpmmachine.ContentRedacted, agentpmmachine.ContentSecretRedacted:
		fmt.Fprintln(w, "output: redacted by the Harness's content policy (trace.content full sends it)")
	default:
		fmt.Fprintln(w, "output: none sent (trace.content none, or the Run has none)")
	}
	if res.OutputContent != agentpmmachine.ContentPresent && len(rep.TerminalOutput) > 0 {
		fmt.Fprintf(w, "report terminal_output (nested content keys redacted): %s\n", indent(rep.TerminalOutput))
	}
	u := rep.Usage
	count := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	fmt.Fprintf(w, "usage: %d model calls, %d knowledge requests, %d memory requests", count(u.ModelCalls), count(u.KnowledgeRequests), count(u.MemoryRequests))
	if u.Tokens != nil {
		if n, ok := u.Tokens.TotalTokens.Get(); ok {
			fmt.Fprintf(w, ", %d tokens", n)
		}
	}
	fmt.Fprintln(w)
	if stateDir != "" {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(stateDir, "runs", rep.RunID, "report.json"))
	}
}

func indent(v jsontext.Value) string {
	out, err := jsontext.AppendFormat(nil, v, jsontext.Multiline(true), jsontext.WithIndent("  "))
	if err != nil {
		return string(v)
	}
	return string(out)
}
