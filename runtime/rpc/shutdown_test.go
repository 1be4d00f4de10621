package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestCallCancelledWhileWaitingForResponse(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := callAsync(ctx, p.c, "m", nil, nil)
		p.recv()
		cancel()
		if err := wait(t, done); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		// The call is forgotten: its late reply is unknown.
		p.send(`{"jsonrpc":"2.0","id":1,"result":null}`)
		if fe := p.frameError(); fe.Kind != rpc.FrameUnknownResponse {
			t.Fatalf("late reply: frame error %+v", fe)
		}
	})
}

func TestCallWithDoneContextWritesNothing(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		// With a cancel rule for the method too: a request that was never
		// sent needs no cancel message.
		p := tr.rawPeer(t, nil, &rpc.Options{Cancels: []rpc.CancelRule{
			{Method: "session/cancel", Target: "session/prompt", Key: "sessionId"},
			{Method: "$/cancel_request", ByID: "requestId"},
		}})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.c.Call(ctx, "m", nil, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Call err = %v", err)
		}
		if err := p.c.Call(ctx, "session/prompt", map[string]string{"sessionId": "s1"}, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Call err = %v", err)
		}
		if err := p.c.Notify(ctx, "m", nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Notify err = %v", err)
		}
		p.expectSilence()
	})
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
	entered := make(chan struct{}, 1)
	c := jsonrpc.NewConn(cr, enteringWriter{cw, entered}, nil, nil)
	defer c.Close()

	big := jsontext.Value(`"` + string(bytes.Repeat([]byte("x"), 1<<20)) + `"`)
	stuck := callAsync(context.Background(), c, "big", big, nil)
	wait(t, entered) // more than the pipe holds: the Write blocks

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
	if err := wait(t, stuck); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("blocked call err = %v, want ErrClosed", err)
	}
	wait(t, closed)
}

func TestPeerEOFFailsPendingCalls(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
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
			if err := wait(t, done); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, io.EOF) {
				t.Fatalf("pending call err = %v, want ErrClosed and io.EOF", err)
			}
		}
		wait(t, p.c.Done())
		if err := p.c.Err(); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, io.EOF) {
			t.Fatalf("Err() = %v", err)
		}
		if err := p.c.Call(context.Background(), "m", nil, nil); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("Call after EOF = %v", err)
		}
		if err := p.c.Notify(context.Background(), "m", nil); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("Notify after EOF = %v", err)
		}
	})
}

