// Package tracelog is bridgekit's trace format: JSON Lines, one record per
// line, as `bridgekit trace --out` writes it, the store keeps it and the
// inspector, validate and replay read it.
//
// A session is a "session" record, then one "frame" record per line seen
// on the traced command's stdin or stdout, in the order the proxy saw them
// (with a "stderr" record for each line it wrote on its stderr among
// them), then an "end" record. Several sessions may follow one another in a file.
// A reader accepts records it does not know (a newer type, members it does
// not know) and skips them; see [Reader].
package tracelog

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// Version is the format version written in session records.
const Version = 1

// Record types.
const (
	TypeSession = "session"
	TypeFrame   = "frame"
	TypeEnd     = "end"
	// TypeStderr is a line the traced command wrote on its stderr (Raw or
	// RawBase64, Size, Truncated, Redacted as for a frame), numbered in
	// the session's sequence with the frames.
	TypeStderr = "stderr"
)

// Record is one line of a trace. Which members are set depends on Type.
type Record struct {
	Type    string    `json:"type"`
	Session string    `json:"session"`
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`

	// session
	Version int      `json:"v,omitempty"`
	Command []string `json:"command,omitempty"`

	// frame
	Dir frames.Direction `json:"dir,omitempty"`
	// Size is the length of the line in bytes, without its newline, even
	// when Raw holds only its start (Truncated).
	Size int `json:"size,omitempty"`
	// Raw is the line without its newline, when it is valid UTF-8;
	// RawBase64 the line otherwise. Redacted says secrets were masked in
	// it (so it is not what went over the wire), Truncated that it holds
	// only the first bytes of the line, Partial that the stream ended
	// without a newline after it.
	Raw       *string          `json:"raw,omitempty"`
	RawBase64 string           `json:"raw_base64,omitempty"`
	Redacted  bool             `json:"redacted,omitempty"`
	Truncated bool             `json:"truncated,omitempty"`
	Partial   bool             `json:"partial,omitempty"`
	Family    frames.Family    `json:"family,omitempty"`
	Kind      frames.Kind      `json:"kind,omitempty"`
	Method    string           `json:"method,omitempty"`
	Qualifier string           `json:"qualifier,omitempty"`
	ID        json.RawMessage  `json:"id,omitempty"`
	ReplyTo   int64            `json:"reply_to,omitempty"`
	LatencyUS *float64         `json:"latency_us,omitempty"`
	Problems  []frames.Problem `json:"problems,omitempty"`
	// Notes are what a checker says of a frame that is not a problem: an
	// enum value or union variant this version does not know, which the
	// wire keeps (trace --strict reports them as problems instead).
	Notes []frames.Problem  `json:"notes,omitempty"`
	Extra map[string]string `json:"-"`

	// end
	Status     *int             `json:"status,omitempty"`
	Signal     string           `json:"signal,omitempty"`
	Unanswered []frames.Pending `json:"unanswered,omitempty"`
	// Unclean marks an end the recorder never wrote: the session store
	// found the session's writer gone (a trace killed with SIGKILL) and
	// ended it, at its last record, with the requests then unanswered.
	Unclean bool `json:"unclean,omitempty"`
}

// Line returns the frame's line as recorded (without its newline).
func (r *Record) Line() []byte {
	if r.Raw != nil {
		return []byte(*r.Raw)
	}
	b, _ := base64.StdEncoding.DecodeString(r.RawBase64)
	return b
}

// SetLine stores line in Raw or RawBase64.
func (r *Record) SetLine(line []byte) {
	if utf8.Valid(line) {
		s := string(line)
		r.Raw, r.RawBase64 = &s, ""
		return
	}
	r.Raw, r.RawBase64 = nil, base64.StdEncoding.EncodeToString(line)
}

// Latency returns the frame's latency (0 when it has none).
func (r *Record) Latency() time.Duration {
	if r.LatencyUS == nil {
		return 0
	}
	return time.Duration(*r.LatencyUS * float64(time.Microsecond))
}

// SetFrame copies what the classifier found into r.
func (r *Record) SetFrame(f frames.Frame) {
	r.Family, r.Kind, r.Method, r.Qualifier = f.Family, f.Kind, f.Method, f.Qualifier
	if f.ID != "" && json.Valid([]byte(f.ID)) {
		r.ID = json.RawMessage(f.ID)
	}
	r.ReplyTo = f.ReplyTo
	if f.ReplyTo != 0 {
		us := float64(f.Latency) / float64(time.Microsecond)
		r.LatencyUS = &us
	}
	r.Problems = f.Problems
}

// MaxRecord bounds one record line a Reader accepts.
const MaxRecord = 64 << 20

// ErrTooLong is returned for a record line over the reader's limit.
var ErrTooLong = errors.New("tracelog: record line too long")

// A SyntaxError reports a line that is not a record.
type SyntaxError struct {
	Line int
	Err  error
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("tracelog: line %d: %v", e.Line, e.Err) }
func (e *SyntaxError) Unwrap() error { return e.Err }

// Reader reads records. Blank lines are skipped, and so are records of a
// type it does not know; a line that is not a JSON object, or a known
// record with members of the wrong kind, is a *SyntaxError.
type Reader struct {
	r    *bufio.Reader
	max  int
	line int
	buf  []byte
}

// NewReader returns a reader of r accepting lines of up to max bytes (0:
// MaxRecord).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = MaxRecord
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Line returns the number of the last line read.
func (rd *Reader) Line() int { return rd.line }

// Next returns the next record, or io.EOF after the last.
func (rd *Reader) Next() (*Record, error) {
	for {
		line, err := rd.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, &SyntaxError{rd.line, err}
		}
		switch rec.Type {
		case TypeSession, TypeFrame, TypeEnd, TypeStderr:
		default:
			continue
		}
		if rec.Session == "" {
			return nil, &SyntaxError{rd.line, errors.New("record without a session")}
		}
		if (rec.Type == TypeFrame || rec.Type == TypeStderr) && rec.Raw == nil && rec.RawBase64 == "" {
			return nil, &SyntaxError{rd.line, errors.New("frame record without raw or raw_base64")}
		}
		if rec.RawBase64 != "" {
			if _, err := base64.StdEncoding.DecodeString(rec.RawBase64); err != nil {
				return nil, &SyntaxError{rd.line, fmt.Errorf("raw_base64: %w", err)}
			}
		}
		return &rec, nil
	}
}

func (rd *Reader) readLine() ([]byte, error) {
	rd.buf = rd.buf[:0]
	for {
		chunk, err := rd.r.ReadSlice('\n')
		if len(rd.buf)+len(chunk) > rd.max {
			rd.line++
			// Skip the rest of the line so the caller may go on.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = rd.r.ReadSlice('\n')
			}
			return nil, &SyntaxError{rd.line, ErrTooLong}
		}
		rd.buf = append(rd.buf, chunk...)
		switch {
		case err == nil:
			rd.line++
			return rd.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(rd.buf) > 0:
			rd.line++
			return rd.buf, nil
		default:
			return nil, err
		}
	}
}

// ReadAll reads every record of r.
func ReadAll(r io.Reader) ([]*Record, error) {
	rd := NewReader(r, 0)
	var out []*Record
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
