package lossy

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
		if !strings.HasSuffix(out, " lines not shown: stdout is not being read)\n") {
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
	if dropped < 7 || dropped > 9 || !strings.HasSuffix(out, "lines not shown: stderr is not being read)\n") ||
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
