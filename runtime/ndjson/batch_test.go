package ndjson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// gateWriter records Write calls; each Write blocks until it is released.
type gateWriter struct {
	mu      sync.Mutex
	writes  []string
	started chan struct{}
	release chan error // the error the blocked Write returns
	short   bool       // report half of each write as written
}

func newGateWriter() *gateWriter {
	return &gateWriter{started: make(chan struct{}, 64), release: make(chan error)}
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.started <- struct{}{}
	err := <-g.release
	g.mu.Lock()
	g.writes = append(g.writes, string(p))
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if g.short {
		return len(p) / 2, nil
	}
	return len(p), nil
}

func (g *gateWriter) recorded() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.writes...)
}

// queued waits until n frames are queued behind the Write in progress.
func queued(t *testing.T, w *Writer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		k := len(w.pending)
		w.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d frames queued, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriterBatchesQueuedFrames(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, nil)
	ctx := context.Background()
	errs := make(chan error, 8)
	go func() { errs <- w.WriteFrame(ctx, []byte("0\n")) }()
	<-g.started
	// Queue frames in a known order behind the blocked write.
	for i := 1; i <= 4; i++ {
		line := []byte(fmt.Sprintf("%d\n", i))
		go func() { errs <- w.WriteFrame(ctx, line) }()
		queued(t, w, i)
	}
	g.release <- nil // first write
	<-g.started
	g.release <- nil // the batch
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := g.recorded()
	if len(got) != 2 || got[0] != "0\n" || got[1] != "1\n2\n3\n4\n" {
		t.Fatalf("writes = %q, want [\"0\\n\" \"1\\n2\\n3\\n4\\n\"]", got)
	}
	// Uncontended again: one Write per frame.
	go func() { <-g.started; g.release <- nil }()
	if err := w.WriteFrame(ctx, []byte("5\n")); err != nil {
		t.Fatal(err)
	}
	if got := g.recorded(); len(got) != 3 || got[2] != "5\n" {
		t.Fatalf("writes = %q", got)
	}
}

func TestWriterBatchSizeIsBounded(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, nil)
	ctx := context.Background()
	errs := make(chan error, 8)
	go func() { errs <- w.WriteFrame(ctx, []byte("0\n")) }()
	<-g.started
	big := make([]byte, maxBatch/2)
	for i := range big {
		big[i] = 'x'
	}
	big[len(big)-1] = '\n'
	for i := 1; i <= 3; i++ {
		go func() { errs <- w.WriteFrame(ctx, big) }()
		queued(t, w, i)
	}
	for range 2 {
		g.release <- nil
		<-g.started
	}
	g.release <- nil
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := g.recorded()
	if len(got) != 3 || len(got[1]) != 2*len(big) || len(got[2]) != len(big) {
		t.Fatalf("%d writes, want 3: the first frame, two big frames, the last big frame", len(got))
	}
}

func TestWriterQueuedFrameHonoursContext(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, nil)
	bg := context.Background()
	errs := make(chan error, 4)
	go func() { errs <- w.WriteFrame(bg, []byte("0\n")) }()
	<-g.started
	go func() { errs <- w.WriteFrame(bg, []byte("1\n")) }()
	queued(t, w, 1)
	ctx, cancel := context.WithCancel(bg)
	cancelled := make(chan error, 1)
	go func() { cancelled <- w.WriteFrame(ctx, []byte("2\n")) }()
	queued(t, w, 2)
	go func() { errs <- w.WriteFrame(bg, []byte("3\n")) }()
	queued(t, w, 3)
	cancel()
	if err := <-cancelled; err != context.Canceled {
		t.Fatalf("cancelled frame: err = %v, want context.Canceled", err)
	}
	g.release <- nil
	<-g.started
	g.release <- nil
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := g.recorded(); len(got) != 2 || got[1] != "1\n3\n" {
		t.Fatalf("writes = %q, want the cancelled frame left out", got)
	}
}

func TestWriterTakenFrameIgnoresContext(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, nil)
	bg := context.Background()
	first := make(chan error, 1)
	go func() { first <- w.WriteFrame(bg, []byte("0\n")) }()
	<-g.started
	ctx, cancel := context.WithCancel(bg)
	second := make(chan error, 1)
	go func() { second <- w.WriteFrame(ctx, []byte("1\n")) }()
	queued(t, w, 1)
	g.release <- nil
	<-g.started // the batch holding frame 1 is being written
	cancel()
	select {
	case err := <-second:
		t.Fatalf("WriteFrame returned %v while its frame was being written", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.release <- nil
	if err := <-second; err != nil {
		t.Fatalf("err = %v, want nil: the frame was written", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestWriterCloseFailsQueuedFrames(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, nil)
	bg := context.Background()
	first := make(chan error, 1)
	go func() { first <- w.WriteFrame(bg, []byte("0\n")) }()
	<-g.started
	errs := make(chan error, 3)
	for i := 1; i <= 3; i++ {
		go func() { errs <- w.WriteFrame(bg, []byte("1\n")) }()
		queued(t, w, i)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; err != ErrClosed {
			t.Fatalf("queued frame: err = %v, want ErrClosed", err)
		}
	}
	if err := w.WriteFrame(bg, []byte("2\n")); err != ErrClosed {
		t.Fatalf("after Close: err = %v, want ErrClosed", err)
	}
	g.release <- nil // the write in progress completes
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := g.recorded(); len(got) != 1 {
		t.Fatalf("writes = %q, want only the one in progress", got)
	}
}

func TestWriterBatchErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		short  bool
		sticky bool
	}{
		{"failed", errors.New("boom"), false, false},
		{"partial", nil, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateWriter()
			w := NewWriter(g, nil)
			bg := context.Background()
			first := make(chan error, 1)
			go func() { first <- w.WriteFrame(bg, []byte("0\n")) }()
			<-g.started
			errs := make(chan error, 2)
			for i := 1; i <= 2; i++ {
				go func() { errs <- w.WriteFrame(bg, []byte("1\n")) }()
				queued(t, w, i)
			}
			g.release <- nil
			<-g.started
			g.mu.Lock()
			g.short = tt.short
			g.mu.Unlock()
			g.release <- tt.err
			want := tt.err
			if tt.short {
				want = io.ErrShortWrite
			}
			for range 2 {
				if err := <-errs; err != want {
					t.Fatalf("batched frame: err = %v, want %v", err, want)
				}
			}
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			if tt.sticky {
				if err := w.WriteFrame(bg, []byte("2\n")); err != io.ErrShortWrite {
					t.Fatalf("after a partial batch: err = %v, want io.ErrShortWrite", err)
				}
			}
		})
	}
}

func TestWriteFrameUncontendedDoesNotAllocate(t *testing.T) {
	w := NewWriter(io.Discard, nil)
	line := []byte("{}\n")
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { _ = w.WriteFrame(ctx, line) }); n != 0 {
		t.Errorf("%.1f allocations per uncontended frame, want 0", n)
	}
}
