package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/files"
)

// builtinNames are the builtins a configured tool can name (see README.md,
// "Tools and builtins"): servers/host/files' (read_file, list_files,
// search_text), which touch only what the policy's fs.read allows, and
// workspace_info.
var builtinNames = append(slices.Clone(files.BuiltinNames), "workspace_info")

// builtin is the builtin name.
func (a *app) builtin(name string) files.Builtin {
	if name == "workspace_info" {
		return a.workspaceInfo
	}
	return a.files.Builtin(name)
}

// builtinCall serves builtin_call: a configured tool, with exactly one
// argument, its arguments object. A name the configuration does not list
// is rejected with -32001 (Harn's "tool rejected": the model gets a denied
// tool result), bad arguments are -32602.
func (a *app) builtinCall(ctx context.Context, p *harn.BuiltinCallParams) (res jsontext.Value, err error) {
	i := slices.IndexFunc(a.tools, func(t configTool) bool { return t.Name == p.Name })
	label := a.render.paint("builtin", cBold) + " " + clean(p.Name)
	if i < 0 {
		a.render.hostLine(label + ": " + a.render.paint("rejected", cRed, cBold) + " (not a tool of this host)")
		return nil, rpc.NewError(files.CodeDenied, fmt.Sprintf("builtin_call: %s is not a tool of this host", rpc.Truncate(p.Name, rpc.MaxEcho)),
			map[string]string{"tool": rpc.Truncate(p.Name, rpc.MaxEcho), "reason": "not a tool of this host"})
	}
	tool := a.tools[i]
	label += " (" + tool.Builtin + ")"
	defer func() {
		if err != nil {
			a.render.hostLine(label + ": " + a.render.paint("failed", cRed) + " (" + clean(err.Error()) + ")")
		} else {
			a.render.hostLine(label + ": " + a.render.paint("done", cGreen))
		}
	}()
	if len(p.Args) != 1 || p.Args[0].Kind() != '{' {
		return nil, rpc.InvalidParams(fmt.Errorf("builtin_call %s: want one argument, the arguments object", tool.Name))
	}
	out, err := a.builtin(tool.Builtin)(ctx, p.Args[0])
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// builtinWorkspaceInfo: {} → the workspace, the configured tools, the
// skills, and what the policy lets the agent read, write and run.
func (a *app) workspaceInfo(_ context.Context, args jsontext.Value) (any, error) {
	var in struct{}
	if err := files.DecodeArgs("workspace_info", args, &in); err != nil {
		return nil, err
	}
	tools := make([]string, 0, len(a.tools))
	for _, t := range a.tools {
		tools = append(tools, t.Name)
	}
	skills := make([]string, 0, len(a.skills.List))
	for _, s := range a.skills.List {
		skills = append(skills, s.ID)
	}
	type policyInfo struct {
		FSRead   []string `json:"fs_read"`
		FSWrite  []string `json:"fs_write"`
		Terminal []string `json:"terminal"`
	}
	return struct {
		Workspace string     `json:"workspace"`
		Tools     []string   `json:"tools"`
		Skills    []string   `json:"skills"`
		Policy    policyInfo `json:"policy"`
	}{a.ws.Dir(), tools, skills, policyInfo{nonNil(a.policy.FS.Read), nonNil(a.policy.FS.Write), nonNil(a.policy.Terminal.Patterns())}}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
