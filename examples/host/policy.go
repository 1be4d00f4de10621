package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// policy decides what the agent may do (see README.md, "Policy"). It fails
// closed: whatever no rule allows is denied, and so is everything when
// there is no policy file.
type policy struct {
	// Permissions answer session/request_permission: servers/host/permission's
	// rules, of which the first that matches the tool call (merged with its
	// earlier updates) decides.
	Permissions []permission.Rule `json:"permissions"`
	// FS lists the workspace paths fs/read_text_file and
	// fs/write_text_file may touch.
	FS struct {
		Read  []string `json:"read"`
		Write []string `json:"write"`
	} `json:"fs"`
	// Terminal lists the commands terminal/create may run, and the
	// environment they get.
	Terminal struct {
		Allow []string           `json:"allow"`
		Env   terminal.EnvPolicy `json:"env"`
	} `json:"terminal"`

	// Agent decides what the runtime the host starts (after --) gets of
	// the host's environment: the baseline (internal/child's BaselineEnv:
	// PATH, HOME, the locale, ...) and the variables Env.Inherit names,
	// nothing else (see agentEnv).
	Agent struct {
		Env struct {
			Inherit []string `json:"inherit"`
		} `json:"env"`
	} `json:"agent"`

	commands *terminal.Commands // Terminal.Allow, parsed
}

// loadPolicy reads and checks a policy file; path "" denies everything.
func loadPolicy(path string) (*policy, error) {
	p := &policy{}
	if path == "" {
		return p, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := json.Unmarshal(data, p, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	if err := (&permission.Policy{Rules: p.Permissions}).Validate(); err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	for _, g := range slices.Concat(p.FS.Read, p.FS.Write) {
		if err := permission.CheckPathGlob(g); err != nil {
			return nil, fmt.Errorf("policy %s: fs: %w", path, err)
		}
	}
	for _, e := range p.Agent.Env.Inherit {
		if err := checkEnvEntry(e); err != nil {
			return nil, fmt.Errorf("policy %s: agent.env.inherit: %w", path, err)
		}
	}
	if p.commands, err = terminal.NewCommands(p.Terminal.Allow); err != nil {
		return nil, fmt.Errorf("policy %s: terminal: %w", path, err)
	}
	return p, nil
}

// permissions is the permission.Policy of p's rules in workspace ws: paths
// are resolved as the workspace resolves them, links included.
func (p *policy) permissions(ws *workspace.Workspace) *permission.Policy {
	return &permission.Policy{Rules: p.Permissions, Resolve: ws.Resolve}
}

// fsAccess decides an fs/* request for the workspace path rel.
func (p *policy) fsAccess(rel string, write bool) (ok bool, reason string) {
	patterns, what := p.FS.Read, "read"
	if write {
		patterns, what = p.FS.Write, "write"
	}
	if slices.ContainsFunc(patterns, func(g string) bool { return permission.Glob(g, rel) }) {
		return true, "fs." + what
	}
	return false, "fs." + what + " does not list it"
}

// checkEnvEntry checks an entry of agent.env.inherit (or -pass-env): a
// variable name, or a prefix followed by "*" ("OPENAI_*"). A bare "*",
// which would pass every secret of the host's, is refused.
func checkEnvEntry(e string) error {
	name, _ := strings.CutSuffix(e, "*")
	switch {
	case e == "*":
		return errors.New(`"*" would pass the agent every variable of the host's: name them, or give a prefix ("OPENAI_*")`)
	case name == "" || strings.ContainsAny(name, "=*\x00"):
		return fmt.Errorf("%q is not a variable name or a PREFIX* pattern", e)
	}
	return nil
}

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
