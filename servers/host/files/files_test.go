package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// rpcCode is the JSON-RPC code of a handler's error, 0 for none.
func rpcCode(err error) int64 {
	var e *rpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// testServer serves a temporary workspace, reading the paths read lists
// and writing those write lists; its accesses are described in the lines
// returned.
func testServer(t *testing.T, read, write []string) (*Server, *[]string) {
	t.Helper()
	ws, err := workspace.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	var mu sync.Mutex
	lines := &[]string{}
	return &Server{WS: ws,
		Allow: func(rel string, w bool) (bool, string) {
			list, what := read, "fs.read"
			if w {
				list, what = write, "fs.write"
			}
			if slices.ContainsFunc(list, func(g string) bool { return permission.Glob(g, rel) }) {
				return true, what
			}
			return false, what + " does not list it"
		},
		Observe: func(a Access) {
			mu.Lock()
			defer mu.Unlock()
			verdict := a.Reason
			if a.Decided && a.Allowed {
				verdict = "allowed (" + a.Reason + ")"
			} else if a.Decided {
				verdict = "denied (" + a.Reason + ")"
			}
			*lines = append(*lines, "fs "+a.Op+" "+a.Path+": "+verdict)
		}}, lines
}

func TestReadTextFile(t *testing.T) {
	s, out := testServer(t, []string{"docs/**", "link.txt", "*.bin", "dir"}, nil)
	root := s.WS.Dir()
	writeFile(t, filepath.Join(root, "docs", "a.md"), "one\ntwo\nthree\nfour")
	writeFile(t, filepath.Join(root, "secret.txt"), "no")
	writeFile(t, filepath.Join(root, "bad.bin"), "\xff\xfe")
	outside := writeFile(t, filepath.Join(t.TempDir(), "outside.txt"), "outside")
	if err := os.Symlink(outside, filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	read := func(path string, line, limit int64) (string, error) {
		p := &acp.ReadTextFileRequest{SessionID: "s", Path: path}
		if line != 0 {
			p.Line = wire.Some(line)
		}
		if limit >= 0 {
			p.Limit = wire.Some(limit)
		}
		res, err := s.ReadTextFile(context.Background(), p)
		if err != nil {
			return "", err
		}
		return res.Content, nil
	}
	doc := filepath.Join(root, "docs", "a.md")
	for _, tc := range []struct {
		path        string
		line, limit int64
		want        string
		code        int64
	}{
		{doc, 0, -1, "one\ntwo\nthree\nfour", 0},
		{doc, 2, 2, "two\nthree\n", 0},
		{doc, 3, -1, "three\nfour", 0},
		{doc, 4, 10, "four", 0},
		{doc, 9, -1, "", 0},
		{doc, 1, 0, "", 0},
		{doc, -1, -1, "", rpc.CodeInvalidParams},
		{"docs/a.md", 0, -1, "", rpc.CodeInvalidParams}, // not absolute
		{filepath.Join(root, "secret.txt"), 0, -1, "", CodeDenied},
		{filepath.Join(root, "link.txt"), 0, -1, "", CodeDenied}, // a symlink out of the workspace
		{outside, 0, -1, "", CodeDenied},
		{filepath.Join(root, "docs", "missing.md"), 0, -1, "", CodeNotFound},
		{filepath.Join(root, "bad.bin"), 0, -1, "", rpc.CodeInvalidParams},
		{filepath.Join(root, "dir"), 0, -1, "", rpc.CodeInvalidParams},
	} {
		got, err := read(tc.path, tc.line, tc.limit)
		if got != tc.want || rpcCode(err) != tc.code {
			t.Errorf("read %s line %d limit %d: %q, %v; want %q, code %d", tc.path, tc.line, tc.limit, got, err, tc.want, tc.code)
		}
	}
	text := strings.Join(*out, "\n")
	if !strings.Contains(text, "fs read docs/a.md: allowed (fs.read)") || !strings.Contains(text, "fs read secret.txt: denied (fs.read does not list it)") {
		t.Errorf("rendering:\n%s", text)
	}
}

func TestWriteTextFile(t *testing.T) {
	s, _ := testServer(t, nil, []string{"src/**"})
	root := s.WS.Dir()
	write := func(path, content string) error {
		_, err := s.WriteTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: content})
		return err
	}
	// Creates missing directories.
	target := filepath.Join(root, "src", "pkg", "a.go")
	if err := write(target, "package a\n"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(target); string(data) != "package a\n" {
		t.Fatalf("wrote %q", data)
	}
	// Replaces a file, keeping its mode, and leaves no temporary file.
	if err := os.Chmod(target, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := write(target, "package b\n"); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(target)
	data, _ := os.ReadFile(target)
	entries, _ := os.ReadDir(filepath.Dir(target))
	if string(data) != "package b\n" || fi.Mode().Perm() != 0o600 || len(entries) != 1 {
		t.Fatalf("after replacing: %q, mode %v, %d entries", data, fi.Mode(), len(entries))
	}
	for _, tc := range []struct {
		path string
		code int64
	}{
		{filepath.Join(root, "README.md"), CodeDenied},
		{filepath.Join(root, "src", "..", "x.go"), CodeDenied},
		{filepath.Join(t.TempDir(), "x"), CodeDenied},
		{"src/relative.go", rpc.CodeInvalidParams},
		{filepath.Join(root, "src", "pkg"), rpc.CodeInvalidParams}, // a directory
	} {
		if err := write(tc.path, "x"); rpcCode(err) != tc.code {
			t.Errorf("write %s: %v, want code %d", tc.path, err, tc.code)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a denied write created the file")
	}
}

// builtinServer serves a workspace with a few files, reading all but
// secret/.
func builtinServer(t *testing.T) *Server {
	t.Helper()
	s, _ := testServer(t, []string{"src/**", "README.md", "docs/*.md"}, nil)
	root := s.WS.Dir()
	writeFile(t, filepath.Join(root, "README.md"), "# readme\nTODO: ship\n")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\n// TODO: tests\nfunc main() {}\n")
	writeFile(t, filepath.Join(root, "src", "util", "util.go"), "package util\n")
	writeFile(t, filepath.Join(root, "docs", "guide.md"), "Guide. TODO: write\n")
	writeFile(t, filepath.Join(root, "secret", "key.txt"), "TODO: rotate\n")
	writeFile(t, filepath.Join(root, ".git", "config"), "TODO\n")
	if err := os.WriteFile(filepath.Join(root, "src", "blob.bin"), []byte{0xff, 0xfe, 'T', 'O', 'D', 'O'}, 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func call(t *testing.T, s *Server, name, args string) (string, error) {
	t.Helper()
	b := s.Builtin(name)
	if b == nil {
		t.Fatalf("no builtin %q", name)
	}
	out, err := b(context.Background(), jsontext.Value(args))
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(out)
	return string(data), err
}

func TestBuiltins(t *testing.T) {
	s := builtinServer(t)
	for _, tc := range []struct{ tool, args, want string }{
		{"read_file", `{"path":"README.md"}`, `{"path":"README.md","content":"# readme\nTODO: ship\n"}`},
		{"read_file", `{"path":"src/main.go","line":2,"limit":1}`, `{"path":"src/main.go","content":"// TODO: tests\n"}`},
		{"read_file", `{"path":"` + filepath.Join(s.WS.Dir(), "README.md") + `","line":2}`, `{"path":"README.md","content":"TODO: ship\n"}`},
		{"list_files", `{}`, `{"files":["README.md","docs/guide.md","src/blob.bin","src/main.go","src/util/util.go"],"truncated":false}`},
		{"list_files", `{"path":"src","pattern":"**/*.go"}`, `{"files":["src/main.go","src/util/util.go"],"truncated":false}`},
		{"list_files", `{"limit":2}`, `{"files":["README.md","docs/guide.md"],"truncated":true}`},
		{"search_text", `{"query":"TODO"}`, `{"matches":[{"path":"README.md","line":2,"text":"TODO: ship"},{"path":"docs/guide.md","line":1,"text":"Guide. TODO: write"},` +
			`{"path":"src/main.go","line":2,"text":"// TODO: tests"}],"truncated":false}`},
		{"search_text", `{"query":"TODO","path":"src","limit":1}`, `{"matches":[{"path":"src/main.go","line":2,"text":"// TODO: tests"}],"truncated":false}`},
		{"search_text", `{"query":"TODO","limit":1}`, `{"matches":[{"path":"README.md","line":2,"text":"TODO: ship"}],"truncated":true}`},
	} {
		got, err := call(t, s, tc.tool, tc.args)
		if err != nil || got != tc.want {
			t.Errorf("%s %s:\ngot  %s %v\nwant %s", tc.tool, tc.args, got, err, tc.want)
		}
	}
}

func TestBuiltinErrors(t *testing.T) {
	s := builtinServer(t)
	for _, tc := range []struct {
		tool, args string
		code       int64
	}{
		{"read_file", `{"path":"secret/key.txt"}`, CodeDenied},   // the policy does not list it
		{"read_file", `{"path":"../outside"}`, CodeDenied},       // outside the workspace
		{"read_file", `{"path":"src/none.go"}`, CodeNotFound},    // missing
		{"read_file", `{}`, -32602},                              // no path
		{"read_file", `{"path":"README.md","mode":"x"}`, -32602}, // unknown member
		{"list_files", `{"path":"../"}`, CodeDenied},             // outside
		{"list_files", `{"path":"README.md"}`, CodeNotFound},     // not a directory
		{"list_files", `{"limit":0}`, -32602},                    // bad limit
		{"list_files", `{"pattern":"["}`, -32602},                // bad pattern
		{"list_files", `{"pattern":"/etc/*"}`, -32602},           // absolute pattern: would match nothing
		{"search_text", `{"query":"x","pattern":"../**"}`, -32602},
		{"search_text", `{"query":""}`, -32602},                 // empty query
		{"search_text", `{"query":"x","limit":100000}`, -32602}, // limit too large
	} {
		if _, err := call(t, s, tc.tool, tc.args); rpcCode(err) != tc.code {
			t.Errorf("%s %s: %v, want code %d", tc.tool, tc.args, err, tc.code)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Builtin("list_files")(ctx, jsontext.Value(`{}`)); err == nil {
		t.Error("a cancelled walk succeeded")
	}
}

// TestWalkThroughALink: listing or searching a directory through a link
// walks the directory's real path, so a link to a directory the policy
// does not list shows neither the names nor the text of its files, and a
// link to one it lists names the files by their real paths.
func TestWalkThroughALink(t *testing.T) {
	s := builtinServer(t)
	root := s.WS.Dir()
	for link, target := range map[string]string{"pub": "secret", "code": "src/util"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ tool, args, want string }{
		{"list_files", `{"path":"pub"}`, `{"files":[],"truncated":false}`},
		{"search_text", `{"query":"TODO","path":"pub"}`, `{"matches":[],"truncated":false}`},
		{"list_files", `{"path":"code"}`, `{"files":["src/util/util.go"],"truncated":false}`},
	} {
		got, err := call(t, s, tc.tool, tc.args)
		if err != nil || got != tc.want {
			t.Errorf("%s %s:\ngot  %s %v\nwant %s", tc.tool, tc.args, got, err, tc.want)
		}
	}
}
