// Package eventlog keeps the frames a server sent to its remote clients, numbered, so that a client that
// reconnects gets every frame after the last one it acknowledged: once, in order, or, when some are gone,
// a typed error rather than a silent gap.
//
// A Log holds streams under keys (a remote server uses session ids). Event ids increase within a key; a
// server numbers all the streams of one connection from one counter, so that a single id tells a client
// where it is. Memory is the default Log; a durable one (package eventlog/boltlog) survives a restart.
package eventlog

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Event is one frame sent to a client.
type Event struct {
	ID    uint64 // above 0, increasing within a key
	Frame []byte // one JSON-RPC message, as sent
}

// Stat describes the events of a key.
type Stat struct {
	Last    uint64 // the highest id appended (0: none)
	Dropped uint64 // the highest id dropped to stay within the bounds (0: none)
	Events  int    // events retained
	Bytes   int64  // their frames' bytes
}

// Log keeps events by key. Its methods are safe for concurrent use.
type Log interface {
	// Append adds e to key's events. e.ID must be above every id appended to key before (else Append
	// fails with ErrOrder); e.Frame is copied. To stay within its bounds the log may drop key's oldest
	// events, and remembers the highest id dropped.
	Append(key string, e Event) error
	// Replay calls fn with every retained event of key whose id is above after, in order, and stops at
	// fn's first error, which it returns. The event's frame is valid only during the call. If an event
	// above after was dropped, Replay calls fn with none and returns an *ExpiredError. A key never
	// appended to has no events: Replay returns nil.
	Replay(key string, after uint64, fn func(Event) error) error
	// Stat describes key's events; ok is false for a key never appended to (or deleted).
	Stat(key string) (s Stat, ok bool, err error)
	// Keys lists the keys that have events, in no particular order.
	Keys() ([]string, error)
	// Delete forgets key and its events.
	Delete(key string) error
	// Close releases the log; later calls fail with ErrClosed.
	Close() error
}

// Errors of a Log.
var (
	ErrExpired = errors.New("eventlog: events after the acknowledged id are no longer retained")
	ErrOrder   = errors.New("eventlog: event id not above the last one")
	ErrClosed  = errors.New("eventlog: closed")
)

// ExpiredError reports a replay that cannot be complete: events above After, up to Dropped, are gone.
// It matches ErrExpired.
type ExpiredError struct {
	Key     string
	After   uint64 // the id the replay was to start after
	Dropped uint64 // the highest id dropped
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("eventlog: %q: events after %d are gone up to %d", e.Key, e.After, e.Dropped)
}

// Is reports whether target is ErrExpired.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired }

// DefaultMaxBytes is Memory's default bound on the frame bytes of one key: 8 MiB.
const DefaultMaxBytes = 8 << 20

// DefaultMaxTotalBytes is Memory's default bound on the frame bytes of all its keys together: 256 MiB.
const DefaultMaxTotalBytes = 256 << 20

// Memory is a Log in memory, bounded in bytes per key and in all.
type Memory struct {
	maxBytes, maxTotal int64
	mu                 sync.Mutex
	keys               map[string]*stream
	total              int64   // the frame bytes retained, all keys
	live               int     // the events retained, all keys
	order              []entry // every event appended, oldest first; order[ohead:] may still be retained
	ohead              int
	closed             bool
}

type stream struct {
	events      []Event // events[head:] are retained
	head        int
	bytes       int64
	last, dropd uint64
	deleted     bool
}

// entry names an event in Memory's order of appends.
type entry struct {
	s  *stream
	id uint64
}

// NewMemory returns a Log in memory that keeps at most maxBytes of frames per key (DefaultMaxBytes if
// maxBytes <= 0) and DefaultMaxTotalBytes in all, dropping the oldest first. An event larger than that is
// kept alone.
func NewMemory(maxBytes int64) *Memory { return NewMemoryLimits(maxBytes, 0) }

// NewMemoryLimits returns a Log in memory that keeps at most perKey bytes of frames per key
// (DefaultMaxBytes if perKey <= 0) and total bytes of frames across its keys (DefaultMaxTotalBytes if
// total <= 0). Past the total, the events appended first are dropped first, whichever their key: a key
// that loses events this way answers a Replay that needs them with an *ExpiredError, as for the bound per
// key. The last event appended is kept even if it alone passes a bound.
func NewMemoryLimits(perKey, total int64) *Memory {
	if perKey <= 0 {
		perKey = DefaultMaxBytes
	}
	if total <= 0 {
		total = DefaultMaxTotalBytes
	}
	return &Memory{maxBytes: perKey, maxTotal: total, keys: map[string]*stream{}}
}

