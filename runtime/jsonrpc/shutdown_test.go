package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

func TestCallCancelledWhileWaitingForResponse(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := callAsync(ctx, p.c, "m", nil, nil)
	p.recv()
	cancel()
	if err := wait(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	p.c.mu.Lock()
	n := len(p.c.pending)
	p.c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls still pending", n)
	}
}

func TestCallWithDoneContextWritesNothing(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.c.Call(ctx, "m", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call err = %v", err)
	}
	if err := p.c.Notify(ctx, "m", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Notify err = %v", err)
	}
	p.expectSilence()
}

// TestPeerNotReading: the peer reads nothing, so the first write blocks in
// the pipe. Later writers give up when their context ends, and Close
// unblocks the first one.
func TestPeerNotReading(t *testing.T) {
	cr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	pr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close() // open but never read
	c := NewConn(cr, cw, nil, nil)
	defer c.Close()

	big := jsontext.Value(`"` + string(bytes.Repeat([]byte("x"), 1<<20)) + `"`)
	stuck := callAsync(context.Background(), c, "big", big, nil)
	time.Sleep(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "m", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call err = %v, want DeadlineExceeded", err)
	}
	if err := c.Notify(ctx, "m", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Notify err = %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-stuck:
		t.Fatalf("blocked call returned early: %v", err)
	default:
	}

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	if err := wait(t, stuck); !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked call err = %v, want ErrClosed", err)
	}
	wait(t, closed)
}

func TestPeerEOFFailsPendingCalls(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	var calls []<-chan error
	for range 3 {
		calls = append(calls, callAsync(context.Background(), p.c, "m", nil, nil))
		p.recv()
	}
	if p.c.Err() != nil {
		t.Fatalf("Err() = %v before shutdown", p.c.Err())
	}
	p.w.Close()
	for _, done := range calls {
		if err := wait(t, done); !errors.Is(err, ErrClosed) || !errors.Is(err, io.EOF) {
			t.Fatalf("pending call err = %v, want ErrClosed and io.EOF", err)
		}
	}
	wait(t, p.c.Done())
	if err := p.c.Err(); !errors.Is(err, ErrClosed) || !errors.Is(err, io.EOF) {
		t.Fatalf("Err() = %v", err)
	}
	if err := p.c.Call(context.Background(), "m", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after EOF = %v", err)
	}
	if err := p.c.Notify(context.Background(), "m", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify after EOF = %v", err)
	}
}

func TestReadErrorShutsDown(t *testing.T) {
	boom := errors.New("boom")
	c := NewConn(iotest.ErrReader(boom), io.Discard, nil, nil)
	defer c.Close()
	wait(t, c.Done())
	if err := c.Err(); !errors.Is(err, ErrClosed) || !errors.Is(err, boom) {
		t.Fatalf("Err() = %v", err)
	}
}

func TestCloseFailsPendingCallsAndIsIdempotent(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	done := callAsync(context.Background(), p.c, "m", nil, nil)
	p.recv()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := p.c.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := wait(t, done); !errors.Is(err, ErrClosed) || errors.Is(err, io.EOF) {
		t.Fatalf("pending call err = %v, want ErrClosed", err)
	}
	select {
	case <-p.c.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if err := p.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(context.Background(), "m", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after Close = %v", err)
	}
}

func TestCloseCancelsAndWaitsForHandlers(t *testing.T) {
	for _, slots := range []int{1, 4} {
		var finished atomic.Int32
		started := make(chan struct{}, 4)
		h := HandlerFunc(func(ctx context.Context, _ *Request) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond)
			finished.Add(1)
			return nil, ctx.Err()
		})
		p := newRawPeer(t, h, &Options{MaxConcurrentRequests: slots})
		for range slots {
			p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
			wait(t, started)
		}
		p.c.Close()
		if got := finished.Load(); got != int32(slots) {
			t.Fatalf("slots=%d: Close returned with %d of %d handlers finished", slots, got, slots)
		}
	}
}

