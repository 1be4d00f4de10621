package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// The host's builtins: what the tools of the configuration run when the
// runtime invokes them with builtin_call (see README.md, "Tools and
// builtins"). Each reads one arguments object, the call's single
// positional argument, and touches only what the policy's fs.read allows.
var builtins = map[string]builtin{
	"read_file":      {run: (*app).builtinReadFile, doc: "read a text file of the workspace"},
	"list_files":     {run: (*app).builtinListFiles, doc: "list the workspace's files"},
	"search_text":    {run: (*app).builtinSearchText, doc: "find lines of the workspace's text files"},
	"workspace_info": {run: (*app).builtinWorkspaceInfo, doc: "describe the workspace, tools, skills and policy"},
}

type builtin struct {
	run func(a *app, ctx context.Context, args jsontext.Value) (any, error)
	doc string
}

// builtinNames lists the builtins for messages.
func builtinNames() string { return strings.Join(slices.Sorted(maps.Keys(builtins)), ", ") }

// Bounds of the builtins' answers and work.
const (
	defaultListLimit   = 200
	maxListLimit       = 2000
	defaultSearchLimit = 50
	maxSearchLimit     = 500
	maxSearchFileBytes = 1 << 20
	maxWalkedFiles     = 20000
	maxMatchText       = 200
)

// builtinCall serves builtin_call: a configured tool, with exactly one
// argument, its arguments object. A name the configuration does not list
// is rejected with -32001 (Harn's "tool rejected": the model gets a denied
// tool result), bad arguments are -32602.
func (a *app) builtinCall(ctx context.Context, p *harn.BuiltinCallParams) (res jsontext.Value, err error) {
	i := slices.IndexFunc(a.tools, func(t configTool) bool { return t.Name == p.Name })
	label := a.render.paint("builtin", cBold) + " " + clean(p.Name)
	if i < 0 {
		a.render.line(label + ": " + a.render.paint("rejected", cRed, cBold) + " (not a tool of this host)")
		return nil, rpc.NewError(codeDenied, fmt.Sprintf("builtin_call: %s is not a tool of this host", rpc.Truncate(p.Name, rpc.MaxEcho)),
			map[string]string{"tool": rpc.Truncate(p.Name, rpc.MaxEcho), "reason": "not a tool of this host"})
	}
	tool := a.tools[i]
	label += " (" + tool.Builtin + ")"
	defer func() {
		if err != nil {
			a.render.line(label + ": " + a.render.paint("failed", cRed) + " (" + clean(err.Error()) + ")")
		} else {
			a.render.line(label + ": " + a.render.paint("done", cGreen))
		}
	}()
	if len(p.Args) != 1 || p.Args[0].Kind() != '{' {
		return nil, rpc.InvalidParams(fmt.Errorf("builtin_call %s: want one argument, the arguments object", tool.Name))
	}
	out, err := builtins[tool.Builtin].run(a, ctx, p.Args[0])
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// decodeArgs reads a builtin's arguments strictly.
func decodeArgs(name string, args jsontext.Value, v any) error {
	if err := json.Unmarshal(args, v, json.RejectUnknownMembers(true)); err != nil {
		return rpc.InvalidParams(fmt.Errorf("%s: %w", name, err))
	}
	return nil
}

// absolute makes a workspace-relative path absolute.
func (a *app) absolute(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(a.ws.Dir(), filepath.FromSlash(path))
}

// builtinReadFile: {path, line?, limit?} → {path, content}; path is
// absolute or relative to the workspace, line counts from 1.
func (a *app) builtinReadFile(ctx context.Context, args jsontext.Value) (any, error) {
	var in struct {
		Path  string `json:"path"`
		Line  *int64 `json:"line"`
		Limit *int64 `json:"limit"`
	}
	if err := decodeArgs("read_file", args, &in); err != nil {
		return nil, err
	}
	if in.Path == "" {
		return nil, rpc.InvalidParams(errors.New("read_file: path is required"))
	}
	req := &acp.ReadTextFileRequest{Path: a.absolute(in.Path)}
	if in.Line != nil {
		req.Line = wire.Some(*in.Line)
	}
	if in.Limit != nil {
		req.Limit = wire.Some(*in.Limit)
	}
	res, err := a.readTextFile(ctx, req)
	if err != nil {
		return nil, err
	}
	rel, _ := a.ws.Rel(req.Path)
	return struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}{rel, res.Content}, nil
}

