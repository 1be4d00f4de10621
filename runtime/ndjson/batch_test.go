package ndjson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
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

// queued checks, in a testing/synctest bubble, that n frames wait behind the Write in progress once every
// goroutine is blocked.
func queued(t *testing.T, w *Writer, n int) {
	t.Helper()
	synctest.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) != n {
		t.Fatalf("%d frames queued, want %d", len(w.pending), n)
	}
}

func TestWriterBatchesQueuedFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateWriter()
		w := NewWriter(g)
		ctx := context.Background()
		errs := make(chan error, 8)
		go func() { errs <- w.Write(ctx, []byte("0")) }()
		<-g.started
		// Queue frames in a known order behind the blocked write.
		for i := 1; i <= 4; i++ {
			line := []byte(fmt.Sprintf("%d", i))
			go func() { errs <- w.Write(ctx, line) }()
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
		if err := w.Write(ctx, []byte("5")); err != nil {
			t.Fatal(err)
		}
		if got := g.recorded(); len(got) != 3 || got[2] != "5\n" {
			t.Fatalf("writes = %q", got)
		}
	})
}

func TestWriterBatchSizeIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateWriter()
		w := NewWriter(g)
		ctx := context.Background()
		errs := make(chan error, 8)
		go func() { errs <- w.Write(ctx, []byte("0")) }()
		<-g.started
		big := make([]byte, maxBatch/2-1) // two fit in a batch with their newlines
		for i := range big {
			big[i] = 'x'
		}
		for i := 1; i <= 3; i++ {
			go func() { errs <- w.Write(ctx, big) }()
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
		if len(got) != 3 || len(got[1]) != 2*(len(big)+1) || len(got[2]) != len(big)+1 {
			t.Fatalf("%d writes, want 3: the first frame, two big frames, the last big frame", len(got))
		}
	})
}

func TestWriterQueuedFrameHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateWriter()
		w := NewWriter(g)
		bg := context.Background()
		errs := make(chan error, 4)
		go func() { errs <- w.Write(bg, []byte("0")) }()
		<-g.started
		go func() { errs <- w.Write(bg, []byte("1")) }()
		queued(t, w, 1)
		ctx, cancel := context.WithCancel(bg)
		cancelled := make(chan error, 1)
		go func() { cancelled <- w.Write(ctx, []byte("2")) }()
		queued(t, w, 2)
		go func() { errs <- w.Write(bg, []byte("3")) }()
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
	})
}

func TestWriterTakenFrameIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateWriter()
		w := NewWriter(g)
		bg := context.Background()
		first := make(chan error, 1)
		go func() { first <- w.Write(bg, []byte("0")) }()
		<-g.started
		ctx, cancel := context.WithCancel(bg)
		second := make(chan error, 1)
		go func() { second <- w.Write(ctx, []byte("1")) }()
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
	})
}

func TestWriterCloseFailsQueuedFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateWriter()
		w := NewWriter(g)
		bg := context.Background()
		first := make(chan error, 1)
		go func() { first <- w.Write(bg, []byte("0")) }()
		<-g.started
		errs := make(chan error, 3)
		for i := 1; i <= 3; i++ {
			go func() { errs <- w.Write(bg, []byte("1")) }()
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
		if err := w.Write(bg, []byte("2")); err != ErrClosed {
			t.Fatalf("after Close: err = %v, want ErrClosed", err)
		}
		g.release <- nil // the write in progress completes
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if got := g.recorded(); len(got) != 1 {
			t.Fatalf("writes = %q, want only the one in progress", got)
		}
	})
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
			synctest.Test(t, func(t *testing.T) {
				g := newGateWriter()
				w := NewWriter(g)
				bg := context.Background()
				first := make(chan error, 1)
				go func() { first <- w.Write(bg, []byte("0")) }()
				<-g.started
				errs := make(chan error, 2)
				for i := 1; i <= 2; i++ {
					go func() { errs <- w.Write(bg, []byte("1")) }()
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
					if err := w.Write(bg, []byte("2")); err != io.ErrShortWrite {
						t.Fatalf("after a partial batch: err = %v, want io.ErrShortWrite", err)
					}
				}
			})
		})
	}
}

func TestWriteUncontendedDoesNotAllocate(t *testing.T) {
	w := NewWriter(io.Discard)
	line := []byte("{}")
	_ = w.Write(context.Background(), line) // the batch buffer
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { _ = w.Write(ctx, line) }); n != 0 {
		t.Errorf("%.1f allocations per uncontended frame, want 0", n)
	}
}
