package main

import (
	"github.com/bridgekit/bridgekit/servers/host/workspace"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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

func TestExampleConfig(t *testing.T) {
	c, err := loadConfig("example/host.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Skills != filepath.Join("example", "skills") || c.Workspace != "" {
		t.Fatalf("paths not resolved against the file's directory: %+v", c)
	}
	var names []string
	for _, tool := range c.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"Read", "open_file", "status"}) || !c.Tools[1].Deprecated || c.Tools[2].Schema != nil ||
		c.Tools[0].Builtin != "read_file" || c.Tools[2].Builtin != "workspace_info" {
		t.Fatalf("tools %+v", c.Tools)
	}
	if c, err := loadConfig(""); err != nil || len(c.Tools) != 0 {
		t.Fatalf("no config: %+v %v", c, err)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ text, want string }{
		"unknown member": {`{"tool": []}`, `unknown object member name "tool"`},
		"nameless tool":  {`{"tools": [{"description": "x"}]}`, "tools[0] has no name"},
		"duplicate tool": {`{"tools": [{"name": "list_files"}, {"name": "list_files"}]}`, `tool "list_files" is listed twice`},
		"no builtin":     {`{"tools": [{"name": "a"}]}`, `tool "a": no builtin "a" (the builtins are list_files, read_file, search_text, workspace_info)`},
		"bad builtin":    {`{"tools": [{"name": "a", "builtin": "rm"}]}`, `tool "a": no builtin "rm"`},
		"schema kind":    {`{"tools": [{"name": "a", "schema": "object"}]}`, "schema must be a JSON Schema object or null"},
		"not json":       {`{"tools": [`, "config"},
	} {
		path := writeFile(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json"), tc.text)
		if _, err := loadConfig(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if _, err := loadConfig(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file is not an error")
	}
	// A relative workspace is relative to the file.
	path := writeFile(t, filepath.Join(dir, "sub", "c.json"), `{"workspace": "ws", "tools": [{"name": "search_text", "schema": null}]}`)
	c, err := loadConfig(path)
	if err != nil || c.Workspace != filepath.Join(dir, "sub", "ws") || c.Tools[0].Builtin != "search_text" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := workspace.Open(filepath.Join(dir, "sub", "ws"), nil); err == nil {
		t.Error("a missing workspace is accepted")
	}
	if _, err := workspace.Open(path, nil); err == nil {
		t.Error("a file is accepted as the workspace")
	}
}
