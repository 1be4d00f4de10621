package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LoopConfig bounds a round-trip measurement.
type LoopConfig struct {
	Callers  int           // concurrent callers (default 1)
	Warmup   int           // calls before measuring, spread over the callers
	MaxCalls int           // stop after this many measured calls...
	MaxTime  time.Duration // ...or after this long, whichever comes first
}

// Latency summarises a round-trip measurement.
type Latency struct {
	N                   int
	Elapsed             time.Duration
	PerSec              float64
	P50, P90, P99, P999 time.Duration
	// CPU is the user+system CPU time this process used while measuring
	// (client and server for in-memory pairs; the client side only for a
	// child peer).
	CPU time.Duration
}

// Cores is the average number of CPUs this process kept busy.
func (l Latency) Cores() float64 {
	if l.Elapsed <= 0 {
		return 0
	}
	return float64(l.CPU) / float64(l.Elapsed)
}

func (l Latency) String() string {
	return fmt.Sprintf("%d calls in %v: %.0f/s, p50 %v, p90 %v, p99 %v, p99.9 %v",
		l.N, l.Elapsed.Round(time.Millisecond), l.PerSec, l.P50, l.P90, l.P99, l.P999)
}

// RoundTrips calls session/prompt with params on c from cfg.Callers
// goroutines and records each call's latency.
func RoundTrips(c Conn, cfg LoopConfig, params *PromptParams) (Latency, error) {
	want := promptSize(params)
	return Loop(cfg, func() func(context.Context) error {
		var res PromptResult // one per caller, reused
		return func(ctx context.Context) error {
			res = PromptResult{}
			if err := c.Call(ctx, MethodPrompt, params, &res); err != nil {
				return err
			}
			if res.Echoed != want || res.StopReason != "end_turn" {
				return fmt.Errorf("wrong result %+v, want echoed=%d", res, want)
			}
			return nil
		}
	})
}

