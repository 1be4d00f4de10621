package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// A Builtin runs one builtin_call with its arguments object and returns
// what is encoded as the result.
type Builtin func(ctx context.Context, args jsontext.Value) (any, error)

// BuiltinNames are the builtins a Server runs, sorted.
var BuiltinNames = []string{"list_files", "read_file", "search_text"}

// Builtin returns the builtin name, or nil:
//   - read_file {path, line?, limit?} -> {path, content}: path absolute or
//     relative to the workspace, line from 1, limit in lines; through
//     ReadTextFile;
//   - list_files {path?, pattern?, limit?} -> {files, truncated}: the
//     readable regular files under path (default the workspace) whose
//     workspace path matches pattern (a permission.Glob, default **), in
//     lexical order, .git skipped, limit 1 to 2000 (default 200);
//   - search_text {query, path?, pattern?, limit?} -> {matches: [{path,
//     line, text}], truncated}: lines containing query (case-sensitive) of
//     those files that are UTF-8 and at most 1 MiB, limit 1 to 500
//     (default 50).
//
// A walk visits at most 20,000 files and follows no link.
func (s *Server) Builtin(name string) Builtin {
	switch name {
	case "read_file":
		return s.readFile
	case "list_files":
		return s.listFiles
	case "search_text":
		return s.searchText
	}
	return nil
}

func (s *Server) readable(rel string) bool {
	if s.Allow == nil {
		return false
	}
	ok, _ := s.Allow(rel, false)
	return ok
}

// truncate cuts s to n characters, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

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

// DecodeArgs reads a builtin's arguments object strictly (unknown
// members are -32602).
func DecodeArgs(name string, args jsontext.Value, v any) error {
	if err := json.Unmarshal(args, v, json.RejectUnknownMembers(true)); err != nil {
		return rpc.InvalidParams(fmt.Errorf("%s: %w", name, err))
	}
	return nil
}

// absolute makes a workspace-relative path absolute.
func (s *Server) absolute(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(s.WS.Dir(), filepath.FromSlash(path))
}

// readFile: {path, line?, limit?} → {path, content}; path is
// absolute or relative to the workspace, line counts from 1.
func (s *Server) readFile(ctx context.Context, args jsontext.Value) (any, error) {
	var in struct {
		Path  string `json:"path"`
		Line  *int64 `json:"line"`
		Limit *int64 `json:"limit"`
	}
	if err := DecodeArgs("read_file", args, &in); err != nil {
		return nil, err
	}
	if in.Path == "" {
		return nil, rpc.InvalidParams(errors.New("read_file: path is required"))
	}
	req := &acp.ReadTextFileRequest{Path: s.absolute(in.Path)}
	if in.Line != nil {
		req.Line = wire.Some(*in.Line)
	}
	if in.Limit != nil {
		req.Limit = wire.Some(*in.Limit)
	}
	res, err := s.ReadTextFile(ctx, req)
	if err != nil {
		return nil, err
	}
	rel, _ := s.WS.Rel(req.Path)
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
func (s *Server) walk(ctx context.Context, dir, pattern string, visit func(rel string) bool) error {
	rel, err := s.WS.Rel(s.absolute(dir))
	if err != nil {
		if errors.Is(err, workspace.ErrOutside) {
			return Denied("list", dir, "outside the workspace")
		}
		return rpc.InvalidParams(err)
	}
	// The walk starts from the directory's real path, so that a link to a
	// directory the policy denies shows nothing of it: the files below
	// are checked and named by the paths they really have.
	real, err := s.WS.Dirname(rel)
	if err == nil {
		rel, err = s.WS.Rel(real)
	}
	if errors.Is(err, workspace.ErrOutside) {
		return Denied("list", dir, "outside the workspace")
	}
	if err != nil {
		return rpc.NewError(CodeNotFound, fmt.Sprintf("%s is not a directory of the workspace", rel), map[string]string{"path": dir})
	}
	if err := permission.CheckPathGlob(pattern); err != nil {
		return rpc.InvalidParams(err)
	}
	seen := 0
	stop := errors.New("stop")
	err = fs.WalkDir(s.WS.FS(), rel, func(p string, d fs.DirEntry, err error) error {
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
		if !s.readable(p) || !permission.Glob(pattern, p) {
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

// listFiles: {path?, pattern?, limit?} → {files, truncated}: the
// readable files under path (default the workspace) whose
// workspace-relative path pattern matches (default **).
func (s *Server) listFiles(ctx context.Context, args jsontext.Value) (any, error) {
	var in struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
		Limit   *int   `json:"limit"`
	}
	if err := DecodeArgs("list_files", args, &in); err != nil {
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
	err = s.walk(ctx, cmp.Or(in.Path, "."), in.Pattern, func(rel string) bool {
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

// searchText: {query, path?, pattern?, limit?} → {matches,
// truncated}: the lines containing query (exactly, case-sensitive) of the
// readable UTF-8 files (up to 1 MiB) under path.
func (s *Server) searchText(ctx context.Context, args jsontext.Value) (any, error) {
	var in struct {
		Query   string `json:"query"`
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
		Limit   *int   `json:"limit"`
	}
	if err := DecodeArgs("search_text", args, &in); err != nil {
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
		if !s.readable(rel) {
			return fs.ErrPermission
		}
		return nil
	}
	err = s.walk(ctx, cmp.Or(in.Path, "."), in.Pattern, func(rel string) bool {
		data, err := s.WS.ReadFileLimit(rel, maxSearchFileBytes, readable)
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
