package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host/files"
)

// builtinApp is an app whose configuration offers every builtin under its
// own name and read_file as "Read", on a workspace with a file, and whose
// policy reads all but secret/. (The file builtins' own tests are
// servers/host/files'.)
func builtinApp(t *testing.T) *app {
	t.Helper()
	pol := &policy{}
	pol.FS.Read = []string{"src/**", "README.md"}
	a, _ := testApp(t, pol)
	for _, name := range builtinNames {
		a.tools = append(a.tools, configTool{Name: name, Builtin: name})
	}
	a.tools = append(a.tools, configTool{Name: "Read", Builtin: "read_file"})
	writeFile(t, filepath.Join(a.ws.Dir(), "README.md"), "# readme\n")
	writeFile(t, filepath.Join(a.ws.Dir(), "secret", "key.txt"), "key\n")
	return a
}

func call(t *testing.T, a *app, name, args string) (string, error) {
	t.Helper()
	res, err := a.builtinCall(context.Background(), &harn.BuiltinCallParams{Name: name, Args: []jsontext.Value{jsontext.Value(args)}})
	return string(res), err
}

func TestBuiltins(t *testing.T) {
	a := builtinApp(t)
	if got, err := call(t, a, "Read", `{"path":"README.md"}`); err != nil || got != `{"path":"README.md","content":"# readme\n"}` {
		t.Errorf("Read: %s %v", got, err)
	}
	if got, err := call(t, a, "list_files", `{}`); err != nil || got != `{"files":["README.md"],"truncated":false}` {
		t.Errorf("list_files: %s %v", got, err)
	}
	got, err := call(t, a, "workspace_info", `{}`)
	if err != nil || !strings.Contains(got, `"policy":{"fs_read":["src/**","README.md"],"fs_write":[],"terminal":[]}`) ||
		!strings.Contains(got, `"workspace":"`+a.ws.Dir()+`"`) || !strings.Contains(got, `"tools":["list_files","read_file","search_text","workspace_info","Read"]`) {
		t.Errorf("workspace_info: %s %v", got, err)
	}
}

func TestBuiltinErrors(t *testing.T) {
	a := builtinApp(t)
	for _, tc := range []struct {
		tool, args string
		code       int64
	}{
		{"rm", `{}`, files.CodeDenied},                          // not a tool of this host
		{"Read", `{"path":"secret/key.txt"}`, files.CodeDenied}, // the policy does not list it
		{"Read", `{"path":"none.md"}`, files.CodeNotFound},
		{"workspace_info", `{"verbose":true}`, -32602}, // takes nothing
	} {
		if _, err := call(t, a, tc.tool, tc.args); rpcCode(err) != tc.code {
			t.Errorf("%s %s: %v, want code %d", tc.tool, tc.args, err, tc.code)
		}
	}
	for _, args := range [][]jsontext.Value{nil, {jsontext.Value(`{}`), jsontext.Value(`{}`)}, {jsontext.Value(`"README.md"`)}} {
		if _, err := a.builtinCall(context.Background(), &harn.BuiltinCallParams{Name: "Read", Args: args}); rpcCode(err) != -32602 {
			t.Errorf("args %s: %v", args, err)
		}
	}
}
