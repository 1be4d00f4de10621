package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"
)

// scaffoldCase is one kind of scaffold, with the names the generated code
// must then have: the test program below calls the new method through the
// generated peer and serves it with the stub bridgekit scaffold wrote.
type scaffoldCase struct {
	name string
	args []string
	// What the program uses.
	Pkg, Handlers, Peer, Field, Stub, Params, Result string
	Op                                               bool // an operation: (ctx, call, args)
	// changed names files the scaffold must change (relative to the root).
	changed []string
}

var scaffoldCases = []scaffoldCase{
	{
		name: "harn-method",
		args: []string{"method", "--catalogue", "harn", "--wire", "host/example_ping", "--from", "vm", "--to", "host"},
		Pkg:  "harn", Handlers: "HostHandlers", Peer: "NewHostPeer", Field: "HostExamplePing", Stub: "hostExamplePing",
		Params: "HostExamplePingParams", Result: "HostExamplePingResult",
		changed: []string{"spec/catalogue/harn.json", "spec/schemas/harn-host.schema.json", "gen/harn/methods_gen.go", "docs/reference/harn.md"},
	},
	{
		name: "acp-method",
		args: []string{"method", "--catalogue", "acp", "--wire", "_example/ping", "--from", "client", "--to", "agent"},
		Pkg:  "acp", Handlers: "AgentHandlers", Peer: "NewAgentPeer", Field: "ExamplePing", Stub: "examplePing",
		Params: "ExamplePingParams", Result: "ExamplePingResult",
		changed: []string{"spec/catalogue/acp.json", "spec/schemas/acp-extensions.schema.json", "gen/acp/methods_gen.go", "gen/acpunstable/methods_gen.go"},
	},
	{
		name: "agentpm-service-method",
		args: []string{"method", "--catalogue", "agentpm-service", "--wire", "lookup", "--from", "harness", "--to", "service", "--role", "knowledge"},
		Pkg:  "agentpmservice", Handlers: "ServiceHandlers", Peer: "NewServicePeer", Field: "Lookup", Stub: "lookup",
		Params: "KnowledgeLookupParams", Result: "KnowledgeLookupResult",
		changed: []string{"spec/catalogue/agentpm-service.json", "spec/schemas/agentpm/service.schema.json", "gen/agentpmservice/methods_gen.go"},
	},
	{
		name: "harn-operation",
		args: []string{"operation", "--name", "project.deploy_status"},
		Pkg:  "harn", Handlers: "HostHandlers", Peer: "NewHostPeer", Field: "ProjectDeployStatus", Stub: "projectDeployStatus",
		Params: "ProjectDeployStatusArgs", Result: "ProjectDeployStatusResult", Op: true,
		changed: []string{"spec/catalogue/harn.json", "spec/schemas/harn-host.schema.json", "gen/harn/methods_gen.go"},
	},
}

// callProgram serves the new method with the scaffolded stub on one end of
// a pair of pipes and calls it through the generated peer on the other: a
// member the caller sends must come back in the result, through both
// generated codecs.
var callProgram = template.Must(template.New("main").Parse(`package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bridgekit/bridgekit/gen/{{.Pkg}}"
	"github.com/go-json-experiment/json/jsontext"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := &{{.Pkg}}.{{.Handlers}}{}
{{- if .Op}}
	served.{{.Field}} = func(ctx context.Context, call *{{.Pkg}}.HostCallParams, p *{{.Pkg}}.{{.Params}}) (*{{.Pkg}}.{{.Result}}, error) {
		res, err := {{.Stub}}(ctx, call, p)
{{- else}}
	served.{{.Field}} = func(ctx context.Context, p *{{.Pkg}}.{{.Params}}) (*{{.Pkg}}.{{.Result}}, error) {
		res, err := {{.Stub}}(ctx, p)
{{- end}}
		if err != nil {
			return nil, err
		}
		v, _ := p.Extra.Get("ping")
		res.Extra.Set("echo", v)
		return res, nil
	}
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	server := {{.Pkg}}.NewConn(serverIn, serverOut, served, nil)
	defer server.Close()
	client := {{.Pkg}}.NewConn(clientIn, clientOut, nil, nil)
	defer client.Close()
	var p {{.Pkg}}.{{.Params}}
	p.Extra.Set("ping", jsontext.Value(` + "`" + `"hello"` + "`" + `))
{{- if .Op}}
	res, err := {{.Pkg}}.{{.Peer}}(client).{{.Field}}(ctx, nil, &p)
{{- else}}
	res, err := {{.Pkg}}.{{.Peer}}(client).{{.Field}}(ctx, &p)
{{- end}}
	if err != nil {
		fmt.Fprintln(os.Stderr, "call:", err)
		os.Exit(1)
	}
	if v, _ := res.Extra.Get("echo"); string(v) != ` + "`" + `"hello"` + "`" + ` {
		fmt.Fprintf(os.Stderr, "result %+v lacks the echo\n", res)
		os.Exit(1)
	}
	fmt.Println("called")
}
`))

