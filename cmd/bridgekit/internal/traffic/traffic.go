// Package traffic reads recorded traffic in every form the bridgekit
// command meets it, so that its subcommands (inspect, validate, replay)
// read the same inputs and refuse the same others:
//
//   - a trace: the JSONL records `bridgekit trace --out` writes (package
//     tracelog);
//   - a session store: the SQLite database of `bridgekit trace --store`;
//   - a recording: lines of {"seq", "dir": "send"|"recv", "line"} (and
//     "ms", "cut"), as the recorder of the real-agent tests writes them
//     (testdata/acp/traffic);
//   - the protocol's own NDJSON: one frame a line, both directions mixed
//     (a tee log) or one (a peer's stdout), directions told from the
//     catalogue (frames.Classifier.ClassifyUndirected).
//
// Anything else (not text, not JSON, JSON that is no frame) is refused,
// with the reason, rather than read as a session of malformed frames.
//
// The text forms are turned into trace records by a Converter, which
// classifies and checks every frame again, as trace does when it records
// them: what a trace says of its frames (their kind, pairing, problems) is
// recomputed from the lines, so a trace edited by hand is judged afresh.
package traffic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/validate"
)

// Format is the form of a file of recorded traffic.
type Format int

const (
	Trace Format = iota + 1
	Store
	Recording
	NDJSON
)

func (f Format) String() string {
	switch f {
	case Trace:
		return "trace (JSONL records)"
	case Store:
		return "session store"
	case Recording:
		return "recording"
	case NDJSON:
		return "NDJSON frames"
	}
	return "unknown"
}

// SQLiteHeader starts every SQLite database.
const SQLiteHeader = "SQLite format 3\x00"

// ErrFormat is the error (wrapped) of a file that is not recorded traffic.
var ErrFormat = errors.New("not recorded traffic")

// sniffLines is how many lines Sniff reads to judge a text file.
const sniffLines = 8

// Sniff tells the form of the traffic in path from its first bytes and
// lines: an SQLite header is a store; otherwise the first non-blank line
// must be a JSON object that is a trace record, a recording line or a
// frame (a line after it that is none is a problem of the stream, which
// the subcommands report where it is). A first line that starts as an
// object but is no JSON (a frame cut short) leaves the next lines to
// decide; if none does, the file is NDJSON. An empty file is a trace (one
// being written). The error says why a file is not traffic, naming it.
func Sniff(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.IsDir() {
		return 0, fmt.Errorf("%s: is a directory, not a file of recorded traffic", path)
	}
	return SniffReader(path, f)
}

// SniffReader is Sniff for a reader; name names it in errors.
func SniffReader(name string, r io.Reader) (Format, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(SQLiteHeader))
	if string(head) == SQLiteHeader {
		return Store, nil
	}
	tentative := false // the lines so far start as objects but are no JSON
	for n := 0; n < sniffLines; {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: judge its start, and read it as a frame cut
			// short (a frame longer than the buffer is no reason to
			// refuse a file).
			// (line is only valid until the next read.)
			n++
			if t := bytes.TrimLeft(line, " \t\r"); len(t) == 0 || t[0] != '{' {
				return 0, notTraffic(name, fmt.Sprintf("line %d is not a JSON object", n))
			}
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			tentative = true
			if err != nil {
				break
			}
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			n++
			f, why := lineFormat(line)
			switch {
			case f == 0:
				return 0, notTraffic(name, fmt.Sprintf("line %d %s", n, why))
			case why == "":
				return f, nil
			}
			tentative = true
		}
		if err != nil {
			break
		}
	}
	if tentative {
		return NDJSON, nil
	}
	return Trace, nil // empty: a trace being written
}

func notTraffic(name, why string) error {
	return fmt.Errorf("%s: %w: %s (want a trace, a recording, the protocol's NDJSON or a session store)", name, ErrFormat, why)
}

// lineFormat says what one line is, or why it is no traffic.
func lineFormat(line []byte) (Format, string) {
	if line[0] != '{' {
		if !isText(line) {
			return 0, "is not text"
		}
		return 0, "is not a JSON object"
	}
	var head struct {
		Type    *string          `json:"type"`
		Session *string          `json:"session"`
		Seq     *json.Number     `json:"seq"`
		Dir     *string          `json:"dir"`
		Line    *string          `json:"line"`
		JSONRPC *json.RawMessage `json:"jsonrpc"`
		Proto   *json.RawMessage `json:"protocol"`
		Method  *json.RawMessage `json:"method"`
		ID      *json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		if !json.Valid(line) {
			// Likely a frame cut short: a problem of the stream, not of
			// its form, unless no later line says what the file is.
			return NDJSON, "starts as a JSON object but is no JSON"
		}
		return 0, "is a JSON object, but no trace record, recording line or protocol frame"
	}
	switch {
	case head.Type != nil && head.Session != nil:
		return Trace, ""
	case head.Seq != nil && head.Dir != nil && head.Line != nil:
		return Recording, ""
	case head.JSONRPC != nil || head.Proto != nil || head.Method != nil || head.ID != nil:
		return NDJSON, ""
	}
	return 0, "is a JSON object, but no trace record, recording line or protocol frame"
}

