package main

import (
	"fmt"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"os"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// policy decides what the agent may do (see README.md, "Policy"). It fails
// closed: whatever no rule allows is denied, and so is everything when
// there is no policy file.
type policy struct {
	// Permissions answer session/request_permission: the first rule that
	// matches the tool call decides.
	Permissions []permissionRule `json:"permissions"`
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

	commands *terminal.Commands // Terminal.Allow, parsed
}

// permissionRule matches a tool call by its tool name, kind and paths;
// every condition that is set must hold.
type permissionRule struct {
	ID       string   `json:"id"`
	Tools    []string `json:"tools"` // glob patterns on the tool name
	Kinds    []string `json:"kinds"` // ACP tool kinds
	Paths    []string `json:"paths"` // workspace path patterns (see pathsMatch)
	Decision string   `json:"decision"`
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
	bad := func(format string, args ...any) error {
		return fmt.Errorf("policy %s: "+format, append([]any{path}, args...)...)
	}
	for i, r := range p.Permissions {
		name := r.ID
		if name == "" {
			name = fmt.Sprintf("permissions[%d]", i)
		}
		if r.Decision != "allow" && r.Decision != "deny" {
			return nil, bad("%s: decision must be \"allow\" or \"deny\", not %q", name, r.Decision)
		}
		for _, k := range r.Kinds {
			if !acp.ToolKind(k).Known() {
				return nil, bad("%s: %q is not an ACP tool kind", name, k)
			}
		}
		for _, g := range r.Tools {
			if err := permission.CheckGlob(g); err != nil {
				return nil, bad("%s: %v", name, err)
			}
		}
		for _, g := range r.Paths {
			if err := permission.CheckPathGlob(g); err != nil {
				return nil, bad("%s: %v", name, err)
			}
		}
	}
	for _, g := range slices.Concat(p.FS.Read, p.FS.Write) {
		if err := permission.CheckPathGlob(g); err != nil {
			return nil, bad("fs: %v", err)
		}
	}
	if p.commands, err = terminal.NewCommands(p.Terminal.Allow); err != nil {
		return nil, bad("terminal: %v", err)
	}
	return p, nil
}

// decision is the policy's answer, with what made it.
type decision struct {
	Allow  bool
	Reason string
}

func allow(reason string) decision { return decision{Allow: true, Reason: reason} }
func deny(reason string) decision  { return decision{Reason: reason} }

// toolName is a permission request's tool: Harn's _meta.harn.toolName,
// else the tool call's title.
func toolName(tc *acp.ToolCallUpdate) string {
	if meta, ok := tc.Meta.Get(); ok && meta.Harn != nil && meta.Harn.ToolName != nil {
		return *meta.Harn.ToolName
	}
	title, _ := tc.Title.Get()
	return title
}

// permission decides a session/request_permission tool call. Its paths
// are the call's locations, diff paths and rawInput path members.
func (p *policy) permission(ws *workspace.Workspace, tc *acp.ToolCallUpdate) decision {
	tool := toolName(tc)
	kind, _ := tc.Kind.Get()
	paths := toolCallPaths(tc)
	rels := make([]string, 0, len(paths))
	outside := false
	for _, path := range paths {
		rel, err := ws.Resolve(path)
		if err != nil {
			outside = true
			continue
		}
		rels = append(rels, rel)
	}
	for i, r := range p.Permissions {
		if len(r.Tools) > 0 && !slices.ContainsFunc(r.Tools, func(g string) bool { return permission.Glob(g, tool) }) {
			continue
		}
		if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, string(kind)) {
			continue
		}
		if len(r.Paths) > 0 && !pathsMatch(r.Decision == "deny", r.Paths, rels, outside) {
			continue
		}
		name := r.ID
		if name == "" {
			name = fmt.Sprintf("permissions[%d]", i)
		}
		return decision{Allow: r.Decision == "allow", Reason: "rule " + name}
	}
	return deny("no rule allows it")
}

// pathsMatch reports whether a rule's path patterns match a call's paths
// (rels inside the workspace; outside says some path is not), failing
// closed either way: an allow rule matches only when every path is inside
// the workspace and matches a pattern, a deny rule as soon as one path
// matches a pattern or any is outside the workspace. So adding a harmless
// path to a call can neither escape a deny rule nor earn an allow.
func pathsMatch(deny bool, patterns, rels []string, outside bool) bool {
	matches := func(p string) bool {
		return slices.ContainsFunc(patterns, func(g string) bool { return permission.Glob(g, p) })
	}
	if deny {
		return outside || slices.ContainsFunc(rels, matches)
	}
	if outside || len(rels) == 0 {
		return false
	}
	for _, p := range rels {
		if !matches(p) {
			return false
		}
	}
	return true
}

// toolCallPaths collects the paths a tool call names: locations, diff
// content and the path-like members of rawInput (path, file_path, paths).
func toolCallPaths(tc *acp.ToolCallUpdate) []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	locs, _ := tc.Locations.Get()
	for _, l := range locs {
		add(l.Path)
	}
	content, _ := tc.Content.Get()
	for _, c := range content {
		if c.Diff != nil {
			add(c.Diff.Path)
		}
	}
	var raw map[string]jsontext.Value
	if json.Unmarshal(tc.RawInput, &raw) == nil {
		for _, key := range []string{"path", "file_path", "filePath", "paths", "source", "destination"} {
			var one string
			var many []string
			if json.Unmarshal(raw[key], &one) == nil {
				add(one)
			} else if json.Unmarshal(raw[key], &many) == nil {
				for _, p := range many {
					add(p)
				}
			}
		}
	}
	return out
}

// fsAccess decides an fs/* request for the workspace path rel.
func (p *policy) fsAccess(rel string, write bool) decision {
	patterns, what := p.FS.Read, "read"
	if write {
		patterns, what = p.FS.Write, "write"
	}
	if slices.ContainsFunc(patterns, func(g string) bool { return permission.Glob(g, rel) }) {
		return allow("fs." + what)
	}
	return deny("fs." + what + " does not list it")
}

// command decides a terminal/create command and its arguments
// (terminal.Commands.Match).
func (p *policy) command(command string, args []string) decision {
	if pat, ok := p.commands.Match(command, args); ok {
		return allow("terminal.allow " + pat)
	}
	return deny("terminal.allow does not list it")
}

// shellCommand decides a command line a shell is to run (terminal/create
// with Harn's shell; terminal.Commands.MatchShellLine): a plain line word
// by word, any other only by a pattern without wildcards equal to it.
func (p *policy) shellCommand(line string) decision {
	pat, exact, ok := p.commands.MatchShellLine(line)
	switch {
	case ok && exact:
		return allow("terminal.allow " + pat + " (exactly)")
	case ok:
		return allow("terminal.allow " + pat)
	case terminal.PlainShellLine(line) && strings.TrimSpace(line) == "":
		return deny("an empty command line")
	case terminal.PlainShellLine(line):
		return deny("terminal.allow does not list it")
	}
	return deny("terminal.allow does not list it; a shell command line with shell syntax (quotes, ;, &, |, $, backticks, redirections, globs, newlines, ...) is allowed only by a pattern without wildcards equal to it")
}
