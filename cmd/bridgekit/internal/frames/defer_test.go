package frames

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Checks left to Frame.Check, run in any order once a whole session is
// classified, come to the frames Classify gives checking at once: the
// recorded traffic of the real ACP agents, with a schema problem of a
// reply and of a request added.
func TestDeferredChecks(t *testing.T) {
	files, _ := filepath.Glob("../../../../testdata/acp/traffic/*/turn.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded traffic")
	}
	for _, file := range files {
		var lines []line
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var rec struct{ Dir, Line string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			d := In
			if rec.Dir == "recv" {
				d = Out
			}
			lines = append(lines, line{d, rec.Line})
		}
		f.Close()
		lines = append(lines,
			line{In, `{"jsonrpc":"2.0","id":900,"method":"session/prompt","params":{"sessionId":7,"prompt":[]}}`},
			line{Out, `{"jsonrpc":"2.0","id":900,"result":{"stopReason":42}}`},
			line{In, `{"jsonrpc":"2.0","id":900,"method":"session/prompt","params":{"sessionId":"s","prompt":"no"}}`},
			line{In, `{"jsonrpc":"2.0","id":900,"method":"session/prompt","params":{"sessionId":"s","prompt":"again"}}`})
		now := classifyAll(New(Unknown), lines)
		c := New(Unknown)
		c.DeferChecks = true
		later := classifyAll(c, lines)
		problems := 0
		for i := len(later) - 1; i >= 0; i-- {
			later[i].Check()
		}
		for i := range now {
			problems += len(now[i].Problems)
			if !reflect.DeepEqual(now[i], later[i]) {
				t.Errorf("%s line %d: checked at once %+v, deferred %+v", file, i+1, now[i], later[i])
			}
		}
		if problems < 4 {
			t.Errorf("%s: %d problems, want the 4 added at least", file, problems)
		}
	}
}
