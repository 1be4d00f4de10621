package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/conform"
)

func init() {
	register(command{name: "conform", summary: "run a protocol's scenario suite against an implementation", run: runConform})
}

const conformSynopsis = `[--side S] [--baseline FILE] [--json | --json-out FILE] [flags] -- COMMAND ARGS...

Starts COMMAND (any implementation, in any language, that speaks the
protocol on its stdin and stdout) in a process group of its own, plays the
other side of the protocol against it, and runs the side's scenarios: the
catalogue's methods with valid params, the errors the catalogue expects,
and the bad inputs the protocol must survive. Every frame COMMAND writes is
decoded with the generated types; a problem is reported with its method,
frame number and JSON pointer. One row per scenario: pass, fail, not
implemented (the method is optional and COMMAND answers -32601), expected
failure (listed in --baseline) or stale baseline (listed, but it passes).

Sides: harn-host (conform plays a Harn runtime against a host that serves
the bridge on its stdin/stdout); acp-client (conform plays an ACP agent:
the client starts it, as "bridgekit conform --side acp-client --agent
[--json-out FILE]", and the scenarios run inside its session/prompt; the
table goes to stderr); acp-agent (conform plays an ACP client against an
agent: session/new in --workdir or a new directory, prompts, its fs,
permission and terminal requests answered, session/cancel); harn-runtime
(conform plays a Harn host against a runtime: the acp-agent suite on
Harn's stream under Harn's contract, with the bridge's requests answered
and its extensions checked against what the runtime advertised);
agentpm-service (conform plays the Harness against
a process provider of the role --role names: knowledge, memory,
embedding, approval or hook); agentpm-harness (conform plays the client
of "agentpm harness --machine" and answers its host_service requests);
agentpm-harness-client (conform plays the Harness: the client starts
"bridgekit conform --side agentpm-harness-client --agent [--json-out FILE]" as
its Harness, and the scenarios run inside its start_run).

Exit status: 0 every scenario passed, is not implemented or is an expected
failure; 1 a scenario failed unexpectedly, a baseline entry is stale, or
COMMAND could not be started; 2 a usage error or a bad baseline file.
docs/bridgekit/conform.md has the scenario ids and the file formats.

Flags:`

// sides are the roles conform plays, by --side name.
var sides = map[string]*conform.Side{
	conform.HarnHost.Name:             conform.HarnHost,
	conform.ACPClient.Name:            conform.ACPClient,
	conform.ACPAgent.Name:             conform.ACPAgent,
	conform.HarnRuntime.Name:          conform.HarnRuntime,
	conform.AgentPMService.Name:       conform.AgentPMService,
	conform.AgentPMHarness.Name:       conform.AgentPMHarness,
	conform.AgentPMHarnessClient.Name: conform.AgentPMHarnessClient,
}

// agentSides are the sides whose implementation starts conform (--agent),
// with the function that serves it on conform's stdin/stdout.
var agentSides = map[*conform.Side]func(context.Context, conform.Config, io.Reader, io.Writer, func([]conform.Result)) ([]conform.Result, error){
	conform.ACPClient:            conform.ServeACPClient,
	conform.AgentPMHarnessClient: conform.ServeAgentPMHarnessClient,
}

