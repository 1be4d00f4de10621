package realagent

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/internal/recorder"
)

var record = flag.Bool("record", false, "write each agent's traffic to testdata/acp/traffic/<agent>-<version>/turn.jsonl")

// TrafficDir returns the directory of agent spec's recorded traffic.
func trafficDir(spec *Spec) string {
	return filepath.Join(Dir(), "..", "acp", "traffic", spec.Name+"-"+spec.Version)
}

// Each real agent runs the standard turn (TurnFor) against the scripted
// model over real pipes: initialize, authenticate where it asks,
// session/new, a prompt whose turn has thinking, a plan, tool calls, a
// permission allowed and one denied, file reads and writes and usage; then
// the agent is stopped and nothing of it may be left running. With
// -record the traffic is written to testdata/acp/traffic.
func TestRealAgents(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			Require(t, name)
			runTurn(t, name)
		})
	}
}

func runTurn(t *testing.T, name string) {
	spec := Agents[name]
	turn := TurnFor(name)
	root := t.TempDir()
	var stderr bytes.Buffer
	a, err := Prepare(name, Options{Root: root, Files: turn.Files, Script: turn.Script(filepath.Join(root, "workspace"))})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Workspace: a.Workspace, Decide: DenyMatching(turn.Denied)}
	s, err := Connect(a, c)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close(0)
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s%s", name, a.Stderr(), stderr.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	init, err := s.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	method, err := s.Authenticate(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"codex-acp": "codex-api-key", "claude-agent-acp": "gateway"}[name]; method != want {
		t.Errorf("authenticated with %q, want %q", method, want)
	}
	if _, err := s.New(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prompt(ctx, turn.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(res, &r, json.RejectUnknownMembers(false)); err != nil || r.StopReason != turn.StopReason {
		t.Errorf("session/prompt result %s", res)
	}
	if used := a.Model.Used(); used != turn.Asks {
		t.Errorf("the agent asked the model %d times, want %d", used, turn.Asks)
	}
	if err := a.Model.Err(); err != nil {
		t.Error(err)
	}

	// What the client did: one permission allowed and one denied at least,
	// and, where the agent goes through the client, the file read and write.
	log := strings.Join(c.Logged(), "\n")
	if !strings.Contains(log, "allow ") || !strings.Contains(log, "deny ") {
		t.Errorf("permissions: want one allowed and one denied, got:\n%s", log)
	}
	if name == "claude-code-acp" {
		for _, want := range []string{"read notes.txt", "write summary.txt", "terminal term-1: /bin/sh -c wc -l notes.txt"} {
			if !strings.Contains(log, want) {
				t.Errorf("client log lacks %q:\n%s", want, log)
			}
		}
	}
	summary, err := os.ReadFile(filepath.Join(a.Workspace, "summary.txt"))
	if err != nil || !strings.Contains(string(summary), "two lines") {
		t.Errorf("summary.txt: %q, %v", summary, err)
	}
	if notes, err := os.ReadFile(filepath.Join(a.Workspace, "notes.txt")); err != nil || string(notes) != Notes {
		t.Errorf("notes.txt after the denied rm: %q, %v", notes, err)
	}
	frames := s.Rec.Frames()
	for _, m := range []string{"session/request_permission", "session/update"} {
		if !slices.ContainsFunc(frames, func(f recorder.Frame) bool { return f.Method == m }) {
			t.Errorf("no %s in the traffic", m)
		}
	}
	for _, u := range []string{`"agent_thought_chunk"`, `"plan"`, `"tool_call"`, `"tool_call_update"`} {
		if !slices.ContainsFunc(frames, func(f recorder.Frame) bool { return strings.Contains(f.Line, `"sessionUpdate":`+u) }) {
			t.Errorf("no %s session/update in the traffic", u)
		}
	}

	// Stop: afterwards nothing of the agent runs.
	closed = true
	pgid := a.Cmd.Process.Pid
	if err := s.Close(500 * time.Millisecond); err != nil {
		t.Error(err)
	}
	if left := a.Procs(); len(left) > 0 {
		t.Errorf("processes left in the agent's namespace: %v", left)
	}
	if left := procsInGroup(pgid); len(left) > 0 {
		t.Errorf("processes left in the agent's process group: %v", left)
	}
	for _, o := range a.Outbound() {
		if !slices.Contains(spec.KnownOutbound, o) {
			t.Errorf("the agent tried to reach outside loopback: %s", o)
		}
	}
	if *record && !t.Failed() {
		dir := trafficDir(spec)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := recorder.WriteFile(filepath.Join(dir, "turn.jsonl"), Scrub(frames, root)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }
