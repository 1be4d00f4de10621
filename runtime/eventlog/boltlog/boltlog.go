// Package boltlog is an eventlog.Log in a bbolt database file: the frames a remote server sent survive
// its restart, so that a client reconnecting to the restarted server still gets the frames after the last
// one it acknowledged. SDK users opt into it (and into bbolt) by importing this package.
//
// Appends are committed in groups, every Options.FlushInterval or sooner under load, so that a stream of
// frames costs one disk sync per group rather than per frame; a crash loses at most the last interval's
// frames, which no reconnecting client can be owed more than the server had sent before it stopped
// (set Options.Sync to commit every append before it returns).
package boltlog

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
)

// Options configures a Log. The zero value is ready to use.
type Options struct {
	// MaxBytes bounds the frame bytes kept per key (default eventlog.DefaultMaxBytes); the oldest are
	// dropped first.
	MaxBytes int64
	// MaxTotalBytes bounds the frame bytes kept in all, every key's (default DefaultMaxTotalBytes): past
	// it the events appended first go first, whichever their key (after a reopening, the order across
	// keys of the events from before it is not known: they go key by key).
	MaxTotalBytes int64
	// FlushInterval is how long an append may wait to be committed (default 10ms).
	FlushInterval time.Duration
	// Sync commits every append before Append returns.
	Sync bool
	// Timeout bounds the wait for the file lock another process holds (default 1s).
	Timeout time.Duration
}

// Log is an eventlog.Log in a bbolt file.
type Log struct {
	db   *bolt.DB
	opts Options

	mu      sync.Mutex
	keys    map[string]*index
	total   int64   // the frame bytes retained, all keys
	live    int     // the events retained, all keys
	order   []entry // the events in the order appended, oldest first; order[ohead:] may be retained
	ohead   int
	pending []op
	closed  bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex // one commit at a time
	err     error      // the first commit error; later calls return it
}

// index is what the log keeps in memory of a key: the ids and sizes of its retained events.
type index struct {
	ids         []idSize
	head        int
	bytes       int64
	last, dropd uint64
	key         string
	deleted     bool
}

// entry names an event in the order of appends.
type entry struct {
	ix *index
	id uint64
}

// DefaultMaxTotalBytes is the default bound on the frame bytes of all keys together: 1 GiB.
const DefaultMaxTotalBytes = 1 << 30

type idSize struct {
	id   uint64
	size int64
}

// op is a change waiting to be committed.
type op struct {
	key    string
	id     uint64 // put: the event's id (0: no put, only the drop)
	frame  []byte // put: its frame
	dropTo uint64 // drop every event up to this id
	delete bool   // delete the key
	meta   *index // the key's state after the op
}

var (
	rootName = []byte("eventlog")
	metaName = []byte("meta")
	evName   = []byte("events")
)

// Open opens (or creates) the log in the file at path.
func Open(path string, opts *Options) (*Log, error) {
	l := &Log{keys: map[string]*index{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxBytes <= 0 {
		l.opts.MaxBytes = eventlog.DefaultMaxBytes
	}
	if l.opts.MaxTotalBytes <= 0 {
		l.opts.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if l.opts.FlushInterval <= 0 {
		l.opts.FlushInterval = 10 * time.Millisecond
	}
	if l.opts.Timeout <= 0 {
		l.opts.Timeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: l.opts.Timeout, NoFreelistSync: true})
	if err != nil {
		return nil, err
	}
	l.db = db
	if err := l.load(); err != nil {
		db.Close()
		return nil, err
	}
	go l.flusher()
	return l, nil
}

// load reads every key's index.
func (l *Log) load() error {
	return l.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(rootName)
		if err != nil {
			return err
		}
		return root.ForEachBucket(func(k []byte) error {
			b := root.Bucket(k)
			ix := &index{key: string(k)}
			if m := b.Get(metaName); len(m) == 16 {
				ix.last, ix.dropd = binary.BigEndian.Uint64(m), binary.BigEndian.Uint64(m[8:])
			}
			if ev := b.Bucket(evName); ev != nil {
				ev.ForEach(func(id, frame []byte) error {
					ix.ids = append(ix.ids, idSize{binary.BigEndian.Uint64(id), int64(len(frame))})
					ix.bytes += int64(len(frame))
					return nil
				})
			}
			l.keys[string(k)] = ix
			l.total += ix.bytes
			l.live += len(ix.ids)
			for _, e := range ix.ids {
				l.order = append(l.order, entry{ix, e.id})
			}
			return nil
		})
	})
}

func (l *Log) flusher() {
	defer close(l.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-l.kick:
			t.Reset(l.opts.FlushInterval)
			select {
			case <-t.C:
			case <-l.stop:
				t.Stop()
				return
			}
			l.flush()
		}
	}
}

