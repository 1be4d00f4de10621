package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/validate"
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
	one      job     // frame's, reused
	failures []error // first sink errors, reported at the end
	problems int
	// queue, when set, takes the pumps' lines to a goroutine of their own
	// (runQueue); nil records them on the pump's goroutine.
	queue *lineQueue
	// judges judge each frame beyond its generated type's decode: its
	// notes (enum values and union variants this version does not know),
	// and with --protocol acp-v0.12.2 all of it, by that version's schema.
	judges *judgePool
}

// judgePool hands out validate.FrameJudges, one per goroutine finishing
// records. Its validator is made when first needed: a trace whose frames
// hold nothing unknown never loads the schemas.
type judgePool struct {
	protocol string // validate's --protocol ("" for the family's own)
	full     bool   // judge everything, not only the notes
	strict   bool   // notes are problems
	once     sync.Once
	v        *validate.Validator
	err      error
	pool     sync.Pool
}

func newJudgePool(protocol string, full, strict bool) *judgePool {
	p := &judgePool{protocol: protocol, full: full, strict: strict}
	p.pool.New = func() any {
		p.once.Do(func() { p.v, p.err = validate.New(validate.Options{Protocol: p.protocol}) })
		if p.v == nil {
			return nil
		}
		return p.v.NewFrameJudge()
	}
	return p
}

// judge adds what a judge finds in f to its problems, and returns its
// notes (added to its problems when strict).
func (p *judgePool) judge(f *frames.Frame) []frames.Problem {
	if p == nil || f.Value == nil && !p.full {
		return nil
	}
	if !p.full && !validate.HasUnknown(f.Value) {
		return nil // what Notes would find out first, without a judge
	}
	j, _ := p.pool.Get().(*validate.FrameJudge)
	if j == nil {
		return []frames.Problem{{Code: "bridgekit", Message: "cannot judge the frame: " + p.err.Error()}}
	}
	defer p.pool.Put(j)
	var notes []frames.Problem
	if p.full {
		var problems []frames.Problem
		problems, notes = j.Judge(*f)
		f.Problems = append(f.Problems, problems...)
	} else {
		notes = j.Notes(*f)
	}
	if p.strict {
		f.Problems = append(f.Problems, notes...)
		return nil
	}
	return notes
}

// maxKeptRecord is the largest encoding buffer a job keeps for the next
// record.
const maxKeptRecord = 4 << 10

// put records rec, a session's start or end.
func (r *recorder) put(rec *tracelog.Record) {
	if r.jsonl != nil {
		b, err := rec.Marshal(nil)
		r.write(b, err)
	}
	r.sink(rec)
}

// write writes one encoded record (or fails with err) to the JSONL.
func (r *recorder) write(b []byte, err error) {
	if err == nil {
		_, err = r.jsonl.Write(b)
	}
	if err != nil {
		r.fail(fmt.Errorf("--out: %w", err))
		r.jsonl = nil
	}
}

func (r *recorder) sink(rec *tracelog.Record) {
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
	j := &r.one
	r.classify(j, queued{dir, at, line, size, truncated, partial})
	j.finish(r.red, r.jsonl != nil)
	r.emit(j)
	j.rec, j.f, j.it = nil, frames.Frame{}, queued{}
}

// A job is one line on its way to the record: classified in the order of
// the stream (classify), then checked, masked and encoded, which needs
// nothing but the job (finish, so a batch's jobs may finish on several
// goroutines), then written in order (emit).
type job struct {
	rec  *tracelog.Record
	f    frames.Frame
	it   queued
	line []byte // the record's JSONL, when --out is set
	err  error  // why it could not be encoded
	// judges judge the frame beyond its type's decode (nil: nothing more).
	judges *judgePool
}

// dirStderr marks a queued line of the command's stderr: recorded as a
// stderr record, in the session's sequence with the frames, never
// classified.
const dirStderr frames.Direction = "stderr"

// classify starts j's record: the frame's place in the session, its
// method, id and pairing. The schema check is left to finish.
func (r *recorder) classify(j *job, it queued) {
	r.seq++
	if it.dir == dirStderr {
		j.it, j.f, j.judges, j.err = it, frames.Frame{}, nil, nil
		j.rec = &tracelog.Record{Type: tracelog.TypeStderr, Session: r.session, Seq: r.seq, Time: it.at.UTC(),
			Size: it.size, Truncated: it.truncated, Partial: it.partial}
		return
	}
	r.cls.DeferChecks = true // finish checks
	j.it = it
	j.f = r.cls.Classify(r.seq, it.dir, it.at, it.line, it.truncated)
	j.judges = r.judges
	j.rec = &tracelog.Record{Type: tracelog.TypeFrame, Session: r.session, Seq: r.seq, Time: it.at.UTC(), Dir: it.dir,
		Size: it.size, Truncated: it.truncated, Partial: it.partial}
	j.err = nil
}

