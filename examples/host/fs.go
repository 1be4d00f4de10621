package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// Error codes of this host's answers, beyond JSON-RPC's.
const (
	// codeDenied answers a request the policy denies (Harn's code for a
	// rejected tool).
	codeDenied = -32001
	// codeNotFound is ACP's resource-not-found.
	codeNotFound = int64(acp.ErrorCodeResourceNotFound)
)

// denied is the error answering a request the policy (or the workspace
// boundary) refuses.
func denied(what, path, reason string) error {
	return rpc.NewError(codeDenied, fmt.Sprintf("%s %s denied: %s", what, path, reason), map[string]string{"path": path, "reason": reason})
}

// fsCheck is the workspace.Check of an fs/* access: the policy decides on
// the path the kernel reached, and the decision is rendered.
func (a *app) fsCheck(what string, write bool) workspace.Check {
	return func(rel string) error {
		d := a.policy.fsAccess(rel, write)
		if !d.Allow {
			a.render.line(a.render.paint("fs", cRed) + " " + what + " " + clean(rel) + ": denied (" + d.Reason + ")")
			return denied(what, rel, d.Reason)
		}
		a.render.line(a.render.paint("fs", cDim) + " " + what + " " + clean(rel) + ": allowed (" + d.Reason + ")")
		return nil
	}
}

// fsError maps a workspace error onto this host's answers.
func (a *app) fsError(method, what, path string, err error) error {
	if _, ok := errors.AsType[*rpc.Error](err); ok {
		return err
	}
	say := func(s string) { a.render.line(a.render.paint("fs", cRed) + " " + what + " " + clean(path) + ": " + s) }
	switch {
	case errors.Is(err, workspace.ErrIsDir):
		say(clean(err.Error()))
		return rpc.InvalidParams(fmt.Errorf("%s: %w", method, err))
	case errors.Is(err, workspace.ErrOutside):
		say("denied (outside the workspace)")
		return denied(what, path, "outside the workspace")
	case errors.Is(err, workspace.ErrNotRegular):
		say("denied (not a regular file)")
		return denied(what, path, "not a regular file")
	}
	say(clean(err.Error()))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rpc.NewError(codeNotFound, method+": "+path+" does not exist", map[string]string{"path": path})
	case errors.Is(err, workspace.ErrTooLarge), errors.Is(err, workspace.ErrNotText), errors.Is(err, fs.ErrInvalid):
		return rpc.InvalidParams(fmt.Errorf("%s: %w", method, err))
	}
	return err
}

// readTextFile serves fs/read_text_file: a regular file of the workspace
// that the policy lets the agent read, from 1-based Line, at most Limit
// lines, at most the workspace's read cap in bytes.
func (a *app) readTextFile(_ context.Context, p *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	line, hasLine := p.Line.Get()
	limit, hasLimit := p.Limit.Get()
	if hasLine && line < 1 || hasLimit && limit < 0 {
		return nil, rpc.InvalidParams(fmt.Errorf("fs/read_text_file: line %d, limit %d: line counts from 1 and limit must not be negative", line, limit))
	}
	if !filepath.IsAbs(p.Path) {
		return nil, rpc.InvalidParams(fmt.Errorf("fs/read_text_file: path %q is not absolute", p.Path))
	}
	rng := workspace.ReadRange{Line: line, Limit: limit}
	if hasLimit && limit == 0 {
		rng.Limit = 1 // no lines, but the same checks (0 is "no bound" to workspace)
	}
	text, err := a.ws.ReadText(p.Path, rng, a.fsCheck("read", false))
	if err != nil {
		return nil, a.fsError("fs/read_text_file", "read", p.Path, err)
	}
	if hasLimit && limit == 0 {
		text = ""
	}
	return &acp.ReadTextFileResponse{Content: text}, nil
}

// writeTextFile serves fs/write_text_file: it replaces (or creates, with
// its directories) a workspace file the policy lets the agent write,
// atomically (workspace.WriteFile).
func (a *app) writeTextFile(_ context.Context, p *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	if !filepath.IsAbs(p.Path) {
		return nil, rpc.InvalidParams(fmt.Errorf("fs/write_text_file: path %q is not absolute", p.Path))
	}
	if err := a.ws.WriteFile(p.Path, []byte(p.Content), a.fsCheck("write", true)); err != nil {
		return nil, a.fsError("fs/write_text_file", "write", p.Path, err)
	}
	return &acp.WriteTextFileResponse{}, nil
}
