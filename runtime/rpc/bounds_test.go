package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// countingReader counts the bytes the Conn has taken from its input.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// flood writes line to w total times from a goroutine, with "#" replaced
// by the line's number (zero-padded to six digits). It returns the number
// of lines written so far and a channel that receives the outcome.
func flood(w io.Writer, line string, total int) (sent *atomic.Int64, done <-chan error) {
	sent = new(atomic.Int64)
	ch := make(chan error, 1)
	go func() {
		for i := range total {
			l := strings.Replace(line, "#", fmt.Sprintf("%06d", i), 1)
			if _, err := io.WriteString(w, l+"\n"); err != nil {
				ch <- err
				return
			}
			sent.Add(1)
		}
		ch <- nil
	}()
	return sent, ch
}

// waitStalled waits, in a testing/synctest bubble, until every other goroutine of the bubble is blocked
// for good (the peer in a write the Conn does not read, the Conn waiting for room) and returns n.
func waitStalled(n *atomic.Int64) int64 {
	synctest.Wait()
	return n.Load()
}

// TestBackpressureStopsReading: with the handlers stuck the Conn stops
// reading once its queue is full, so the peer's writes block; nothing is
// dropped once the handlers go on.
func TestBackpressureStopsReading(t *testing.T) {
	for _, tt := range []struct {
		name  string
		line  string
		slots int
	}{
		{"notifications", `{"jsonrpc":"2.0","method":"block"}`, 1},
		{"inline requests", `{"jsonrpc":"2.0","id":"#","method":"block"}`, 1},
		{"concurrent requests", `{"jsonrpc":"2.0","id":"#","method":"block"}`, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit, total = 4, 20_000
				release := make(chan struct{})
				var handled atomic.Int64
				inR, inW := io.Pipe()
				defer inW.Close()
				in := &countingReader{r: inR}
				p := newRawPeerOn(t, in, inW, methods{
					"block": func(context.Context, *rpc.Request) (any, error) {
						<-release
						handled.Add(1)
						return nil, nil
					},
					"count": func(context.Context, *rpc.Request) (any, error) { return handled.Load(), nil },
				}, &rpc.Options{QueueSize: limit, MaxConcurrentRequests: tt.slots})

				sent, writerDone := flood(inW, tt.line, total)
				stalledAt := waitStalled(sent)
				if stalledAt >= total {
					t.Fatalf("peer wrote all %d messages while the handlers were blocked", total)
				}
				// Taken from the pipe: what is queued, what runs, one line the
				// dispatcher holds, and the read buffer.
				lineLen := int64(len(tt.line) + 1)
				bound := int64(limit+tt.slots+2)*lineLen + 4096
				if got := in.n.Load(); got > bound {
					t.Fatalf("Conn read %d bytes (%d lines) with its handlers blocked, want at most %d", got, got/lineLen, bound)
				}
				t.Logf("peer stalled after %d messages; Conn read %d bytes", stalledAt, in.n.Load())

				close(release)
				if err := wait(t, writerDone); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(tt.line, `"id"`) {
					seen := make(map[string]bool, total)
					for range total {
						r := parseReply(t, p.recv())
						if r.Error != nil || string(r.Result) != "null" || seen[string(r.ID)] {
							t.Fatalf("reply %+v (id %s), want one null result per request", r, r.ID)
						}
						seen[string(r.ID)] = true
					}
				}
				p.send(`{"jsonrpc":"2.0","id":"count","method":"count"}`)
				p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":"count","result":%d}`, total))
			})
		})
	}
}

// TestQueueBytesBound: the inbound queue is bounded in bytes too, long
// method names included.
func TestQueueBytesBound(t *testing.T) {
	const queueBytes = 1 << 20
	long := strings.Repeat("x", 8<<10)
	for _, tt := range []struct{ name, line string }{
		{"long params", `{"jsonrpc":"2.0","method":"block","params":"` + long + `"}`},
		{"long method names", `{"jsonrpc":"2.0","method":"#` + long + `"}`},
		{"long ids", `{"jsonrpc":"2.0","id":"#` + long + `","method":"block"}`}, // distinct: a duplicate is refused, not queued
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				inR, inW := io.Pipe()
				defer inW.Close()
				in := &countingReader{r: inR}
				newRawPeerOn(t, in, inW, rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) {
					<-release
					return nil, nil
				}), &rpc.Options{QueueBytes: queueBytes})
				sent, _ := flood(inW, tt.line, 1000)
				waitStalled(sent)
				// The queue up to its bound less the reserve (no handler waits
				// for the peer), the message being handled, the one that
				// crossed the bound, and read-ahead.
				if got, bound := in.n.Load(), int64(queueBytes/2+3*len(tt.line)+128<<10); got > bound {
					t.Fatalf("Conn read %d KiB with its handler blocked, want at most %d KiB", got>>10, bound>>10)
				}
			})
		})
	}
}

