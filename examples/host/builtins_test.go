package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
)

// builtinApp is an app whose configuration offers every builtin under its
// own name, on a workspace with a few files, and whose policy reads all
// but secret/.
func builtinApp(t *testing.T) *app {
	t.Helper()
	pol := &policy{}
	pol.FS.Read = []string{"src/**", "README.md", "docs/*.md"}
	a, _ := testApp(t, pol)
	for name := range builtins {
		a.tools = append(a.tools, configTool{Name: name, Builtin: name})
	}
	a.tools = append(a.tools, configTool{Name: "Read", Builtin: "read_file"})
	writeFile(t, filepath.Join(a.ws.Dir(), "README.md"), "# readme\nTODO: ship\n")
	writeFile(t, filepath.Join(a.ws.Dir(), "src", "main.go"), "package main\n// TODO: tests\nfunc main() {}\n")
	writeFile(t, filepath.Join(a.ws.Dir(), "src", "util", "util.go"), "package util\n")
	writeFile(t, filepath.Join(a.ws.Dir(), "docs", "guide.md"), "Guide. TODO: write\n")
	writeFile(t, filepath.Join(a.ws.Dir(), "secret", "key.txt"), "TODO: rotate\n")
	writeFile(t, filepath.Join(a.ws.Dir(), ".git", "config"), "TODO\n")
	if err := os.WriteFile(filepath.Join(a.ws.Dir(), "src", "blob.bin"), []byte{0xff, 0xfe, 'T', 'O', 'D', 'O'}, 0o644); err != nil {
		t.Fatal(err)
	}
	return a
}

func call(t *testing.T, a *app, name, args string) (string, error) {
	t.Helper()
	res, err := a.builtinCall(context.Background(), &harn.BuiltinCallParams{Name: name, Args: []jsontext.Value{jsontext.Value(args)}})
	return string(res), err
}

func TestBuiltins(t *testing.T) {
	a := builtinApp(t)
	for _, tc := range []struct{ tool, args, want string }{
		{"Read", `{"path":"README.md"}`, `{"path":"README.md","content":"# readme\nTODO: ship\n"}`},
		{"read_file", `{"path":"src/main.go","line":2,"limit":1}`, `{"path":"src/main.go","content":"// TODO: tests\n"}`},
		{"read_file", `{"path":"` + filepath.Join(a.ws.Dir(), "README.md") + `","line":2}`, `{"path":"README.md","content":"TODO: ship\n"}`},
		{"list_files", `{}`, `{"files":["README.md","docs/guide.md","src/blob.bin","src/main.go","src/util/util.go"],"truncated":false}`},
		{"list_files", `{"path":"src","pattern":"**/*.go"}`, `{"files":["src/main.go","src/util/util.go"],"truncated":false}`},
		{"list_files", `{"limit":2}`, `{"files":["README.md","docs/guide.md"],"truncated":true}`},
		{"search_text", `{"query":"TODO"}`, `{"matches":[{"path":"README.md","line":2,"text":"TODO: ship"},{"path":"docs/guide.md","line":1,"text":"Guide. TODO: write"},` +
			`{"path":"src/main.go","line":2,"text":"// TODO: tests"}],"truncated":false}`},
		{"search_text", `{"query":"TODO","path":"src","limit":1}`, `{"matches":[{"path":"src/main.go","line":2,"text":"// TODO: tests"}],"truncated":false}`},
		{"search_text", `{"query":"TODO","limit":1}`, `{"matches":[{"path":"README.md","line":2,"text":"TODO: ship"}],"truncated":true}`},
	} {
		got, err := call(t, a, tc.tool, tc.args)
		if err != nil || got != tc.want {
			t.Errorf("%s %s:\ngot  %s %v\nwant %s", tc.tool, tc.args, got, err, tc.want)
		}
	}
	got, err := call(t, a, "workspace_info", `{}`)
	if err != nil || !strings.Contains(got, `"policy":{"fs_read":["src/**","README.md","docs/*.md"],"fs_write":[],"terminal":[]}`) ||
		!strings.Contains(got, `"workspace":"`+a.ws.Dir()+`"`) {
		t.Errorf("workspace_info: %s %v", got, err)
	}
}

func TestBuiltinErrors(t *testing.T) {
	a := builtinApp(t)
	for _, tc := range []struct {
		tool, args string
		code       int64
	}{
		{"rm", `{}`, codeDenied},                             // not a tool of this host
		{"Read", `{"path":"secret/key.txt"}`, codeDenied},    // the policy does not list it
		{"Read", `{"path":"../outside"}`, codeDenied},        // outside the workspace
		{"Read", `{"path":"src/none.go"}`, codeNotFound},     // missing
		{"Read", `{}`, -32602},                               // no path
		{"Read", `{"path":"README.md","mode":"x"}`, -32602},  // unknown member
		{"list_files", `{"path":"../"}`, codeDenied},         // outside
		{"list_files", `{"path":"README.md"}`, codeNotFound}, // not a directory
		{"list_files", `{"limit":0}`, -32602},                // bad limit
		{"list_files", `{"pattern":"["}`, -32602},            // bad pattern
		{"list_files", `{"pattern":"/etc/*"}`, -32602},       // absolute pattern: would match nothing
		{"search_text", `{"query":"x","pattern":"../**"}`, -32602},
		{"search_text", `{"query":""}`, -32602},                 // empty query
		{"search_text", `{"query":"x","limit":100000}`, -32602}, // limit too large
		{"workspace_info", `{"verbose":true}`, -32602},          // takes nothing
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
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.builtinCall(ctx, &harn.BuiltinCallParams{Name: "list_files", Args: []jsontext.Value{jsontext.Value(`{}`)}}); err == nil {
		t.Error("a cancelled walk succeeded")
	}
}
