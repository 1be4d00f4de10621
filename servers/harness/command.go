package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

// Command runs a scripted Harness as `agentpm harness [AGENT] [--config F]
// [--state-dir D] [--scope K=V]... [--input S] --machine` would run the
// real one, speaking the machine protocol on stdin and stdout: --config
// names a Script (JSON), --state-dir receives Run reports, --scope values
// are reported and given to Memory requests, --input is the Run input of
// a start_run without one, and AGENT selects among the script's agents.
// It returns the process's exit status: 0 after shutdown or the end of
// stdin, 2 for bad arguments, the status of a scripted exit (after writing
// its message to stderr), 1 after any other failure, including a preflight
// that does not pass (the Harness then writes no frame at all).
//
// -h, -help or --help prints the usage on stderr and returns 0.
func Command(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fmt.Fprint(stderr, Usage)
		return 0
	}
	cl, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	script := &Script{}
	if cl.config != "" {
		if script, err = LoadScript(cl.config); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
	opts := script.Options(&Options{StateDir: cl.stateDir, Scopes: cl.scopes})
	selectAgent(opts, script.Agents, cl.agent)
	opts.Input = cl.input
	err = New(opts).Serve(ctx, stdin, stdout)
	if exit, ok := errors.AsType[*ExitError](err); ok {
		if exit.Message != "" {
			fmt.Fprintf(stderr, "error: %s\n", exit.Message)
		}
		return exit.Code
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Say what stopped it (a signal), not just that ctx ended.
		err = fmt.Errorf("stopped: %w", context.Cause(ctx))
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// Usage is what Command prints for -h.
const Usage = `usage: fakeharness [harness] [AGENT] [--config SCRIPT.json] [--state-dir DIR] [--scope KEY=VALUE]... [--input TEXT] --machine

A scripted AgentPM Harness speaking the machine protocol on stdin and stdout.
  AGENT        select one of the script's agents
  --config     the script (JSON) saying what the Harness does
  --state-dir  where Run reports are written
  --scope      a scope value, reported and given to Memory requests (repeatable)
  --input      the Run input of a start_run that has none
  --machine    required: this Harness speaks only the machine protocol
`

// commandLine is what Command's arguments say.
type commandLine struct {
	agent, config, stateDir string
	input                   *string
	scopes                  map[string]string
}

func parseArgs(args []string) (*commandLine, error) {
	cl := &commandLine{}
	var machine, json, headless bool
	if len(args) > 0 && args[0] == "harness" {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "--machine":
			machine = true
		case "--json":
			json = true
		case "--headless":
			headless = true
		case "--config":
			cl.config, err = takeValue()
		case "--state-dir":
			cl.stateDir, err = takeValue()
		case "--input":
			var v string
			v, err = takeValue()
			cl.input = &v
		case "--scope":
			var kv string
			if kv, err = takeValue(); err == nil {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return nil, fmt.Errorf("--scope wants KEY=VALUE, got %q", kv)
				}
				if cl.scopes == nil {
					cl.scopes = map[string]string{}
				}
				cl.scopes[k] = v
			}
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("unknown argument %q", a)
			}
			if cl.agent != "" {
				return nil, fmt.Errorf("more than one agent selector: %q and %q", cl.agent, a)
			}
			cl.agent = a
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case !machine:
		return nil, errors.New("this Harness only speaks --machine")
	case json:
		return nil, errors.New("--json cannot be used with --machine")
	case headless:
		return nil, errors.New("--headless cannot be used with --machine")
	}
	return cl, nil
}

// selectAgent applies the agent selector: the report names the agent, and
// preflight fails (or needs a selection) when the selector does not pick
// one of the workspace's agents.
func selectAgent(o *Options, agents []string, selector string) {
	switch {
	case selector != "" && len(agents) > 0 && !slices.Contains(agents, selector):
		o.Preflight.Status = agentpmmachine.PreflightStatusFailed
		o.Preflight.Diagnostics = append(o.Preflight.Diagnostics, agentpmmachine.PreflightDiagnostic{Severity: agentpmmachine.DiagnosticSeverityFatal,
			Code: "agent_not_found", Message: fmt.Sprintf("agent `%s` is not in this workspace (have %s)", selector, strings.Join(agents, ", "))})
		return
	case selector == "" && len(agents) > 1:
		o.Preflight.Status = agentpmmachine.PreflightStatusSelectionRequired
		o.Preflight.Diagnostics = append(o.Preflight.Diagnostics, agentpmmachine.PreflightDiagnostic{Severity: agentpmmachine.DiagnosticSeverityPending,
			Code: "agent_selection_required", Message: "select one of " + strings.Join(agents, ", ")})
		return
	case selector == "" && len(agents) == 1:
		selector = agents[0]
	}
	if selector != "" {
		name, version, _ := strings.Cut(selector, "@")
		if strings.HasPrefix(selector, "@") {
			// @scope/name@version
			name, version, _ = strings.Cut(selector[1:], "@")
			name = "@" + name
		}
		if version == "" {
			version = "0.1.0"
		}
		o.Agent = agentpmmachine.PackageIdentity{Name: name, Version: version}
	}
}
