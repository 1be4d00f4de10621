package validate

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/internal/specschema"
)

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"agent_mesage_chunk", "agent_message_chunk", 1}, {"ab", "ba", 1}, {"done", "end_turn", 7},
	} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
	if best, _ := nearest("tool_cal", []string{"plan", "tool_call", "tool_call_update"}); best != "tool_call" {
		t.Errorf("nearest: %q", best)
	}
}

// HasUnknown, which walks only the fields that may hold an unknown, agrees
// with specschema's walk of every field on the frames of the recorded
// traffic of real agents and on frames that hold unknowns.
func TestHasUnknownAgrees(t *testing.T) {
	var values []any
	cls := frames.New(frames.ACP)
	files, _ := filepath.Glob("../../../../testdata/acp/traffic/*/turn.jsonl")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rec recording // the recorder's lines: {seq, dir: send|recv, line}
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatal(err)
			}
			dir := frames.In
			if rec.Dir == "recv" {
				dir = frames.Out
			}
			if fr := cls.Classify(int64(i+1), dir, time.Time{}, []byte(rec.Line), false); fr.Value != nil {
				values = append(values, fr.Value)
			}
		}
	}
	sc := bufio.NewScanner(strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_mesage_chunk","content":{"type":"text","text":"x"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"bogus"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"maybe"}]}}}`,
	}, "\n")))
	unknowns := 0
	for sc.Scan() {
		if fr := cls.ClassifyUndirected(0, time.Time{}, []byte(sc.Text())); fr.Value != nil {
			values = append(values, fr.Value)
			unknowns++
		}
	}
	if len(values) < 100 || unknowns != 3 {
		t.Fatalf("%d values, %d with unknowns", len(values), unknowns)
	}
	found := 0
	for _, v := range values {
		got, want := HasUnknown(v), specschema.HasUnknown(v)
		if got != want {
			t.Errorf("%T: HasUnknown %v, specschema.HasUnknown %v", v, got, want)
		}
		if got {
			found++
		}
	}
	if found < unknowns {
		t.Errorf("found %d values with unknowns, want at least %d", found, unknowns)
	}
}
