package harness_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// A Harness that exits before writing any frame is reported with its exit
// status and stderr, and matches ErrNoFrame.
func TestExitBeforeAnyFrame(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		o            harness.Options
		code         int
		stderr       string
	}{
		{"preflight failed", `{"preflight": {"status": "failed", "diagnostics": [{"severity": "fatal", "code": "model_unavailable", "message": "provider openai has no API key"}]}}`,
			harness.Options{}, 1, "model_unavailable: provider openai has no API key"},
		{"selection required", `{"agents": ["@acme/a", "@acme/b"]}`, harness.Options{}, 1, "select one of @acme/a, @acme/b"},
		{"unknown agent", `{"agents": ["@acme/a"]}`, harness.Options{Agent: "@acme/zzz"}, 1, "agent `@acme/zzz` is not in this workspace"},
		{"bad arguments", "", harness.Options{Args: []string{"--json"}}, 2, "--json cannot be used with --machine"},
		{"unreadable config", "", harness.Options{Config: "/nonexistent/agentpm.harness.json"}, 1, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Path = fakeHarness
			if tc.script != "" {
				o.Config = script(t, tc.script)
			}
			c, err := harness.Start(timeout(t, 20*time.Second), &o)
			if c != nil {
				c.Close()
				t.Fatal("Start succeeded")
			}
			var exit *harness.ExitError
			if !errors.Is(err, harness.ErrNoFrame) || !errors.As(err, &exit) {
				t.Fatalf("error: %v", err)
			}
			if exit.Code != tc.code || !exit.BeforeFrame || !strings.Contains(exit.Stderr, tc.stderr) || !strings.Contains(err.Error(), tc.stderr) {
				t.Fatalf("exit %+v", exit)
			}
		})
	}
}

