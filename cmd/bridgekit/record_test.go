package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
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
