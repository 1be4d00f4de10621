// Package recorder is a recording proxy for line-delimited JSON-RPC over a
// child's stdin and stdout: it forwards every byte unchanged, in order,
// and records each line with its time and direction.
//
// Wrap the writer to the child's stdin with Writer and the reader of its
// stdout with Reader; each complete line that passes through becomes a
// Frame. A line longer than MaxLine is forwarded whole but recorded cut,
// with Cut set, so that a flood cannot exhaust memory. Frames are written
// as JSON lines (Write, WriteFile) and read back with Read:
//
//	{"seq":1,"ms":12,"dir":"send","method":"initialize","id":0,"line":"{\"jsonrpc\":\"2.0\",...}"}
//
// where dir is "send" (to the child) or "recv" (from it), ms the
// milliseconds since the recorder was made, method and id are copied from
// the line for the reader's benefit (id as it appears on the wire), and
// line is the line exactly as it passed, without its newline.
package recorder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Directions.
const (
	Send = "send" // to the child (its stdin)
	Recv = "recv" // from the child (its stdout)
)

// MaxLine bounds the bytes of one line a recorder keeps.
const MaxLine = 16 << 20

// Frame is one recorded line.
type Frame struct {
	Seq    int            `json:"seq"`
	MS     int64          `json:"ms"`
	Dir    string         `json:"dir"`
	Method string         `json:"method,omitempty"`
	ID     jsontext.Value `json:"id,omitempty"`
	Line   string         `json:"line"`
	Cut    bool           `json:"cut,omitzero"`
}

// Recorder records the lines of both directions.
type Recorder struct {
	start  time.Time
	mu     sync.Mutex
	frames []Frame
}

// New returns a recorder whose clock starts now.
func New() *Recorder { return &Recorder{start: time.Now()} }

// Frames returns a copy of the frames recorded so far, in order.
func (r *Recorder) Frames() []Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Frame(nil), r.frames...)
}

func (r *Recorder) add(dir string, line []byte, cut bool) {
	f := Frame{Dir: dir, Line: string(line), Cut: cut}
	var head struct {
		Method string         `json:"method"`
		ID     jsontext.Value `json:"id"`
	}
	if !cut && json.Unmarshal(line, &head, json.RejectUnknownMembers(false)) == nil {
		f.Method, f.ID = head.Method, head.ID
	}
	r.mu.Lock()
	f.Seq = len(r.frames) + 1
	f.MS = time.Since(r.start).Milliseconds()
	r.frames = append(r.frames, f)
	r.mu.Unlock()
}

// splitter collects one direction's bytes into lines.
type splitter struct {
	r    *Recorder
	dir  string
	mu   sync.Mutex
	buf  []byte
	over bool // the current line passed MaxLine
}

func (s *splitter) feed(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if room := MaxLine - len(s.buf); room < len(part) {
			s.buf = append(s.buf, part[:max(room, 0)]...)
			s.over = true
		} else {
			s.buf = append(s.buf, part...)
		}
		if i < 0 {
			return
		}
		s.r.add(s.dir, bytes.TrimSuffix(s.buf, []byte("\r")), s.over)
		s.buf, s.over = s.buf[:0], false
		b = b[i+1:]
	}
}

// flush records a last line that had no newline.
func (s *splitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 || s.over {
		s.r.add(s.dir, s.buf, s.over)
		s.buf, s.over = nil, false
	}
}

type writer struct {
	w io.Writer
	s *splitter
}

// Writer returns a writer that forwards to w and records what it forwards
// as direction dir (Send for a child's stdin). A line is recorded once
// written whole; what w did not accept is not recorded. Close flushes a
// last partial line and closes w when it is an io.Closer.
func (r *Recorder) Writer(dir string, w io.Writer) io.WriteCloser {
	return &writer{w: w, s: &splitter{r: r, dir: dir}}
}

func (w *writer) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.s.feed(b[:n])
	return n, err
}

func (w *writer) Close() error {
	w.s.flush()
	if c, ok := w.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type reader struct {
	r io.Reader
	s *splitter
}

// Reader returns a reader that reads from rd and records what it reads as
// direction dir (Recv for a child's stdout). A last line without a newline
// is recorded at end of input.
func (r *Recorder) Reader(dir string, rd io.Reader) io.Reader {
	return &reader{r: rd, s: &splitter{r: r, dir: dir}}
}

func (r *reader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.s.feed(b[:n])
	if err != nil {
		r.s.flush()
	}
	return n, err
}

// Write writes frames as JSON lines.
func Write(w io.Writer, frames []Frame) error {
	bw := bufio.NewWriter(w)
	for _, f := range frames {
		data, err := json.Marshal(f)
		if err != nil {
			return err
		}
		bw.Write(data)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WriteFile writes frames to the file at path, replacing it.
func WriteFile(path string, frames []Frame) error {
	var b bytes.Buffer
	if err := Write(&b, frames); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Read reads frames written by Write. It fails on a line that is not a
// frame, naming its line number.
func Read(rd io.Reader) ([]Frame, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(nil, 4*MaxLine)
	var out []Frame
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return nil, fmt.Errorf("recorder: line %d: %w", n, err)
		}
		if f.Dir != Send && f.Dir != Recv {
			return nil, fmt.Errorf("recorder: line %d: direction %q", n, f.Dir)
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("recorder: line %d: %w", n+1, err)
	}
	if len(out) == 0 {
		return nil, errors.New("recorder: no frames")
	}
	return out, nil
}

// ReadFile reads the frames of the file at path.
func ReadFile(path string) ([]Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
