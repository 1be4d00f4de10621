package ndjson

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestWriteFrameAsyncKeepsOrderAndReturnsAtOnce(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, nil)
	ctx := context.Background()
	line := []byte("0\n")
	if err := w.WriteFrameAsync(ctx, line); err != nil {
		t.Fatal(err)
	}
	line[0] = 'x' // the caller's buffer is not retained
	<-g.started   // the flusher's Write of "0\n" is in progress
	for _, l := range []string{"1\n", "2\n"} {
		if err := w.WriteFrameAsync(ctx, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	sync := make(chan error, 1)
	go func() { sync <- w.WriteFrame(ctx, []byte("3\n")) }()
	queued(t, w, 3)
	g.release <- nil // "0\n"
	<-g.started
	g.release <- nil // "1\n2\n3\n" in one batch
	if err := <-sync; err != nil {
		t.Fatal(err)
	}
	if got := g.recorded(); len(got) != 2 || got[0] != "0\n" || got[1] != "1\n2\n3\n" {
		t.Fatalf("writes = %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// queueFrames is how many 2-byte frames fill smallQueue's bound.
const queueFrames = 8

var smallQueue = &WriterOptions{QueueBytes: 2 * queueFrames}

func TestWriteFrameAsyncThrottlesWhenTheQueueIsFull(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, smallQueue)
	if err := w.WriteFrameAsync(context.Background(), []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	<-g.started // stuck in Write: the peer reads nothing
	for range queueFrames {
		if err := w.WriteFrameAsync(context.Background(), []byte("q\n")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.WriteFrameAsync(ctx, []byte("over\n")); !errors.Is(err, context.Canceled) {
		t.Fatalf("a full queue must make the caller wait (and honour ctx): %v", err)
	}
	// Close fails the queue and returns at once, though the flusher is still
	// inside Write.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	g.release <- errors.New("pipe closed") // the Write in progress ends
	idle(t, w)
	if got := g.recorded(); len(got) != 1 {
		t.Fatalf("frames queued before Close were written: %q", got)
	}
	if err := w.WriteFrameAsync(context.Background(), []byte("late\n")); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestWriteFrameAsyncPoisonedStream(t *testing.T) {
	g := newGateWriter()
	g.short = true
	w := NewWriter(g, nil)
	if err := w.WriteFrameAsync(context.Background(), []byte("half\n")); err != nil {
		t.Fatal(err)
	}
	<-g.started
	g.release <- nil // only half of the frame is written
	idle(t, w)
	if err := w.WriteFrameAsync(context.Background(), []byte("next\n")); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("a poisoned stream must refuse frames: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// idle waits until no goroutine holds the writer role.
func idle(t *testing.T, w *Writer) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		busy := w.writing
		w.mu.Unlock()
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer stayed busy")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriteFrameOrQueue(t *testing.T) {
	g := newGateWriter()
	w := NewWriter(g, smallQueue)
	ctx := context.Background()

	// No write in progress: the caller writes its frame itself.
	first := make(chan error, 1)
	go func() { first <- w.WriteFrameOrQueue(ctx, []byte("0\n")) }()
	<-g.started
	select {
	case err := <-first:
		t.Fatalf("returned %v before its frame was written", err)
	case <-time.After(20 * time.Millisecond):
	}

	// A write in progress: frames are queued and the callers return at
	// once, their buffers not retained.
	line := []byte("1\n")
	if err := w.WriteFrameOrQueue(ctx, line); err != nil {
		t.Fatal(err)
	}
	line[0] = 'x'
	if err := w.WriteFrameOrQueue(ctx, []byte("2\n")); err != nil {
		t.Fatal(err)
	}
	queued(t, w, 2)
	g.release <- nil // "0\n"; the first caller goes on to write the queue
	<-g.started
	g.release <- nil // "1\n2\n" in one batch
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	idle(t, w)
	if got := g.recorded(); len(got) != 2 || got[0] != "0\n" || got[1] != "1\n2\n" {
		t.Fatalf("writes = %q", got)
	}

	// A full queue makes the caller wait, honouring ctx.
	go func() { first <- w.WriteFrameOrQueue(ctx, []byte("3\n")) }()
	<-g.started
	for range queueFrames {
		if err := w.WriteFrameOrQueue(ctx, []byte("q\n")); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	over := make(chan error, 1)
	go func() { over <- w.WriteFrameOrQueue(cctx, []byte("over\n")) }()
	queued(t, w, queueFrames+1)
	cancel()
	if err := <-over; !errors.Is(err, context.Canceled) {
		t.Fatalf("a full queue must make the caller wait (and honour ctx): %v", err)
	}
	g.release <- nil // "3\n"
	<-g.started
	g.release <- nil // the queue, without "over\n"
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := g.recorded(); len(got) != 4 || got[3] != strings.Repeat("q\n", queueFrames) {
		t.Fatalf("last write = %.40q..., %d writes", got[len(got)-1], len(got))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrameOrQueue(ctx, []byte("late\n")); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
