package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
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

func fsPolicy(read, write []string) *policy {
	p := &policy{}
	p.FS.Read, p.FS.Write = read, write
	return p
}

func TestReadTextFile(t *testing.T) {
	a, out := testApp(t, fsPolicy([]string{"docs/**", "link.txt", "*.bin", "dir"}, nil))
	root := a.ws.Dir()
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
		res, err := a.readTextFile(context.Background(), p)
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
		{filepath.Join(root, "secret.txt"), 0, -1, "", codeDenied},
		{filepath.Join(root, "link.txt"), 0, -1, "", codeDenied}, // a symlink out of the workspace
		{outside, 0, -1, "", codeDenied},
		{filepath.Join(root, "docs", "missing.md"), 0, -1, "", codeNotFound},
		{filepath.Join(root, "bad.bin"), 0, -1, "", rpc.CodeInvalidParams},
		{filepath.Join(root, "dir"), 0, -1, "", rpc.CodeInvalidParams},
	} {
		got, err := read(tc.path, tc.line, tc.limit)
		if got != tc.want || rpcCode(err) != tc.code {
			t.Errorf("read %s line %d limit %d: %q, %v; want %q, code %d", tc.path, tc.line, tc.limit, got, err, tc.want, tc.code)
		}
	}
	text := rendered(a, out)
	if !strings.Contains(text, "fs read docs/a.md: allowed (fs.read)") || !strings.Contains(text, "fs read secret.txt: denied (fs.read does not list it)") {
		t.Errorf("rendering:\n%s", text)
	}
}

func TestWriteTextFile(t *testing.T) {
	a, _ := testApp(t, fsPolicy(nil, []string{"src/**"}))
	root := a.ws.Dir()
	write := func(path, content string) error {
		_, err := a.writeTextFile(context.Background(), &acp.WriteTextFileRequest{SessionID: "s", Path: path, Content: content})
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
		{filepath.Join(root, "README.md"), codeDenied},
		{filepath.Join(root, "src", "..", "x.go"), codeDenied},
		{filepath.Join(t.TempDir(), "x"), codeDenied},
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