// finish checks j's frame against its schema, masks secrets in the line
// and the problems, and encodes the record when encode is set.
func (j *job) finish(red *redact.Redactor, encode bool) {
	if j.rec.Type == tracelog.TypeStderr {
		line := j.it.line
		masked := red.Bytes(line)
		j.rec.Redacted = !bytes.Equal(masked, line)
		j.rec.SetLine(masked)
		if encode {
			j.line, j.err = j.rec.Marshal(j.line[:0])
		}
		return
	}
	j.f.Check()
	notes := j.judges.judge(&j.f)
	rec, line := j.rec, j.it.line
	rec.SetFrame(j.f)
	rec.Notes = notes
	masked := red.JSON(line)
	if j.it.truncated {
		masked = red.Bytes(line)
	}
	rec.Redacted = !bytes.Equal(masked, line)
	rec.SetLine(masked)
	for i := range rec.Problems {
		rec.Problems[i].Message = red.String(rec.Problems[i].Message)
	}
	for i := range rec.Notes {
		rec.Notes[i].Message = red.String(rec.Notes[i].Message)
	}
	if encode {
		j.line, j.err = rec.Marshal(j.line[:0])
	}
}

// emit hands j's record to the JSONL, the sinks and the transcript.
func (r *recorder) emit(j *job) {
	r.problems += len(j.rec.Problems)
	if r.jsonl != nil {
		r.write(j.line, j.err)
		if cap(j.line) > maxKeptRecord {
			j.line = nil
		}
	}
	r.sink(j.rec)
	if r.pretty != nil && j.rec.Type == tracelog.TypeFrame {
		r.pretty.frame(j.rec)
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

// alwaysWrites passes writes to w and reports them written even when w
// fails: the command's stderr is drained and recorded whatever becomes of
// ours.
type alwaysWrites struct{ w io.Writer }

func (a alwaysWrites) Write(p []byte) (int, error) {
	a.w.Write(p)
	return len(p), nil
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
	var (
		batch []queued
		jobs  []job
	)
	idle := 0
	for {
		var closed bool
		batch, closed = q.take(batch)
		jobs = r.record(batch, jobs)
		for i := range batch {
			batch[i].line = nil
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

// minPerWorker is the fewest lines of a batch worth a goroutine of their
// own to finish.
const minPerWorker = 16

// A batch is recorded in chunks of at most chunkLines lines and, beyond
// its first line, chunkBytes bytes of lines: what a chunk holds at once
// (records, masked copies, encodings) stays a few times that, whatever
// the queue's bound.
const (
	chunkLines = 1024
	chunkBytes = 1 << 20
)

// record records a batch of queued lines, chunk by chunk: classified in
// order, finished on up to GOMAXPROCS goroutines (the schema checks,
// masking and encoding are most of a record's cost, and a burst's lines
// are independent once classified), then written in order. jobs is reused
// from batch to batch and returned.
func (r *recorder) record(batch []queued, jobs []job) []job {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(batch) > 0 {
		n, size := 1, len(batch[0].line)
		for n < len(batch) && n < chunkLines && size+len(batch[n].line) <= chunkBytes {
			size += len(batch[n].line)
			n++
		}
		jobs = r.chunk(batch[:n], jobs)
		batch = batch[n:]
	}
	return jobs
}

func (r *recorder) chunk(batch []queued, jobs []job) []job {
	if cap(jobs) < len(batch) {
		jobs = append(jobs[:cap(jobs)], make([]job, len(batch)-cap(jobs))...)
	}
	jobs = jobs[:len(batch)]
	for i := range batch {
		r.classify(&jobs[i], batch[i])
	}
	encode := r.jsonl != nil
	workers := min(runtime.GOMAXPROCS(0), len(jobs)/minPerWorker)
	if workers <= 1 {
		for i := range jobs {
			jobs[i].finish(r.red, encode)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
					jobs[i].finish(r.red, encode)
				}
			})
		}
		wg.Wait()
	}
	for i := range jobs {
		r.emit(&jobs[i])
		jobs[i].rec, jobs[i].f, jobs[i].it = nil, frames.Frame{}, queued{}
	}
	return jobs
}
