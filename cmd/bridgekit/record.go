package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// A sink receives every record of a session, in order. Put must not keep
// rec after it returns (the recorder reuses nothing, but sinks that queue
// must copy what they keep).
type sink interface {
	Put(rec *tracelog.Record) error
}

// recorder turns the lines the two pumps see into records: it classifies
// them (one classifier for both directions, so replies pair with
// requests), masks secrets and hands each record to the sinks. Its lock
// orders the records of both directions as the pumps saw them.
type recorder struct {
	mu       sync.Mutex
	session  string
	seq      int64
	cls      *frames.Classifier
	red      *redact.Redactor
	sinks    []sink
	jsonl    *bufio.Writer // --out, flushed after every chunk a pump read
	pretty   *prettyPrinter
	failures []error // first sink errors, reported at the end
	problems int
	// queue, when set, takes the pumps' lines to a goroutine of their own
	// (runQueue); nil records them on the pump's goroutine.
	queue *lineQueue
}

func (r *recorder) put(rec *tracelog.Record) {
	if r.jsonl != nil {
		b, err := rec.Marshal(nil)
		if err == nil {
			_, err = r.jsonl.Write(b)
		}
		if err != nil {
			r.fail(fmt.Errorf("--out: %w", err))
			r.jsonl = nil
		}
	}
	for _, s := range r.sinks {
		if err := s.Put(rec); err != nil {
			r.fail(err)
		}
	}
}

func (r *recorder) fail(err error) {
	if len(r.failures) < 8 {
		r.failures = append(r.failures, err)
	}
}

func (r *recorder) start(at time.Time, command []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &tracelog.Record{Type: tracelog.TypeSession, Session: r.session, Time: at.UTC(), Version: tracelog.Version, Command: command}
	r.put(rec)
	r.flushLocked()
}

// frame records one line. size is the whole line's length; line holds its
// first bytes only when truncated.
func (r *recorder) frame(dir frames.Direction, at time.Time, line []byte, size int, truncated, partial bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	f := r.cls.Classify(r.seq, dir, at, line, truncated)
	rec := &tracelog.Record{Type: tracelog.TypeFrame, Session: r.session, Seq: r.seq, Time: at.UTC(), Dir: dir,
		Size: size, Truncated: truncated, Partial: partial}
	rec.SetFrame(f)
	masked := r.red.JSON(line)
	if truncated {
		masked = r.red.Bytes(line)
	}
	rec.Redacted = !bytes.Equal(masked, line)
	rec.SetLine(masked)
	for i := range rec.Problems {
		rec.Problems[i].Message = r.red.String(rec.Problems[i].Message)
	}
	r.problems += len(rec.Problems)
	r.put(rec)
	if r.pretty != nil {
		r.pretty.frame(rec)
	}
}

// end records the end of the session: the command's status and the
// requests never answered.
func (r *recorder) end(at time.Time, status int, signal string) *tracelog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec := &tracelog.Record{Type: tracelog.TypeEnd, Session: r.session, Seq: r.seq, Time: at.UTC(), Status: &status, Signal: signal,
		Family: r.cls.Family(), Unanswered: r.cls.Unanswered()}
	for _, p := range rec.Unanswered {
		rec.Problems = append(rec.Problems, frames.Problem{Code: frames.ProblemUnanswered,
			Message: fmt.Sprintf("%s request %s (frame %d) was never answered", p.Method, p.ID, p.Seq)})
	}
	r.problems += len(rec.Problems)
	r.put(rec)
	if r.pretty != nil {
		r.pretty.end(rec)
	}
	r.flushLocked()
	return rec
}

func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
}

func (r *recorder) flushLocked() {
	if r.jsonl != nil {
		if err := r.jsonl.Flush(); err != nil {
			r.fail(fmt.Errorf("--out: %w", err))
			r.jsonl = nil
		}
	}
	if r.pretty != nil {
		r.pretty.flush()
	}
}

// tap splits what a pump forwards into lines for the recorder, keeping at
// most max bytes of a line: a longer line is recorded truncated, with its
// whole length.
type tap struct {
	dir  frames.Direction
	rec  *recorder
	max  int
	line []byte
	size int
}

func (t *tap) write(p []byte, at time.Time) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := t.max - len(t.line); room > 0 {
			t.line = append(t.line, chunk[:min(room, len(chunk))]...)
		}
		t.size += len(chunk)
		if i < 0 {
			return
		}
		t.emit(at, false)
		p = p[i+1:]
	}
}

