package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/conform"
)

// The five example providers of examples/providers (a module of its
// own) pass the agentpm-service suite of their role.
func TestConformAgentPMServiceProviders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/providers")
	}
	bin := providers.build(t, filepath.Join("..", "..", "examples", "providers"), "providers", "./knowledge", "./embedding", "./memory", "./hook", "./approval")
	policy, err := filepath.Abs(filepath.Join("..", "..", "examples", "providers", "hook", "testdata", "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		role    string
		argv    []string
		methods []string
	}{
		{"knowledge", []string{filepath.Join(bin, "knowledge")}, []string{"retrieve"}},
		{"embedding", []string{filepath.Join(bin, "embedding"), "-dimensions", "64"}, []string{"embed"}},
		{"memory", []string{filepath.Join(bin, "memory"), "-db", filepath.Join(t.TempDir(), "m.db")},
			[]string{"write", "read", "count", "store_operation_state", "load_operation_state", "commit_lifecycle"}},
		{"hook", []string{filepath.Join(bin, "hook"), "-policy", policy}, []string{"before_tool_call", "before_model_request", "invoke"}},
		{"approval", []string{filepath.Join(bin, "approval"), "-approve", "conform-*"}, []string{"request_approval"}},
	} {
		t.Run(c.role, func(t *testing.T) {
			began := time.Now()
			status, rep, table := conformRun(t, append([]string{"--side", "agentpm-service", "--role", c.role, "--"}, c.argv...)...)
			if status != 0 || !rep.Summary.OK || rep.Summary.NotImplemented != 0 {
				t.Fatalf("status %d, summary %+v\n%s", status, rep.Summary, table)
			}
			res := byID(rep)
			ids := []string{"agentpm-service/initialize", "agentpm-service/unknown-method", "agentpm-service/bad-json",
				"agentpm-service/large-line", "agentpm-service/duplicate-id", "agentpm-service/end-of-input", "agentpm-service/wrong-protocol"}
			for _, m := range c.methods {
				ids = append(ids, "agentpm-service/"+c.role+"/"+m, "agentpm-service/"+c.role+"/"+m+"/bad-payload")
			}
			for _, id := range ids {
				if res[id].Status != conform.Pass {
					t.Errorf("%s: %q, want pass\n%s", id, res[id].Status, table)
				}
			}
			if d := res["agentpm-service/"+c.role+"/"+c.methods[0]+"/bad-payload"].Detail; d != "invalid_request" {
				t.Errorf("bad payload refused with %q, want invalid_request", d)
			}
			t.Logf("%s: %d scenarios in %v", c.role, len(rep.Scenarios), time.Since(began))
		})
	}
}

func pythonProvider(t *testing.T, extra ...string) []string {
	return append([]string{python(t), filepath.Join("testdata", "conform", "python-provider", "provider.py")}, extra...)
}

// The Python approval provider passes; broken on purpose, it fails with
// rows naming the method, the frame and the pointer.
func TestConformAgentPMServicePythonProvider(t *testing.T) {
	run := func(t *testing.T, extra ...string) (int, map[string]conform.Result, string) {
		status, rep, table := conformRun(t, append([]string{"--side", "agentpm-service", "--role", "approval", "--"}, pythonProvider(t, extra...)...)...)
		return status, byID(rep), table
	}
	t.Run("conforming", func(t *testing.T) {
		status, res, table := run(t)
		if status != 0 || len(res) < 18 {
			t.Fatalf("status %d, %d scenarios\n%s", status, len(res), table)
		}
	})
	for _, c := range []struct {
		broken string
		want   []struct{ id, method, pointer string }
	}{
		{"shapes", []struct{ id, method, pointer string }{
			{"agentpm-service/initialize", "initialize", "/result/ready"},
			{"agentpm-service/approval/request_approval", "request_approval", "/result/decision"},
		}},
		{"codes", []struct{ id, method, pointer string }{
			{"agentpm-service/unknown-method", "conform_no_such_method", "/error/code"},
			{"agentpm-service/other-role", "retrieve", "/error/code"},
			{"agentpm-service/approval/request_approval/bad-payload", "request_approval", "/error/code"},
		}},
		{"envelope", []struct{ id, method, pointer string }{
			{"agentpm-service/initialize", "initialize", "/version"},
			{"agentpm-service/initialize", "initialize", "/service"},
			{"agentpm-service/approval/request_approval", "request_approval", "/service"},
		}},
	} {
		t.Run(c.broken, func(t *testing.T) {
			status, res, table := run(t, "--broken", c.broken)
			if status != 1 {
				t.Fatalf("status %d, want 1\n%s", status, table)
			}
			for _, w := range c.want {
				if r := res[w.id]; r.Status != conform.Fail || !problemAt(r, w.method, w.pointer) {
					t.Errorf("%s: %s %+v, want a failure at %s %s", w.id, r.Status, r.Problems, w.method, w.pointer)
				}
			}
			if r := res["agentpm-service/bad-json"]; r.Status != conform.Pass {
				t.Errorf("bad-json: %s %+v", r.Status, r.Problems)
			}
			if !strings.Contains(table, "FAILED") {
				t.Errorf("table:\n%s", table)
			}
		})
	}
}

