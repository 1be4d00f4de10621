package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

type chanSink chan *tracelog.Record

func (c chanSink) Put(rec *tracelog.Record) error { c <- rec; return nil }

// The recording queue keeps order through backpressure (a queue far
// smaller than the traffic), wakes from its idle sleep for the next line,
// and drains what is queued when closed.
func TestLineQueue(t *testing.T) {
	out := make(chanSink, 16)
	rec := &recorder{session: "s", cls: frames.New(""), sinks: []sink{out}}
	rec.queue = newLineQueue(512, 4)
	done := make(chan struct{})
	go rec.runQueue(rec.queue, done)
	push := func(i int) {
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"n","params":{"i":%d}}`, i)
		rec.queue.push(queued{dir: frames.In, at: time.Now(), line: line, size: len(line)})
	}
	expect := func(i int) {
		t.Helper()
		select {
		case r := <-out:
			if want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"i":%d}}`, i); r.Raw == nil || *r.Raw != want {
				t.Fatalf("record %d: %v", i, r.Raw)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d never came", i)
		}
	}
	const n = 2000
	go func() {
		for i := range n {
			push(i)
		}
	}()
	for i := range n {
		expect(i)
	}
	// Idle long enough for the recorder to sleep, then one more line.
	time.Sleep(3 * idleTicks * recordTick)
	push(n)
	expect(n)
	push(n + 1)
	rec.queue.close()
	expect(n + 1)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("runQueue did not end after close")
	}
	rec.queue.push(queued{line: []byte("{}")}) // after close: dropped, not blocked
}

// A batch of queued lines, finished on several goroutines, is recorded as
// the same JSONL, the same records to the sinks and the same problem
// count as the lines recorded one at a time: the recorded traffic of the
// real ACP agents, with a secret to mask, schema problems, an unmatched
// reply and long lines added, in batches of many sizes, up to several
// workers' shares and several chunks.
func TestBatchRecordsAsOneAtATime(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/acp/traffic/*/turn.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded traffic")
	}
	at := time.Unix(1764583200, 0)
	var lines []queued
	add := func(dir frames.Direction, line string) {
		lines = append(lines, queued{dir, at.Add(time.Duration(len(lines)) * time.Millisecond), []byte(line), len(line), false, false})
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var rec struct{ Dir, Line string }
			if err := json.Unmarshal(l, &rec); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			dir := frames.In
			if rec.Dir == "recv" {
				dir = frames.Out
			}
			add(dir, rec.Line)
		}
	}
	add(frames.In, `{"jsonrpc":"2.0","id":900,"method":"authenticate","params":{"methodId":"x","apiKey":"sk-live-0123456789abcdef"}}`)
	add(frames.Out, `{"jsonrpc":"2.0","id":900,"result":{}}`)
	add(frames.In, `{"jsonrpc":"2.0","id":903,"method":"no/such","params":{}}`)
	add(frames.Out, `{"jsonrpc":"2.0","id":901,"result":{}}`)
	add(frames.In, `{"jsonrpc":"2.0","id":902,"method":"session/prompt","params":{"sessionId":"s","prompt":"no"}}`)
	// Long lines, so that a whole batch spans several chunks of bytes.
	for range 5 {
		add(frames.Out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`+strings.Repeat("x", chunkBytes/3)+`"}}}}`)
	}
	for len(lines) < 400 {
		add(frames.Out, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%d"}}}}`, len(lines)))
	}

	record := func(batches []int) (jsonl string, recs []*tracelog.Record, problems int) {
		var out bytes.Buffer
		out2 := make(chanSink, len(lines))
		r := &recorder{session: "s", cls: frames.New(""), red: redact.FromEnv(nil), jsonl: bufio.NewWriter(&out), sinks: []sink{out2}}
		if batches == nil {
			for _, it := range lines {
				r.frame(it.dir, it.at, bytes.Clone(it.line), it.size, it.truncated, it.partial)
			}
		} else {
			var jobs []job
			rest := slices.Clone(lines)
			for k := 0; len(rest) > 0; k++ {
				n := min(batches[k%len(batches)], len(rest))
				jobs = r.record(rest[:n], jobs)
				rest = rest[n:]
			}
		}
		r.flush()
		close(out2)
		for rec := range out2 {
			recs = append(recs, rec)
		}
		return out.String(), recs, r.problems
	}
	want, wantRecs, wantProblems := record(nil)
	if wantProblems < 3 || !strings.Contains(want, `"redacted":true`) {
		t.Fatalf("%d problems, redacted: %v; the test's lines do not exercise the recorder", wantProblems, strings.Contains(want, `"redacted":true`))
	}
	for _, batches := range [][]int{{1}, {7, 1, 33}, {minPerWorker * 2}, {100, 3}, {len(lines)}} {
		got, gotRecs, gotProblems := record(batches)
		if got != want {
			t.Errorf("batches of %v: the JSONL differs from one line at a time", batches)
		}
		if gotProblems != wantProblems || !reflect.DeepEqual(gotRecs, wantRecs) {
			t.Errorf("batches of %v: %d problems and %d records, want %d and %d alike", batches, gotProblems, len(gotRecs), wantProblems, len(wantRecs))
		}
	}
}
