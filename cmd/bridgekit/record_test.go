package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// A full queue does not block push: the line is counted lost, and the
// loss is queued before the next line that fits, or at close.
func TestLineQueueDropsAndReportsWhenFull(t *testing.T) {
	q := newLineQueue(100, 3)
	line := []byte(`{"jsonrpc":"2.0","method":"x"}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 {
			dir := frames.In
			if i%2 == 1 {
				dir = frames.Out
			}
			q.push(queued{dir: dir, line: line, size: len(line)})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("push blocked on a full queue")
	}
	batch, ok := q.popAll(nil)
	if !ok || len(batch) != 3 || batch[0].lost != nil || batch[2].lost != nil {
		t.Fatalf("first batch %+v", batch)
	}
	// The queue had room for 3 lines: 7 were lost. The next line that
	// fits goes in after the report of the loss.
	q.push(queued{dir: frames.In, line: line, size: len(line)})
	q.push(queued{dir: frames.In, line: line, size: 1000})
	batch, _ = q.popAll(batch)
	if len(batch) != 3 || batch[0].lost == nil || batch[1].lost != nil || batch[2].lost != nil {
		t.Fatalf("second batch %+v", batch)
	}
	if l := batch[0].lost; l.in != 3 || l.out != 4 || l.bytes != int64(7*len(line)) {
		t.Fatalf("lost %+v", l)
	}
	// A loss after the last line is reported at close.
	for range 4 {
		q.push(queued{dir: frames.Out, line: line, size: len(line)})
	}
	q.close()
	batch, _ = q.popAll(batch)
	if len(batch) != 4 || batch[3].lost == nil || batch[3].lost.out != 1 {
		t.Fatalf("batch at close %+v", batch)
	}
	if _, ok := q.popAll(batch); ok {
		t.Fatal("a closed, drained queue gave more")
	}
}

// blockingSink holds the recorder up until released.
type blockingSink struct{ release chan struct{} }

func (s *blockingSink) Put(*tracelog.Record) error {
	<-s.release
	return nil
}

// The pumps' side (tap.write) never waits for a recorder that is stuck,
// and every line forwarded is either recorded or counted in a
// not_recorded problem: in the frame record after the gap and in the end
// record.
func TestRecorderFallingBehindIsReported(t *testing.T) {
	var out bytes.Buffer
	bs := &blockingSink{release: make(chan struct{})}
	rec := &recorder{session: "s", cls: frames.New(""), red: redact.New(), jsonl: bufio.NewWriter(&out), sinks: []sink{bs}}
	rec.queue = newLineQueue(1<<20, 8)
	recorded := make(chan struct{})
	go rec.runQueue(rec.queue, recorded)
	tp := &tap{dir: frames.In, rec: rec, max: 1 << 20}
	const stuck, after = 200, 5
	write := func(from, to int) {
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			for i := from; i < to; i++ {
				tp.write(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"_x/n","params":{"i":%d}}`+"\n", i), time.Now())
			}
		}()
		select {
		case <-wrote:
		case <-time.After(10 * time.Second):
			t.Fatal("the tap waited for a recorder that is stuck")
		}
	}
	write(0, stuck)
	close(bs.release)
	// Once the recorder has caught up, the next lines are recorded, the
	// first of them with the report of the gap before it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		rec.queue.mu.Lock()
		empty := len(rec.queue.items) == 0
		rec.queue.mu.Unlock()
		if empty {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorder did not catch up")
		}
	}
	write(stuck, stuck+after)
	rec.queue.close()
	<-recorded
	end := rec.end(time.Now(), 0, "")
	rd := tracelog.NewReader(&out, 0)
	frameRecs, reported := 0, 0
	for {
		r, err := rd.Next()
		if err != nil {
			break
		}
		if r.Type == tracelog.TypeFrame {
			frameRecs++
			for _, p := range r.Problems {
				if p.Code == ProblemNotRecorded {
					var lines, in, outN, b int
					if _, err := fmt.Sscanf(p.Message, "%d lines (%d in, %d out; %d bytes)", &lines, &in, &outN, &b); err != nil {
						t.Fatalf("message %q: %v", p.Message, err)
					}
					reported += lines
				}
			}
		}
	}
	if rec.lost.in == 0 {
		t.Fatalf("nothing was lost (%d frames recorded): the test did not fill the queue", frameRecs)
	}
	if frameRecs+rec.lost.in != stuck+after || reported != rec.lost.in {
		t.Fatalf("%d recorded + %d lost != %d (reported in frames: %d)", frameRecs, rec.lost.in, stuck+after, reported)
	}
	var endMsg string
	for _, p := range end.Problems {
		if p.Code == ProblemNotRecorded {
			endMsg = p.Message
		}
	}
	if !strings.HasPrefix(endMsg, fmt.Sprintf("%d lines (%d in, 0 out;", rec.lost.in, rec.lost.in)) {
		t.Fatalf("end record's problems %+v (lost %+v)", end.Problems, rec.lost)
	}
}

// A line trickling in does not wake the recorder (no futex call on the
// pump's path): the recorder takes it at its next tick. A queue filling
// up, or closing, wakes it at once.
func TestLineQueueWakesOnlyWhenFilling(t *testing.T) {
	q := newLineQueue(1<<20, 64)
	line := []byte(`{"jsonrpc":"2.0","method":"x"}`)
	q.push(queued{dir: frames.In, line: line, size: len(line)})
	if len(q.wake) != 0 {
		t.Fatal("one line woke the recorder")
	}
	start := time.Now()
	batch, ok := q.popAll(nil)
	if !ok || len(batch) != 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("popAll: %d lines, %v, after %v", len(batch), ok, time.Since(start))
	}
	for range 64 / 8 {
		q.push(queued{dir: frames.In, line: line, size: len(line)})
	}
	if len(q.wake) != 1 {
		t.Fatal("an eighth of the queue's bound did not wake the recorder")
	}
	<-q.wake
	q.popAll(nil)
	q.close()
	if len(q.wake) != 1 {
		t.Fatal("close did not wake the recorder")
	}
	if _, ok := q.popAll(nil); ok {
		t.Fatal("a closed, empty queue gave lines")
	}
}
