package main

import (
	hostpolicy "github.com/bridgekit/bridgekit/servers/host/policy"
)

// policy decides what the agent may do (see README.md, "Policy"): it is
// servers/host/policy's, which `bridgekit policy check` checks too. It
// fails closed: whatever no rule allows is denied, and so is everything
// when there is no policy file.
type policy = hostpolicy.Policy

// loadPolicy reads and checks a policy file (hostpolicy.Load: a command
// that runs workspace code where the runtime may write is refused); path
// "" denies everything.
func loadPolicy(path string) (*policy, error) {
	if path == "" {
		return &policy{}, nil
	}
	return hostpolicy.Load(path)
}