// trackedFiles returns the repository's root and the files git tracks in it, for a test to copy.
func trackedFiles(t *testing.T) (repo string, files []string) {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	return repo, strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
}

func TestScaffoldGenerateBuildCall(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the repository, regenerates and builds it for each kind")
	}
	repo, files := trackedFiles(t)
	for _, tc := range scaffoldCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			copyFiles(t, repo, root, files)
			dir := filepath.Join(root, "internal", "scaffoldcall")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// The program first: the stub takes its package (main).
			f, err := os.Create(filepath.Join(dir, "main.go"))
			if err != nil {
				t.Fatal(err)
			}
			if err := callProgram.Execute(f, tc); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			before := hashTree(t, root)
			stub := filepath.Join(dir, "handler.go")
			start := time.Now()
			args := append([]string{"scaffold"}, tc.args...)
			args = append(args, "--root", root, "--stub", stub)
			status, stdout, stderr := runCmd(t, "", args...)
			if status != 0 {
				t.Fatalf("bridgekit %s: status %d\n%s", strings.Join(args, " "), status, stderr)
			}
			t.Logf("scaffold and generate: %s", time.Since(start).Round(time.Millisecond))
			for _, want := range append(tc.changed, "internal/scaffoldcall/handler.go") {
				if !strings.Contains(stdout, filepath.Join(root, want)) {
					t.Errorf("output does not list %s:\n%s", want, stdout)
				}
			}
			after := hashTree(t, root)
			for _, want := range tc.changed {
				if before[want] == after[want] {
					t.Errorf("%s did not change", want)
				}
			}
			for p := range after {
				if strings.HasPrefix(p, "spec/schemas/acp/") && before[p] != after[p] {
					t.Errorf("vendored schema %s changed", p)
				}
			}
			start = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, "go", "run", "./internal/scaffoldcall")
			run.Dir = root
			out, err := run.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "called" {
				t.Fatalf("go run: %v\n%s", err, out)
			}
			t.Logf("build and call: %s", time.Since(start).Round(time.Millisecond))

			// The same name again fails and touches no file.
			before = hashTree(t, root)
			again := append([]string{"scaffold"}, tc.args...)
			again = append(again, "--root", root, "--stub", filepath.Join(dir, "again.go"))
			status, _, stderr = runCmd(t, "", again...)
			if status != 1 || !strings.Contains(stderr, "already exists") {
				t.Errorf("scaffolding %s again: status %d, %q; want 1 and already exists", tc.name, status, stderr)
			}
			if diff := diffTrees(before, hashTree(t, root)); diff != "" {
				t.Errorf("a failed scaffold changed files: %s", diff)
			}
		})
	}
}

