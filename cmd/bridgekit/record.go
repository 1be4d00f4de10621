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
	buf      []byte        // the record being written to jsonl
	pretty   *prettyPrinter
	failures []error // first sink errors, reported at the end
	problems int
	// lostNote is the loss the next frame record reports; lost totals
	// every loss of the session, which the end record reports.
	lostNote *loss
	lost     loss
	// queue, when set, takes the pumps' lines to a goroutine of their own
	// (runQueue); nil records them on the pump's goroutine.
	queue *lineQueue
}

func (r *recorder) put(rec *tracelog.Record) {
	if r.jsonl != nil {
		b, err := rec.Marshal(r.buf[:0])
		if err == nil {
			_, err = r.jsonl.Write(b)
		}
		if r.buf = b; cap(b) > 64<<10 {
			r.buf = nil // do not keep a large line's buffer
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
	if l := r.lostNote; l != nil {
		r.lostNote = nil
		rec.Problems = append(rec.Problems, frames.Problem{Code: ProblemNotRecorded,
			Message: fmt.Sprintf("%s before this one were forwarded but not recorded: recording fell behind", l)})
	}
	r.problems += len(rec.Problems)
	r.put(rec)
	if r.pretty != nil {
		r.pretty.frame(rec)
	}
}

// lose takes note of lines the queue had no room for: the next frame
// record and the end record report them.
func (r *recorder) lose(l *loss) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lostNote == nil {
		r.lostNote = &loss{}
	}
	for _, t := range []*loss{r.lostNote, &r.lost} {
		t.in, t.out, t.bytes = t.in+l.in, t.out+l.out, t.bytes+l.bytes
	}
}

// ProblemNotRecorded reports lines trace forwarded but could not record
// because recording fell too far behind.
const ProblemNotRecorded = "not_recorded"

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
	if r.lost.in+r.lost.out > 0 {
		rec.Problems = append(rec.Problems, frames.Problem{Code: ProblemNotRecorded,
			Message: fmt.Sprintf("%s were forwarded but not recorded: recording fell behind", &r.lost)})
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
		q.push(queued{dir: t.dir, at: at, line: t.line, size: t.size, truncated: t.size > len(t.line), partial: partial})
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

// A queued line, copied out of the pump's buffer, or (lost set) the
// count of lines the queue had no room for since the previous item.
type queued struct {
	dir                frames.Direction
	at                 time.Time
	line               []byte
	size               int
	truncated, partial bool
	lost               *loss
}

// loss counts lines forwarded but not recorded, by direction.
type loss struct {
	in, out int   // lines
	bytes   int64 // their whole sizes
}

func (l *loss) add(dir frames.Direction, size int) {
	if dir == frames.In {
		l.in++
	} else {
		l.out++
	}
	l.bytes += int64(size)
}

func (l *loss) String() string {
	return fmt.Sprintf("%d lines (%d in, %d out; %d bytes)", l.in+l.out, l.in, l.out, l.bytes)
}

// lineQueue hands lines from the pumps to the recording goroutine, so that
// forwarding never waits for decoding, masking or the disk. It is bounded
// in bytes and in lines, and push never blocks: a line that finds the
// queue full is forwarded but not recorded, and the loss goes into the
// queue, in its place, before the next line that fits (or at close), so
// the recorder reports it where it happened.
type lineQueue struct {
	mu sync.Mutex
	// wake tells the recorder to look now rather than at its next tick:
	// the queue is filling or closed. Lines trickling in are taken at the
	// tick, so a pump does not wake another goroutine (a futex call) for
	// every line it forwards.
	wake     chan struct{}
	items    []queued
	bytes    int
	closed   bool
	maxBytes int
	maxItems int
	lost     *loss // lines dropped since the last item queued
}

func newLineQueue(maxBytes, maxItems int) *lineQueue {
	return &lineQueue{maxBytes: maxBytes, maxItems: maxItems, wake: make(chan struct{}, 1)}
}

// room reports whether items more items holding n bytes fit. Anything
// fits into an empty queue (a line larger than the byte bound, say).
func (q *lineQueue) room(n, items int) bool {
	return len(q.items) == 0 || q.bytes+n <= q.maxBytes && len(q.items)+items <= q.maxItems
}

// push queues a line taken from the pump's buffer (copied only when it is
// queued), or counts it lost when the queue is full.
func (q *lineQueue) push(it queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return // the session has ended: nothing records any more
	}
	// Room for the line and, before it, the report of what was lost.
	if !q.room(len(it.line), 1+btoi(q.lost != nil)) {
		if q.lost == nil {
			q.lost = &loss{}
		}
		q.lost.add(it.dir, it.size)
		return
	}
	if q.lost != nil {
		q.items = append(q.items, queued{lost: q.lost})
		q.lost = nil
	}
	it.line = bytes.Clone(it.line)
	q.items = append(q.items, it)
	q.bytes += len(it.line)
	if len(q.items) >= q.maxItems/8 || q.bytes >= q.maxBytes/8 {
		q.poke()
	}
}

func (q *lineQueue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// How often the recorder looks at the queue: every recordTick while lines
// come, backing off to recordIdleTick when none do.
const (
	recordTick     = time.Millisecond
	recordIdleTick = 50 * time.Millisecond
)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// popAll waits for lines and takes every queued one; ok is false once the
// queue is closed and drained.
func (q *lineQueue) popAll(dst []queued) ([]queued, bool) {
	var timer *time.Timer
	for tick := recordTick; ; tick = min(2*tick, recordIdleTick) {
		q.mu.Lock()
		if len(q.items) > 0 {
			dst = append(dst[:0], q.items...)
			clear(q.items)
			q.items = q.items[:0]
			q.bytes = 0
			q.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return dst, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return dst, false
		}
		if timer == nil {
			timer = time.NewTimer(tick)
		} else {
			timer.Reset(tick)
		}
		select {
		case <-q.wake:
		case <-timer.C:
		}
	}
}

// close ends the queue; what was lost since the last item is queued last.
func (q *lineQueue) close() {
	q.mu.Lock()
	if !q.closed && q.lost != nil {
		q.items = append(q.items, queued{lost: q.lost})
		q.lost = nil
	}
	q.closed = true
	q.mu.Unlock()
	q.poke()
}

// runQueue records queued lines until the queue is closed and drained,
// flushing the JSONL and the transcript whenever it has caught up.
func (r *recorder) runQueue(q *lineQueue, done chan<- struct{}) {
	defer close(done)
	var batch []queued
	for {
		var ok bool
		batch, ok = q.popAll(batch)
		if !ok {
			return
		}
		for i := range batch {
			it := &batch[i]
			if it.lost != nil {
				r.lose(it.lost)
			} else {
				r.frame(it.dir, it.at, it.line, it.size, it.truncated, it.partial)
			}
			it.line, it.lost = nil, nil
		}
		r.flush()
	}
}