func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// A Converter turns the lines of a text form of traffic into trace
// records, one file at a time, classifying and checking every frame (one
// classifier per session, as trace has). Frames of a trace keep their
// times, directions and lines; what a trace says of them is recomputed.
// A recording or an NDJSON stream becomes one session named after the
// file.
type Converter struct {
	format  Format
	family  frames.Family
	name    string // the session of a recording or NDJSON stream
	started bool
	t0      time.Time
	seq     int64
	classes map[string]*frames.Classifier
	lineNo  int
	// judge finds the notes of a frame that holds an enum value or union
	// variant this version does not know (made when first needed).
	judge    *validate.FrameJudge
	judgeErr error
}

// NewConverter returns a converter of format (not Store) for the file
// path; family forces the protocol family ("" tells it from the traffic).
func NewConverter(format Format, path string, family frames.Family) *Converter {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return &Converter{format: format, family: family, name: name, classes: map[string]*frames.Classifier{}, t0: fileTime(path)}
}

func fileTime(path string) time.Time {
	if fi, err := os.Stat(path); err == nil {
		return fi.ModTime().UTC()
	}
	return time.Time{}
}

// Line converts one line (a complete one, without its newline) into the
// records it makes. A line that is no record of the form is an error
// naming its number; the caller may go on with the next.
func (c *Converter) Line(line []byte) ([]*tracelog.Record, error) {
	c.lineNo++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	switch c.format {
	case Trace:
		return c.traceLine(line)
	case Recording:
		return c.recordingLine(line)
	case NDJSON:
		return c.frame(frames.Direction(""), time.Time{}, line, false), nil
	}
	return nil, fmt.Errorf("traffic: no converter for a %s", c.format)
}

func (c *Converter) classifier(session string, family frames.Family) *frames.Classifier {
	cls := c.classes[session]
	if cls == nil {
		if c.family != "" {
			family = c.family
		}
		cls = frames.New(family)
		c.classes[session] = cls
	}
	return cls
}

func (c *Converter) traceLine(line []byte) ([]*tracelog.Record, error) {
	rd := tracelog.NewReader(bytes.NewReader(append(line, '\n')), 0)
	rec, err := rd.Next()
	if errors.Is(err, io.EOF) {
		return nil, nil // a record of a type this version does not know
	}
	if err != nil {
		var se *tracelog.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("line %d: %w", c.lineNo, se.Err)
		}
		return nil, fmt.Errorf("line %d: %w", c.lineNo, err)
	}
	switch rec.Type {
	case tracelog.TypeSession:
		delete(c.classes, rec.Session) // a session starts afresh
	case tracelog.TypeFrame:
		if rec.Dir != frames.In && rec.Dir != frames.Out {
			return nil, fmt.Errorf("line %d: frame record with direction %q", c.lineNo, rec.Dir)
		}
		cls := c.classifier(rec.Session, rec.Family)
		f := cls.Classify(rec.Seq, rec.Dir, rec.Time, rec.Line(), rec.Truncated)
		rec.ID, rec.LatencyUS = nil, nil
		rec.SetFrame(f)
		rec.Notes = c.notes(f)
	case tracelog.TypeEnd:
		// What the end says of the session is judged afresh too.
		rec.Unanswered = nil
		if cls := c.classes[rec.Session]; cls != nil {
			rec.Unanswered = cls.Unanswered()
		}
		rec.Problems = unansweredProblems(rec.Unanswered)
	}
	return []*tracelog.Record{rec}, nil
}

// recording is a line of a recording.
type recording struct {
	Seq  *int64  `json:"seq"`
	MS   float64 `json:"ms"`
	Dir  string  `json:"dir"`
	Line *string `json:"line"`
	Cut  bool    `json:"cut"`
}

func (c *Converter) recordingLine(line []byte) ([]*tracelog.Record, error) {
	var r recording
	if err := json.Unmarshal(line, &r); err != nil || r.Seq == nil || r.Line == nil || r.Dir != "send" && r.Dir != "recv" {
		return nil, fmt.Errorf("line %d: not a recording line ({seq, dir: send|recv, line})", c.lineNo)
	}
	dir := frames.In // send: what the client sent the recorded agent, on its stdin
	if r.Dir == "recv" {
		dir = frames.Out
	}
	at := c.t0.Add(time.Duration(r.MS * float64(time.Millisecond)))
	return c.frame(dir, at, []byte(*r.Line), r.Cut), nil
}