// dropHead drops s's oldest retained event. The dropped event is left in place, not cleared: a Replay
// may be reading it unlocked. Compaction releases it.
func (m *Memory) dropHead(s *stream) {
	old := s.events[s.head]
	s.bytes -= int64(len(old.Frame))
	m.total -= int64(len(old.Frame))
	m.live--
	s.dropd = old.ID
	s.head++
}

// Append implements Log.
func (m *Memory) Append(key string, e Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	s := m.keys[key]
	if s == nil {
		s = &stream{}
		m.keys[key] = s
	}
	if e.ID <= s.last {
		return ErrOrder
	}
	n := int64(len(e.Frame))
	for s.head < len(s.events) && s.bytes+n > m.maxBytes {
		m.dropHead(s)
	}
	// Past the total, the oldest events of any key go first.
	for m.ohead < len(m.order) && m.total+n > m.maxTotal {
		o := m.order[m.ohead]
		m.order[m.ohead] = entry{}
		m.ohead++
		if !o.s.deleted && o.s.head < len(o.s.events) && o.s.events[o.s.head].ID == o.id {
			m.dropHead(o.s)
		}
	}
	if s.head > 32 && s.head*2 > len(s.events) {
		s.events = append(s.events[:0:0], s.events[s.head:]...)
		s.head = 0
	}
	s.events = append(s.events, Event{ID: e.ID, Frame: append([]byte(nil), e.Frame...)})
	s.bytes += n
	s.last = e.ID
	m.total += n
	m.live++
	m.order = append(m.order, entry{s, e.ID})
	if pending := len(m.order) - m.ohead; pending > 64 && pending > 2*m.live {
		m.compactOrder()
	}
	return nil
}

// compactOrder forgets the entries of events no longer retained (dropped by their key's bound, or their
// key deleted), so that the order holds about as many entries as there are events.
func (m *Memory) compactOrder() {
	keep := m.order[:0:0]
	for _, o := range m.order[m.ohead:] {
		if o.s.deleted || o.s.head >= len(o.s.events) || o.id < o.s.events[o.s.head].ID {
			continue
		}
		keep = append(keep, o)
	}
	m.order, m.ohead = keep, 0
}

// Replay implements Log. fn runs without the log's lock held, on events retained when Replay began.
func (m *Memory) Replay(key string, after uint64, fn func(Event) error) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	s := m.keys[key]
	if s == nil {
		m.mu.Unlock()
		return nil
	}
	if dropped := s.dropd; after < dropped {
		m.mu.Unlock()
		return &ExpiredError{Key: key, After: after, Dropped: dropped}
	}
	evs := s.events[s.head:]
	// Ids increase: the first event after the cursor is found by bisection, so that a reader that
	// follows a long stream a few events at a time does not scan it from its start every time.
	i := sort.Search(len(evs), func(j int) bool { return evs[j].ID > after })
	// The frames are never changed once appended, so the slice of events may be read unlocked.
	evs = evs[i:len(evs):len(evs)]
	m.mu.Unlock()
	for _, e := range evs {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Stat implements Log.
func (m *Memory) Stat(key string) (Stat, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Stat{}, false, ErrClosed
	}
	s := m.keys[key]
	if s == nil {
		return Stat{}, false, nil
	}
	return Stat{Last: s.last, Dropped: s.dropd, Events: len(s.events) - s.head, Bytes: s.bytes}, true, nil
}

// Keys implements Log.
func (m *Memory) Keys() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	out := make([]string, 0, len(m.keys))
	for k := range m.keys {
		out = append(out, k)
	}
	return out, nil
}

// Delete implements Log.
func (m *Memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if s := m.keys[key]; s != nil {
		s.deleted = true
		m.total -= s.bytes
		m.live -= len(s.events) - s.head
		delete(m.keys, key)
	}
	return nil
}

// Close implements Log.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed, m.keys, m.order, m.ohead, m.total, m.live = true, nil, nil, 0, 0, 0
	return nil
}