// Append implements eventlog.Log.
func (l *Log) Append(key string, e eventlog.Event) error {
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	ix := l.keys[key]
	if ix == nil {
		ix = &index{key: key}
		l.keys[key] = ix
	}
	if e.ID <= ix.last {
		l.mu.Unlock()
		return eventlog.ErrOrder
	}
	n := int64(len(e.Frame))
	dropTo := uint64(0)
	for ix.head < len(ix.ids) && ix.bytes+n > l.opts.MaxBytes {
		dropTo = l.dropHead(ix)
	}
	// Past the total, the oldest events of any key go first.
	for l.ohead < len(l.order) && l.total+n > l.opts.MaxTotalBytes {
		o := l.order[l.ohead]
		l.order[l.ohead] = entry{}
		l.ohead++
		if o.ix.deleted || o.ix.head >= len(o.ix.ids) || o.ix.ids[o.ix.head].id != o.id {
			continue // dropped already
		}
		id := l.dropHead(o.ix)
		if o.ix == ix {
			dropTo = id
			continue
		}
		meta := *o.ix
		l.pending = append(l.pending, op{key: o.ix.key, dropTo: id, meta: &meta})
	}
	if ix.head > 32 && ix.head*2 > len(ix.ids) {
		ix.ids = append(ix.ids[:0:0], ix.ids[ix.head:]...)
		ix.head = 0
	}
	ix.ids = append(ix.ids, idSize{e.ID, n})
	ix.bytes += n
	ix.last = e.ID
	l.total += n
	l.live++
	l.order = append(l.order, entry{ix, e.ID})
	if pending := len(l.order) - l.ohead; pending > 64 && pending > 2*l.live {
		keep := l.order[:0:0]
		for _, o := range l.order[l.ohead:] {
			if !o.ix.deleted && o.ix.head < len(o.ix.ids) && o.id >= o.ix.ids[o.ix.head].id {
				keep = append(keep, o)
			}
		}
		l.order, l.ohead = keep, 0
	}
	meta := *ix
	l.pending = append(l.pending, op{key: key, id: e.ID, frame: append([]byte(nil), e.Frame...), dropTo: dropTo, meta: &meta})
	l.mu.Unlock()
	if l.opts.Sync {
		return l.flush()
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return nil
}

// dropHead drops ix's oldest retained event and returns its id.
func (l *Log) dropHead(ix *index) uint64 {
	old := ix.ids[ix.head]
	ix.bytes -= old.size
	l.total -= old.size
	l.live--
	ix.dropd = old.id
	ix.head++
	return old.id
}

func (l *Log) usable() error {
	if l.closed {
		return eventlog.ErrClosed
	}
	return l.err
}

// flush commits the pending changes.
func (l *Log) flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	ops := l.pending
	l.pending = nil
	err := l.err
	l.mu.Unlock()
	if len(ops) == 0 || err != nil {
		return err
	}
	err = l.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(rootName)
		for _, o := range ops {
			k := []byte(o.key)
			if o.delete {
				if err := root.DeleteBucket(k); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
					return err
				}
				continue
			}
			b, err := root.CreateBucketIfNotExists(k)
			if err != nil {
				return err
			}
			ev, err := b.CreateBucketIfNotExists(evName)
			if err != nil {
				return err
			}
			if o.dropTo > 0 {
				c := ev.Cursor()
				for id, _ := c.First(); id != nil && binary.BigEndian.Uint64(id) <= o.dropTo; id, _ = c.Next() {
					if err := c.Delete(); err != nil {
						return err
					}
				}
			}
			if o.id > 0 {
				var id [8]byte
				binary.BigEndian.PutUint64(id[:], o.id)
				if err := ev.Put(id[:], o.frame); err != nil {
					return err
				}
			}
			var m [16]byte
			binary.BigEndian.PutUint64(m[:], o.meta.last)
			binary.BigEndian.PutUint64(m[8:], o.meta.dropd)
			if err := b.Put(metaName, m[:]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = err
		}
		l.mu.Unlock()
	}
	return err
}

// replayBatch is how many events Replay copies out of one read transaction: fn runs outside it, so that
// a slow consumer holds no transaction open.
const replayBatch = 256

// Replay implements eventlog.Log.
func (l *Log) Replay(key string, after uint64, fn func(eventlog.Event) error) error {
	if err := l.flush(); err != nil {
		return err
	}
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	ix := l.keys[key]
	var dropped uint64
	if ix != nil {
		dropped = ix.dropd
	}
	l.mu.Unlock()
	if ix == nil {
		return nil
	}
	if after < dropped {
		return &eventlog.ExpiredError{Key: key, After: after, Dropped: dropped}
	}
	batch := make([]eventlog.Event, 0, replayBatch)
	for {
		batch = batch[:0]
		err := l.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(rootName).Bucket([]byte(key))
			if b == nil {
				return nil
			}
			ev := b.Bucket(evName)
			if ev == nil {
				return nil
			}
			var from [8]byte
			binary.BigEndian.PutUint64(from[:], after+1)
			c := ev.Cursor()
			for id, frame := c.Seek(from[:]); id != nil && len(batch) < replayBatch; id, frame = c.Next() {
				batch = append(batch, eventlog.Event{ID: binary.BigEndian.Uint64(id), Frame: append([]byte(nil), frame...)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range batch {
			if err := fn(e); err != nil {
				return err
			}
			after = e.ID
		}
		if len(batch) < replayBatch {
			return nil
		}
	}
}

// Stat implements eventlog.Log.
func (l *Log) Stat(key string) (eventlog.Stat, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return eventlog.Stat{}, false, err
	}
	ix := l.keys[key]
	if ix == nil {
		return eventlog.Stat{}, false, nil
	}
	return eventlog.Stat{Last: ix.last, Dropped: ix.dropd, Events: len(ix.ids) - ix.head, Bytes: ix.bytes}, true, nil
}

// Keys implements eventlog.Log.
func (l *Log) Keys() ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l.keys))
	for k := range l.keys {
		out = append(out, k)
	}
	return out, nil
}

// Delete implements eventlog.Log.
func (l *Log) Delete(key string) error {
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	if ix := l.keys[key]; ix != nil {
		ix.deleted = true
		l.total -= ix.bytes
		l.live -= len(ix.ids) - ix.head
		delete(l.keys, key)
	}
	l.pending = append(l.pending, op{key: key, delete: true})
	l.mu.Unlock()
	return l.flush()
}

// Close commits what is pending and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	ferr := l.flush()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return errors.Join(ferr, l.db.Close())
}