func (t *tap) emit(at time.Time, partial bool) {
	if q := t.rec.queue; q != nil {
		q.push(queued{t.dir, at, bytes.Clone(t.line), t.size, t.size > len(t.line), partial})
	} else {
		t.rec.frame(t.dir, at, t.line, t.size, t.size > len(t.line), partial)
	}
	t.line, t.size = t.line[:0], 0
	if cap(t.line) > 64<<10 {
		t.line = nil // do not keep a large buffer for the rest of the session
	}
}

// close records a last line the stream ended without a newline after.
func (t *tap) close(at time.Time) {
	if t.size > 0 || len(t.line) > 0 {
		t.emit(at, true)
	}
}

// pump forwards src to dst unchanged, chunk by chunk as read (so
// backpressure is the pipes' own), showing each chunk to the tap just
// before it is forwarded. It returns the first read or write error (nil at EOF).
func pump(dst io.Writer, src io.Reader, t *tap) (err error) {
	buf := make([]byte, 64<<10)
	defer func() {
		t.close(time.Now())
		if t.rec.queue == nil {
			t.rec.flush()
		}
	}()
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			at := time.Now()
			// Record before forwarding: once forwarded, the peer may answer,
			// and the answer (read by the other pump) must not be recorded
			// before the request it answers. With the queue, tapping is a
			// copy.
			t.write(buf[:n], at)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			if t.rec.queue == nil {
				t.rec.flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// A queued line, copied out of the pump's buffer.
type queued struct {
	dir                frames.Direction
	at                 time.Time
	line               []byte
	size               int
	truncated, partial bool
}

// lineQueue hands lines from the pumps to the recording goroutine, so that
// forwarding never waits for decoding, masking or the disk. It is bounded
// in bytes and in lines: when the recorder falls that far behind, push
// blocks, and the pump with it, which is the pipes' own backpressure.
//
// While traffic flows the recorder takes what is queued on a tick
// (recordTick) rather than being woken for every line: a wake-up costs the
// forwarding pump a futex call and the recorder a context switch per
// line, a tick neither. After idleTicks empty ticks it sleeps until the
// next push wakes it, so an idle session costs nothing.
type lineQueue struct {
	mu       sync.Mutex
	roomy    sync.Cond
	items    []queued
	bytes    int
	closed   bool
	sleeping bool          // the recorder waits for kick, not for its tick
	kick     chan struct{} // wakes the recorder early; capacity 1
	maxBytes int
	maxItems int
}

const (
	recordTick = time.Millisecond
	idleTicks  = 20
)

func newLineQueue(maxBytes, maxItems int) *lineQueue {
	q := &lineQueue{maxBytes: maxBytes, maxItems: maxItems, kick: make(chan struct{}, 1)}
	q.roomy.L = &q.mu
	return q
}

func (q *lineQueue) wake() {
	q.sleeping = false
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *lineQueue) push(it queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// A line larger than the bound still goes in once the queue is empty.
	for !q.closed && len(q.items) > 0 && (q.bytes+len(it.line) > q.maxBytes || len(q.items) >= q.maxItems) {
		q.wake()
		q.roomy.Wait()
	}
	if q.closed {
		return // the session has ended: nothing records any more
	}
	q.items = append(q.items, it)
	q.bytes += len(it.line)
	if q.sleeping || q.bytes >= q.maxBytes/2 || len(q.items) >= q.maxItems/2 {
		q.wake()
	}
}

// take moves every queued line to dst; closed says the queue is closed (a
// closed queue may still hand out its last lines).
func (q *lineQueue) take(dst []queued) ([]queued, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dst = append(dst[:0], q.items...)
	if len(q.items) > 0 {
		clear(q.items)
		q.items = q.items[:0]
		q.bytes = 0
		q.roomy.Broadcast()
	}
	return dst, q.closed
}

// sleep marks the recorder asleep until the next push, unless there is
// something to take already.
func (q *lineQueue) sleep() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 || q.closed {
		return false
	}
	q.sleeping = true
	return true
}

func (q *lineQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.wake()
	q.roomy.Broadcast()
	q.mu.Unlock()
}

// runQueue records queued lines until the queue is closed and drained,
// flushing the JSONL and the transcript after each batch.
func (r *recorder) runQueue(q *lineQueue, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(recordTick)
	defer tick.Stop()
	var batch []queued
	idle := 0
	for {
		var closed bool
		batch, closed = q.take(batch)
		for i := range batch {
			it := &batch[i]
			r.frame(it.dir, it.at, it.line, it.size, it.truncated, it.partial)
			it.line = nil
		}
		switch {
		case len(batch) > 0:
			r.flush()
			idle = 0
			continue // more may have come meanwhile
		case closed:
			return
		}
		if idle++; idle >= idleTicks && q.sleep() {
			<-q.kick
			idle = 0
			continue
		}
		select {
		case <-tick.C:
		case <-q.kick:
		}
	}
}
