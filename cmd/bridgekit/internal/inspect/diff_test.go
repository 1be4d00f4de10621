package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/bindrules"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
)

func defaultRules(t testing.TB) []bindrules.Rule {
	t.Helper()
	rules, err := bindrules.ParseAll(bindrules.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// session classifies lines (dir, frame) as trace records them.
func session(t testing.TB, id string, lines ...string) []*tracelog.Record {
	t.Helper()
	cls := frames.New(frames.Unknown)
	var out []*tracelog.Record
	at := time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)
	for i, l := range lines {
		dir, line, _ := strings.Cut(l, " ")
		d := frames.In
		if dir == "<" {
			d = frames.Out
		}
		seq := int64(i + 1)
		r := &tracelog.Record{Type: tracelog.TypeFrame, Session: id, Seq: seq, Time: at.Add(time.Duration(i) * time.Millisecond), Dir: d, Size: len(line)}
		r.SetLine([]byte(line))
		r.SetFrame(cls.Classify(seq, d, r.Time, []byte(line), false))
		out = append(out, r)
	}
	return out
}

func ops(res *DiffResult) string {
	var b strings.Builder
	for _, r := range res.Rows {
		b.WriteString(r.Op)
	}
	return b.String()
}

// Ids, session ids, tool call ids and UUIDs that differ consistently are
// no difference; a content change is one, at its pointer; an id mixed up
// is one; frames of one side only are rows of their own.
func TestDiffBindsWhatPeersChoose(t *testing.T) {
	a := session(t, "a",
		`> {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
		`< {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-A"}}`,
		`> {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s-A","prompt":[{"type":"text","text":"hi"}]}}`,
		`< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-A","update":{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Read","status":"pending"}}}`,
		`< {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-A","toolCall":{"toolCallId":"call_1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`,
		`> {"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`,
		`< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-A","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"},"_meta":{"at":"2026-12-06T13:00:00Z","msg":"0b9c8a2e-1111-4a2b-9c3d-0123456789ab"}}}}`,
		`< {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
	)
	b := session(t, "b",
		`> {"jsonrpc":"2.0","id":"x1","method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
		`< {"jsonrpc":"2.0","id":"x1","result":{"sessionId":"s-B"}}`,
		`> {"jsonrpc":"2.0","id":"x2","method":"session/prompt","params":{"sessionId":"s-B","prompt":[{"type":"text","text":"hi"}]}}`,
		`< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-B","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_9","title":"Read","status":"pending"}}}`,
		`< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-B","update":{"sessionUpdate":"usage_update","used":1,"size":2}}}`,
		`< {"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s-B","toolCall":{"toolCallId":"toolu_9"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`,
		`> {"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`,
		`< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-B","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello!"},"_meta":{"at":"2026-12-07T01:02:03.5+01:00","msg":"9f1e2d3c-2222-4b5a-8c7d-abcdefabcdef"}}}}`,
		`< {"jsonrpc":"2.0","id":"x2","result":{"stopReason":"end_turn"}}`,
	)
	res, err := Diff("a", a, "b", b, defaultRules(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ops(res), "====+==~="; got != want {
		t.Fatalf("rows %s, want %s\n%+v", got, want, res.Rows)
	}
	if res.Changes != 2 {
		t.Errorf("%d changes, want 2", res.Changes)
	}
	ch := res.Rows[7]
	if len(ch.Differences) != 1 || ch.Differences[0].Pointer != "/params/update/content/text" || ch.Differences[0].A != `"Hello"` || ch.Differences[0].B != `"Hello!"` {
		t.Errorf("the changed row: %+v", ch.Differences)
	}
	if ch.A.Seq != 7 || ch.B.Seq != 8 || ch.A.Update != "agent_message_chunk" {
		t.Errorf("the changed row's frames: %+v %+v", ch.A, ch.B)
	}
	bound := fmt.Sprint(res.Bound)
	for _, want := range []string{"{1 \"x1\"}", "{0 7}", "{s-A s-B}", "{call_1 toolu_9}"} {
		if !strings.Contains(bound, want) {
			t.Errorf("bindings %s lack %s", bound, want)
		}
	}

	// Without the rules, every id is a difference.
	res, err = Diff("a", a, "b", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes <= 2 {
		t.Errorf("without rules: %d changes", res.Changes)
	}

	// An id that does not stand for what it stood for is a difference: B
	// sends its prompt with the session/new's id again.
	b[2] = session(t, "b", `> {"jsonrpc":"2.0","id":"x1","method":"session/prompt","params":{"sessionId":"s-B","prompt":[{"type":"text","text":"hi"}]}}`)[0]
	b[2].Seq = 3
	res, err = Diff("a", a, "b", b, defaultRules(t))
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[2]
	if row.Op != OpChanged || len(row.Differences) != 1 || row.Differences[0].Pointer != "/id" || !strings.Contains(row.Differences[0].Message, `B's id "x1" already stands for A's id 1, not 2`) {
		t.Errorf("a mixed-up id: %+v", row)
	}
}

// Two sessions of the same agent recorded apart differ in every id the
// agent and the client chose; against itself with all of them renamed, a
// real session has no differences. And two real recordings of one agent
// at two versions differ only where their content does.
func TestDiffRealSessions(t *testing.T) {
	load := func(name string) []*tracelog.Record {
		path := "../../../../testdata/acp/traffic/" + name + ".jsonl"
		if !strings.Contains(name, "/") {
			path = "../../../../testdata/acp/traffic/" + name + "/turn.jsonl"
		}
		format, err := traffic.Sniff(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []*tracelog.Record
		if err := traffic.Read(context.Background(), path, format, "", func(_ int, r *tracelog.Record) error { out = append(out, r); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, name := range []string{"codex-acp-2.6.0", "claude-agent-acp-0.101.0", "qwen-0.24.4"} {
		a := load(name)
		res, err := Diff("a", a, "a", a, defaultRules(t))
		if err != nil || res.Changes != 0 {
			t.Fatalf("%s against itself: %d changes, %v", name, res.Changes, err)
		}
	}
	// codex-acp 2.6.0's turn, recorded twice (turn.jsonl and turn-2.jsonl,
	// testdata/acp/traffic/README.md): its session ids (UUIDs) differ in
	// 36 frames, and are bound; what is left is what codex said
	// differently: one more _auth/status_update, and its token counts.
	a, b := load("codex-acp-2.6.0"), load("codex-acp-2.6.0/turn-2")
	res, err := Diff("run 1", a, "run 2", b, defaultRules(t))
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, r := range res.Rows {
		switch r.Op {
		case OpSame:
		case OpOnlyB:
			changed = append(changed, fmt.Sprintf("+%d %s", r.B.Seq, r.B.Method))
		case OpChanged:
			for _, d := range r.Differences {
				if !strings.HasSuffix(d.Pointer, "/used") && !strings.HasSuffix(d.Pointer, "Tokens") {
					t.Errorf("row %d~%d: a difference at %s: %+v", r.A.Seq, r.B.Seq, d.Pointer, d)
				}
			}
			changed = append(changed, fmt.Sprintf("~%d %s %s", r.A.Seq, r.A.Method, r.A.Update))
		default:
			t.Errorf("a row of A only: %+v", r.A)
		}
	}
	want := "+4 _auth/status_update|~20 session/update usage_update|~28 session/update usage_update|~36 session/update usage_update|~44 session/update usage_update|~46 session/prompt "
	if got := strings.Join(changed, "|"); got != want || res.Changes != 6 || len(res.Rows) != 47 {
		t.Errorf("%d rows, %d changes:\n%s\nwant\n%s", len(res.Rows), res.Changes, got, want)
	}
	if len(res.Bound) != 1 || res.Bound[0].Recorded != "01a24a55-e9b7-7612-9f1e-faa7ddf8758a" || res.Bound[0].Live != "01a24b8a-3123-7bd0-9cb5-0705814529b8" {
		t.Errorf("bound %v, want the two session ids", res.Bound)
	}
	// Without the rules, every frame naming the session differs.
	res, err = Diff("run 1", a, "run 2", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes < 35 {
		t.Errorf("without the rules, %d changes", res.Changes)
	}
}

// FuzzDiff: any two sessions, whatever their lines, diff without error,
// every frame of each in exactly one row, in order, and a session against
// itself has no change.
func FuzzDiff(f *testing.F) {
	f.Add("> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/w\"}}\n< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"a\"}}",
		"> {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"session/new\",\"params\":{\"cwd\":\"/w\"}}\n< {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"sessionId\":\"b\"}}\n< not json")
	f.Add("< [1,2]\n> {\"id\":null}", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		lines := func(s string) []string {
			var out []string
			for _, l := range strings.Split(s, "\n") {
				if len(l) > 2 && (l[0] == '>' || l[0] == '<') && l[1] == ' ' {
					out = append(out, l)
				}
			}
			return out
		}
		la, lb := lines(a), lines(b)
		if len(la) == 0 || len(lb) == 0 || len(la) > 200 || len(lb) > 200 {
			return
		}
		ra, rb := session(t, "a", la...), session(t, "b", lb...)
		res, err := Diff("a", ra, "b", rb, defaultRules(t))
		if err != nil {
			t.Fatal(err)
		}
		var sa, sb []int64
		for _, r := range res.Rows {
			if r.A != nil {
				sa = append(sa, r.A.Seq)
			}
			if r.B != nil {
				sb = append(sb, r.B.Seq)
			}
			if (r.Op == OpSame || r.Op == OpChanged) != (r.A != nil && r.B != nil) {
				t.Fatalf("row %+v", r)
			}
		}
		for i, s := range sa {
			if s != int64(i+1) || len(sa) != len(la) {
				t.Fatalf("A's frames in the rows: %v", sa)
			}
		}
		for i, s := range sb {
			if s != int64(i+1) || len(sb) != len(lb) {
				t.Fatalf("B's frames in the rows: %v", sb)
			}
		}
		if self, err := Diff("a", ra, "a", ra, defaultRules(t)); err != nil || self.Changes != 0 {
			t.Fatalf("against itself: %d changes, %v: %+v", self.Changes, err, self.Rows)
		}
	})
}
