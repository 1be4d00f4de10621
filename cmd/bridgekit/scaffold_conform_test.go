package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/conform"
)

// deployArgs and deployResult are what a user writes into the stub schemas
// bridgekit scaffold made for project.deploy_status: required members of
// every kind conform must fill in (an enum, a pattern, a nested object, an
// array with a minimum, a bounded integer, a nullable member), and an
// optional one it must leave out.
const (
	deployArgs = `{
		"type": "object",
		"required": ["environment", "build", "regions", "replicas", "ticket"],
		"properties": {
			"environment": {"type": "string", "enum": ["staging", "production"]},
			"build": {"type": "object", "required": ["commit", "built_at"], "additionalProperties": false, "properties": {
				"commit": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
				"built_at": {"type": "string", "format": "date-time"}}},
			"regions": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 2}},
			"replicas": {"type": "integer", "minimum": 1, "maximum": 9},
			"ticket": {"anyOf": [{"type": "string", "minLength": 4}, {"type": "null"}]},
			"dry_run": {"type": "boolean"}
		},
		"additionalProperties": false
	}`
	deployResult = `{
		"type": "object",
		"required": ["status"],
		"properties": {"status": {"type": "string", "enum": ["deployed", "pending"]}}
	}`
)

// deployHost serves project.deploy_status, and nothing else, with Harn's
// bridge on stdin/stdout. It refuses arguments that do not mean a deploy
// (-32602), as a real host would, and says on stderr what it got. With
// DEPLOYHOST_BAD=1 it refuses every call, as a host did that conform sent {}.
const deployHost = `package main

import (
	"context"
	"fmt"
	"os"
	"regexp"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func main() {
	h := &harn.HostHandlers{}
	h.ProjectDeployStatus = func(ctx context.Context, call *harn.HostCallParams, p *harn.ProjectDeployStatusArgs) (*harn.ProjectDeployStatusResult, error) {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "deploy args %s\n", b)
		var a struct {
			Environment string ` + "`json:\"environment\"`" + `
			Build       struct{ Commit string ` + "`json:\"commit\"`" + ` } ` + "`json:\"build\"`" + `
			Regions     []string ` + "`json:\"regions\"`" + `
			Replicas    int ` + "`json:\"replicas\"`" + `
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, rpc.NewError(rpc.CodeInvalidParams, err.Error(), nil)
		}
		if (a.Environment != "staging" && a.Environment != "production") || !regexp.MustCompile("^[0-9a-f]{40}$").MatchString(a.Build.Commit) ||
			len(a.Regions) < 2 || a.Replicas < 1 {
			return nil, rpc.NewError(rpc.CodeInvalidParams, "not a deploy: "+string(b), nil)
		}
		if os.Getenv("DEPLOYHOST_BAD") == "1" {
			return nil, rpc.NewError(rpc.CodeInvalidParams, "this host refuses every deploy", nil)
		}
		var r harn.ProjectDeployStatusResult
		if err := json.Unmarshal([]byte(` + "`" + `{"status":"deployed"}` + "`" + `), &r); err != nil {
			return nil, err
		}
		return &r, nil
	}
	conn := harn.NewBridgeConn(os.Stdin, os.Stdout, h, nil)
	<-conn.Done()
}
`

