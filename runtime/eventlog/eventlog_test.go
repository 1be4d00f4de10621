package eventlog_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/eventlog/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemory(t *testing.T) {
	logtest.Run(t, func(t *testing.T, maxBytes int64) eventlog.Log { return eventlog.NewMemory(maxBytes) })
}

// A replay reads events while the log is appended to and drops old ones.
func TestMemoryReplayWhileAppending(t *testing.T) {
	l := eventlog.NewMemory(64 << 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := uint64(1); id <= 20000; id++ {
			l.Append("s", eventlog.Event{ID: id, Frame: []byte(`{"jsonrpc":"2.0","method":"x"}`)})
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		var last uint64
		st, _, _ := l.Stat("s")
		l.Replay("s", st.Dropped, func(e eventlog.Event) error {
			if e.ID <= last || len(e.Frame) == 0 {
				t.Fatalf("event %d after %d", e.ID, last)
			}
			last = e.ID
			return nil
		})
	}
}

// The bound in all: past it the oldest events of any key go first, and a key that lost some answers a
// replay that needs them with an ExpiredError; deleting a key gives its bytes back.
func TestMemoryTotal(t *testing.T) {
	frame := func(id uint64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"n","params":{"i":%06d}}`, id)
	}
	size := int64(len(frame(1)))
	l := eventlog.NewMemoryLimits(1<<20, 10*size)
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
	l2 := eventlog.NewMemoryLimits(4*size, 6*size)
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
