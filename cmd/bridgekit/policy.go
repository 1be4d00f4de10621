package main

import (
	"context"
	"fmt"
	"os"

	hostpolicy "github.com/bridgekit/bridgekit/servers/host/policy"
)

func init() {
	register(command{name: "policy", summary: "check a host's policy file (policy check FILE...)", run: runPolicy})
}

// runPolicy is `bridgekit policy check FILE...`: it reads each host policy
// file (servers/host/policy, the format examples/host's -policy reads) and
// prints what a host would refuse it for: a file it cannot use, and every
// command that runs workspace code where the runtime may write (issue 33,
// finding 5), one a line. Exit status 1 when a file has a finding or
// cannot be used, 0 when all pass.
func runPolicy(_ context.Context, env *Env, args []string) int {
	fs := newFlags(env, "policy", "check FILE...\n\n"+
		"Checks host policy files (examples/host's -policy format, servers/host/policy):\n"+
		"a command that runs code from the workspace (git, make, npm, go test, pytest, ...)\n"+
		"allowed where the runtime may write is reported with both rules, as the host\n"+
		"refuses it at start; \"trust_workspace_code\": true on the command's rule accepts it.\n"+
		"Exit status 1 when a file has findings or cannot be used.")
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	if fs.NArg() < 2 || fs.Arg(0) != "check" {
		fs.Usage()
		return 2
	}
	status := 0
	for _, path := range fs.Args()[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%v\n", err)
			status = 1
			continue
		}
		p, err := hostpolicy.Parse(data)
		if err != nil {
			fmt.Fprintf(env.Stdout, "%s: %v\n", path, err)
			status = 1
			continue
		}
		findings := p.Check()
		for _, f := range findings {
			fmt.Fprintf(env.Stdout, "%s: %s\n", path, f.Error())
		}
		if len(findings) > 0 {
			status = 1
			continue
		}
		fmt.Fprintf(env.Stdout, "%s: ok\n", path)
	}
	return status
}