func runConform(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "conform", conformSynopsis)
	sideName := fs.String("side", conform.HarnHost.Name, usageOf("side", "the protocol's part conform plays against COMMAND's ("+sideNames()+")"))
	baseline := fs.String("baseline", "", "expected failures: a JSON `FILE` of {id, reason} entries")
	jsonOut := addJSON(fs, "the results (a report object), instead of the table")
	timeout := addTimeout(fs, 5*time.Second, "a scenario's exchanges with COMMAND")
	deadline := addDeadline(fs, 0, "the scenarios not run by then are reported \"not run\"")
	grace := fs.Duration("grace", 2*time.Second, "how long COMMAND gets to exit at the end of its input before it is signalled")
	workdir := fs.String("workdir", "", "a `DIR` the file scenarios create their files in, ideally COMMAND's workspace (default: a new temporary directory)")
	only := fs.String("run", "", "run only these scenario `IDS` (comma-separated)")
	list := fs.Bool("list", false, "list the side's scenarios and exit")
	passStderr := addStderr(fs, "COMMAND's (default: kept for the report's detail only)")
	strict := fs.Bool("strict", false, usageOf("strict", "enum values and union variants this version does not know, in what COMMAND sends, fail their scenario (otherwise they are listed under it as notes)"))
	auth := fs.String("authenticate", "", usageOf("authenticate", "acp-agent: the method to use when the agent lists it"))
	prompt := fs.String("prompt", "", "acp-agent, harn-runtime: the first two prompts' `TEXT` ({file}: a file conform made in the session's cwd; default \""+conform.DefaultPrompt+"\")")
	cancelPrompt := fs.String("cancel-prompt", "", "acp-agent, harn-runtime: the `TEXT` of the prompt conform cancels (default \""+conform.DefaultCancelPrompt+"\")")
	role := fs.String("role", "", usageOf("role", "agentpm-service: the role the provider serves ("+strings.Join(conform.ServiceRoles, ", ")+")"))
	agent := fs.Bool("agent", false, "acp-client, agentpm-harness-client: be the agent the client started, on this process's stdin/stdout (no COMMAND)")
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	side := sides[*sideName]
	if side == nil {
		fmt.Fprintf(env.Stderr, "bridgekit conform: unknown side %q (available: %s)\n", *sideName, sideNames())
		return 2
	}
	cfg := conform.Config{Argv: fs.Args(), Timeout: *timeout, Grace: *grace, WorkDir: *workdir,
		AuthMethod: *auth, Prompt: *prompt, CancelPrompt: *cancelPrompt, Role: *role, Strict: *strict}
	if side == conform.AgentPMService && !slices.Contains(conform.ServiceRoles, *role) || side != conform.AgentPMService && *role != "" {
		fmt.Fprintf(env.Stderr, "bridgekit conform: --side agentpm-service needs --role, one of %s (and --role only with it)\n", strings.Join(conform.ServiceRoles, ", "))
		return 2
	}
	if *list {
		for _, sc := range side.Scenarios(&cfg) {
			fmt.Fprintf(env.Stdout, "%s\t%s\n", sc.ID, sc.Title)
		}
		return 0
	}
	serve := agentSides[side]
	if serve != nil && !*agent || *agent && serve == nil {
		fmt.Fprintln(env.Stderr, "bridgekit conform: --side acp-client and agentpm-harness-client run with --agent, started by the client (and --agent only with them)")
		return 2
	}
	if *agent && len(cfg.Argv) > 0 {
		fmt.Fprintln(env.Stderr, "bridgekit conform: --agent takes no COMMAND: the client starts conform")
		return 2
	}
	if *agent && jsonOut.stdout {
		fmt.Fprintln(env.Stderr, "bridgekit conform: --json with --agent would mix results into the protocol's stdout; use --json-out FILE")
		return 2
	}
	if len(cfg.Argv) == 0 && !*agent {
		fmt.Fprintln(env.Stderr, "bridgekit conform: no COMMAND to run (put it after --)")
		fs.Usage()
		return 2
	}
	if *timeout <= 0 || *grace <= 0 || *deadline < 0 {
		fmt.Fprintln(env.Stderr, "bridgekit conform: --timeout and --grace must be positive, --deadline not negative")
		return 2
	}
	var bl *conform.Baseline
	if *baseline != "" {
		var err error
		if bl, err = conform.LoadBaseline(*baseline); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit conform: --baseline: %v\n", err)
			return 2
		}
		if bl.Side != "" && bl.Side != side.Name {
			fmt.Fprintf(env.Stderr, "bridgekit conform: --baseline is for side %q, not %q\n", bl.Side, side.Name)
			return 2
		}
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if cfg.WorkDir == "" && !*agent { // an agent's files go to the session's cwd
		dir, err := os.MkdirTemp("", "bridgekit-conform-")
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit conform: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		cfg.WorkDir = dir
	}
	if *passStderr {
		cfg.Stderr = env.Stderr
	}
	if *deadline > 0 {
		cfg.Deadline = time.Now().Add(*deadline)
	}
	if env.Terminal {
		cfg.Progress = func(r conform.Result) { fmt.Fprintf(env.Stderr, "\r\x1b[K%s: %s", r.ID, r.Status) }
	}
	began := time.Now()
	var (
		results []conform.Result
		err     error
		status  = 1
	)
	// finish reports the results: the table (on stderr when stdout is
	// the protocol's), --json, and the exit status.
	finish := func(results []conform.Result, err error) {
		elapsed := time.Since(began)
		if env.Terminal {
			fmt.Fprint(env.Stderr, "\r\x1b[K")
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit conform: %v\n", err)
			if errors.Is(err, conform.ErrStart) || len(results) == 0 {
				return
			}
		}
		results, _ = bl.Apply(side.Name, results, func(id string) bool { return len(cfg.Only) == 0 || slices.Contains(cfg.Only, id) })
		summary := conform.Summarize(results)
		if err != nil {
			summary.OK = false
		}
		table := env.Stdout
		if *agent {
			table = env.Stderr
		}
		if !jsonOut.stdout {
			if werr := conform.WriteTable(table, results, elapsed); werr != nil {
				fmt.Fprintf(env.Stderr, "bridgekit conform: %v\n", werr)
				return
			}
		}
		if jsonOut.wanted() {
			rep := conform.Report{Side: side.Name, Command: cfg.Argv, Started: began.UTC().Format(time.RFC3339Nano),
				DurationMS: float64(elapsed.Microseconds()) / 1000, Summary: summary, Scenarios: results}
			if werr := writeReport(env, jsonOut, rep); werr != nil {
				fmt.Fprintf(env.Stderr, "bridgekit conform: %v\n", werr)
				return
			}
		}
		if summary.OK {
			status = 0
		}
	}
	if *agent {
		// The results are reported before the prompt is answered: the
		// client may stop its agent as soon as it has the answer.
		reported := false
		results, err = serve(ctx, cfg, env.Stdin, env.Stdout, func(rs []conform.Result) {
			reported = true
			finish(rs, nil)
		})
		if !reported {
			finish(results, err)
		}
		return status
	}
	results, err = conform.Run(ctx, side, cfg)
	finish(results, err)
	return status
}

func writeReport(env *Env, j *jsonOutput, rep conform.Report) error {
	w, closeFile, err := j.open(env.Stdout)
	if err != nil {
		return err
	}
	if err := conform.WriteJSON(w, rep); err != nil {
		closeFile()
		return err
	}
	return closeFile()
}

func sideNames() string {
	var names []string
	for n := range sides {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
