package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/servers/harness"
)

func TestParseScript(t *testing.T) {
	for _, tc := range []struct{ name, text, err string }{
		{"unknown member", `{"requird_host_services": []}`, "unknown"},
		{"two members in a step", `{"runs": [{"steps": [{"sleep_ms": 1, "yield": true}]}]}`, "sets 2 members"},
		{"empty step", `{"runs": [{"steps": [{}]}]}`, "sets 0 members"},
		{"bad policy", `{"content": "most"}`, "unknown content policy"},
		{"not JSON", `{`, "script"},
	} {
		if _, err := harness.ParseScript([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	s, err := harness.ParseScript([]byte(`{"required_host_services": [], "content": "full", "host_service_timeout_ms": 250,
	  "runs": [{"input": "a", "steps": [{"end": {"status": "handed_off"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	o := s.Options(nil)
	if len(o.Required) != 0 || o.Content != harness.ContentFull || o.HostServiceTimeout.Milliseconds() != 250 || o.Run == nil {
		t.Fatalf("options %+v", o)
	}
	// Absent required_host_services means model "default".
	s, _ = harness.ParseScript([]byte(`{}`))
	if o := s.Options(nil); len(o.Required) != 1 || o.Required[0].RegistryID != "default" {
		t.Fatalf("default required %+v", o.Required)
	}
}

// Command's arguments are agentpm harness's; bad ones exit 2 before any
// frame.
func TestCommandArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"harness"}, 2, "only speaks --machine"},
		{[]string{"--machine", "--json"}, 2, "--json cannot be used with --machine"},
		{[]string{"--machine", "--headless"}, 2, "--headless cannot be used with --machine"},
		{[]string{"--machine", "--scope", "tenant"}, 2, "--scope wants KEY=VALUE"},
		{[]string{"--machine", "--config"}, 2, "--config needs a value"},
		{[]string{"--machine", "--verbose"}, 2, `unknown argument "--verbose"`},
		{[]string{"a", "b", "--machine"}, 2, "more than one agent selector"},
		{[]string{"--machine", "--config", "/nonexistent.json"}, 1, "no such file"},
		{[]string{"-h"}, 0, "usage: fakeharness"},
		{[]string{"harness", "--machine", "--help"}, 0, "--state-dir"},
	} {
		var out, errOut bytes.Buffer
		code := harness.Command(timeout(t), tc.args, strings.NewReader(""), &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.err) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q, stdout %q", tc.args, code, errOut.String(), out.String())
		}
	}
}

// A whole session through Command: the scopes, the state directory, the
// agent selector and --input reach the Run and its report.
func TestCommandSession(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "script.json")
	if err := os.WriteFile(config, []byte(`{"agents": ["@acme/a@1.0.0", "@acme/b@2.0.0"], "required_host_services": [], "content": "full",
	  "runs": [{"steps": [{"end": {"status": "ended", "output": "ok"}}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	toHarness, fromClient := io.Pipe()
	toClient, fromHarness := io.Pipe()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- harness.Command(timeout(t), []string{"harness", "@acme/b@2.0.0", "--config", config, "--state-dir=" + dir, "--scope", "tenant=acme", "--input", "from the command line", "--machine"},
			toHarness, fromHarness, &errOut)
		fromHarness.Close()
	}()
	lines := bufio.NewScanner(toClient)
	lines.Buffer(nil, 1<<20)
	send := func(s string) {
		if _, err := fromClient.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("no frame: %v (stderr %s)", lines.Err(), errOut.String())
		}
		return lines.Text()
	}
	if l := next(); !strings.Contains(l, `"method":"preflight"`) {
		t.Fatalf("first frame %s", l)
	}
	send(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"1","method":"initialize","payload":{}}`)
	if l := next(); !strings.Contains(l, `"id":"1"`) {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"2","method":"start_run","payload":{}}`)
	var result string
	for result == "" {
		if l := next(); strings.Contains(l, `"id":"2"`) {
			result = l
		}
	}
	for _, want := range []string{`"output":"ok"`, `"agent":{"name":"@acme/b","version":"2.0.0"}`, `"scope_summaries":[{"name":"tenant","value_available":true,"value":"acme"}]`, `"state_dir":"` + dir + `"`} {
		if !strings.Contains(result, want) {
			t.Errorf("start_run answer lacks %s: %s", want, result)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "runs", "run-*", "report.json"))
	if len(matches) != 1 {
		t.Fatalf("reports %v", matches)
	}
	send(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"3","method":"shutdown","payload":{}}`)
	if l := next(); l != `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"3","payload":{"shutdown":true}}` {
		t.Fatalf("shutdown: %s", l)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	fromClient.Close()
	if lines.Scan() {
		t.Fatalf("frame after shutdown: %s", lines.Text())
	}
}

// A scripted exit ends the command with its status and stderr.
func TestCommandScriptedExit(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "script.json")
	if err := os.WriteFile(config, []byte(`{"required_host_services": [], "runs": [{"steps": [{"exit": {"code": 4, "stderr": "out of memory"}}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"1","method":"initialize","payload":{}}` + "\n" +
		`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"2","method":"start_run","payload":{"input":"x"}}` + "\n")
	pr, pw := io.Pipe()
	go io.Copy(pw, in) // no EOF: the exit must not wait for one
	var out, errOut bytes.Buffer
	code := harness.Command(timeout(t), []string{"--machine", "--config", config}, pr, &out, &errOut)
	if code != 4 || !strings.Contains(errOut.String(), "out of memory") || strings.Contains(out.String(), `"id":"2"`) {
		t.Fatalf("exit %d, stderr %q, stdout %s", code, errOut.String(), out.String())
	}
	pw.Close()
	_ = agentpmmachine.MethodStartRun
}

// Between Runs the Harness handles requests one after another, as it reads
// them: a client that writes them all at once gets every answer, in order,
// and start_run finds the session initialized and its host services
// registered.
func TestPipelinedRequestsInOrder(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "script.json")
	script := `{"required_host_services": [{"role": "hook", "registry_id": "policy"}], "content": "full",
	  "runs": [{"steps": [{"end": {"status": "ended", "output": "done"}}]}]}`
	if err := os.WriteFile(config, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	req := func(id, method, payload string) string {
		return `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"` + id + `","method":"` + method + `","payload":` + payload + "}\n"
	}
	for range 20 {
		pr, pw := io.Pipe()
		outR, outW := io.Pipe()
		var errOut bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- harness.Command(timeout(t), []string{"--machine", "--config", config}, pr, outW, &errOut)
			outW.Close()
		}()
		lines := bufio.NewScanner(outR)
		go io.WriteString(pw, req("1", "initialize", `{}`)+
			req("2", "register_host_service", `{"role":"hook","registry_id":"policy","hooks":["before_tool_call"]}`)+
			req("3", "preflight", `{}`)+
			req("4", "start_run", `{"input":"go"}`))
		var ids []string
		for len(ids) < 4 && lines.Scan() {
			var f struct {
				Kind, ID string
				Payload  struct{ Status string }
			}
			if err := json.Unmarshal(lines.Bytes(), &f); err != nil {
				t.Fatal(err)
			}
			switch f.Kind {
			case "error":
				t.Fatalf("a request failed: %s", lines.Text())
			case "response":
				ids = append(ids, f.ID)
				if f.ID == "4" && f.Payload.Status != "ended" {
					t.Fatalf("start_run: %s", lines.Text())
				}
			}
		}
		if strings.Join(ids, ",") != "1,2,3,4" {
			t.Fatalf("answers in the order %v", ids)
		}
		go io.WriteString(pw, req("5", "shutdown", `{}`))
		if !lines.Scan() || !strings.Contains(lines.Text(), `"id":"5","payload":{"shutdown":true}`) {
			t.Fatalf("shutdown: %s", lines.Text())
		}
		if code := <-done; code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		pw.Close()
	}
}

// A signal (the context's end) ends Command with status 1 and says what
// ended it (the context's cause, e.g. "interrupt signal received"), not a
// bare "context canceled".
func TestCommandStoppedBySignal(t *testing.T) {
	ctx, cancel := context.WithCancelCause(timeout(t))
	pr, pw := io.Pipe()
	defer pw.Close()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- harness.Command(ctx, []string{"--machine"}, pr, &out, &errOut) }()
	cancel(errors.New("terminated signal received"))
	if code := <-done; code != 1 || !strings.Contains(errOut.String(), "terminated signal received") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}
