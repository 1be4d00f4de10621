package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// The testing.B form of the scenarios. Run them with
//
//	go test -run '^$' -bench . -benchtime 2s
//
// or a subset, e.g. -bench 'RoundTrip/inmem/seq'. Client and server live in
// the same process, so allocs/op counts both sides. cmd/benchreport runs
// the same scenarios in isolated processes and builds the report.

func BenchmarkCodec(b *testing.B) {
	params := NewPrompt()
	for _, c := range []struct {
		name string
		f    func(*bytes.Buffer, int64, string, any) error
	}{{"encode/v1-double", EncodeV1Double}, {"encode/v1-single", EncodeV1Single}, {"encode/v2-single", EncodeV2Single}} {
		b.Run(c.name, func(b *testing.B) {
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := c.f(&buf, 12345, MethodPrompt, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	frame := RequestFrame()
	for _, c := range []struct {
		name string
		f    func([]byte, *PromptParams) error
	}{{"decode/v1", DecodeV1}, {"decode/v2", DecodeV2}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				var p PromptParams
				if err := c.f(frame, &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionUpdateDecode decodes session/update params into
// bridgekit's gen/acp types and into acp-go-sdk's, on the same documents
// (Harn's into bridgekit's alone, through gen/harn as a Harn host does).
func BenchmarkSessionUpdateDecode(b *testing.B) {
	for _, d := range UpdateDocs() {
		b.Run(d.Name+"/bridgekit", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(d.JSON)))
			for b.Loop() {
				var n acp.SessionNotification
				if err := d.decodeBridgekit(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
		if d.BridgekitOnly {
			continue
		}
		b.Run(d.Name+"/acp-go-sdk", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(d.JSON)))
			for b.Loop() {
				var n acpsdk.SessionNotification
				if err := DecodeUpdateACPSDK(d.JSON, &n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNotifySend is a runtime's outbound path: Notify on a connection
// writing to io.Discard.
func BenchmarkNotifySend(b *testing.B) {
	for _, rt := range append(Runtimes(), References()...) {
		b.Run(rt.Key(), func(b *testing.B) {
			benchNotifySend(b, rt)
		})
	}
}

func benchNotifySend(b *testing.B, rt Runtime) {
	pr, pw := io.Pipe() // never written: the connection just waits to read
	c := rt.Open(pr, discard{}, nil)
	b.Cleanup(func() {
		pw.Close()
		closeWithin(c, time.Second)
	})
	params := NewPrompt()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Notify(ctx, MethodUpdate, params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNotifyReceive is a runtime's inbound path, per notification,
// fed in batches of 100 pre-encoded frames.
func BenchmarkNotifyReceive(b *testing.B) {
	const batch = 100
	for _, rt := range append(Runtimes(), References()...) {
		b.Run(rt.Key(), func(b *testing.B) {
			f, err := NewFeeder(rt, batch)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if err := f.Round(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*batch), "ns/msg")
		})
	}
}

// BenchmarkRoundTrip: session/prompt round trips with 1 (seq) or 16 (par16)
// callers, in memory (io.Pipe) or to a child process over stdio.
func BenchmarkRoundTrip(b *testing.B) {
	for _, transport := range []string{"inmem", "child"} {
		for _, mode := range []string{"seq", "par16"} {
			for _, rt := range append(Runtimes(), Variants()...) {
				b.Run(fmt.Sprintf("%s/%s/%s", transport, mode, rt.Key()), func(b *testing.B) {
					var c Conn
					if transport == "inmem" {
						p := NewPair(rt, &Service{})
						b.Cleanup(func() { p.Close(time.Second) })
						c = p.Client
					} else {
						ch, err := StartChild(rt, testExe)
						if err != nil {
							b.Fatal(err)
						}
						b.Cleanup(func() { ch.Close(5 * time.Second) })
						c = ch.Conn
					}
					benchRoundTrips(b, c, mode == "par16")
				})
			}
		}
	}
}

// BenchmarkPipePingPong is what the in-memory round trip costs with no
// runtime and no JSON: the standard request's line and a reply's go
// through the same two io.Pipes, read with bufio.Reader.ReadSlice, the
// client's reader handing each reply to the caller over a channel, as a
// runtime's does.
func BenchmarkPipePingPong(b *testing.B) {
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": MethodPrompt, "params": NewPrompt()})
	if err != nil {
		b.Fatal(err)
	}
	req = append(req, '\n')
	reply := []byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","echoed":2}}` + "\n")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	defer outR.Close()
	go func() {
		defer outW.Close()
		r := bufio.NewReaderSize(inR, 64<<10)
		for {
			if _, err := r.ReadSlice('\n'); err != nil {
				return
			}
			if _, err := outW.Write(reply); err != nil {
				return
			}
		}
	}()
	got := make(chan struct{}, 1)
	go func() {
		r := bufio.NewReaderSize(outR, 64<<10)
		for {
			if _, err := r.ReadSlice('\n'); err != nil {
				close(got)
				return
			}
			got <- struct{}{}
		}
	}()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		if _, err := inW.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, ok := <-got; !ok {
			b.Fatal("pipe closed")
		}
	}
}

func benchRoundTrips(b *testing.B, c Conn, parallel bool) {
	params := NewPrompt()
	want := promptSize(params)
	call := func(ctx context.Context) error {
		var res PromptResult
		if err := c.Call(ctx, MethodPrompt, params, &res); err != nil {
			return err
		}
		if res.Echoed != want {
			return fmt.Errorf("result %+v", res)
		}
		return nil
	}
	for range 200 {
		if err := call(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		samples []time.Duration
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if !parallel {
		samples = make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			if err := call(context.Background()); err != nil {
				b.Fatal(err)
			}
			samples = append(samples, time.Since(t0))
		}
	} else {
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			var local []time.Duration
			for pb.Next() {
				t0 := time.Now()
				if err := call(context.Background()); err != nil {
					b.Error(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		})
	}
	el := time.Since(start)
	b.StopTimer()
	reportLatency(b, samples, el)
}

func reportLatency(b *testing.B, samples []time.Duration, el time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	b.ReportMetric(float64(len(samples))/el.Seconds(), "req/s")
	b.ReportMetric(us(samples[len(samples)/2]), "p50-µs")
	b.ReportMetric(us(samples[(len(samples)-1)*99/100]), "p99-µs")
}

// BenchmarkNotifyAllocs is one in-memory notification (with a barrier call
// every 500, so that no runtime's queue overflows).
func BenchmarkNotifyAllocs(b *testing.B) {
	for _, rt := range Runtimes() {
		b.Run(rt.Key(), func(b *testing.B) {
			p := NewPair(rt, &Service{})
			defer p.Close(time.Second)
			params := NewPrompt()
			ctx := context.Background()
			var sent int64
			barrier := func() {
				var res BarrierResult
				if err := p.Client.Call(ctx, MethodBarrier, &BarrierParams{Want: sent}, &res); err != nil {
					b.Fatal(err)
				}
				if res.Seen != sent {
					b.Fatalf("barrier saw %d of %d", res.Seen, sent)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Client.Notify(ctx, MethodUpdate, params); err != nil {
					b.Fatal(err)
				}
				if sent++; sent%500 == 0 {
					barrier()
				}
			}
			barrier()
		})
	}
}

// BenchmarkBurst: 50k notifications then a barrier request, also with
// the minimal reference runtime. A runtime that disconnects or hangs is
// reported with Skip, not as a benchmark failure.
func BenchmarkBurst(b *testing.B) {
	for _, transport := range []string{"inmem", "child"} {
		for _, rt := range append(Runtimes(), References()...) {
			b.Run(transport+"/"+rt.Key(), func(b *testing.B) {
				var total time.Duration
				for range b.N {
					var (
						r   BurstResult
						err error
					)
					if transport == "inmem" {
						p := NewPair(rt, &Service{})
						r, err = Burst(p.Client, BurstSize, 20*time.Second, p.Server, p.Client)
						p.Close(2 * time.Second)
					} else {
						ch, serr := StartChild(rt, testExe)
						if serr != nil {
							b.Fatal(serr)
						}
						r, err = Burst(ch.Conn, BurstSize, 20*time.Second, ch.Conn)
						ch.Close(2 * time.Second)
					}
					if err != nil {
						// Logged (benchmark logs are always shown) rather
						// than failed: a competitor's failure is a result.
						b.Logf("%s FAILED: %v", rt.Name(), err)
						b.ReportMetric(1, "failed")
						return
					}
					total += r.Elapsed
				}
				b.ReportMetric(float64(b.N*BurstSize)/total.Seconds(), "msg/s")
			})
		}
	}
}

// BenchmarkLarge: 64 KiB and 8 MiB requests in memory; MB/s is request
// bytes on the wire.
func BenchmarkLarge(b *testing.B) {
	for _, size := range []int{64 << 10, 8 << 20} {
		for _, rt := range Runtimes() {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, rt.Key()), func(b *testing.B) {
				p := NewPair(rt, &Service{})
				defer p.Close(time.Second)
				params := NewLargePrompt(size)
				b.SetBytes(int64(WireSize(MethodPrompt, params)))
				b.ReportAllocs()
				for b.Loop() {
					var res PromptResult
					if err := p.Client.Call(context.Background(), MethodPrompt, params, &res); err != nil {
						b.Fatal(err)
					}
				}
				var res PromptResult
				if err := p.Client.Call(context.Background(), MethodPrompt, NewPrompt(), &res); err != nil {
					b.Fatalf("connection unusable after a %d-byte message: %v", size, err)
				}
			})
		}
	}
}

// BenchmarkCancel: one op is one call cancelled once its handler runs.
func BenchmarkCancel(b *testing.B) {
	for _, rt := range Runtimes() {
		b.Run(rt.Key(), func(b *testing.B) {
			r, err := Cancellation(rt, b.N, 10*time.Millisecond)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(us(r.ReturnP50), "cancel-to-return-µs")
			b.ReportMetric(100*float64(r.HandlerSaw)/float64(r.N), "%handler-saw-cancel")
			b.ReportMetric(float64(r.Leaked), "leaked-goroutines")
		})
	}
}

// BenchmarkIdle reports memory per idle connection (after one call).
func BenchmarkIdle(b *testing.B) {
	for _, rt := range Runtimes() {
		b.Run(rt.Key(), func(b *testing.B) {
			var r IdleResult
			var err error
			for b.Loop() {
				if r, err = IdleMemory(rt, 50); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.HeapPerConn/1024, "heap-KiB/conn")
			b.ReportMetric(r.StackPerConn/1024, "stack-KiB/conn")
		})
	}
}
