// Command fakeharness is a scripted stand-in for `agentpm harness
// --machine`: it speaks AgentPM's Harness machine protocol on stdin and
// stdout, with the real command's arguments, and enforces the session
// rules (the startup preflight event, initialize before start_run, one
// active Run, cancel_run answered at once, shutdown):
//
//	fakeharness [AGENT] [--config SCRIPT.json] [--state-dir DIR] [--scope K=V]... [--input TEXT] --machine
//
// Without --config a Run is the Harness's agent loop driven by the
// client's model host service (registry id "default"), with its Knowledge
// and Memory actions sent to the client's knowledge and memory host
// services; a script (servers/harness.Script) changes the required host
// services, the content policy, and scripts Runs step by step. Point a
// client at it with AGENTPM=/path/to/fakeharness.
//
// Diagnostics go to stderr; stdout carries protocol frames only.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/bridgekit/bridgekit/servers/harness"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := harness.Command(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
