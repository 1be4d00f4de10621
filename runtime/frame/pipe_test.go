package frame_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ frame.Transport = (*frame.PipeEnd)(nil)

// Frames arrive whole and in order, as copies: the writer reuses its slice
// at once, and a frame read stays intact until the next Read.
func TestPipeDeliversCopiesInOrder(t *testing.T) {
	a, b := frame.Pipe()
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	const n = 1000
	go func() {
		buf := make([]byte, 0, 64)
		for i := range n {
			buf = fmt.Appendf(buf[:0], `{"n":%d,"pad":"%*s"}`, i, i%300, "")
			if err := a.Write(ctx, buf); err != nil {
				t.Error(err)
				return
			}
			clear(buf) // the peer must not see this
		}
		a.CloseWrite()
	}()
	var prev []byte
	var prevWant string
	for i := 0; ; i++ {
		runtime.Gosched() // the writer clears its slice meanwhile
		if prev != nil && string(prev) != prevWant {
			t.Fatalf("frame %d changed before the next Read: %q", i-1, prev)
		}
		f, err := b.Read(ctx)
		if err == io.EOF {
			if i != n {
				t.Fatalf("EOF after %d frames, want %d", i, n)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"n":%d,"pad":"%*s"}`, i, i%300, "")
		if string(f) != want {
			t.Fatalf("frame %d = %.40q, want %.40q", i, f, want)
		}
		prev, prevWant = f, want
	}
}

// CloseWrite ends one direction only: the peer reads io.EOF, and frames
// still flow the other way.
func TestPipeCloseWrite(t *testing.T) {
	a, b := frame.Pipe()
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	a.CloseWrite()
	if _, err := b.Read(ctx); err != io.EOF {
		t.Fatalf("Read after the peer's CloseWrite = %v, want io.EOF", err)
	}
	if err := a.Write(ctx, []byte("{}")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write after CloseWrite = %v, want io.ErrClosedPipe", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := a.Read(ctx)
		got <- fmt.Sprint(string(f), err)
	}()
	if err := b.Write(ctx, []byte(`"back"`)); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != `"back"<nil>` {
		t.Fatalf("read %s", s)
	}
}

// Close ends both directions of its end and unblocks a Read or Write in
// progress on either end.
func TestPipeClose(t *testing.T) {
	ctx := context.Background()
	for _, who := range []string{"reader's own", "writer's own", "reader's peer", "writer's peer"} {
		t.Run(who, func(t *testing.T) {
			a, b := frame.Pipe()
			defer a.Close()
			defer b.Close()
			reading, writing := make(chan error, 1), make(chan error, 1)
			go func() { _, err := a.Read(ctx); reading <- err }()
			go func() { writing <- a.Write(ctx, []byte("{}")) }() // b never reads
			var want error
			switch who {
			case "reader's own", "writer's own":
				a.Close()
				want = io.ErrClosedPipe
			default:
				b.Close()
				want = io.EOF
			}
			if err := <-reading; err != want {
				t.Errorf("blocked Read = %v, want %v", err, want)
			}
			if err := <-writing; !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("blocked Write = %v, want io.ErrClosedPipe", err)
			}
		})
	}
	a, b := frame.Pipe()
	a.Close()
	if err := a.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := a.Read(ctx); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Read on a closed end = %v", err)
	}
	if err := b.Write(ctx, []byte("{}")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write towards a closed end = %v", err)
	}
	b.Close()
}

// A Read or Write returns when its context ends; a frame whose Write gave
// up is never delivered.
func TestPipeContext(t *testing.T) {
	a, b := frame.Pipe()
	defer a.Close()
	defer b.Close()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Write(done, []byte("{}")); err != context.Canceled {
		t.Fatalf("Write with an ended context = %v", err)
	}
	if _, err := b.Read(done); err != context.Canceled {
		t.Fatalf("Read with an ended context = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.Write(ctx, []byte(`"dropped"`)); err != context.DeadlineExceeded {
		t.Fatalf("Write nobody reads = %v, want DeadlineExceeded", err)
	}
	go a.Write(context.Background(), []byte(`"next"`))
	if f, err := b.Read(context.Background()); err != nil || string(f) != `"next"` {
		t.Fatalf("Read = %s, %v; want the frame after the dropped one", f, err)
	}
}

func ExamplePipe() {
	a, b := frame.Pipe()
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	go func() {
		a.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"ping"}`))
		a.CloseWrite()
	}()
	for {
		f, err := b.Read(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s\n", f)
	}
	// Output:
	// {"jsonrpc":"2.0","method":"ping"}
	// EOF
}