// frame makes a frame record of a recording or NDJSON line (dir "" for
// one without a direction), after the session's record on the first.
func (c *Converter) frame(dir frames.Direction, at time.Time, line []byte, cut bool) []*tracelog.Record {
	var out []*tracelog.Record
	if !c.started {
		c.started = true
		out = append(out, &tracelog.Record{Type: tracelog.TypeSession, Session: c.name, Time: c.t0, Version: tracelog.Version,
			Command: []string{"(" + c.format.String() + ")"}})
	}
	if at.IsZero() {
		at = c.t0
	}
	c.seq++
	cls := c.classifier(c.name, "")
	var f frames.Frame
	if dir == "" {
		f = cls.ClassifyUndirected(c.seq, at, line)
	} else {
		f = cls.Classify(c.seq, dir, at, line, cut)
	}
	rec := &tracelog.Record{Type: tracelog.TypeFrame, Session: c.name, Seq: c.seq, Time: at.UTC(), Dir: f.Dir, Size: len(line), Truncated: cut}
	rec.SetLine(line)
	rec.SetFrame(f)
	rec.Notes = c.notes(f)
	return append(out, rec)
}

// notes returns the notes of f, as trace records them: the enum values and
// union variants this version does not know.
func (c *Converter) notes(f frames.Frame) []frames.Problem {
	if f.Value == nil || !validate.HasUnknown(f.Value) {
		return nil
	}
	if c.judge == nil && c.judgeErr == nil {
		v, err := validate.New(validate.Options{})
		if err != nil {
			c.judgeErr = err
		} else {
			c.judge = v.NewFrameJudge()
		}
	}
	if c.judge == nil {
		return []frames.Problem{{Code: "bridgekit", Message: "cannot judge the frame: " + c.judgeErr.Error()}}
	}
	return c.judge.Notes(f)
}

// End returns the records that end the sessions of a recording or NDJSON
// stream (a trace has its own): the requests never answered.
func (c *Converter) End() []*tracelog.Record {
	if c.format == Trace || !c.started {
		return nil
	}
	end := &tracelog.Record{Type: tracelog.TypeEnd, Session: c.name, Seq: c.seq + 1, Time: c.t0}
	if cls := c.classes[c.name]; cls != nil {
		end.Unanswered = cls.Unanswered()
	}
	end.Problems = unansweredProblems(end.Unanswered)
	return []*tracelog.Record{end}
}

// unansweredProblems are the problems of an end record, as trace writes
// them: one per request never answered.
func unansweredProblems(ps []frames.Pending) []frames.Problem {
	var out []frames.Problem
	for _, p := range ps {
		out = append(out, frames.Problem{Code: frames.ProblemUnanswered,
			Message: fmt.Sprintf("%s request %s (frame %d) was never answered", p.Method, p.ID, p.Seq)})
	}
	return out
}

// ErrLineTooLong is the error of a line longer than tracelog.MaxRecord.
var ErrLineTooLong = fmt.Errorf("line longer than %d bytes", tracelog.MaxRecord)

// Read reads the file at path, of format (not Store), through a
// Converter, and hands each record to fn with the number of the line it
// came from (0 for the ends it adds), the sessions' ends last. It
// stops at the first line that is no record of the format (the error
// names the file and the line), at fn's first error, and when ctx is done.
func Read(ctx context.Context, path string, format Format, family frames.Family, fn func(line int, rec *tracelog.Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readFrom(ctx, path, f, NewConverter(format, path, family), fn)
}

// ReadFrom is Read for a reader: name names the traffic (the session of a
// recording or NDJSON stream, and in errors), and t0 is when a recording
// started.
func ReadFrom(ctx context.Context, name string, r io.Reader, format Format, family frames.Family, t0 time.Time, fn func(line int, rec *tracelog.Record) error) error {
	c := &Converter{format: format, family: family, name: name, classes: map[string]*frames.Classifier{}, t0: t0.UTC()}
	return readFrom(ctx, name, r, c, fn)
}

func readFrom(ctx context.Context, path string, f io.Reader, c *Converter, fn func(line int, rec *tracelog.Record) error) error {
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
				if len(long) > tracelog.MaxRecord {
					return fmt.Errorf("%s: line %d: %w", path, c.lineNo+1, ErrLineTooLong)
				}
			}
			line = long
		}
		if len(line) > 0 {
			recs, cerr := c.Line(bytes.TrimSuffix(line, []byte{'\n'}))
			if cerr != nil {
				return fmt.Errorf("%s: %w", path, cerr)
			}
			for _, r := range recs {
				if err := fn(c.lineNo, r); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	for _, r := range c.End() {
		if err := fn(0, r); err != nil {
			return err
		}
	}
	return nil
}