// TestCallbackWhileQueueFull: a handler that calls back into the peer
// while the queue is full gets its reply. Meanwhile the Conn reads on into
// the queue's reserve: notifications are queued, requests refused as
// overloaded.
func TestCallbackWhileQueueFull(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		ready := make(chan struct{})
		var notes atomic.Int32
		var p *rawPeer
		p = tr.rawPeer(t, methods{
			"work": func(ctx context.Context, _ *rpc.Request) (any, error) {
				<-ready
				var s string
				err := p.c.Call(ctx, "callback", nil, &s)
				return s, err
			},
			"note": func(context.Context, *rpc.Request) (any, error) { notes.Add(1); return nil, nil },
			"req":  func(context.Context, *rpc.Request) (any, error) { return "ok", nil },
		}, &rpc.Options{QueueSize: 4})
		p.send(`{"jsonrpc":"2.0","id":"w","method":"work"}`)
		p.send(`{"jsonrpc":"2.0","method":"note"}`, `{"jsonrpc":"2.0","method":"note"}`) // the queue is full but for its reserve
		more := make(chan struct{})
		go func() {
			defer close(more)
			p.send(`{"jsonrpc":"2.0","method":"note"}`, `{"jsonrpc":"2.0","id":5,"method":"req"}`)
		}()
		select {
		case <-more:
			t.Fatal("the peer's writes went through with the queue full")
		case <-time.After(50 * time.Millisecond):
		}
		close(ready)
		// The callback and the refusal of request 5, which the reader reads as
		// soon as the handler is inside Call, go out in either order.
		want := []string{
			`{"jsonrpc":"2.0","id":1,"method":"callback","params":{}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32050,"message":"overloaded: too many inbound messages queued; retry later"}}`,
		}
		got := []string{p.recv(), p.recv()}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("Conn wrote %q, want %q", got, want)
		}
		wait(t, more)
		if fe := p.frameError(); fe.Kind != rpc.FrameOverloaded || fe.ID.String() != "5" {
			t.Fatalf("frame error %+v", fe)
		}
		p.send(`{"jsonrpc":"2.0","id":1,"result":"pong"}`)
		p.expect(`{"jsonrpc":"2.0","id":"w","result":"pong"}`)
		p.send(`{"jsonrpc":"2.0","id":6,"method":"req"}`)
		p.expect(`{"jsonrpc":"2.0","id":6,"result":"ok"}`)
		if n := notes.Load(); n != 3 {
			t.Fatalf("%d notifications handled, want 3", n)
		}
	})
}

// TestCallbackBoundedWhilePeerFloods: while a handler waits for the peer,
// a peer that floods notifications instead of answering is read up to the
// queue's bound, reserve included, no further.
func TestCallbackBoundedWhilePeerFloods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queueBytes = 256 << 10
		inR, inW := io.Pipe()
		defer inW.Close()
		in := &countingReader{r: inR}
		calling := make(chan struct{})
		var p *rawPeer
		p = newRawPeerOn(t, in, inW, methods{
			"work": func(ctx context.Context, _ *rpc.Request) (any, error) {
				close(calling)
				return nil, p.c.Call(ctx, "callback", nil, nil)
			},
		}, &rpc.Options{QueueBytes: queueBytes})
		io.WriteString(inW, `{"jsonrpc":"2.0","id":"w","method":"work"}`+"\n")
		wait(t, calling)
		line := `{"jsonrpc":"2.0","method":"note","params":"` + strings.Repeat("x", 8<<10) + `"}`
		sent, _ := flood(inW, line, 1000)
		stalled := waitStalled(sent)
		if stalled >= 1000 {
			t.Fatal("the peer's flood was read whole")
		}
		if got, bound := in.n.Load(), int64(queueBytes+3*len(line)+128<<10); got > bound {
			t.Fatalf("Conn read %d bytes while its handler waited, want at most %d", got, bound)
		}
		t.Logf("flood stalled after %d lines, %d KiB read", stalled, in.n.Load()>>10)
	})
}

