package boltlog_test

import (
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/eventlog/boltlog"
	"github.com/bridgekit/bridgekit/runtime/eventlog/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, path string, maxBytes int64) *boltlog.Log {
	t.Helper()
	l, err := boltlog.Open(path, &boltlog.Options{MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestContract(t *testing.T) {
	logtest.Run(t, func(t *testing.T, maxBytes int64) eventlog.Log {
		return open(t, filepath.Join(t.TempDir(), "log.db"), maxBytes)
	})
}

// What was appended before Close is there after the file is opened again, bounds and dropped ids too;
// the ids go on from the last.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	l, err := boltlog.Open(path, &boltlog.Options{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 10; id++ {
		if err := l.Append("sess", eventlog.Event{ID: id, Frame: []byte(`{"n":"0123456789"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Append("gone", eventlog.Event{ID: 1, Frame: []byte(`{}`)})
	l.Delete("gone")
	before, _, _ := l.Stat("sess")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, path, 100)
	after, ok, err := l.Stat("sess")
	if err != nil || !ok || after != before || after.Dropped == 0 {
		t.Fatalf("Stat after reopening = %+v %v %v, before %+v", after, ok, err, before)
	}
	keys, _ := l.Keys()
	if !slices.Equal(keys, []string{"sess"}) {
		t.Fatalf("Keys = %v", keys)
	}
	var got []uint64
	if err := l.Replay("sess", after.Dropped, func(e eventlog.Event) error { got = append(got, e.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != after.Events || got[len(got)-1] != 10 {
		t.Fatalf("replayed %v", got)
	}
	if err := l.Append("sess", eventlog.Event{ID: 10, Frame: []byte(`{}`)}); err == nil {
		t.Fatal("an id already used was taken after reopening")
	}
}

// A replay longer than one batch is read in several transactions, in order.
func TestLongReplay(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "log.db"), 0)
	for id := uint64(1); id <= 1000; id++ {
		l.Append("s", eventlog.Event{ID: id * 2, Frame: []byte(`{}`)})
	}
	want := uint64(2)
	l.Replay("s", 0, func(e eventlog.Event) error {
		if e.ID != want {
			t.Fatalf("got %d, want %d", e.ID, want)
		}
		want += 2
		return nil
	})
	if want != 2002 {
		t.Fatalf("replay ended before %d", want)
	}
}

func TestTotal(t *testing.T) {
	logtest.RunTotal(t, func(t *testing.T, perKey, total int64) eventlog.Log {
		l, err := boltlog.Open(filepath.Join(t.TempDir(), "log.db"), &boltlog.Options{MaxBytes: perKey, MaxTotalBytes: total})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	})
}

// The bound in all holds across a reopening: the events from before it are counted, and go first.
func TestTotalReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	frame := []byte(`{"jsonrpc":"2.0","method":"n","params":{}}`)
	size := int64(len(frame))
	opts := &boltlog.Options{MaxTotalBytes: 4 * size}
	l, err := boltlog.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 3; id++ {
		l.Append("a", eventlog.Event{ID: id, Frame: frame})
	}
	l.Close()
	l = open2(t, path, opts)
	for id := uint64(1); id <= 3; id++ {
		l.Append("b", eventlog.Event{ID: id, Frame: frame})
	}
	a, _, _ := l.Stat("a")
	b, _, _ := l.Stat("b")
	if a.Events != 1 || a.Dropped != 2 || b.Events != 3 {
		t.Fatalf("a %+v b %+v", a, b)
	}
	l.Close()
	l = open2(t, path, opts)
	if a, _, _ := l.Stat("a"); a.Events != 1 || a.Dropped != 2 {
		t.Fatalf("a after reopening: %+v", a)
	}
}

func open2(t *testing.T, path string, opts *boltlog.Options) *boltlog.Log {
	t.Helper()
	l, err := boltlog.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