func TestScaffoldRefusesWithoutWriting(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	copyFiles(t, repo, root, []string{"go.mod"})
	if err := os.CopyFS(filepath.Join(root, "spec"), os.DirFS(filepath.Join(repo, "spec"))); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, root)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"method", "--catalogue", "agentpm-service", "--wire", "lookup", "--from", "harness", "--to", "service"}, `give a role (one of model, embedding, hook, knowledge, memory, approval)`},
		{[]string{"method", "--catalogue", "agentpm-service", "--wire", "lookup", "--from", "harness", "--to", "service", "--role", "nope"}, `role "nope" is not one of`},
		{[]string{"method", "--catalogue", "harn", "--wire", "x/y", "--from", "vm", "--to", "host", "--role", "knowledge"}, "carry no qualifier"},
		{[]string{"method", "--catalogue", "acp", "--wire", "_x/y", "--from", "client", "--to", "agent", "--schema", "acp/v1/schema.json"}, "never edit vendored schemas"},
		{[]string{"method", "--catalogue", "acp", "--wire", "session/prompt", "--from", "client", "--to", "agent"}, "already exists"},
		{[]string{"method", "--catalogue", "harn", "--wire", "host/call", "--from", "vm", "--to", "host"}, "already exists"},
		{[]string{"method", "--catalogue", "harn", "--wire", "x/y", "--from", "vm", "--to", "agent"}, `"agent" is not a side of harn`},
		{[]string{"operation", "--name", "process.list_shells"}, "already exists"},
		{[]string{"operation", "--name", "nodot"}, "named <capability>.<operation>"},
		{[]string{"operation", "--catalogue", "agentpm-harness-machine", "--name", "x"}, "selects operations by role and method"},
		{[]string{"operation", "--catalogue", "acp", "--name", "x.y"}, "no method that carries operations"},
	} {
		args := append([]string{"scaffold"}, tc.args...)
		args = append(args, "--root", root)
		status, _, stderr := runCmd(t, "", args...)
		if status != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: status %d, %q; want 1 and %q", strings.Join(tc.args, " "), status, stderr, tc.want)
		}
	}
	if diff := diffTrees(before, hashTree(t, root)); diff != "" {
		t.Errorf("refused scaffolds changed files: %s", diff)
	}
}

func TestScaffoldUsage(t *testing.T) {
	for args, want := range map[string]string{
		"scaffold -h":           "scaffold operation --catalogue C --name NS.OP",
		"scaffold method -h":    "usage: bridgekit scaffold method --catalogue C --wire NAME",
		"scaffold operation -h": "usage: bridgekit scaffold operation --name NS.OP",
	} {
		status, _, stderr := runCmd(t, "", strings.Fields(args)...)
		if status != 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "make generate\n") {
			t.Errorf("%v: status %d, %q", args, status, stderr)
		}
	}
	// -no-generate's text names no value (a back-quoted word would).
	if _, _, stderr := runCmd(t, "", "scaffold", "method", "-h"); !strings.Contains(stderr, "  -no-generate\n") {
		t.Errorf("scaffold method -h: %q", stderr)
	}
	if status, _, stderr := runCmd(t, "", "scaffold", "method", "-h"); !strings.Contains(stderr, "-role") || status != 0 {
		t.Errorf("scaffold method -h lists no -role: %q", stderr)
	}
	if status, _, stderr := runCmd(t, "", "scaffold", "operation", "-h"); !strings.Contains(stderr, "-name") || status != 0 {
		t.Errorf("scaffold operation -h lists no -name: %q", stderr)
	}
	for _, args := range [][]string{{"scaffold"}, {"scaffold", "nope"}, {"scaffold", "method", "--catalogue", "harn"}, {"scaffold", "operation", "--match", "x"}} {
		if status, _, _ := runCmd(t, "", args...); status != 2 {
			t.Errorf("%v: status %d, want 2", args, status)
		}
	}
}

// copyFiles copies the named files (relative to from) to the same places under to.
func copyFiles(t *testing.T, from, to string, names []string) {
	t.Helper()
	for _, name := range names {
		src, err := os.Open(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := src.Stat()
		if err != nil || fi.IsDir() || !fi.Mode().IsRegular() {
			_ = src.Close()
			continue // a symlink or a submodule
		}
		dst := filepath.Join(to, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
		if err == nil {
			_, err = io.Copy(out, src)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		_ = src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hashTree maps every file under root (relative, slash-separated) to its sha256.
func hashTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = fmt.Sprintf("%x", sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(a, b map[string]string) string {
	var diffs []string
	for p, h := range a {
		if g, ok := b[p]; !ok {
			diffs = append(diffs, "removed "+p)
		} else if g != h {
			diffs = append(diffs, "changed "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			diffs = append(diffs, "added "+p)
		}
	}
	return strings.Join(diffs, ", ")
}