// TestEOFAnswersEveryRequest: when the peer's input ends, every request
// already read is handled and answered, and every reply written, before
// Done is closed; an unterminated last line counts.
func TestEOFAnswersEveryRequest(t *testing.T) {
	for _, n := range []int{1, 100} {
		for _, slots := range []int{1, 4} {
			for _, unterminated := range []bool{false, true} {
				name := fmt.Sprintf("requests=%d/MaxConcurrentRequests=%d/unterminated=%v", n, slots, unterminated)
				t.Run(name, func(t *testing.T) {
					var in strings.Builder
					want := make([]string, n)
					for i := range n {
						fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"work","params":%d}`+"\n", i, i)
						want[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i, i)
					}
					input := in.String()
					if unterminated {
						input = strings.TrimSuffix(input, "\n")
					}
					var out syncBuffer
					c := jsonrpc.NewConn(strings.NewReader(input), &out, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
						time.Sleep(100 * time.Microsecond)
						return req.Params, nil
					}), &rpc.Options{MaxConcurrentRequests: slots, QueueSize: 8})
					defer c.Close()
					wait(t, c.Done())
					got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
					if slots > 1 {
						slices.Sort(got)
						slices.Sort(want)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("written by Done:\n%s\nwant %d replies", out.String(), n)
					}
					if err := c.Err(); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, io.EOF) {
						t.Fatalf("Err() = %v, want ErrClosed and io.EOF", err)
					}
				})
			}
		}
	}
}

// TestEOFWhileHandlerRuns: at the peer's EOF pending calls fail at once,
// while a running handler goes on with a live context, can no longer call
// the peer, and has its reply written before Done.
func TestEOFWhileHandlerRuns(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, slots := range []int{1, 4} {
			t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", slots), func(t *testing.T) {
				running := make(chan context.Context, 1)
				release := make(chan struct{})
				var p *rawPeer
				callback := make(chan error, 1)
				p = tr.rawPeer(t, rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
					running <- ctx
					<-release
					callback <- p.c.Call(ctx, "back", nil, nil)
					return "done", ctx.Err()
				}), &rpc.Options{MaxConcurrentRequests: slots})
				pending := callAsync(context.Background(), p.c, "m", nil, nil)
				p.expect(`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`)
				p.send(`{"jsonrpc":"2.0","id":"r","method":"slow"}`)
				ctx := wait(t, running)
				p.w.Close()
				start := time.Now()
				if err := wait(t, pending); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, io.EOF) {
					t.Fatalf("pending call err = %v, want ErrClosed and io.EOF", err)
				}
				t.Logf("pending call failed %v after EOF", time.Since(start))
				select {
				case <-p.c.Done():
					t.Fatal("Done closed while a handler runs")
				case <-time.After(20 * time.Millisecond):
				}
				if ctx.Err() != nil {
					t.Fatal("handler context ended at EOF")
				}
				close(release)
				if err := wait(t, callback); !errors.Is(err, rpc.ErrClosed) {
					t.Fatalf("call from a handler after EOF = %v, want ErrClosed", err)
				}
				p.expect(`{"jsonrpc":"2.0","id":"r","result":"done"}`)
				wait(t, p.c.Done())
			})
		}
	})
}

func TestReadErrorShutsDown(t *testing.T) {
	boom := errors.New("boom")
	c := jsonrpc.NewConn(iotest.ErrReader(boom), io.Discard, nil, nil)
	defer c.Close()
	wait(t, c.Done())
	if err := c.Err(); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, boom) {
		t.Fatalf("Err() = %v", err)
	}
}

func TestCloseFailsPendingCallsAndIsIdempotent(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
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
		if err := wait(t, done); !errors.Is(err, rpc.ErrClosed) || errors.Is(err, io.EOF) {
			t.Fatalf("pending call err = %v, want ErrClosed", err)
		}
		select {
		case <-p.c.Done():
		default:
			t.Fatal("Done not closed after Close")
		}
		if err := p.c.Err(); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("Err() = %v", err)
		}
		if err := p.c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.c.Call(context.Background(), "m", nil, nil); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("Call after Close = %v", err)
		}
		if err := p.c.Notify(context.Background(), "m", nil); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("Notify after Close = %v", err)
		}
	})
}

func TestCloseCancelsAndWaitsForHandlers(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, slots := range []int{1, 4} {
			var finished atomic.Int32
			started := make(chan struct{}, 4)
			h := rpc.HandlerFunc(func(ctx context.Context, _ *rpc.Request) (any, error) {
				started <- struct{}{}
				<-ctx.Done()
				time.Sleep(20 * time.Millisecond)
				finished.Add(1)
				return nil, ctx.Err()
			})
			p := tr.rawPeer(t, h, &rpc.Options{MaxConcurrentRequests: slots})
			for i := range slots {
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i))
				wait(t, started)
			}
			p.c.Close()
			if got := finished.Load(); got != int32(slots) {
				t.Fatalf("slots=%d: Close returned with %d of %d handlers finished", slots, got, slots)
			}
		}
	})
}

// closeWithin closes c and fails the test if that takes longer than limit.
func closeWithin(t *testing.T, c *rpc.Conn, limit time.Duration) {
	t.Helper()
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	wait(t, closed)
	if d := time.Since(start); d > limit {
		t.Errorf("Close took %v, want at most %v", d, limit)
	}
}

// TestCloseWithBlockedRead: Close returns at once while the reader is
// blocked in Read, whether or not the input can be closed, ending and
// waiting for the running handlers.
func TestCloseWithBlockedRead(t *testing.T) {
	for _, closer := range []bool{false, true} {
		t.Run(fmt.Sprintf("closer=%v", closer), func(t *testing.T) {
			running := make(chan struct{})
			var sawCancel atomic.Bool
			var in io.Reader
			release := make(chan struct{})
			defer close(release) // the stuck Read returns, for goleak
			reads := make(chan struct{}, 8)
			var pw *io.PipeWriter
			if closer {
				var pr *io.PipeReader
				pr, pw = io.Pipe()
				in = struct {
					signalReader
					io.Closer
				}{signalReader{pr, reads}, pr}
			} else {
				pr, w := io.Pipe()
				pw = w
				in = signalReader{io.MultiReader(pr, blockingReader{release}), reads}
			}
			defer pw.Close()
			c := jsonrpc.NewConn(in, io.Discard, rpc.HandlerFunc(func(ctx context.Context, _ *rpc.Request) (any, error) {
				close(running)
				<-ctx.Done()
				time.Sleep(10 * time.Millisecond)
				sawCancel.Store(true)
				return nil, ctx.Err()
			}), nil)
			io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n")
			if !closer {
				pw.Close() // the reader goes on to the Read that blocks forever
			}
			wait(t, running)
			wait(t, reads) // the line
			wait(t, reads) // the reader is back in Read
			closeWithin(t, c, time.Second)
			if !sawCancel.Load() {
				t.Error("Close returned before the handler saw its context end")
			}
			wait(t, c.Done())
		})
	}
}

// TestCloseWithBlockedWrite: Close returns at once while a reply or a
// notification is blocked in Write, whether or not the output can be
// closed; a blocked Notify then fails with ErrClosed once its Write returns.
func TestCloseWithBlockedWrite(t *testing.T) {
	for _, closer := range []bool{false, true} {
		for _, who := range []string{"reply", "notify", "handler's notify"} {
			t.Run(fmt.Sprintf("closer=%v/%s", closer, who), func(t *testing.T) {
				release := make(chan struct{})
				entered := make(chan struct{}, 1)
				var out io.Writer = blockingWriter{release: release, entered: entered}
				if closer {
					pr, pw := io.Pipe() // never read
					defer pr.Close()
					out = enteringWriter{pw, entered}
				}
				inR, inW := io.Pipe()
				defer inW.Close()
				notified := make(chan error, 1)
				var c *rpc.Conn
				// A handler that notifies the peer from its own goroutine
				// and is then stuck in that Write: Close must not wait for it.
				h := rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
					notified <- c.Notify(ctx, "progress", nil)
					return nil, nil
				})
				var handler rpc.Handler // none: requests are answered -32601
				if who == "handler's notify" {
					handler = h
				}
				c = jsonrpc.NewConn(inR, out, handler, nil)
				switch who {
				case "reply":
					go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n")
				case "notify":
					go func() { notified <- c.Notify(context.Background(), "n", nil) }()
				case "handler's notify":
					go io.WriteString(inW, `{"jsonrpc":"2.0","method":"start"}`+"\n")
				}
				wait(t, entered)
				closeWithin(t, c, time.Second)
				wait(t, c.Done())
				close(release)
				if who != "reply" {
					if err := wait(t, notified); !errors.Is(err, rpc.ErrClosed) {
						t.Errorf("blocked Notify = %v, want ErrClosed", err)
					}
				}
			})
		}
	}
}

// TestWriteErrorEndsConnection: a write that fails (the peer closed its
// end of the pipe: EPIPE) ends the connection with that error, whoever
// wrote: a reply, a call or a notification.
func TestWriteErrorEndsConnection(t *testing.T) {
	for _, who := range []string{"reply", "call", "notify"} {
		t.Run(who, func(t *testing.T) {
			cr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close()
			pr, cw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			c := jsonrpc.NewConn(cr, cw, okHandler, nil)
			defer c.Close()
			// A call the peer reads; then the peer stops reading.
			pending := callAsync(context.Background(), c, "pending", nil, nil)
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil || !strings.Contains(line, `"pending"`) {
				t.Fatalf("peer read %q, %v", line, err)
			}
			pr.Close()
			var own error
			switch who {
			case "reply":
				io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n")
			case "call":
				own = c.Call(context.Background(), "c", nil, nil)
			case "notify":
				own = c.Notify(context.Background(), "n", nil)
			}
			if who != "reply" && (!errors.Is(own, rpc.ErrClosed) || !errors.Is(own, syscall.EPIPE)) {
				t.Errorf("the failed %s = %v, want ErrClosed and EPIPE", who, own)
			}
			wait(t, c.Done())
			if err := c.Err(); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("Err() = %v, want ErrClosed and EPIPE", err)
			}
			if err := wait(t, pending); !errors.Is(err, rpc.ErrClosed) || !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("pending call = %v, want ErrClosed and EPIPE", err)
			}
			if err := c.Notify(context.Background(), "n", nil); !errors.Is(err, rpc.ErrClosed) {
				t.Fatalf("Notify after the write error = %v, want ErrClosed", err)
			}
		})
	}
}

// TestQueueAfterPeerEOF: everything received before EOF is still handled,
// requests included, and the requests are answered.
func TestQueueAfterPeerEOF(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const n = 100
		var handled, requests atomic.Int32
		release := make(chan struct{})
		p := tr.rawPeer(t, methods{
			"first": func(ctx context.Context, _ *rpc.Request) (any, error) {
				<-release // until EOF has been seen
				return nil, nil
			},
			"note": func(context.Context, *rpc.Request) (any, error) {
				time.Sleep(100 * time.Microsecond)
				handled.Add(1)
				return nil, nil
			},
			"req": func(context.Context, *rpc.Request) (any, error) { requests.Add(1); return "answered", nil },
		}, nil)
		pending := callAsync(context.Background(), p.c, "m", nil, nil)
		p.recv()
		p.send(`{"jsonrpc":"2.0","method":"first"}`, `{"jsonrpc":"2.0","id":1,"method":"req"}`)
		for range n {
			p.send(`{"jsonrpc":"2.0","method":"note"}`)
		}
		p.w.Close()
		wait(t, pending) // fails once the input has ended
		close(release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":"answered"}`)
		wait(t, p.c.Done())
		if got := handled.Load(); got != n {
			t.Fatalf("%d of %d notifications handled after EOF", got, n)
		}
		if requests.Load() != 1 {
			t.Fatal("request not handled after EOF")
		}
	})
}

func TestBarrierHoldsAcrossPeerEOF(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const n = 20
		var handled atomic.Int32
		p := tr.rawPeer(t, methods{
			"note": func(context.Context, *rpc.Request) (any, error) {
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
	})
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
	c := jsonrpc.NewConn(r, w, nil, nil)
	pr.Close() // let the reader finish; the Conn itself cannot unblock a closeCounter
	c.Close()
	pw.Close()
	if r.closes.Load() != 1 || w.closes.Load() != 1 {
		t.Fatalf("closes: r=%d w=%d, want 1 each", r.closes.Load(), w.closes.Load())
	}

	pr, pw = io.Pipe()
	rw := &closeCounter{Reader: pr, Writer: io.Discard}
	c = jsonrpc.NewConn(rw, rw, nil, nil)
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
	forTransports(t, func(t *testing.T, tr transport) {
		for i := range 50 {
			client, srv := tr.clientServer(t, echoHandler, &rpc.Options{MaxConcurrentRequests: 4})
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
	})
}
