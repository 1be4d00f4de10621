package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// config is the host's configuration file (see README.md, "Configuration").
// Relative paths in it are relative to the file's directory.
type config struct {
	// Workspace is the directory the session runs in: the cwd of
	// session/new, and the root that fs/* and terminal/* requests and the
	// policy's path patterns are confined to. Default: the current directory.
	Workspace string `json:"workspace"`
	// Skills is a folder of skill files served by skills/list and
	// skills/fetch. Default: none.
	Skills string `json:"skills"`
	// Tools are served by host/tools/list, and run by builtin_call.
	Tools []configTool `json:"tools"`
}

// configTool is a tool the host advertises with host/tools/list and runs,
// through builtin_call, with one of its builtins.
type configTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Schema      jsontext.Value `json:"schema"`
	Deprecated  bool           `json:"deprecated"`
	// Builtin is the builtin that runs the tool (see builtins.go); default:
	// the builtin of the tool's name.
	Builtin string `json:"builtin"`
}

// loadConfig reads and checks a configuration file; path "" is the empty
// configuration.
func loadConfig(path string) (*config, error) {
	c := &config{}
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := json.Unmarshal(data, c, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if c.Workspace != "" && !filepath.IsAbs(c.Workspace) {
		c.Workspace = filepath.Join(dir, c.Workspace)
	}
	if c.Skills != "" && !filepath.IsAbs(c.Skills) {
		c.Skills = filepath.Join(dir, c.Skills)
	}
	seen := map[string]bool{}
	for i, t := range c.Tools {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("config %s: tools[%d] has no name", path, i)
		case seen[t.Name]:
			return nil, fmt.Errorf("config %s: tool %q is listed twice", path, t.Name)
		case len(t.Schema) > 0 && !bytes.Equal(t.Schema, []byte("null")) && t.Schema.Kind() != '{':
			return nil, fmt.Errorf("config %s: tool %q: schema must be a JSON Schema object or null", path, t.Name)
		}
		if t.Builtin == "" {
			c.Tools[i].Builtin = t.Name
		}
		if !slices.Contains(builtinNames, c.Tools[i].Builtin) {
			return nil, fmt.Errorf("config %s: tool %q: no builtin %q (the builtins are %s)", path, t.Name, c.Tools[i].Builtin, strings.Join(builtinNames, ", "))
		}
		seen[t.Name] = true
	}
	return c, nil
}
