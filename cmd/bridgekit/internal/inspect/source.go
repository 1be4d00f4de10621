// Package inspect serves the inspector: a web page (embedded, no external
// fetch) that shows trace sessions as they are recorded. It reads them from
// a Source: a session store (package store), a JSONL trace file it follows
// as it grows, or the live session of `bridgekit trace --ui`.
package inspect

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// Source is what the inspector reads.
type Source interface {
	// Sessions lists the sessions, newest first.
	Sessions(ctx context.Context) ([]store.Session, error)
	// Records returns up to limit records of a session with seq > after,
	// in order.
	Records(ctx context.Context, session string, after int64, limit int) ([]*tracelog.Record, error)
}

// Memory is a Source held in memory, bounded in bytes: past its limit the
// oldest frames of the oldest sessions are dropped (their session and end
// records stay). It is safe for concurrent use, and is the sink of `trace
// --ui`.
type Memory struct {
	mu       sync.Mutex
	limit    int
	bytes    int
	sessions map[string]*memSession
	order    []string
	// Dropped counts the frame records dropped to stay within the limit.
	Dropped int
}

type memSession struct {
	sum  store.Session
	recs []*tracelog.Record
}

// NewMemory returns an empty Memory holding at most limit bytes of
// records (their raw lines, roughly).
func NewMemory(limit int) *Memory {
	return &Memory{limit: limit, sessions: map[string]*memSession{}}
}

func recordSize(r *tracelog.Record) int {
	n := 256 + len(r.RawBase64)
	if r.Raw != nil {
		n += len(*r.Raw)
	}
	for _, p := range r.Problems {
		n += len(p.Message) + len(p.Pointer)
	}
	return n
}

// Put adds a record (a copy is kept).
func (m *Memory) Put(r *tracelog.Record) error {
	c := *r
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[c.Session]
	if s == nil {
		s = &memSession{sum: store.Session{ID: c.Session, Started: c.Time}}
		m.sessions[c.Session] = s
		m.order = append(m.order, c.Session)
	}
	switch c.Type {
	case tracelog.TypeSession:
		s.sum.Started, s.sum.Command = c.Time, c.Command
	case tracelog.TypeFrame:
		s.sum.Frames++
		s.sum.Problems += len(c.Problems)
		if c.Family != "" {
			s.sum.Family = string(c.Family)
		}
	case tracelog.TypeEnd:
		t := c.Time
		s.sum.Ended, s.sum.Status, s.sum.Signal = &t, c.Status, c.Signal
		s.sum.Problems += len(c.Problems)
		if c.Family != "" {
			s.sum.Family = string(c.Family)
		}
	}
	s.recs = append(s.recs, &c)
	m.bytes += recordSize(&c)
	m.trim()
	return nil
}

// trim drops the oldest frames once m holds more than its limit, down to
// an eighth below it: dropping copies the rest of a session's records, which
// is then done once per eighth of the limit, not once per record put.
func (m *Memory) trim() {
	if m.bytes <= m.limit {
		return
	}
	target := m.limit - m.limit/8
	for _, id := range m.order {
		if m.bytes <= target {
			return
		}
		s := m.sessions[id]
		kept := s.recs[:0]
		for _, r := range s.recs {
			if m.bytes > target && r.Type == tracelog.TypeFrame {
				m.bytes -= recordSize(r)
				m.Dropped++
				continue
			}
			kept = append(kept, r)
		}
		clear(s.recs[len(kept):])
		s.recs = kept
	}
}

// Has reports whether m holds a session.
func (m *Memory) Has(session string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[session] != nil
}

// Sessions implements Source.
func (m *Memory) Sessions(context.Context) ([]store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.Session, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.sessions[id].sum)
	}
	slices.SortStableFunc(out, func(a, b store.Session) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// Records implements Source.
func (m *Memory) Records(_ context.Context, session string, after int64, limit int) ([]*tracelog.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[session]
	if s == nil {
		return nil, nil
	}
	i, _ := slices.BinarySearchFunc(s.recs, after+1, func(r *tracelog.Record, seq int64) int { return int(r.Seq - seq) })
	recs := s.recs[i:]
	if limit > 0 && len(recs) > limit {
		recs = recs[:limit]
	}
	return slices.Clone(recs), nil
}

// Convert turns one line of a file into records (traffic.Converter.Line).
type Convert func(line []byte) ([]*tracelog.Record, error)

// Follow reads the file at path into m, each complete line turned into
// records by convert, then keeps reading what is appended to it every
// interval until ctx is done (with follow false it returns at the end of
// the file). It returns the first error reading the file (a line convert
// refuses is skipped and handed to bad). The file is read a chunk at a
// time, its complete lines handed over as they come, so that what Follow
// holds besides m is one line at most, and ctx ends it between chunks
// however large the file.
func Follow(ctx context.Context, path string, m *Memory, interval time.Duration, follow bool, convert Convert, bad func(error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var pending []byte
	// skipping says pending's line grew past tracelog.MaxRecord: the rest
	// of it, up to its newline, is dropped.
	skipping := false
	buf := make([]byte, 256<<10)
	for {
		n, err := f.Read(buf)
		chunk := buf[:n]
		if skipping {
			i := bytes.IndexByte(chunk, '\n')
			if i >= 0 {
				chunk, skipping = chunk[i+1:], false
			} else {
				chunk = nil
			}
		}
		pending = append(pending, chunk...)
		// Hand over the complete lines; keep a line being written.
		if end := lastNewline(pending); end >= 0 {
			put(m, pending[:end+1], convert, bad)
			pending = append(pending[:0], pending[end+1:]...)
		}
		if len(pending) > tracelog.MaxRecord {
			if bad != nil {
				bad(tracelog.ErrTooLong)
			}
			pending, skipping = nil, true
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if n > 0 {
			continue
		}
		if !follow {
			if len(pending) > 0 {
				put(m, append(pending, '\n'), convert, bad)
			}
			return nil
		}
		if cap(pending) > 1<<20 {
			pending = append([]byte(nil), pending...)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// put hands the records of lines, complete lines, to m.
func put(m *Memory, lines []byte, convert Convert, bad func(error)) {
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		line := lines[:i]
		lines = lines[i+1:]
		recs, err := convert(line)
		if err != nil {
			if bad != nil {
				bad(err)
			}
			continue
		}
		for _, r := range recs {
			m.Put(r)
		}
	}
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}
