package ndjson

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder records every Write call.
type recorder struct {
	mu     sync.Mutex
	writes [][]byte
	closed bool
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

func TestWriteValidates(t *testing.T) {
	for _, frame := range []string{"{}\n", "{}\n{}", "\n{}", "{\n}"} {
		rec := &recorder{}
		if err := NewWriter(rec).Write(context.Background(), []byte(frame)); err == nil {
			t.Errorf("Write(%q) succeeded, want error", frame)
		}
		if len(rec.writes) != 0 {
			t.Errorf("Write(%q) wrote %q", frame, rec.writes)
		}
	}
}

// Each frame is written with its newline in one Write call, unless it is
// large: then the newline follows it in a second call, sparing a copy.
func TestWriteOneWritePerFrame(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec)
	large := strings.Repeat("x", largeFrame)
	frames := []string{"{}", "", `{"a":[1,2,3]}`, large}
	for _, f := range frames {
		if err := w.Write(context.Background(), []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"{}\n", "\n", `{"a":[1,2,3]}` + "\n", large, "\n"}
	if len(rec.writes) != len(want) {
		t.Fatalf("%d Write calls, want %d", len(rec.writes), len(want))
	}
	for i, f := range want {
		if string(rec.writes[i]) != f {
			t.Errorf("write %d = %.20q, want %.20q", i, rec.writes[i], f)
		}
	}
}

type shortWriter struct{ calls int }

func (s *shortWriter) Write(p []byte) (int, error) {
	s.calls++
	return len(p) / 2, nil
}

func TestWriteFrameShortWrite(t *testing.T) {
	sw := &shortWriter{}
	w := NewWriter(sw)
	if err := w.Write(context.Background(), []byte("{}")); err != io.ErrShortWrite {
		t.Fatalf("err = %v, want io.ErrShortWrite", err)
	}
	// The stream is now mid-line: later frames must not be appended to it.
	if err := w.Write(context.Background(), []byte("{}")); err != io.ErrShortWrite {
		t.Fatalf("second err = %v, want io.ErrShortWrite", err)
	}
	if sw.calls != 1 {
		t.Errorf("%d Write calls after a partial frame, want 1", sw.calls)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriteFrameErrorWithoutPartialFrame(t *testing.T) {
	boom := errors.New("boom")
	w := NewWriter(failWriter{boom})
	for range 2 {
		if err := w.Write(context.Background(), []byte("{}")); err != boom {
			t.Fatalf("err = %v, want boom", err)
		}
	}
}

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.started <- struct{}{}
	<-b.release
	return len(p), nil
}

func TestWriteFrameHonoursContextWhileWaiting(t *testing.T) {
	bw := &blockingWriter{started: make(chan struct{}, 1), release: make(chan struct{})}
	w := NewWriter(bw)
	first := make(chan error, 1)
	go func() { first <- w.Write(context.Background(), []byte("1")) }()
	<-bw.started

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Write(ctx, []byte("2")); err != context.DeadlineExceeded {
		t.Fatalf("waiting writer: err = %v, want context.DeadlineExceeded", err)
	}
	close(bw.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestWriteFrameCancelledContext(t *testing.T) {
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewWriter(rec).Write(ctx, []byte("{}")); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(rec.writes) != 0 {
		t.Fatal("wrote despite a cancelled context")
	}
}

func TestWriterClose(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !rec.closed {
		t.Error("underlying writer not closed")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := w.Write(context.Background(), []byte("{}")); err != ErrClosed {
		t.Errorf("WriteFrame after Close = %v, want ErrClosed", err)
	}
	if len(rec.writes) != 0 {
		t.Error("wrote after Close")
	}
}

func TestWriterCloseUnblocksWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pr.Close() // nobody reads
		w := NewWriter(pw)
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- w.Write(context.Background(), []byte("{}")) }()
		}
		synctest.Wait() // one Write is blocked in the pipe, the other waits for it
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-errs; err == nil {
				t.Error("blocked Write succeeded after Close")
			}
		}
	})
}

// TestConcurrentWritersDoNotInterleave checks, over a real pipe and with
// frames larger than PIPE_BUF, that frames arrive whole and in each writer's
// order while the writer batches under contention.
func TestConcurrentWritersDoNotInterleave(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	w := NewWriter(pw)
	const writers, frames = 16, 100
	padLen := func(g, i int) int { return (g*frames + i) * 37 % 9000 } // many frames exceed PIPE_BUF
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range frames {
				line := fmt.Appendf(nil, "[%d,%d,\"%s\"]", g, i, bytes.Repeat([]byte("p"), padLen(g, i)))
				if err := w.Write(context.Background(), line); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); w.Close() }()

	next := make([]int, writers) // each writer's frames must arrive in its own order
	r := NewReader(pr, 0)
	for {
		line, err := r.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var g, i int
		n, _ := fmt.Sscanf(string(line), "[%d,%d,", &g, &i)
		head := fmt.Sprintf("[%d,%d,\"", g, i)
		pad := strings.TrimSuffix(strings.TrimPrefix(string(line), head), "\"]")
		if n != 2 || g < 0 || g >= writers || len(pad) != padLen(g, i) || strings.Trim(pad, "p") != "" {
			t.Fatalf("interleaved or corrupt line %.80q", line)
		}
		if i != next[g] {
			t.Fatalf("writer %d: frame %d arrived, want %d", g, i, next[g])
		}
		next[g]++
	}
	for g, n := range next {
		if n != frames {
			t.Errorf("writer %d: %d frames arrived, want %d", g, n, frames)
		}
	}
}
