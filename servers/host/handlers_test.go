package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A host's handlers are fields of harn.HostHandlers, so a misspelled or
// mistyped handler does not build (docs/handlers.md). This test builds a
// small program of each kind against this checkout and checks the
// compiler's verdict; a correct program builds.
func TestMisspelledOrMistypedHandlersDoNotBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, field, want string
	}{
		{"correct", `ProcessListShells: func(context.Context, *harn.HostCallParams, *harn.NoArgs) (*harn.ListShellsResponse, error) { return nil, nil },`, ""},
		{"misspelled", `ProcessListShels: func(context.Context, *harn.HostCallParams, *harn.NoArgs) (*harn.ListShellsResponse, error) { return nil, nil },`, "unknown field ProcessListShels"},
		{"mistyped", `ProcessListShells: func(context.Context, *harn.HostCallParams) (*harn.ListShellsResponse, error) { return nil, nil },`, "cannot use func"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			write("go.sum", string(sum))
			write("go.mod", "module example.com/myhost\n\ngo 1.26\n\nrequire github.com/bridgekit/bridgekit v0.0.0\n\nreplace github.com/bridgekit/bridgekit => "+root+"\n")
			write("main.go", `package main

import (
	"context"
	"os"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host"
)

func main() {
	h := &harn.HostHandlers{
		`+tc.field+`
	}
	_ = host.New(h, nil).Serve(context.Background(), os.Stdin, os.Stdout)
}
`)
			cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
			out, err := cmd.CombinedOutput()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a correct host does not build: %v\n%s", err, out)
			case tc.want != "" && err == nil:
				t.Fatalf("a %s handler built", tc.name)
			case tc.want != "" && !strings.Contains(string(out), tc.want):
				t.Fatalf("the compiler said\n%s\nwant it to mention %q", out, tc.want)
			}
		})
	}
}