// TestConformScaffoldedOperation: an operation added with bridgekit
// scaffold, its schemas filled in and the repository regenerated, is
// called by the conform built from that repository with arguments from
// its schema, and a host that implements it passes; one that refuses the
// call fails.
func TestConformScaffoldedOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the repository, regenerates and builds bridgekit from it")
	}
	repo, files := trackedFiles(t)
	root := t.TempDir()
	copyFiles(t, repo, root, files)
	if status, _, stderr := runCmd(t, "", "scaffold", "operation", "--name", "project.deploy_status", "--root", root); status != 0 {
		t.Fatalf("scaffold: status %d\n%s", status, stderr)
	}
	fillStubSchemas(t, root, "project.deploy_status", deployArgs, deployResult)
	if status, _, stderr := runCmd(t, "", "generate", "--root", root, "--api=false"); status != 0 {
		t.Fatalf("generate: status %d\n%s", status, stderr)
	}
	dir := filepath.Join(root, "internal", "deployhost")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(deployHost), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := t.TempDir()
	for _, b := range []struct{ dir, out, pkg string }{
		{filepath.Join(root, "cmd", "bridgekit"), filepath.Join(bin, "bridgekit"), "."},
		{root, filepath.Join(bin, "host"), "./internal/deployhost"},
	} {
		c := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		c.Dir = b.dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	const id = "harn-host/host-call/project.deploy_status"
	run := func(bad bool) (int, conform.Result, string) {
		out := filepath.Join(t.TempDir(), "results.json")
		c := exec.CommandContext(ctx, filepath.Join(bin, "bridgekit"), "conform", "--json-out", out, "--stderr", "--run", id, "--", filepath.Join(bin, "host"))
		c.Env = append(os.Environ(), "DEPLOYHOST_BAD=0")
		if bad {
			c.Env = append(c.Env, "DEPLOYHOST_BAD=1")
		}
		table, err := c.CombinedOutput()
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var rep conform.Report
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("no report (status %d): %v\n%s", status, err, table)
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return status, byID(rep)[id], string(table)
	}
	status, res, table := run(false)
	if status != 0 || res.Status != conform.Pass {
		t.Fatalf("conform against a host that implements %s: status %d, %s, want 0 and pass\n%s", id, status, res.Status, table)
	}
	// What conform sent: every required member, with valid values, and
	// not the optional dry_run.
	want := `{"environment":"staging","build":{"commit":"` + strings.Repeat("0", 40) + `","built_at":"2026-01-01T00:00:00Z"},` +
		`"regions":["example","example"],"replicas":1,"ticket":"example"}`
	_, line, _ := strings.Cut(table, "deploy args ")
	line, _, _ = strings.Cut(line, "\n")
	var got, wantV any
	_ = json.Unmarshal([]byte(line), &got)
	_ = json.Unmarshal([]byte(want), &wantV)
	if !reflect.DeepEqual(got, wantV) {
		t.Errorf("the host got %s, want %s\n%s", line, want, table)
	}
	status, res, table = run(true)
	if status != 1 || res.Status != conform.Fail {
		t.Errorf("conform against a host that refuses the call: status %d, %s, want 1 and fail\n%s", status, res.Status, table)
	}
}

// fillStubSchemas replaces the stub schemas bridgekit scaffold made for
// operation name (the catalogue says where) with args and result.
func fillStubSchemas(t *testing.T, root, name, args, result string) {
	t.Helper()
	var cat struct {
		Methods []struct {
			Operations *struct {
				Items []struct {
					Match        map[string]string `json:"match"`
					Args, Result string
				} `json:"items"`
			} `json:"operations"`
		} `json:"methods"`
	}
	b, err := os.ReadFile(filepath.Join(root, "spec", "catalogue", "harn.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	locs := map[string]string{}
	for _, m := range cat.Methods {
		if m.Operations == nil {
			continue
		}
		for _, op := range m.Operations.Items {
			if op.Match["name"] == name {
				locs[op.Args], locs[op.Result] = args, result
			}
		}
	}
	if len(locs) != 2 {
		t.Fatalf("the catalogue has no stub schemas for %s: %v", name, locs)
	}
	docs := map[string]map[string]any{}
	for loc, def := range locs {
		file, frag, _ := strings.Cut(loc, "#")
		defName, ok := strings.CutPrefix(frag, "/$defs/")
		if !ok {
			t.Fatalf("stub schema %s is not a $defs entry", loc)
		}
		doc := docs[file]
		if doc == nil {
			b, err := os.ReadFile(filepath.Join(root, "spec", "schemas", file))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			docs[file] = doc
		}
		var v any
		if err := json.Unmarshal([]byte(def), &v); err != nil {
			t.Fatal(err)
		}
		doc["$defs"].(map[string]any)[defName] = v
	}
	for file, doc := range docs {
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "spec", "schemas", file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