// The command line: the binary from Path, else $AGENTPM; the agent
// selector, config, state dir and scopes (in key order) as agentpm takes
// them; the working directory and environment.
func TestCommand(t *testing.T) {
	t.Setenv(harness.EnvBinary, "/opt/agentpm/bin/agentpm")
	cmd, err := harness.Command(&harness.Options{Agent: "@acme/triage", Config: "h.json", StateDir: "st", Scopes: map[string]string{"tenant": "acme", "env": "prod"},
		Args: []string{"--input", "x"}, Dir: "/work", Env: []string{"A=1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/opt/agentpm/bin/agentpm", "harness", "@acme/triage", "--config", "h.json", "--state-dir", "st", "--scope", "env=prod", "--scope", "tenant=acme", "--input", "x", "--machine"}
	if cmd.Path != want[0] || !slices.Equal(cmd.Args, want) || cmd.Dir != "/work" || !slices.Equal(cmd.Env, []string{"A=1"}) {
		t.Fatalf("command %q %q in %q env %q", cmd.Path, cmd.Args, cmd.Dir, cmd.Env)
	}
	cmd, err = harness.Command(&harness.Options{Path: "/usr/bin/agentpm"})
	if err != nil || cmd.Path != "/usr/bin/agentpm" || !slices.Equal(cmd.Args[1:], []string{"harness", "--machine"}) {
		t.Fatalf("%v %q", err, cmd.Args)
	}
	t.Setenv(harness.EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	if _, err := harness.Command(nil); err == nil || !strings.Contains(err.Error(), harness.EnvBinary) {
		t.Fatalf("no binary: %v", err)
	}
}

// $AGENTPM is the Harness a client starts when Path is empty.
func TestAgentpmEnvironment(t *testing.T) {
	t.Setenv(harness.EnvBinary, fakeHarness)
	c, err := harness.Start(timeout(t, 20*time.Second), &harness.Options{StopGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.StartupPreflight() == nil {
		t.Fatal("no preflight event")
	}
}

// A binary that does not exist.
func TestStartFailure(t *testing.T) {
	_, err := harness.Start(timeout(t, 5*time.Second), &harness.Options{Path: filepath.Join(t.TempDir(), "missing")})
	if err == nil || errors.Is(err, harness.ErrNoFrame) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error: %v", err)
	}
}

// Frames of the Harness that fail the protocol's gates end the session
// with a typed error: the pending call fails with it and the process is
// stopped.
func TestBadFramesFromTheHarness(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		cause      error
	}{
		{"wrong protocol", `{"protocol":"agentpm-service","version":1,"kind":"event","method":"harness_event","payload":{}}`, envelope.ErrProtocol},
		{"wrong version", `{"protocol":"agentpm-harness-machine","version":2,"kind":"event","method":"harness_event","payload":{}}`, envelope.ErrVersion},
		{"numeric id", `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":7,"payload":{}}`, envelope.ErrMalformed},
		{"malformed line", `{"protocol":"agentpm-harness-machine","version":1,"kind":`, envelope.ErrMalformed},
		{"not an object", `Starting agent...`, envelope.ErrMalformed},
		{"unknown kind", `{"protocol":"agentpm-harness-machine","version":1,"kind":"notice","method":"x","payload":{}}`, envelope.ErrKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t, 30*time.Second)
			line := strings.ReplaceAll(tc.line, `"`, `\"`)
			c := start(t, `{"required_host_services": [], "runs": [{"steps": [
			  {"emit": {"event_type": "phase_started", "payload": {"payload_type": "phase", "phase_id": "main"}}},
			  {"raw": "`+line+`"},
			  {"wait_cancel": true}]}]}`, nil)
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := c.StartRun(ctx, "go", nil)
			var bad *harness.BadFrameError
			if !errors.Is(err, harness.ErrBadFrame) || !errors.Is(err, tc.cause) || !errors.As(err, &bad) || !strings.HasPrefix(tc.line, strings.TrimSuffix(bad.Line, "…")) {
				t.Fatalf("error: %v", err)
			}
			select {
			case <-c.Done():
			case <-ctx.Done():
				t.Fatal("session still up")
			}
			if err := c.Close(); !errors.Is(err, tc.cause) {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

// The client never answers a frame it rejects: nothing is written to the
// Harness after the bad line (an unsolicited error frame would stall the
// Harness's next host-service calls). A Harness in this process, played
// line by line over pipes.
func TestBadFrameIsNeverAnswered(t *testing.T) {
	ctx := timeout(t, 20*time.Second)
	c, lines, fromHarness, got := playHarness(t, ctx, nil)
	write := func(s string) {
		if _, err := fromHarness.Write([]byte(s + "\n")); err != nil {
			t.Error(err)
		}
	}
	if !lines.Scan() || !strings.Contains(lines.Text(), `"method":"preflight"`) {
		t.Fatalf("client wrote %q", lines.Text())
	}
	write(`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":1,"payload":{}}`)
	if err := <-got; !errors.Is(err, harness.ErrBadFrame) || !errors.Is(err, envelope.ErrMalformed) {
		t.Fatalf("pending call: %v", err)
	}
	<-c.Done()
	// The client closed its side without writing anything more.
	if lines.Scan() {
		t.Fatalf("the client answered the bad frame: %q", lines.Text())
	}
	fromHarness.Close()
}

// An event the client does not know, and a response for no pending call,
// are dropped: the session goes on.
func TestUnknownEventsAreDropped(t *testing.T) {
	ctx := timeout(t, 20*time.Second)
	var got []string
	c := start(t, `{"required_host_services": [], "runs": [{"steps": [
	  {"raw": "{\"protocol\":\"agentpm-harness-machine\",\"version\":1,\"kind\":\"event\",\"method\":\"future_event\",\"payload\":{}}"},
	  {"raw": "{\"protocol\":\"agentpm-harness-machine\",\"version\":1,\"kind\":\"response\",\"id\":\"c-999\",\"payload\":{}}"},
	  {"emit": {"event_type": "some_future_event", "payload": {"payload_type": "hologram", "beam": 1}}},
	  {"end": {"status": "ended"}}]}]}`, nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.StartRun(ctx, "go", func(ev harness.Event) {
		if ev.Harness != nil {
			got = append(got, string(ev.Harness.EventType)+":"+ev.Harness.Payload.Tag()+":"+string(ev.Harness.Payload.Unknown))
		}
	})
	if err != nil || res.Status != agentpmmachine.TerminalStatusEnded {
		t.Fatalf("Run: %+v %v", res, err)
	}
	if !slices.Contains(got, `some_future_event:hologram:{"payload_type":"hologram","beam":1}`) {
		t.Fatalf("events %q", got)
	}
}

// Waiting for the startup event honours its context; the error says what
// the Harness wrote to stderr so far.
func TestStartTimeout(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\necho 'resolving the workspace' >&2\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := harness.Start(ctx, &harness.Options{Path: slow, StopGrace: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 5*time.Second {
		t.Fatalf("error %v after %v", err, time.Since(began))
	}
	if !strings.Contains(err.Error(), "resolving the workspace") {
		// stderr may not have been read yet when the deadline passed; the
		// process was stopped either way.
		t.Logf("no stderr in %v", err)
	}
}

var _ = rpc.ErrClosed

// A bad frame fails the call pending when it arrives even when the
// Harness goes on writing: its answer, written right after the bad line,
// is not taken (the session has ended with the bad frame).
func TestBadFrameFailsThePendingCallEvenIfAnswered(t *testing.T) {
	for i := range 5 {
		ctx := timeout(t, 30*time.Second)
		c := start(t, `{"required_host_services": [], "runs": [{"steps": [
		  {"raw": "{\"protocol\":\"agentpm-harness-machine\",\"version\":2}"},
		  {"end": {"status": "ended"}}]}]}`, nil)
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := c.StartRun(ctx, "go", nil)
		if !errors.Is(err, harness.ErrBadFrame) || !errors.Is(err, envelope.ErrVersion) {
			t.Fatalf("run %d: StartRun = %+v, %v; want the bad frame's error", i, res, err)
		}
		if err := c.Close(); !errors.Is(err, envelope.ErrVersion) {
			t.Fatalf("Close: %v", err)
		}
	}
}

// A line of the Harness over the size limit is a bad frame like the
// others: never answered (the client writes nothing more), and the call
// pending then fails with it, even when the Harness answers that call
// right after the oversized line; an oversized answer fails its call.
func TestOversizedFrameFromTheHarness(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"event", `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","payload":{"x":"BIG"}}`},
		{"answer", `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":ID,"payload":{"x":"BIG"}}`},
		{"request", `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"host-1","method":"host_service","payload":{"x":"BIG"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t, 20*time.Second)
			c, lines, fromHarness, got := playHarness(t, ctx, &harness.Options{Conn: rpc.Options{MaxFrame: 4096}})
			if !lines.Scan() {
				t.Fatal("no request")
			}
			var req struct{ ID string }
			if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
				t.Fatal(err)
			}
			line := strings.Replace(tc.line, "BIG", strings.Repeat("a", 8192), 1)
			line = strings.Replace(line, "ID", strconv.Quote(req.ID), 1)
			go func() {
				// The client may have ended the session before the answer:
				// writes fail then.
				fromHarness.Write([]byte(line + "\n"))
				fromHarness.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":` + strconv.Quote(req.ID) + `,"payload":{"report":{"status":"ready","diagnostics":[]},"mcp_exports":[]}}` + "\n"))
			}()
			if err := <-got; !errors.Is(err, harness.ErrBadFrame) || !errors.Is(err, ndjson.ErrFrameTooLarge) {
				t.Fatalf("pending call: %v", err)
			}
			<-c.Done()
			if lines.Scan() {
				t.Fatalf("the client answered the oversized frame: %q", lines.Text())
			}
			fromHarness.Close()
		})
	}
}

// playHarness connects a client to a Harness played line by line over
// pipes, writes the startup event and sends preflight: it returns the
// client, the lines the client writes, the Harness's output and the
// pending preflight's error.
func playHarness(t *testing.T, ctx context.Context, o *harness.Options) (*harness.Client, *bufio.Scanner, *io.PipeWriter, <-chan error) {
	t.Helper()
	toClient, fromHarness := io.Pipe()
	toHarness, fromClient := io.Pipe()
	t.Cleanup(func() { toHarness.Close() })
	go fromHarness.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"preflight","payload":{"status":"ready","report":{"status":"ready","diagnostics":[]}}}` + "\n"))
	c, err := harness.Connect(ctx, toClient, fromClient, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got := make(chan error, 1)
	go func() {
		_, err := c.Preflight(ctx)
		got <- err
	}()
	return c, bufio.NewScanner(toHarness), fromHarness, got
}

// Two StartRun calls in flight: when the first Run ends before the Harness
// reads the second start_run, the second is a Run of its own, and its
// events go to its own callback, not the first's nor nowhere.
func TestSecondRunTakesOverWhenTheFirstEnds(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	// A start_run answer of the right shape, from the fake Harness.
	fake := start(t, `{"required_host_services": [], "runs": [{"steps": [{"end": {"status": "ended"}}]}]}`, nil)
	if _, err := fake.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := fake.StartRun(ctx, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := json.Marshal(res.Raw)
	if err != nil {
		t.Fatal(err)
	}

	c, lines, fromHarness, got := playHarness(t, ctx, nil)
	defer fromHarness.Close()
	id := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatal("no request")
		}
		var req struct{ ID string }
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			t.Fatal(err)
		}
		return strconv.Quote(req.ID)
	}
	reply := func(id, payload string) {
		t.Helper()
		if _, err := fromHarness.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":` + id + `,"payload":` + payload + "}\n")); err != nil {
			t.Fatal(err)
		}
	}
	reply(id(), `{"report":{"status":"ready","diagnostics":[]},"mcp_exports":[]}`)
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[int][]string{}
	run := func(n int) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.StartRun(ctx, "x", func(ev harness.Event) {
				if ev.Harness != nil {
					mu.Lock()
					seen[n] = append(seen[n], string(ev.Harness.EventType))
					mu.Unlock()
				}
			})
			done <- err
		}()
		return done
	}
	first := run(1)
	id1 := id()
	second := run(2)
	id2 := id()
	reply(id1, string(answer))
	if err := <-first; err != nil {
		t.Fatalf("first Run: %v", err)
	}
	// The Harness, idle again, reads the second start_run: a Run.
	if _, err := fromHarness.Write([]byte(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","payload":{"schema_version":1,"event_id":"e2","session_id":"s","session_sequence":2,"timestamp":"2025-01-01T00:00:00Z","event_type":"run_started","payload":{"payload_type":"empty"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	reply(id2, string(answer))
	if err := <-second; err != nil {
		t.Fatalf("second Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen[1]) != 0 || len(seen[2]) != 1 || seen[2][0] != "run_started" {
		t.Fatalf("events: first Run's callback %v, second's %v; want the second's to have run_started", seen[1], seen[2])
	}
}
