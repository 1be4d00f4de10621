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
	"sync/atomic"
	"testing"
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

func TestWriteFrameValidates(t *testing.T) {
	for _, line := range []string{"", "{}", "{}\n\n", "{}\n{}\n", "\n{}"} {
		rec := &recorder{}
		if err := NewWriter(rec, nil).WriteFrame(context.Background(), []byte(line)); err == nil {
			t.Errorf("WriteFrame(%q) succeeded, want error", line)
		}
		if len(rec.writes) != 0 {
			t.Errorf("WriteFrame(%q) wrote %q", line, rec.writes)
		}
	}
}

func TestWriteFrameOneWritePerFrame(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, nil)
	frames := []string{"{}\n", "\n", `{"a":[1,2,3]}` + "\n"}
	for _, f := range frames {
		if err := w.WriteFrame(context.Background(), []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.writes) != len(frames) {
		t.Fatalf("%d Write calls for %d frames", len(rec.writes), len(frames))
	}
	for i, f := range frames {
		if string(rec.writes[i]) != f {
			t.Errorf("write %d = %q, want %q", i, rec.writes[i], f)
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
	w := NewWriter(sw, nil)
	if err := w.WriteFrame(context.Background(), []byte("{}\n")); err != io.ErrShortWrite {
		t.Fatalf("err = %v, want io.ErrShortWrite", err)
	}
	// The stream is now mid-line: later frames must not be appended to it.
	if err := w.WriteFrame(context.Background(), []byte("{}\n")); err != io.ErrShortWrite {
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
	w := NewWriter(failWriter{boom}, nil)
	for range 2 {
		if err := w.WriteFrame(context.Background(), []byte("{}\n")); err != boom {
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
	w := NewWriter(bw, nil)
	first := make(chan error, 1)
	go func() { first <- w.WriteFrame(context.Background(), []byte("1\n")) }()
	<-bw.started

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.WriteFrame(ctx, []byte("2\n")); err != context.DeadlineExceeded {
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
	if err := NewWriter(rec, nil).WriteFrame(ctx, []byte("{}\n")); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(rec.writes) != 0 {
		t.Fatal("wrote despite a cancelled context")
	}
}

func TestWriterClose(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(rec, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !rec.closed {
		t.Error("underlying writer not closed")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := w.WriteFrame(context.Background(), []byte("{}\n")); err != ErrClosed {
		t.Errorf("WriteFrame after Close = %v, want ErrClosed", err)
	}
	if len(rec.writes) != 0 {
		t.Error("wrote after Close")
	}
}

func TestWriterCloseUnblocksWriters(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	w := NewWriter(pw, nil)
	big := append(bytes.Repeat([]byte("x"), 1<<20), '\n') // more than the pipe holds; nobody reads
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- w.WriteFrame(context.Background(), big) }()
	}
	time.Sleep(20 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-errs:
			if err == nil {
				t.Error("blocked WriteFrame succeeded after Close")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("WriteFrame still blocked after Close")
		}
	}
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
	w := NewWriter(pw, nil)
	const writers, frames = 16, 100
	padLen := func(g, i int) int { return (g*frames + i) * 37 % 9000 } // many frames exceed PIPE_BUF
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range frames {
				line := fmt.Appendf(nil, "[%d,%d,\"%s\"]\n", g, i, bytes.Repeat([]byte("p"), padLen(g, i)))
				if err := w.WriteFrame(context.Background(), line); err != nil {
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

// OnWrite sees every frame once, in the order of the stream, whether it
// was written alone, in a batch or from the async queue.
func TestWriterOnWrite(t *testing.T) {
	var seen []string
	pr, pw := io.Pipe()
	w := NewWriter(pw, &WriterOptions{OnWrite: func(line []byte) { seen = append(seen, string(line)) }})
	var stream bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&stream, pr); close(done) }()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				line := []byte(fmt.Sprintf("{\"g\":%d,\"i\":%d}\n", g, i))
				var err error
				switch i % 3 {
				case 0:
					err = w.WriteFrame(context.Background(), line)
				case 1:
					err = w.WriteFrameAsync(context.Background(), line)
				default:
					err = w.WriteFrameOrQueue(context.Background(), line)
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	<-done
	if got := strings.Join(seen, ""); got != stream.String() || len(seen) != 400 {
		t.Fatalf("OnWrite saw %d frames; they differ from the stream: %v", len(seen), got != stream.String())
	}
}

// secondFails's first Write waits for release; every later one fails.
type secondFails struct {
	entered, release chan struct{}
	calls            int
}

var errSecondWrite = errors.New("broken pipe")

func (g *secondFails) Write(p []byte) (int, error) {
	g.calls++ // only the writer role writes: no lock needed
	if g.calls == 1 {
		close(g.entered)
		<-g.release
		return len(p), nil
	}
	return 0, errSecondWrite
}

// A frame queued behind a write learns of its own write's failure only
// after OnError has returned, so a caller that sees the error also sees
// what OnError did about it (rpc ends the connection there, with a cause
// that the caller's error must carry).
func TestQueuedFrameSeesErrorAfterOnError(t *testing.T) {
	g := &secondFails{entered: make(chan struct{}), release: make(chan struct{})}
	var reported atomic.Bool
	w := NewWriter(g, &WriterOptions{OnError: func(error) {
		time.Sleep(50 * time.Millisecond)
		reported.Store(true)
	}})
	first := make(chan error, 1)
	go func() { first <- w.WriteFrame(context.Background(), []byte("a\n")) }()
	<-g.entered
	second := make(chan bool, 1)
	go func() {
		err := w.WriteFrame(context.Background(), []byte("b\n"))
		second <- errors.Is(err, errSecondWrite) && reported.Load()
	}()
	for queued := false; !queued; {
		w.mu.Lock()
		queued = len(w.pending) == 1
		w.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatalf("first frame: %v", err)
	}
	if !<-second {
		t.Fatal("the queued frame's error came back before OnError had returned")
	}
}