// walk calls visit with the workspace-relative path of every regular file
// under dir (a workspace directory) that the policy lets the agent read
// and pattern matches, in lexical order, until visit returns false. It
// walks through the workspace's root (links are not followed), skips .git
// and stops after maxWalkedFiles files.
func (a *app) walk(ctx context.Context, dir, pattern string, visit func(rel string) bool) error {
	rel, err := a.ws.Rel(a.absolute(dir))
	if err != nil {
		if errors.Is(err, workspace.ErrOutside) {
			return denied("list", dir, "outside the workspace")
		}
		return rpc.InvalidParams(err)
	}
	if fi, err := a.ws.Stat(rel); err != nil || !fi.IsDir() {
		return rpc.NewError(codeNotFound, fmt.Sprintf("%s is not a directory of the workspace", rel), map[string]string{"path": dir})
	}
	if err := permission.CheckPathGlob(pattern); err != nil {
		return rpc.InvalidParams(err)
	}
	seen := 0
	stop := errors.New("stop")
	err = fs.WalkDir(a.ws.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are left out
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if seen++; seen > maxWalkedFiles {
			return stop
		}
		if !a.policy.fsAccess(p, false).Allow || !permission.Glob(pattern, p) {
			return nil
		}
		if !visit(p) {
			return stop
		}
		return nil
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

// limitOf reads an optional limit.
func limitOf(name string, limit *int, def, most int) (int, error) {
	if limit == nil {
		return def, nil
	}
	if *limit < 1 || *limit > most {
		return 0, rpc.InvalidParams(fmt.Errorf("%s: limit must be 1 to %d", name, most))
	}
	return *limit, nil
}

// builtinListFiles: {path?, pattern?, limit?} → {files, truncated}: the
// readable files under path (default the workspace) whose
// workspace-relative path pattern matches (default **).
func (a *app) builtinListFiles(ctx context.Context, args jsontext.Value) (any, error) {
	var in struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
		Limit   *int   `json:"limit"`
	}
	if err := decodeArgs("list_files", args, &in); err != nil {
		return nil, err
	}
	limit, err := limitOf("list_files", in.Limit, defaultListLimit, maxListLimit)
	if err != nil {
		return nil, err
	}
	if in.Pattern == "" {
		in.Pattern = "**"
	}
	files, truncated := []string{}, false
	err = a.walk(ctx, cmp.Or(in.Path, "."), in.Pattern, func(rel string) bool {
		if len(files) == limit {
			truncated = true
			return false
		}
		files = append(files, rel)
		return true
	})
	if err != nil {
		return nil, err
	}
	return struct {
		Files     []string `json:"files"`
		Truncated bool     `json:"truncated"`
	}{files, truncated}, nil
}

// match is one line search_text found.
type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// builtinSearchText: {query, path?, pattern?, limit?} → {matches,
// truncated}: the lines containing query (exactly, case-sensitive) of the
// readable UTF-8 files (up to 1 MiB) under path.
func (a *app) builtinSearchText(ctx context.Context, args jsontext.Value) (any, error) {
	var in struct {
		Query   string `json:"query"`
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
		Limit   *int   `json:"limit"`
	}
	if err := decodeArgs("search_text", args, &in); err != nil {
		return nil, err
	}
	if in.Query == "" {
		return nil, rpc.InvalidParams(errors.New("search_text: query is required"))
	}
	limit, err := limitOf("search_text", in.Limit, defaultSearchLimit, maxSearchLimit)
	if err != nil {
		return nil, err
	}
	if in.Pattern == "" {
		in.Pattern = "**"
	}
	matches, truncated := []match{}, false
	readable := func(rel string) error {
		if !a.policy.fsAccess(rel, false).Allow {
			return fs.ErrPermission
		}
		return nil
	}
	err = a.walk(ctx, cmp.Or(in.Path, "."), in.Pattern, func(rel string) bool {
		data, err := a.ws.ReadFileLimit(rel, maxSearchFileBytes, readable)
		if err != nil || !utf8.Valid(data) {
			return true
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, in.Query) {
				continue
			}
			if len(matches) == limit {
				truncated = true
				return false
			}
			matches = append(matches, match{Path: rel, Line: i + 1, Text: truncate(strings.TrimRight(line, "\r"), maxMatchText)})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return struct {
		Matches   []match `json:"matches"`
		Truncated bool    `json:"truncated"`
	}{matches, truncated}, nil
}

// builtinWorkspaceInfo: {} → the workspace, the configured tools, the
// skills, and what the policy lets the agent read, write and run.
func (a *app) builtinWorkspaceInfo(_ context.Context, args jsontext.Value) (any, error) {
	var in struct{}
	if err := decodeArgs("workspace_info", args, &in); err != nil {
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
	}{a.ws.Dir(), tools, skills, policyInfo{nonNil(a.policy.FS.Read), nonNil(a.policy.FS.Write), nonNil(a.policy.Terminal.Allow)}}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
