package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
)

// The program and the fake Harness, built once: the session runs them as
// the user would, over real pipes.
var program, fakeHarness string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "harness-session")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	program, fakeHarness = filepath.Join(dir, "harness-session"), filepath.Join(dir, "fakeharness")
	for _, b := range [][2]string{{program, "."}, {fakeHarness, "../fakeharness"}} {
		cmd := exec.Command("go", "build", "-o", b[0], b[1])
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// session runs the program; env adds to its environment.
func session(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = append(withoutAgentpm(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

func withoutAgentpm() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTPM=") {
			env = append(env, kv)
		}
	}
	return env
}

func contains(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// Without agentpm the program starts itself as the fake Harness; piped,
// it prints one line per event and host-service call.
func TestBuiltInHarness(t *testing.T) {
	out, errOut, code := session(t, nil, "The ingest queue is stuck, what do I do?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	contains(t, out, "using the fake Harness built into this program", "event  preflight ready", "serving model/default", "serving knowledge/docs",
		"host   model/generate answered", "host   hook/before_knowledge_request answered", "host   knowledge/retrieve answered",
		"event  knowledge_retrieved · knowledge @local/docs completed", "event  run_completed · ended [content redacted]",
		"output: redacted by the Harness's content policy", `"sources": [`, "When the queue is stuck (ingest.md)", "usage: 2 model calls, 1 knowledge requests")
	if strings.Contains(out, "\x1b[") {
		t.Error("terminal escapes in piped output")
	}
}

// With $AGENTPM, its Harness runs: here the fake one with a script that
// sends content, a state directory for the report, and a docs folder.
func TestAgentpmEnvironment(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "billing.md"), []byte("# Billing\n\nInvoices are sent on the first day of the month.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "harness.json")
	if err := os.WriteFile(config, []byte(`{"content": "full", "required_host_services": [{"role": "model", "registry_id": "default"}, {"role": "knowledge", "registry_id": "docs"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	out, errOut, code := session(t, []string{"AGENTPM=" + fakeHarness}, "-config", config, "-state-dir", state, "-docs", docs, "-scope", "tenant=acme", "When are invoices sent?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	contains(t, out, `"answer": "Invoices are sent on the first day of the month."`, `"Billing (billing.md)"`, "report: "+state)
	if strings.Contains(out, "fake Harness built into") {
		t.Error("did not use $AGENTPM")
	}
	var rep struct {
		TerminalStatus string `json:"terminal_status"`
		Scopes         []struct {
			Name string `json:"name"`
		} `json:"scope_summaries"`
	}
	matches, _ := filepath.Glob(filepath.Join(state, "runs", "*", "report.json"))
	if len(matches) != 1 {
		t.Fatalf("reports %v", matches)
	}
	data, _ := os.ReadFile(matches[0])
	if err := json.Unmarshal(data, &rep); err != nil || rep.TerminalStatus != "ended" || len(rep.Scopes) != 1 || rep.Scopes[0].Name != "tenant" {
		t.Fatalf("report %s: %v", data, err)
	}
}

// A Harness that fails preflight: its stderr is reported.
func TestHarnessFailsPreflight(t *testing.T) {
	config := filepath.Join(t.TempDir(), "harness.json")
	if err := os.WriteFile(config, []byte(`{"preflight": {"status": "failed", "diagnostics": [{"severity": "fatal", "code": "loop_missing", "message": "the loop package is not installed"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := session(t, nil, "-config", config, "hello")
	if code != 1 || !strings.Contains(errOut, "before writing a frame") || !strings.Contains(errOut, "loop_missing: the loop package is not installed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// An interrupt cancels the Run: the Harness is sent cancel_run, the Run
// ends cancelled and the program exits 130.
func TestInterruptCancelsTheRun(t *testing.T) {
	config := filepath.Join(t.TempDir(), "harness.json")
	if err := os.WriteFile(config, []byte(`{"runs": [{"steps": [{"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}}, {"wait_cancel": true}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "-config", config, "wait")
	cmd.Env = withoutAgentpm()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &lockedWriter{b: &out}, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(cmd.Stdout.(*lockedWriter).String(), "phase_started") {
		if ctx.Err() != nil {
			t.Fatal("the Run did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v\n%s\n%s", err, out.String(), errOut.String())
	}
	contains(t, cmd.Stdout.(*lockedWriter).String(), "interrupted: cancelling the Run", "run_cancelled", "Run run-", ": cancelled")
}

// -h is asked for, not a bad flag: the usage on stderr and exit 0, as
// every other example does.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		if _, errOut, code := session(t, nil, arg); code != 0 || !strings.Contains(errOut, "usage: harness-session") {
			t.Errorf("%s: exit %d: %s", arg, code, errOut)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"-scope", "novalue", "q"}, {"-nope", "q"}} {
		if _, errOut, code := session(t, nil, args...); code != 2 || !strings.Contains(errOut, "usage") && !strings.Contains(errOut, "KEY=VALUE") {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
		}
	}
}

// The docs service ranks sections by the query's words and cites them; a
// context_document is a whole file.
func TestDocs(t *testing.T) {
	d, err := loadDocs(os.DirFS("testdata/docs"), "testdata/docs")
	if err != nil {
		t.Fatal(err)
	}
	q, top := "deploys on Fridays?", int64(1)
	res, err := d.retrieve(context.Background(), &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: docsPackage, Version: "1", Mode: agentpmservice.KnowledgeRequestModeVectorQuery, Query: &q, TopK: &top}})
	if err != nil || !res.Ok || len(res.Results) != 1 || *res.Results[0].SourceTitle != "Freezes" || res.Citations[0].SourceID != "deploys.md" {
		t.Fatalf("%+v %v", res, err)
	}
	doc := "oncall.md"
	res, _ = d.retrieve(context.Background(), &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: docsPackage, Mode: agentpmservice.KnowledgeRequestModeContextDocument, Document: &doc}})
	if !res.Ok || !strings.HasPrefix(*res.Content, "# On call") {
		t.Fatalf("%+v", res)
	}
	doc = "missing.md"
	res, _ = d.retrieve(context.Background(), &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: docsPackage, Mode: agentpmservice.KnowledgeRequestModeContextDocument, Document: &doc}})
	if res.Ok || res.Error.Code != "missing_document" {
		t.Fatalf("%+v", res)
	}
	q = "?!"
	dec, _ := queryPolicy(context.Background(), &agentpmservice.BeforeKnowledgeRequestHook{Input: agentpmservice.BeforeKnowledgeRequestInput{Request: agentpmservice.KnowledgeRuntimeRequest{Query: &q}}})
	if dec.Continue == nil || *dec.Continue.Patch.Query != "" {
		t.Fatalf("%+v", dec)
	}
	empty := " "
	dec, _ = queryPolicy(context.Background(), &agentpmservice.BeforeKnowledgeRequestHook{Input: agentpmservice.BeforeKnowledgeRequestInput{Request: agentpmservice.KnowledgeRuntimeRequest{Query: &empty}}})
	if dec.Reject == nil {
		t.Fatalf("%+v", dec)
	}
}

// lockedWriter is a buffer a test may read while the program writes it.
type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// deafHarness answers initialize, refuses every registration, floods a
// Run with events and then ignores cancel_run and the end of its input:
// the Harness a second interrupt must get the program out of.
const deafHarness = `#!/bin/sh
frame() { printf '{"protocol":"agentpm-harness-machine","version":1,%s}\n' "$1"; }
frame '"kind":"event","method":"preflight","payload":{"status":"ready","report":{"status":"ready","diagnostics":[]}}'
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  case "$line" in
  *'"method":"initialize"'*)
    frame '"kind":"response","id":"'"$id"'","payload":{"session":{"protocol":"agentpm-harness-machine","version":1},"preflight":{"status":"ready","diagnostics":[]},"mcp_exports":[],"required_host_services":[]}' ;;
  *'"method":"register_host_service"'*)
    frame '"kind":"error","id":"'"$id"'","payload":null,"error":{"code":"host_registration_failed","message":"not configured"}' ;;
  *'"method":"cancel_run"'*)
    frame '"kind":"response","id":"'"$id"'","payload":{"status":"cancelled","accepted":true}' ;;
  *'"method":"start_run"'*)
    i=0
    while [ $i -lt 4000 ]; do
      i=$((i+1))
      frame '"kind":"event","method":"harness_event","payload":{"schema_version":1,"event_id":"e'$i'","session_id":"s","session_sequence":'$i',"timestamp":"2025-01-01T00:00:00Z","event_type":"run_started","payload":{"payload_type":"lifecycle","message":"a line long enough to fill a pipe before long"}}'
    done
    echo flooded >&2 ;;
  esac
done
exec sleep 60
`

// With stdout never read and a Harness that floods events, then ignores
// cancel_run and its stdin's end, the first interrupt still cancels (the
// display drops lines rather than stall the connection) and the second
// ends the program within moments.
func TestSecondInterruptQuits(t *testing.T) {
	harnessPath := filepath.Join(t.TempDir(), "deaf")
	if err := os.WriteFile(harnessPath, []byte(deafHarness), 0o755); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read
	cmd := exec.Command(program, "-agentpm", harnessPath, "-plain", "wait")
	cmd.Env = withoutAgentpm()
	var errOut lockedWriter
	errOut.b = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = w, &errOut
	cmd.WaitDelay = 2 * time.Second // the Harness, left behind, may hold stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(errOut.String(), "flooded"); {
		if time.Now().After(deadline) {
			t.Fatalf("the Harness did not flood the Run (the program stopped reading it?):\n%s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	began := time.Now()
	select {
	case <-exited:
		ee, ok := waitErr.(*exec.ExitError)
		if !ok || ee.ExitCode() != 130 {
			t.Fatalf("exit %v\n%s", waitErr, errOut.String())
		}
		if took := time.Since(began); took > 4*time.Second {
			t.Errorf("exited %v after the second interrupt", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20s after the second interrupt\n%s", errOut.String())
	}
}

// When -timeout runs out during the Run, the Run is cancelled, the
// program says that the time limit did it, and still shuts the session
// down cleanly (not with the expired limit's error). The limit counts
// from the start, the harness's startup preflight included, which took
// more than 500 ms on a loaded machine under the race detector: 3 s
// leaves it room, and the Run (which waits to be cancelled) ends by it
// all the same.
func TestSessionTimeout(t *testing.T) {
	config := filepath.Join(t.TempDir(), "harness.json")
	if err := os.WriteFile(config, []byte(`{"required_host_services": [], "runs": [{"steps": [{"wait_cancel": true}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := session(t, []string{"AGENTPM=" + fakeHarness}, "-config", config, "-timeout", "3s", "wait")
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	contains(t, out, "cancelled")
	contains(t, errOut, "-timeout 3s")
	if strings.Contains(errOut, "shutdown") {
		t.Errorf("shutdown failed: %s", errOut)
	}
}

// A stdout that fails every write (a full disk) loses the summary: the
// session must not exit 0 as if all were well.
func TestStdoutWriteErrorFailsTheSession(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here:", err)
	}
	defer full.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "The ingest queue is stuck, what do I do?")
	cmd.Env = withoutAgentpm()
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &errOut
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(errOut.String(), "writing to stdout") {
		t.Fatalf("exit %v, want 1 with a word on stdout\n%s", err, errOut.String())
	}
}
