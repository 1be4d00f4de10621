// Package logtest checks that an eventlog.Log keeps the contract: events replayed once, in order, after
// the acknowledged id; an *ExpiredError rather than a gap; bounds in bytes.
package logtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
)

// New returns an empty log that keeps at most maxBytes of frames per key.
type New func(t *testing.T, maxBytes int64) eventlog.Log

func frame(id uint64) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"n","params":{"i":%d}}`, id)
}

func ids(t *testing.T, l eventlog.Log, key string, after uint64) ([]uint64, error) {
	t.Helper()
	var out []uint64
	err := l.Replay(key, after, func(e eventlog.Event) error {
		if string(e.Frame) != string(frame(e.ID)) {
			t.Fatalf("event %d has frame %s", e.ID, e.Frame)
		}
		out = append(out, e.ID)
		return nil
	})
	return out, err
}

// Run runs the contract's tests.
func Run(t *testing.T, newLog New) {
	t.Run("ReplayAfter", func(t *testing.T) {
		l := newLog(t, 0)
		for _, id := range []uint64{1, 2, 5, 9} {
			if err := l.Append("s", eventlog.Event{ID: id, Frame: frame(id)}); err != nil {
				t.Fatal(err)
			}
		}
		l.Append("other", eventlog.Event{ID: 3, Frame: frame(3)})
		for after, want := range map[uint64][]uint64{0: {1, 2, 5, 9}, 2: {5, 9}, 3: {5, 9}, 9: nil, 100: nil} {
			got, err := ids(t, l, "s", after)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("after %d: %v %v, want %v", after, got, err, want)
			}
		}
		if got, err := ids(t, l, "none", 0); err != nil || got != nil {
			t.Errorf("unknown key: %v %v", got, err)
		}
		if err := l.Append("s", eventlog.Event{ID: 9, Frame: frame(9)}); !errors.Is(err, eventlog.ErrOrder) {
			t.Errorf("repeated id: %v", err)
		}
		st, ok, err := l.Stat("s")
		if err != nil || !ok || st.Last != 9 || st.Events != 4 || st.Dropped != 0 {
			t.Errorf("Stat = %+v %v %v", st, ok, err)
		}
		keys, err := l.Keys()
		slices.Sort(keys)
		if err != nil || !slices.Equal(keys, []string{"other", "s"}) {
			t.Errorf("Keys = %v %v", keys, err)
		}
		stop := errors.New("stop")
		n := 0
		if err := l.Replay("s", 0, func(eventlog.Event) error { n++; return stop }); err != stop || n != 1 {
			t.Errorf("Replay stopped with %v after %d", err, n)
		}
		if err := l.Delete("s"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := l.Stat("s"); ok {
			t.Error("deleted key still there")
		}
	})
	t.Run("BoundedInBytes", func(t *testing.T) {
		size := int64(len(frame(10)))
		l := newLog(t, 3*size)
		for id := uint64(10); id < 20; id++ {
			if err := l.Append("s", eventlog.Event{ID: id, Frame: frame(id)}); err != nil {
				t.Fatal(err)
			}
		}
		st, _, _ := l.Stat("s")
		if st.Bytes > 3*size || st.Events != 3 || st.Dropped != 16 || st.Last != 19 {
			t.Fatalf("Stat = %+v", st)
		}
		got, err := ids(t, l, "s", 16)
		if err != nil || !slices.Equal(got, []uint64{17, 18, 19}) {
			t.Fatalf("after 16: %v %v", got, err)
		}
		for _, after := range []uint64{0, 9, 15} {
			_, err := ids(t, l, "s", after)
			var ee *eventlog.ExpiredError
			if !errors.As(err, &ee) || !errors.Is(err, eventlog.ErrExpired) || ee.Dropped != 16 || ee.After != after {
				t.Fatalf("after %d: %v, want an ExpiredError up to 16", after, err)
			}
		}
		// A frame larger than the bound is kept alone.
		big := eventlog.Event{ID: 30, Frame: make([]byte, 4*size)}
		if err := l.Append("s", big); err != nil {
			t.Fatal(err)
		}
		st, _, _ = l.Stat("s")
		if st.Events != 1 || st.Dropped != 19 {
			t.Fatalf("after a large frame: %+v", st)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		l := newLog(t, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Append("s", eventlog.Event{ID: 1}); !errors.Is(err, eventlog.ErrClosed) {
			t.Errorf("Append after Close: %v", err)
		}
		if err := l.Replay("s", 0, nil); !errors.Is(err, eventlog.ErrClosed) {
			t.Errorf("Replay after Close: %v", err)
		}
	})
}

// NewTotal returns an empty log that keeps at most perKey bytes of frames per key and total in all.
type NewTotal func(t *testing.T, perKey, total int64) eventlog.Log

// RunTotal checks the bound in all: past it the oldest events of any key go first, and a key that lost
// some answers a replay that needs them with an ExpiredError; deleting a key gives its bytes back.
func RunTotal(t *testing.T, newLog NewTotal) {
	frame := func(id uint64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"n","params":{"i":%06d}}`, id)
	}
	size := int64(len(frame(1)))
	l := newLog(t, 1<<20, 10*size)
	total := func() (n int64) {
		for _, k := range []string{"a", "b", "c"} {
			st, _, _ := l.Stat(k)
			n += st.Bytes
		}
		return n
	}
	for id := uint64(1); id <= 40; id++ {
		key := []string{"a", "b"}[id%2]
		if err := l.Append(key, eventlog.Event{ID: id, Frame: frame(id)}); err != nil {
			t.Fatal(err)
		}
		if n := total(); n > 10*size {
			t.Fatalf("after %d: %d bytes held, bound %d", id, n, 10*size)
		}
	}
	// The ten last (31..40) are held: five a key.
	for key, want := range map[string][]uint64{"a": {32, 34, 36, 38, 40}, "b": {31, 33, 35, 37, 39}} {
		st, _, _ := l.Stat(key)
		var got []uint64
		if err := l.Replay(key, st.Dropped, func(e eventlog.Event) error { got = append(got, e.ID); return nil }); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", key, got, err, want)
		}
		var ee *eventlog.ExpiredError
		if err := l.Replay(key, 0, func(eventlog.Event) error { return nil }); !errors.As(err, &ee) || ee.Dropped != want[0]-2 {
			t.Errorf("%s from 0: %v", key, err)
		}
	}
	// Deleting a gives its five events' bytes back: c's five fit without dropping b's.
	l.Delete("a")
	for id := uint64(41); id <= 45; id++ {
		l.Append("c", eventlog.Event{ID: id, Frame: frame(id)})
	}
	if st, _, _ := l.Stat("b"); st.Events != 5 || st.Dropped != 29 {
		t.Errorf("b after a's deletion: %+v", st)
	}
	// Many events dropped by the bound per key, and the total still right.
	l2 := newLog(t, 4*size, 6*size)
	for id := uint64(1); id <= 10000; id++ {
		l2.Append("k", eventlog.Event{ID: id, Frame: frame(id)})
		if id%7 == 0 {
			l2.Append("j", eventlog.Event{ID: id, Frame: frame(id)})
		}
	}
	k, _, _ := l2.Stat("k")
	j, _, _ := l2.Stat("j")
	if k.Bytes+j.Bytes > 6*size || k.Last != 10000 || k.Events == 0 || j.Events == 0 {
		t.Errorf("k %+v j %+v", k, j)
	}
}