// TestSlotWaitKeepsReading: all concurrency slots are taken by handlers
// calling back into the peer, the dispatcher waits for a slot, and the
// replies sit behind a burst of notifications.
func TestSlotWaitKeepsReading(t *testing.T) {
	const slots = 2
	ready := make(chan struct{})
	var server *rpc.Conn
	serverHandler := methods{
		"note": func(context.Context, *rpc.Request) (any, error) { return nil, nil },
		"work": func(ctx context.Context, _ *rpc.Request) (any, error) {
			<-ready
			var s string
			err := server.Call(ctx, "callback", nil, &s)
			return s, err
		},
	}
	clientHandler := methods{"callback": func(context.Context, *rpc.Request) (any, error) { return "pong", nil }}
	client, srv := ndjsonOS.pair(t, clientHandler, nil, serverHandler, &rpc.Options{QueueSize: 8, MaxConcurrentRequests: slots})
	server = srv
	var calls []<-chan error
	for range slots + 1 {
		calls = append(calls, callAsync(context.Background(), client, "work", nil, nil))
	}
	for range 3 { // fewer than the queue's bound less its reserve (4): a work request may arrive after them
		if err := client.Notify(context.Background(), "note", nil); err != nil {
			t.Fatal(err)
		}
	}
	close(ready)
	for _, done := range calls {
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNotificationBurstDeliveredOverOSPipe: a large burst is delivered
// whole through a slow-ish consumer.
func TestNotificationBurstDeliveredOverOSPipe(t *testing.T) {
	const total = 50_000
	var handled atomic.Int64
	server := methods{
		"note": func(context.Context, *rpc.Request) (any, error) {
			if handled.Add(1)%500 == 0 {
				time.Sleep(time.Millisecond)
			}
			return nil, nil
		},
		"count": func(context.Context, *rpc.Request) (any, error) { return handled.Load(), nil },
	}
	client, _ := ndjsonOS.pair(t, nil, nil, server, nil)
	ctx := context.Background()
	params := map[string]any{"sessionId": "s1", "update": map[string]string{"kind": "text", "text": "chunk"}}
	start := time.Now()
	for range total {
		if err := client.Notify(ctx, "note", params); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := client.Call(ctx, "count", nil, &n); err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Fatalf("server handled %d notifications, want %d", n, total)
	}
	t.Logf("%d notifications in %v", total, time.Since(start))
}

// TestMaxEcho: error replies repeat at most MaxEcho bytes of a method name.
func TestMaxEcho(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		name := strings.Repeat("m", 1<<20)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"` + name + `"}`)
		want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: ` + name[:rpc.MaxEcho] + `…"}}`
		p.expect(want)
		if len(want) > 300 {
			t.Fatalf("reply of %d bytes", len(want))
		}
	})
}

// TestRepliesWaitForSlowPeer: a reply is written by its handler's
// goroutine, which waits for the peer to read it: with a peer that does not
// read, no more handlers return than there are slots, and nothing piles up.
func TestRepliesWaitForSlowPeer(t *testing.T) {
	for _, slots := range []int{1, 4} {
		t.Run(fmt.Sprintf("MaxConcurrentRequests=%d", slots), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const resultSize, total = 10 << 10, 100
				open := make(chan struct{})
				var sink syncBuffer
				inR, inW := io.Pipe()
				defer inW.Close()
				var returned atomic.Int64
				result := strings.Repeat("r", resultSize)
				c := jsonrpc.NewConn(inR, gateWriter{open: open, w: &sink}, rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) {
					returned.Add(1)
					return result, nil
				}), &rpc.Options{MaxConcurrentRequests: slots})
				defer c.Close()
				_, writerDone := flood(inW, `{"jsonrpc":"2.0","id":"#","method":"m"}`, total)
				got := waitStalled(&returned)
				// One handler per slot, each waiting for its reply's write.
				if bound := int64(slots); got > bound {
					t.Fatalf("%d handlers returned while the peer read nothing, want at most %d", got, bound)
				}
				t.Logf("%d handlers returned while the peer read nothing", got)
				close(open)
				if err := wait(t, writerDone); err != nil {
					t.Fatal(err)
				}
				inW.Close()
				wait(t, c.Done()) // every reply written
				if n := strings.Count(sink.String(), "\n"); n != total {
					t.Fatalf("%d of %d replies written", n, total)
				}
			})
		})
	}
}

