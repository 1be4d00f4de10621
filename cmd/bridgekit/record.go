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
	t.rec.frame(t.dir, at, t.line, t.size, t.size > len(t.line), partial)
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
// backpressure is the pipes' own), and shows each chunk to the tap after
// it was forwarded. It returns the first read or write error (nil at EOF).
func pump(dst io.Writer, src io.Reader, t *tap) (err error) {
	buf := make([]byte, 64<<10)
	defer func() { t.close(time.Now()); t.rec.flush() }()
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			at := time.Now()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			t.write(buf[:n], at)
			t.rec.flush()
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
