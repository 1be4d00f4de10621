package lossy

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// gate blocks every Write until it is opened: an output nobody reads.
type gate struct {
	open chan struct{}
	out  buffer
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	return g.out.Write(p)
}

// Read in time, everything is written, in order, and nothing is noted.
func TestEverythingWrittenInOrder(t *testing.T) {
	var out buffer
	w := New(&out, "stderr", 4)
	var want strings.Builder
	for i := range 100 {
		line := strings.Repeat("x", i%7) + "\n"
		want.WriteString(line)
		for {
			w.mu.Lock()
			room := len(w.queue) < cap(w.queue)
			w.mu.Unlock()
			if room {
				break
			}
			time.Sleep(time.Millisecond)
		}
		w.Emit([]byte(line), true)
	}
	if err := w.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Fatalf("wrote %q, want %q", out.String(), want.String())
	}
}

// An output nobody reads never blocks Emit; the counted drops are noted
// once it reads again, and Close gives up after its timeout.
func TestOutputNotRead(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	w := New(g, "stdout", 4)
	began := time.Now()
	for range 20 {
		w.Emit([]byte("counted\n"), true)
		w.Emit([]byte("redraw\n"), false)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("Emit blocked for %v", took)
	}
	began = time.Now()
	if err := w.Close(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("Close took %v", took)
	}
	close(g.open) // the writer goroutine ends
	<-w.done
	// Of 40 writes, at most 4 queued and one in the writer's hands; the
	// note of the counted drops comes last, if it found room.
	out := g.out.String()
	if i := strings.Index(out, "\n("); i >= 0 {
		if !strings.Contains(out, " lines not shown: stdout is not being read; ") {
			t.Fatalf("note: %q", out)
		}
		out = out[:i+1]
	}
	if n := strings.Count(out, "\n"); n > 5 {
		t.Fatalf("wrote %d lines through a full queue: %q", n, g.out.String())
	}
}

// Dropped writes are noted when the queue has room again, and those not
// counted are not in the count.
func TestDropsNoted(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	w := New(g, "stderr", 2)
	for range 10 {
		w.Emit([]byte("a\n"), true)
		w.Emit([]byte("b\n"), false)
	}
	w.mu.Lock()
	dropped := w.dropped
	w.mu.Unlock()
	close(g.open)
	if err := w.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	out := g.out.String()
	if dropped < 7 || dropped > 9 || !strings.HasSuffix(out, "lines not shown: stderr is not being read; "+strconv.Itoa(2*dropped)+" bytes dropped)\n") ||
		!strings.Contains(out, "("+strconv.Itoa(dropped)+" lines not shown") {
		t.Fatalf("dropped %d, wrote %q", dropped, out)
	}
	w.Emit([]byte("after close\n"), true)
	if err := w.Close(time.Second); err != nil || strings.Contains(g.out.String(), "after close") {
		t.Fatalf("after Close: %v, %q", err, g.out.String())
	}
}

type failing struct{}

var errFull = errors.New("no space left on device")

func (failing) Write([]byte) (int, error) { return 0, errFull }

// A write error is returned by Close, and by Close again.
func TestWriteError(t *testing.T) {
	w := New(failing{}, "stdout", 4)
	w.Emit([]byte("summary\n"), true)
	if err := w.Close(5 * time.Second); !errors.Is(err, errFull) {
		t.Fatalf("Close = %v, want %v", err, errFull)
	}
	if err := w.Close(time.Second); !errors.Is(err, errFull) {
		t.Fatalf("second Close = %v", err)
	}
}

// The queue is bounded in bytes too: 1 GiB emitted, in writes of 8 MiB
// and of 1 KiB, to an output nobody reads, holds at most the bound (the
// writes' own memory aside, which the caller frees), and what was dropped
// is counted in writes and bytes. A write larger than the bound is queued
// in pieces while the output keeps up.
func TestBoundedInBytes(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	w := NewSize(g, "stderr", 1<<20, 1<<20)
	big := make([]byte, 8<<20)
	small := make([]byte, 1<<10)
	for range 64 {
		w.Emit(big, true)
		for range 8 {
			w.Emit(small, true)
		}
	}
	w.mu.Lock()
	queued, dropped, droppedBytes := w.queued, w.dropped, w.droppedBytes
	w.mu.Unlock()
	if queued > 1<<20 {
		t.Errorf("queued %d bytes, more than the bound", queued)
	}
	if dropped == 0 || droppedBytes < 500<<20 {
		t.Errorf("dropped %d writes of %d bytes", dropped, droppedBytes)
	}
	close(g.open)
	if err := w.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.out.String(), "bytes dropped)") {
		t.Errorf("no note of the drops")
	}

	// A write larger than the bound shows its start, and the rest is
	// counted, with the queue never holding more than the bound.
	var out buffer
	w = NewSize(&out, "stderr", 64, 1<<20)
	w.Emit([]byte(strings.Repeat("é", 4<<20)), true)
	if err := w.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(out.String(), "\n(")
	if len(text) == 0 || len(text) > 1<<20 || !utf8.ValidString(text) || !strings.Contains(out.String(), "bytes dropped)") {
		t.Errorf("wrote %d bytes (valid UTF-8: %v) of an 8 MiB write", len(text), utf8.ValidString(text))
	}
}
