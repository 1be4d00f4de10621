package main

import (
	"slices"
	"strings"

	hostpolicy "github.com/bridgekit/bridgekit/servers/host/policy"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// policy decides what the agent may do (see README.md, "Policy"): it is
// servers/host/policy's, which `bridgekit policy check` checks too. It
// fails closed: whatever no rule allows is denied, and so is everything
// when there is no policy file. Its agent.env decides what the runtime
// the host starts (after --) gets of the host's environment: the baseline
// (internal/child's BaselineEnv: PATH, HOME, the locale, ...) and the
// variables agent.env.inherit names, nothing else (see agentEnv).
type policy = hostpolicy.Policy

// loadPolicy reads and checks a policy file (hostpolicy.Load: a command
// that runs workspace code where the runtime may write is refused, an
// agent.env.inherit entry must be a name or a PREFIX* pattern); path ""
// denies everything.
func loadPolicy(path string) (*policy, error) {
	if path == "" {
		return &policy{}, nil
	}
	return hostpolicy.Load(path)
}

// checkEnvEntry checks a -pass-env entry as agent.env.inherit's are.
func checkEnvEntry(e string) error { return hostpolicy.CheckEnvEntry(e) }

// agentEnv returns the names of the variables of environ (os.Environ's
// form) that entries (agent.env.inherit and -pass-env) pass the agent,
// beside the baseline: those an entry names exactly, and those a PREFIX*
// pattern matches unless they change what a program runs or loads
// (terminal.Steering: NODE_OPTIONS, LD_PRELOAD, PATH, ...), which only an
// exact entry passes. Entries compare case-insensitively, as
// terminal.env.inherit's, so "HTTP_PROXY" passes http_proxy too; each
// name of environ is kept as it is (both HTTP_PROXY and http_proxy pass).
func agentEnv(environ, entries []string) []string {
	var names []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.IndexByte(name, 0) >= 0 || slices.Contains(names, name) {
			continue
		}
		if slices.ContainsFunc(entries, func(e string) bool { return envEntryMatches(e, name) }) {
			names = append(names, name)
		}
	}
	return names
}

// envEntryMatches reports whether entry passes the variable name: equal to
// it (ASCII case aside), or a PREFIX* pattern that starts it when it is
// not terminal.Steering.
func envEntryMatches(entry, name string) bool {
	if foldEqual(entry, name) {
		return true
	}
	prefix, ok := strings.CutSuffix(entry, "*")
	return ok && len(name) >= len(prefix) && foldEqual(name[:len(prefix)], prefix) && !terminal.Steering(name)
}

// foldEqual compares a and b byte for byte, ASCII letters' case aside.
func foldEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
