// Package files serves the files of a servers/host/workspace to an agent,
// under a policy: ACP's fs/read_text_file and fs/write_text_file
// (Server.ReadTextFile, Server.WriteTextFile, with the signatures of
// acp.ClientHandlers' fields) and the builtins a Harn host offers through
// builtin_call: read_file, list_files and search_text (Server.Builtin).
//
// Every path is resolved by the kernel beneath the workspace's root and
// the policy (Server.Allow) decides on the path the kernel reached, so a
// link cannot take an access past it; only regular files are read or
// written, within the workspace's byte caps, and writes are atomic (see
// servers/host/workspace). Refusals are error -32001 (CodeDenied, Harn's
// "tool rejected") with data {path, reason}; a missing file is -32002
// (CodeNotFound, ACP's resource-not-found); bad arguments are -32602.
package files

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

// Error codes of a Server's answers, beyond JSON-RPC's.
const (
	// CodeDenied answers a request the policy denies (Harn's code for a
	// rejected tool).
	CodeDenied = -32001
	// CodeNotFound is ACP's resource-not-found.
	CodeNotFound = int64(acp.ErrorCodeResourceNotFound)
)

// Server serves the files of a workspace: ACP's fs/read_text_file and
// fs/write_text_file, and the builtins read_file, list_files and
// search_text. Its fields are set before use and not changed after.
type Server struct {
	// WS is the workspace; every path is resolved beneath its root.
	WS *workspace.Workspace
	// Allow decides an access to the workspace path rel the kernel
	// reached, with why; nil allows nothing.
	Allow func(rel string, write bool) (ok bool, reason string)
	// Observe, when set, is told every decision and failure of the fs
	// methods (and of read_file, which reads through them).
	Observe func(Access)
}

// Access is one decision or failure, for an audit line.
type Access struct {
	// Op is "read" or "write".
	Op string
	// Path is the workspace path the kernel reached when the policy
	// decided, else the path as the request gave it.
	Path string
	// Decided is set when the policy decided (Allowed, Reason); otherwise
	// the access failed before it could (Reason says why).
	Decided, Allowed bool
	Reason           string
}

func (s *Server) observe(a Access) {
	if s.Observe != nil {
		s.Observe(a)
	}
}

// Denied is the error answering a request the policy (or the workspace
// boundary) refuses: CodeDenied with data {path, reason}.
func Denied(what, path, reason string) error {
	return rpc.NewError(CodeDenied, fmt.Sprintf("%s %s denied: %s", what, path, reason), map[string]string{"path": path, "reason": reason})
}

// check is the workspace.Check of an access: the policy decides on the
// path the kernel reached.
func (s *Server) check(what string, write bool) workspace.Check {
	return func(rel string) error {
		ok, reason := false, "no policy"
		if s.Allow != nil {
			ok, reason = s.Allow(rel, write)
		}
		s.observe(Access{Op: what, Path: rel, Decided: true, Allowed: ok, Reason: reason})
		if !ok {
			return Denied(what, rel, reason)
		}
		return nil
	}
}

// Error maps a workspace error onto a Server's answers: outside the
// workspace or not a regular file is CodeDenied, a missing file
// CodeNotFound, a directory, a file too large or not text -32602.
func (s *Server) Error(method, what, path string, err error) error {
	if _, ok := errors.AsType[*rpc.Error](err); ok {
		return err
	}
	say := func(r string) { s.observe(Access{Op: what, Path: path, Reason: r}) }
	switch {
	case errors.Is(err, workspace.ErrIsDir):
		say(err.Error())
		return rpc.InvalidParams(fmt.Errorf("%s: %w", method, err))
	case errors.Is(err, workspace.ErrOutside):
		say("denied (outside the workspace)")
		return Denied(what, path, "outside the workspace")
	case errors.Is(err, workspace.ErrNotRegular):
		say("denied (not a regular file)")
		return Denied(what, path, "not a regular file")
	}
	say(err.Error())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rpc.NewError(CodeNotFound, method+": "+path+" does not exist", map[string]string{"path": path})
	case errors.Is(err, workspace.ErrTooLarge), errors.Is(err, workspace.ErrNotText), errors.Is(err, fs.ErrInvalid):
		return rpc.InvalidParams(fmt.Errorf("%s: %w", method, err))
	}
	return err
}

// readTextFile serves fs/read_text_file: a regular file of the workspace
// that the policy lets the agent read, from 1-based Line, at most Limit
// lines, at most the workspace's read cap in bytes.
func (s *Server) ReadTextFile(_ context.Context, p *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
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
	text, err := s.WS.ReadText(p.Path, rng, s.check("read", false))
	if err != nil {
		return nil, s.Error("fs/read_text_file", "read", p.Path, err)
	}
	if hasLimit && limit == 0 {
		text = ""
	}
	return &acp.ReadTextFileResponse{Content: text}, nil
}

// writeTextFile serves fs/write_text_file: it replaces (or creates, with
// its directories) a workspace file the policy lets the agent write,
// atomically (workspace.WriteFile).
func (s *Server) WriteTextFile(_ context.Context, p *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	if !filepath.IsAbs(p.Path) {
		return nil, rpc.InvalidParams(fmt.Errorf("fs/write_text_file: path %q is not absolute", p.Path))
	}
	if err := s.WS.WriteFile(p.Path, []byte(p.Content), s.check("write", true)); err != nil {
		return nil, s.Error("fs/write_text_file", "write", p.Path, err)
	}
	return &acp.WriteTextFileResponse{}, nil
}
