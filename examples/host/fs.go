package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Error codes of this host's answers, beyond JSON-RPC's.
const (
	// codeDenied answers a request the policy denies (Harn's code for a
	// rejected tool).
	codeDenied = -32001
	// codeNotFound is ACP's resource-not-found.
	codeNotFound = int64(acp.ErrorCodeResourceNotFound)
)

// maxReadBytes bounds the files fs/read_text_file reads.
const maxReadBytes = 16 << 20

// denied is the error answering a request the policy (or the workspace
// boundary) refuses.
func denied(what, path, reason string) error {
	return rpc.NewError(codeDenied, fmt.Sprintf("%s %s denied: %s", what, path, reason), map[string]string{"path": path, "reason": reason})
}

// fsPath checks an fs/* path and the policy: it returns the real path.
func (a *app) fsPath(what, path string, write bool) (string, error) {
	if !filepath.IsAbs(path) {
		return "", rpc.InvalidParams(fmt.Errorf("%s: path %q is not absolute", what, path))
	}
	rel, real, err := a.ws.resolve(path)
	if err != nil {
		a.render.line(a.render.paint("fs", cRed) + " " + what + " " + clean(path) + ": denied (" + clean(err.Error()) + ")")
		if errors.Is(err, errOutside) {
			return "", denied(what, path, "outside the workspace")
		}
		return "", err
	}
	d := a.policy.fsAccess(rel, write)
	if !d.Allow {
		a.render.line(a.render.paint("fs", cRed) + " " + what + " " + clean(rel) + ": denied (" + d.Reason + ")")
		return "", denied(what, path, d.Reason)
	}
	a.render.line(a.render.paint("fs", cDim) + " " + what + " " + clean(rel) + ": allowed (" + d.Reason + ")")
	return real, nil
}

// readTextFile serves fs/read_text_file: a file of the workspace that the
// policy lets the agent read, from 1-based Line, at most Limit lines.
func (a *app) readTextFile(_ context.Context, p *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	line, hasLine := p.Line.Get()
	limit, hasLimit := p.Limit.Get()
	if hasLine && line < 1 || hasLimit && limit < 0 {
		return nil, rpc.InvalidParams(fmt.Errorf("fs/read_text_file: line %d, limit %d: line counts from 1 and limit must not be negative", line, limit))
	}
	real, err := a.fsPath("read", p.Path, false)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, rpc.NewError(codeNotFound, "fs/read_text_file: "+p.Path+" does not exist", map[string]string{"path": p.Path})
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, rpc.InvalidParams(fmt.Errorf("fs/read_text_file: %s is a directory", p.Path))
	case fi.Size() > maxReadBytes:
		return nil, rpc.InvalidParams(fmt.Errorf("fs/read_text_file: %s is larger than %d bytes", p.Path, maxReadBytes))
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, rpc.InvalidParams(fmt.Errorf("fs/read_text_file: %s is not UTF-8 text", p.Path))
	}
	if !hasLine {
		line = 1
	}
	return &acp.ReadTextFileResponse{Content: lineRange(string(data), line, limit, hasLimit)}, nil
}

// lineRange returns the lines of text from 1-based line, at most limit of
// them when hasLimit.
func lineRange(text string, line, limit int64, hasLimit bool) string {
	if line <= 1 && !hasLimit {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start := line - 1
	if start >= int64(len(lines)) {
		return ""
	}
	end := int64(len(lines))
	if hasLimit && start+limit < end {
		end = start + limit
	}
	return strings.Join(lines[start:end], "")
}

// writeTextFile serves fs/write_text_file: it replaces (or creates, with
// its directories) a workspace file the policy lets the agent write, through
// a temporary file renamed into place, keeping an existing file's mode.
func (a *app) writeTextFile(_ context.Context, p *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	real, err := a.fsPath("write", p.Path, true)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(real); err == nil {
		if fi.IsDir() {
			return nil, rpc.InvalidParams(fmt.Errorf("fs/write_text_file: %s is a directory", p.Path))
		}
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(real)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(real)+".*.tmp")
	if err != nil {
		return nil, err
	}
	_, err = tmp.WriteString(p.Content)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), real)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return &acp.WriteTextFileResponse{}, nil
}