// sampleHeap records the highest value of field in the memory statistics,
// read every period, until the returned function is called; that function
// returns it.
func sampleHeap(period time.Duration, field func(*runtime.MemStats) uint64) (stop func() uint64) {
	done := make(chan struct{})
	peak := make(chan uint64, 1)
	go func() {
		var m runtime.MemStats
		var highest uint64
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			highest = max(highest, field(&m))
			select {
			case <-done:
				peak <- highest
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-peak
	}
}

// heapInuse returns the bytes of in-use heap spans after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestNonReadingPeerHugeLines: a peer that never reads its stdin (our
// output) sends 1 MiB lines. The process's heap stays bounded while the
// connection is blocked on writing; once the peer reads, every line is
// answered.
func TestNonReadingPeerHugeLines(t *testing.T) {
	// The race detector makes each 1 MiB line cost tens of milliseconds to
	// scan. A stall is reached within a handful of lines either way, so
	// fewer lines still prove the bound.
	lines, size := 300, 1<<20
	if raceEnabled {
		lines = 60
	}
	big := strings.Repeat("x", size)
	for _, tt := range []struct{ name, line string }{
		{"long method name", `{"jsonrpc":"2.0","id":1,"method":"#` + big + `"}`},
		{"long params", `{"jsonrpc":"2.0","id":1,"method":"nope","params":"` + big + `"}`},
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":` + big},
		{"long notification method", `{"jsonrpc":"2.0","method":"#` + big + `"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The heap is sampled with the real clock, outside the bubble.
			stopSampling := sampleHeap(5*time.Millisecond, func(m *runtime.MemStats) uint64 { return m.HeapInuse })
			synctest.Test(t, func(t *testing.T) {
				inR, inW := io.Pipe()
				defer inW.Close()
				pr, cw := io.Pipe() // never read until the end: our writes block
				defer pr.Close()
				filled := make(chan struct{})
				c := jsonrpc.NewConn(inR, cw, methods{
					"fill": func(context.Context, *rpc.Request) (any, error) {
						defer close(filled)
						return strings.Repeat("f", 256<<10), nil
					},
				}, nil)
				defer c.Close()
				io.WriteString(inW, `{"jsonrpc":"2.0","id":"fill","method":"fill"}`+"\n")
				wait(t, filled)
				before := heapInuse()

				sent, writerDone := flood(inW, tt.line, lines)
				stalledAt := waitStalled(sent)
				heapPeak := stopSampling()
				live := heapInuse()
				t.Logf("%d of %d lines taken while blocked on writing; heap in use %d MiB before, peak %d MiB, live %d MiB",
					stalledAt, lines, before>>20, heapPeak>>20, live>>20)
				if growth := int64(live) - int64(before); growth > 64<<20 {
					t.Errorf("live heap grew by %d MiB while blocked on writing", growth>>20)
				}
				if heapPeak > 128<<20 {
					t.Errorf("heap in use peaked at %d MiB", heapPeak>>20)
				}
				select {
				case <-c.Done():
					t.Fatalf("connection ended: %v", c.Err())
				default:
				}

				// The peer reads: every line is answered.
				replies := make(chan int, 1)
				go func() {
					r := ndjson.NewReader(pr, 1<<20)
					n := 0
					for {
						if _, err := r.ReadFrame(); err != nil {
							replies <- n
							return
						}
						n++
					}
				}()
				if err := wait(t, writerDone); err != nil {
					t.Fatal(err)
				}
				inW.Close()
				wait(t, c.Done())
				want := lines + 1
				if strings.Contains(tt.name, "notification") {
					want = 1
				}
				if n := wait(t, replies); n != want {
					t.Fatalf("%d replies, want %d", n, want)
				}
				if err := c.Err(); !errors.Is(err, io.EOF) {
					t.Fatalf("Err() = %v", err)
				}
			})
		})
	}
}

// newRawPeerOn is newRawPeer with the Conn reading from in, which w feeds.
func newRawPeerOn(t testing.TB, in io.Reader, w io.WriteCloser, h rpc.Handler, opts *rpc.Options) *rawPeer {
	t.Helper()
	pr, cw := io.Pipe()
	p := &rawPeer{t: t, w: w, lines: make(chan string, 1<<16), frameErrs: make(chan *rpc.FrameError, 1024)}
	var o rpc.Options
	if opts != nil {
		o = *opts
	}
	o.OnFrameError = func(fe *rpc.FrameError) {
		select {
		case p.frameErrs <- fe:
		default:
		}
	}
	p.c = jsonrpc.NewConn(in, cw, h, &o)
	var wg sync.WaitGroup
	wg.Go(func() {
		r := ndjson.NewReader(pr, 64<<20)
		for {
			f, err := r.ReadFrame()
			if err != nil {
				return
			}
			p.lines <- string(f)
		}
	})
	t.Cleanup(func() {
		p.c.Close()
		pr.Close()
		wg.Wait()
	})
	return p
}
