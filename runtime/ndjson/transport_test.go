package ndjson

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

type closeCounter struct {
	io.Reader
	io.Writer
	closes atomic.Int32
}

func (c *closeCounter) Close() error {
	c.closes.Add(1)
	return nil
}

// Close closes the reader and the writer once each, and a stream serving
// as both once; every call returns the first's result.
func TestTransportClose(t *testing.T) {
	r := &closeCounter{Reader: strings.NewReader("")}
	w := &closeCounter{Writer: io.Discard}
	tr := NewTransport(r, w, nil)
	for range 2 {
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if r.closes.Load() != 1 || w.closes.Load() != 1 {
		t.Fatalf("closes: r=%d w=%d, want 1 each", r.closes.Load(), w.closes.Load())
	}
	if err := tr.Write(context.Background(), []byte("{}")); err != ErrClosed {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
	rw := &closeCounter{Reader: strings.NewReader(""), Writer: io.Discard}
	tr = NewTransport(rw, rw, nil)
	tr.Close()
	if n := rw.closes.Load(); n != 1 {
		t.Fatalf("shared stream closed %d times, want 1", n)
	}
}

// Read yields lines as frames, refuses an over-long one as a
// *frame.TooLargeError with its head and goes on, and honours an ended
// context.
func TestTransportRead(t *testing.T) {
	long := `{"id":7,"params":"` + strings.Repeat("x", 100) + `"}`
	tr := NewTransport(strings.NewReader("{}\n"+long+"\n[1]"), io.Discard, &Options{MaxFrame: 50})
	ctx := context.Background()
	if f, err := tr.Read(ctx); err != nil || string(f) != "{}" {
		t.Fatalf("Read = %q, %v", f, err)
	}
	_, err := tr.Read(ctx)
	var tl *frame.TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, frame.ErrTooLarge) || tl.Limit != 50 || tl.Size != len(long) || string(tl.Head) != long {
		t.Fatalf("Read of an over-long line = %v (%+v)", err, tl)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tr.Read(done); err != context.Canceled {
		t.Fatalf("Read with an ended context = %v", err)
	}
	if f, err := tr.Read(ctx); err != nil || string(f) != "[1]" {
		t.Fatalf("Read = %q, %v", f, err)
	}
	if _, err := tr.Read(ctx); err != io.EOF {
		t.Fatalf("Read at the end = %v", err)
	}
}