// Loop makes calls from cfg.Callers goroutines, each with the call
// function newCaller returns for it (one round trip that checks its own
// result): cfg.Warmup of them first, then as many as cfg allows, recording
// each call's latency.
func Loop(cfg LoopConfig, newCaller func() func(context.Context) error) (Latency, error) {
	callers := max(cfg.Callers, 1)
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = 1 << 30
	}
	if cfg.MaxTime <= 0 {
		cfg.MaxTime = time.Hour
	}
	if cfg.Warmup > 0 {
		if _, err := callLoop(callers, cfg.Warmup, time.Now().Add(time.Minute), newCaller); err != nil {
			return Latency{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	cpu0 := processCPU()
	start := time.Now()
	samples, err := callLoop(callers, cfg.MaxCalls, start.Add(cfg.MaxTime), newCaller)
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	if err != nil {
		return Latency{}, err
	}
	l := summarise(samples, elapsed)
	l.CPU = cpu
	return l, nil
}

func callLoop(callers, total int, deadline time.Time, newCaller func() func(context.Context) error) ([]time.Duration, error) {
	var (
		issued atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		all    []time.Duration
		errs   []error
	)
	for range callers {
		call := newCaller()
		wg.Go(func() {
			ctx := context.Background()
			samples := make([]time.Duration, 0, min(total/callers+16, 1<<20))
			var err error
			for issued.Add(1) <= int64(total) {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				if err = call(ctx); err != nil {
					break
				}
				samples = append(samples, time.Since(t0))
			}
			mu.Lock()
			all = append(all, samples...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("call failed: %w", errs[0])
	}
	return all, nil
}

func summarise(samples []time.Duration, elapsed time.Duration) Latency {
	slices.Sort(samples)
	pct := func(p float64) time.Duration {
		if len(samples) == 0 {
			return 0
		}
		i := int(p * float64(len(samples)-1))
		return samples[i]
	}
	return Latency{
		N:       len(samples),
		Elapsed: elapsed,
		PerSec:  float64(len(samples)) / elapsed.Seconds(),
		P50:     pct(0.50),
		P90:     pct(0.90),
		P99:     pct(0.99),
		P999:    pct(0.999),
	}
}

// ErrHung is matched by the error of a scenario that did not complete in
// time.
var ErrHung = errors.New("hung")

// BurstResult is the outcome of Burst.
type BurstResult struct {
	Sent    int64 // notifications sent
	Seen    int64 // notifications the receiver reported handled
	Elapsed time.Duration
	PerSec  float64 // notifications per second, first send to barrier reply
}

// Burst sends n session/update notifications on c as fast as it can, then
// calls bench/barrier, which answers once the peer has handled all n (or
// after a while with the count it reached). It fails with ErrHung if that
// takes more than timeout, and with the peer's reason if a connection in
// watch shuts down first. After a failure the caller must close the
// connection, since a goroutine may still be blocked writing to it.
func Burst(c Conn, n int, timeout time.Duration, watch ...Conn) (BurstResult, error) {
	var sent atomic.Int64
	type outcome struct {
		r   BurstResult
		err error
	}
	done := make(chan outcome, 1)
	params := NewPrompt()
	start := time.Now()
	go func() {
		ctx := context.Background()
		for range n {
			if err := c.Notify(ctx, MethodUpdate, params); err != nil {
				done <- outcome{err: fmt.Errorf("notify #%d: %w", sent.Load()+1, err)}
				return
			}
			sent.Add(1)
		}
		var res BarrierResult
		if err := c.Call(ctx, MethodBarrier, &BarrierParams{Want: int64(n)}, &res); err != nil {
			done <- outcome{err: fmt.Errorf("barrier: %w", err)}
			return
		}
		el := time.Since(start)
		done <- outcome{r: BurstResult{Sent: sent.Load(), Seen: res.Seen, Elapsed: el, PerSec: float64(res.Seen) / el.Seconds()}}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	stop := make(chan struct{})
	defer close(stop)
	dead := make(chan Conn, len(watch))
	for _, w := range watch {
		go func() {
			select {
			case <-w.Done():
				dead <- w
			case <-stop:
			}
		}()
	}
	select {
	case o := <-done:
		if o.err == nil && o.r.Seen != int64(n) {
			o.err = fmt.Errorf("lost notifications: %d of %d handled", o.r.Seen, n)
		}
		return o.r, o.err
	case deadConn := <-dead:
		// Give an in-flight outcome a moment to win (a clean finish racing
		// a late close).
		select {
		case o := <-done:
			if o.err == nil {
				return o.r, nil
			}
		case <-time.After(50 * time.Millisecond):
		}
		return BurstResult{Sent: sent.Load()}, fmt.Errorf("connection closed after %d of %d notifications were sent: %v",
			sent.Load(), n, reason(deadConn))
	case <-t.C:
		return BurstResult{Sent: sent.Load()}, fmt.Errorf("%w: no completion within %v (%d of %d notifications sent)",
			ErrHung, timeout, sent.Load(), n)
	}
}

func reason(c Conn) string {
	if c == nil {
		return "unknown"
	}
	if err := c.Err(); err != nil {
		return err.Error()
	}
	return "closed"
}

// WireSize returns the size of params sent as a request with id 1,
// including the newline.
func WireSize(method string, params any) int {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", 1, method, params})
	if err != nil {
		panic(err)
	}
	return len(b) + 1
}

// LargeResult is the outcome of Large.
type LargeResult struct {
	Latency
	WireBytes int     // request size on the wire
	MBPerSec  float64 // request bytes per second / 1e6
}

// Large makes round trips whose request carries a text of size bytes, then
// checks that the connection still serves a normal call.
func Large(c Conn, size int, cfg LoopConfig) (LargeResult, error) {
	p := NewLargePrompt(size)
	l, err := RoundTrips(c, cfg, p)
	if err != nil {
		return LargeResult{}, err
	}
	var res PromptResult
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Call(ctx, MethodPrompt, NewPrompt(), &res); err != nil {
		return LargeResult{}, fmt.Errorf("connection unusable after a %d-byte message: %w", size, err)
	}
	wire := WireSize(MethodPrompt, p)
	return LargeResult{Latency: l, WireBytes: wire, MBPerSec: l.PerSec * float64(wire) / 1e6}, nil
}

// CancelResult is the outcome of Cancellation.
type CancelResult struct {
	N          int
	ReturnP50  time.Duration // ctx cancel -> Call returns
	ReturnP99  time.Duration
	HandlerSaw int           // handlers whose ctx was cancelled by the peer's cancellation
	HandlerP50 time.Duration // ctx cancel -> handler ctx done, over those that saw it
	Leaked     int           // goroutines left 2s after closing the pair
	LeakSample string        // where leaked goroutines are parked
}

// Cancellation makes n calls to bench/block and cancels each once its
// handler has started. The handler waits for its context (at most hold).
// It measures how quickly Call returns and whether the cancellation reaches
// the handler, checks that the connection still works, closes it and
// counts goroutines left behind.
func Cancellation(rt Runtime, n int, hold time.Duration) (CancelResult, error) {
	runtime.GC()
	base := runtime.NumGoroutine()
	svc := &Service{Hold: hold, BlockStarted: make(chan struct{}, 1), BlockEnded: make(chan bool, 1)}
	p := NewPair(rt, svc)
	var (
		returns, handlers []time.Duration
		saw               int
	)
	params := NewPrompt()
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		var tCancel atomic.Int64
		go func() {
			<-svc.BlockStarted
			tCancel.Store(time.Now().UnixNano())
			cancel()
		}()
		err := p.Client.Call(ctx, MethodBlock, params, &PromptResult{})
		tRet := time.Now()
		if err == nil {
			cancel()
			p.Close(time.Second)
			return CancelResult{}, fmt.Errorf("call %d: cancelled call returned no error", i)
		}
		if ctx.Err() == nil {
			p.Close(time.Second)
			return CancelResult{}, fmt.Errorf("call %d failed before cancellation: %w", i, err)
		}
		var ended bool
		select {
		case ended = <-svc.BlockEnded:
		case <-time.After(hold + 5*time.Second):
			p.Close(time.Second)
			return CancelResult{}, fmt.Errorf("%w: handler of call %d did not finish", ErrHung, i)
		}
		tEnd := time.Now()
		tc := time.Unix(0, tCancel.Load())
		returns = append(returns, tRet.Sub(tc))
		if ended {
			saw++
			handlers = append(handlers, tEnd.Sub(tc))
		}
	}
	var res PromptResult
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := p.Client.Call(ctx, MethodPrompt, params, &res)
	cancel()
	if err != nil {
		p.Close(time.Second)
		return CancelResult{}, fmt.Errorf("connection unusable after cancellations: %w", err)
	}
	if err := p.Close(5 * time.Second); err != nil {
		return CancelResult{}, err
	}
	r := CancelResult{N: n, HandlerSaw: saw}
	slices.Sort(returns)
	slices.Sort(handlers)
	r.ReturnP50 = returns[len(returns)/2]
	r.ReturnP99 = returns[(len(returns)-1)*99/100]
	if len(handlers) > 0 {
		r.HandlerP50 = handlers[len(handlers)/2]
	}
	r.Leaked, r.LeakSample = leakedGoroutines(base, 2*time.Second)
	return r, nil
}

// leakedGoroutines waits up to wait for the goroutine count to fall back to
// base and returns the excess, with the functions the excess is parked in.
func leakedGoroutines(base int, wait time.Duration) (int, string) {
	deadline := time.Now().Add(wait)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return 0, ""
		}
		if time.Now().After(deadline) {
			return n - base, goroutineSummary()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goroutineSummary lists the top frame of every goroutine not in package
// testing or runtime, with counts.
func goroutineSummary() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	counts := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "runtime.") || strings.HasPrefix(l, "sync.") ||
				strings.HasPrefix(l, "internal/") || strings.HasPrefix(l, "io.") || strings.HasPrefix(l, "os.") ||
				strings.HasPrefix(l, "syscall.") || strings.HasPrefix(l, "bufio.") {
				continue
			}
			fn := l
			if i := strings.LastIndex(fn, "("); i > 0 {
				fn = fn[:i]
			}
			counts[fn]++
			break
		}
	}
	var keys []string
	for k := range counts {
		if strings.Contains(k, "bench.") || strings.HasPrefix(k, "main.") || strings.HasPrefix(k, "testing.") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var sb strings.Builder
	for i, k := range keys {
		if i == 4 {
			break
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%d× %s", counts[k], k)
	}
	return sb.String()
}

// IdleResult is the outcome of IdleMemory.
type IdleResult struct {
	HeapPerConn  float64 // bytes of live heap per connection
	StackPerConn float64 // bytes of goroutine stacks per connection
}

// IdleMemory opens n in-memory pairs, makes one round trip on each so that
// lazily allocated buffers exist, and measures the live heap and stack
// memory per connection (2n connections).
func IdleMemory(rt Runtime, n int) (IdleResult, error) {
	svc := &Service{}
	params := NewPrompt()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	pairs := make([]*Pair, 0, n)
	defer func() {
		for _, p := range pairs {
			p.Close(time.Second)
		}
	}()
	for range n {
		p := NewPair(rt, svc)
		pairs = append(pairs, p)
		var res PromptResult
		if err := p.Client.Call(context.Background(), MethodPrompt, params, &res); err != nil {
			return IdleResult{}, err
		}
	}
	time.Sleep(50 * time.Millisecond) // let handler goroutines exit
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	conns := float64(2 * n)
	return IdleResult{
		HeapPerConn:  (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / conns,
		StackPerConn: (float64(m1.StackInuse) - float64(m0.StackInuse)) / conns,
	}, nil
}

// Allocs is an allocation measurement: per operation, for the whole
// process (client and server side together).
type Allocs struct {
	Allocs, Bytes float64
}

// AllocsPerRoundTrip measures allocations of n sequential in-memory round
// trips after a warm-up.
func AllocsPerRoundTrip(rt Runtime, n int) (Allocs, error) {
	p := NewPair(rt, &Service{})
	defer p.Close(time.Second)
	params := NewPrompt()
	call := func() error {
		var res PromptResult
		return p.Client.Call(context.Background(), MethodPrompt, params, &res)
	}
	for range 500 {
		if err := call(); err != nil {
			return Allocs{}, err
		}
	}
	return measureAllocs(n, func() error {
		for range n {
			if err := call(); err != nil {
				return err
			}
		}
		return nil
	})
}

// AllocsPerNotification measures allocations of n in-memory notifications,
// sent in batches of 500 each followed by a barrier call (so that no
// runtime's inbound queue overflows); the barriers are included.
func AllocsPerNotification(rt Runtime, n int) (Allocs, error) {
	svc := &Service{}
	p := NewPair(rt, svc)
	defer p.Close(time.Second)
	params := NewPrompt()
	var sent int64
	batch := func(k int) error {
		for range k {
			if err := p.Client.Notify(context.Background(), MethodUpdate, params); err != nil {
				return err
			}
		}
		sent += int64(k)
		var res BarrierResult
		if err := p.Client.Call(context.Background(), MethodBarrier, &BarrierParams{Want: sent}, &res); err != nil {
			return err
		}
		if res.Seen != sent {
			return fmt.Errorf("barrier saw %d of %d notifications", res.Seen, sent)
		}
		return nil
	}
	if err := batch(500); err != nil {
		return Allocs{}, err
	}
	return measureAllocs(n, func() error {
		for done := 0; done < n; done += 500 {
			if err := batch(min(500, n-done)); err != nil {
				return err
			}
		}
		return nil
	})
}

func measureAllocs(n int, f func() error) (Allocs, error) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if err := f(); err != nil {
		return Allocs{}, err
	}
	runtime.ReadMemStats(&m1)
	return Allocs{
		Allocs: float64(m1.Mallocs-m0.Mallocs) / float64(n),
		Bytes:  float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
	}, nil
}

// OpStats is the cost of one operation of a micro-benchmark.
type OpStats struct {
	NsPerOp       float64
	Allocs, Bytes float64
}

// Measure runs f repeatedly for about d (after a short warm-up) and
// reports time and allocations per call.
func Measure(d time.Duration, f func() error) (OpStats, error) {
	for range 200 {
		if err := f(); err != nil {
			return OpStats{}, err
		}
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	n := 0
	for {
		for range 256 {
			if err := f(); err != nil {
				return OpStats{}, err
			}
		}
		n += 256
		if time.Since(start) >= d {
			break
		}
	}
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	return OpStats{
		NsPerOp: float64(el.Nanoseconds()) / float64(n),
		Allocs:  float64(m1.Mallocs-m0.Mallocs) / float64(n),
		Bytes:   float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
	}, nil
}

// EncodeNotify measures a runtime's outbound path: Notify with the
// standard payload on a connection writing to io.Discard.
func EncodeNotify(rt Runtime, d time.Duration) (OpStats, error) {
	pr, pw := io.Pipe() // never written: the connection just waits to read
	c := rt.Open(pr, discard{}, nil)
	defer func() {
		pw.Close()
		closeWithin(c, time.Second)
	}()
	params := NewPrompt()
	ctx := context.Background()
	return Measure(d, func() error { return c.Notify(ctx, MethodUpdate, params) })
}

// discard is io.Discard that cannot be mistaken for a closer.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Feeder writes batches of pre-encoded session/update notifications to a
// connection of some runtime, which handles them with a Service, and waits
// until each batch has been handled: the runtime's inbound path (framing,
// decoding, dispatch) without a sender.
type Feeder struct {
	data []byte
	n    int64
	want int64
	svc  *Service
	pw   *io.PipeWriter
	c    Conn
}

// NewFeeder opens a connection of rt that reads batches of n notifications.
func NewFeeder(rt Runtime, n int) (*Feeder, error) {
	frame, err := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		Method  string        `json:"method"`
		Params  *PromptParams `json:"params"`
	}{"2.0", MethodUpdate, NewPrompt()})
	if err != nil {
		return nil, err
	}
	frame = append(frame, '\n')
	f := &Feeder{data: make([]byte, 0, n*len(frame)), n: int64(n), svc: &Service{}}
	for range n {
		f.data = append(f.data, frame...)
	}
	var pr *io.PipeReader
	pr, f.pw = io.Pipe()
	f.c = rt.Open(pr, discard{}, f.svc)
	return f, nil
}

// Round writes one batch in a single Write and waits until it is handled.
func (f *Feeder) Round() error {
	if _, err := f.pw.Write(f.data); err != nil {
		return err
	}
	f.want += f.n
	if !f.svc.waitSeen(f.want, 10*time.Second) {
		return fmt.Errorf("%w: %d of %d notifications handled", ErrHung, f.svc.Seen(), f.want)
	}
	return nil
}

// Close closes the connection.
func (f *Feeder) Close() {
	f.pw.Close()
	closeWithin(f.c, time.Second)
}

// DecodeInbound measures a runtime's inbound path with a Feeder: rounds
// batches of n notifications after one warm-up batch, reported per
// notification.
func DecodeInbound(rt Runtime, n, rounds int) (OpStats, error) {
	f, err := NewFeeder(rt, n)
	if err != nil {
		return OpStats{}, err
	}
	defer f.Close()
	if err := f.Round(); err != nil {
		return OpStats{}, err
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for range rounds {
		if err := f.Round(); err != nil {
			return OpStats{}, err
		}
	}
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	total := float64(n * rounds)
	return OpStats{
		NsPerOp: float64(el.Nanoseconds()) / total,
		Allocs:  float64(m1.Mallocs-m0.Mallocs) / total,
		Bytes:   float64(m1.TotalAlloc-m0.TotalAlloc) / total,
	}, nil
}