func TestConformAgentPMServiceUsage(t *testing.T) {
	for _, args := range [][]string{
		{"conform", "--side", "agentpm-service", "--", "true"},
		{"conform", "--side", "agentpm-service", "--role", "teleport", "--", "true"},
		{"conform", "--role", "memory", "--", "true"},
	} {
		status, _, stderr := runCmd(t, "", args...)
		if status != 2 || !strings.Contains(stderr, "--role") {
			t.Errorf("%q: status %d, stderr %q; want 2 naming --role", args, status, stderr)
		}
	}
	status, stdout, _ := runCmd(t, "", "conform", "--side", "agentpm-service", "--role", "memory", "--list")
	if status != 0 || !strings.Contains(stdout, "agentpm-service/memory/commit_lifecycle\t") {
		t.Errorf("--list: %d %q", status, stdout)
	}
}

// fakeHarness builds examples/fakeharness, once per test binary.
func fakeHarness(t *testing.T) string {
	return filepath.Join(fakeharness.build(t, filepath.Join("..", ".."), "fakeharness", "./examples/fakeharness"), "fakeharness")
}

// onceBuild builds Go packages once per test binary, into a directory
// under bins.dir (which TestMain removes).
type onceBuild struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

var providers, fakeharness onceBuild

func (b *onceBuild) build(t *testing.T, module, name string, pkgs ...string) string {
	t.Helper()
	b.once.Do(func() {
		b.dir = filepath.Join(bins.dir, name)
		cmd := exec.Command("go", append([]string{"build", "-o", b.dir + string(filepath.Separator)}, pkgs...)...)
		cmd.Dir = module
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("building %s: %v\n%s", name, b.err, b.out)
	}
	return b.dir
}

// examples/fakeharness, run with the script of testdata, passes the
// agentpm-harness suite; the broken script's bad frames fail the rows they
// arrive in, named by method, frame and pointer. Without a script it
// accepts every registration, which the suite reports.
func TestConformAgentPMHarness(t *testing.T) {
	bin := fakeHarness(t)
	script := func(name string) string { return filepath.Join("testdata", "conform", "fakeharness", name) }
	t.Run("conforming", func(t *testing.T) {
		began := time.Now()
		// A loaded CI machine once took the default 5s over one
		// register_host_service answer; no row here depends on a timeout.
		status, rep, table := conformRun(t, "--side", "agentpm-harness", "--timeout", "20s", "--", bin, "--config", script("script.json"), "--machine")
		if status != 0 || !rep.Summary.OK || rep.Summary.NotImplemented != 0 || rep.Summary.Pass < 22 {
			t.Fatalf("status %d, summary %+v\n%s", status, rep.Summary, table)
		}
		res := byID(rep)
		for id, want := range map[string]string{
			"agentpm-harness/start-run/busy-and-cancel": "cancelled",
			"agentpm-harness/memory-operation":          "count 2",
			"agentpm-harness/start-run/not-registered":  "host_service_not_registered",
		} {
			if res[id].Detail != want {
				t.Errorf("%s: detail %q, want %q", id, res[id].Detail, want)
			}
		}
		if d := res["agentpm-harness/start-run"].Detail; !strings.HasPrefix(d, "ended after ") || !strings.Contains(d, "1 host_service calls") {
			t.Errorf("start-run: %q", d)
		}
		t.Logf("agentpm-harness suite against examples/fakeharness: %v", time.Since(began))
	})
	t.Run("broken", func(t *testing.T) {
		status, rep, table := conformRun(t, "--side", "agentpm-harness", "--", bin, "--config", script("broken.json"), "--machine")
		if status != 1 {
			t.Fatalf("status %d, want 1\n%s", status, table)
		}
		r := byID(rep)["agentpm-harness/start-run"]
		if r.Status != conform.Fail || !problemAt(r, "harness_event", "/payload/schema_version") {
			t.Errorf("start-run: %s %+v, want a failure at harness_event /payload/schema_version", r.Status, r.Problems)
		}
		if r := byID(rep)["agentpm-harness/unknown-method"]; r.Status != conform.Pass {
			t.Errorf("unknown-method: %s %+v", r.Status, r.Problems)
		}
	})
	t.Run("unscripted", func(t *testing.T) {
		status, rep, table := conformRun(t, "--side", "agentpm-harness", "--", bin, "--machine")
		r := byID(rep)["agentpm-harness/register-host-service/unconfigured"]
		if status != 1 || r.Status != conform.Fail || !problemAt(r, "register_host_service", "/kind") {
			t.Errorf("status %d, unconfigured %s %+v\n%s", status, r.Status, r.Problems, table)
		}
		if r := byID(rep)["agentpm-harness/start-run"]; r.Status != conform.Pass {
			t.Errorf("the agent loop's Run: %s %+v", r.Status, r.Problems)
		}
	})
}

var harnessSession onceBuild

// examples/harness-session, pointed (-agentpm) at a script that starts
// bridgekit conform --side agentpm-harness-client --agent, passes: its
// Run ends, and the results name every role it serves.
func TestConformAgentPMHarnessClient(t *testing.T) {
	client := filepath.Join(harnessSession.build(t, filepath.Join("..", ".."), "harness-session", "./examples/harness-session"), "harness-session")
	dir := t.TempDir()
	results := filepath.Join(dir, "results.json")
	wrapper := filepath.Join(dir, "agentpm")
	script := "#!/bin/sh\n# harness-session runs: agentpm harness [AGENT] ... --machine\nexec '" + bins.bridgekit + "' conform --side agentpm-harness-client --agent --json-out '" + results + "'\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(client, "-agentpm", wrapper, "-plain", "-timeout", "30s", "hello")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harness-session: %v\n%s", err, out)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	var rep conform.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Summary.OK || rep.Summary.Pass < 10 {
		t.Fatalf("summary %+v\n%s", rep.Summary, out)
	}
	res := byID(rep)
	for _, id := range []string{"agentpm-harness-client/register-host-service", "agentpm-harness-client/events",
		"agentpm-harness-client/host-service/model", "agentpm-harness-client/host-service/knowledge",
		"agentpm-harness-client/host-service/hook", "agentpm-harness-client/host-service/approval",
		"agentpm-harness-client/host-service/unregistered", "agentpm-harness-client/host-service/opaque-id"} {
		if res[id].Status != conform.Pass {
			t.Errorf("%s: %s %+v", id, res[id].Status, res[id].Problems)
		}
	}
	if !strings.Contains(string(out), "ended") || !strings.Contains(string(out), "agentpm-harness-client/host-service/model") {
		t.Errorf("output:\n%s", out)
	}
}

func TestConformAgentPMHarnessClientUsage(t *testing.T) {
	status, _, stderr := runCmd(t, "", "conform", "--side", "agentpm-harness-client", "--", "true")
	if status != 2 || !strings.Contains(stderr, "--agent") {
		t.Errorf("status %d, stderr %q", status, stderr)
	}
}