// TestQueueAfterPeerEOF: notifications received before EOF are still
// handled; requests not yet started are dropped, since their replies could
// not be delivered.
func TestQueueAfterPeerEOF(t *testing.T) {
	const n = 100
	var handled, requests atomic.Int32
	p := newRawPeer(t, methods{
		"first": func(ctx context.Context, _ *Request) (any, error) {
			<-ctx.Done() // until EOF has been seen
			return nil, nil
		},
		"note": func(context.Context, *Request) (any, error) {
			time.Sleep(100 * time.Microsecond)
			handled.Add(1)
			return nil, nil
		},
		"req": func(context.Context, *Request) (any, error) { requests.Add(1); return nil, nil },
	}, nil)
	p.send(`{"jsonrpc":"2.0","method":"first"}`, `{"jsonrpc":"2.0","id":1,"method":"req"}`)
	for range n {
		p.send(`{"jsonrpc":"2.0","method":"note"}`)
	}
	p.w.Close()
	wait(t, p.c.Done())
	if got := handled.Load(); got != n {
		t.Fatalf("%d of %d notifications handled after EOF", got, n)
	}
	if requests.Load() != 0 {
		t.Fatal("request started after EOF")
	}
	p.expectSilence()
}

func TestBarrierHoldsAcrossPeerEOF(t *testing.T) {
	const n = 20
	var handled atomic.Int32
	p := newRawPeer(t, methods{
		"note": func(context.Context, *Request) (any, error) {
			time.Sleep(time.Millisecond)
			handled.Add(1)
			return nil, nil
		},
	}, nil)
	done := callAsync(context.Background(), p.c, "m", nil, nil)
	p.recv()
	for range n {
		p.send(`{"jsonrpc":"2.0","method":"note"}`)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":null}`)
	p.w.Close()
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if got := handled.Load(); got != n {
		t.Fatalf("Call returned after %d of %d notifications", got, n)
	}
}

type closeCounter struct {
	io.Reader
	io.Writer
	closes atomic.Int32
}

func (c *closeCounter) Close() error {
	c.closes.Add(1)
	return nil
}

func TestCloseClosesStreams(t *testing.T) {
	pr, pw := io.Pipe()
	r := &closeCounter{Reader: pr}
	w := &closeCounter{Writer: io.Discard}
	c := NewConn(r, w, nil, nil)
	pr.Close() // let the reader finish; the Conn itself cannot unblock a closeCounter
	c.Close()
	pw.Close()
	if r.closes.Load() != 1 || w.closes.Load() != 1 {
		t.Fatalf("closes: r=%d w=%d, want 1 each", r.closes.Load(), w.closes.Load())
	}

	pr, pw = io.Pipe()
	rw := &closeCounter{Reader: pr, Writer: io.Discard}
	c = NewConn(rw, rw, nil, nil)
	pr.Close()
	c.Close()
	pw.Close()
	if n := rw.closes.Load(); n != 1 {
		t.Fatalf("shared stream closed %d times, want 1", n)
	}
}

// TestCloseWhileRequestsArrive closes the serving side of connections at
// random moments while concurrent requests pour in, some started by the
// read goroutine itself and some through the dispatcher: nothing panics,
// every call ends with its own answer or an error, and no goroutine is
// left behind (TestMain checks).
func TestCloseWhileRequestsArrive(t *testing.T) {
	for i := range 50 {
		client, srv := pipePair(t, echoHandler, &Options{MaxConcurrentRequests: 4})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for j := 0; ; j++ {
					var r benchResult
					if err := client.Call(context.Background(), "bench/echo", &benchParams{Count: j}, &r); err != nil {
						return // ErrClosed, or the write on the closed pipe
					}
					if r.Count != j {
						t.Errorf("call %d answered %+v", j, r)
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(i%10) * 100 * time.Microsecond)
		srv.Close()
		client.Close()
		wg.Wait()
	}
}
