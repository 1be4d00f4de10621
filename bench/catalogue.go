package bench

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Metrics are the named figures a scenario produces.
type Metrics map[string]float64

// Profile sizes a scenario run.
type Profile struct {
	Quick bool
	Long  bool   // run round-trip loops for a fixed 3 s (for profiling)
	Exe   string // binary that runs the child peer (calls MaybeRunPeer)
}

func (p Profile) pick(full, quick time.Duration) time.Duration {
	if p.Quick {
		return quick
	}
	return full
}

func (p Profile) n(full, quick int) int {
	if p.Quick {
		return quick
	}
	return full
}

// BurstSize is the number of notifications of the burst scenarios.
const BurstSize = 50_000

// Scenario is one named measurement, run for one runtime (or, for the
// pure codec scenarios, for none).
type Scenario struct {
	Name  string
	Codec bool // runtime independent
	// Sequential scenarios are also run with Variants (bridgekit handling
	// requests one at a time).
	Sequential bool
	// Reference scenarios are also run with References (the minimal
	// one-goroutine runtime), reported apart from the comparison.
	Reference bool
	// Envelope scenarios measure bridgekit's engine alone, AgentPM's
	// envelopes against JSON-RPC 2.0 in one worker (stored under the
	// bridgekit runtime); the report shows them in a table of their own.
	Envelope bool
	Timeout  time.Duration // hard limit for the whole scenario (the driver kills it after that)
	Run      func(rt Runtime, p Profile) (Metrics, error)
}

// Scenarios lists every scenario of the report, in report order.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "codec-encode", Codec: true, Timeout: time.Minute, Run: codecEncode},
		{Name: "codec-decode", Codec: true, Timeout: time.Minute, Run: codecDecode},
		{Name: "codec-session-update", Codec: true, Timeout: time.Minute, Run: codecSessionUpdate},
		{Name: "encode-notify", Timeout: time.Minute, Run: func(rt Runtime, p Profile) (Metrics, error) {
			s, err := EncodeNotify(rt, p.pick(500*time.Millisecond, 150*time.Millisecond))
			return opMetrics(s), err
		}},
		{Name: "decode-inbound", Timeout: time.Minute, Run: func(rt Runtime, p Profile) (Metrics, error) {
			s, err := DecodeInbound(rt, 1000, p.n(10, 3))
			return opMetrics(s), err
		}},
		{Name: "rt-inmem-1", Sequential: true, Reference: true, Timeout: time.Minute, Run: rtInmem(1)},
		{Name: "rt-inmem-16", Sequential: true, Timeout: time.Minute, Run: rtInmem(16)},
		{Name: "rt-child-1", Sequential: true, Timeout: time.Minute, Run: rtChild(1)},
		{Name: "rt-child-16", Sequential: true, Timeout: time.Minute, Run: rtChild(16)},
		{Name: "burst-inmem", Reference: true, Timeout: 40 * time.Second, Run: burstInmem},
		{Name: "burst-child", Reference: true, Timeout: 40 * time.Second, Run: burstChild},
		{Name: "allocs-rt", Timeout: time.Minute, Run: func(rt Runtime, p Profile) (Metrics, error) {
			a, err := AllocsPerRoundTrip(rt, p.n(5000, 2000))
			return Metrics{"allocs": a.Allocs, "bytes": a.Bytes}, err
		}},
		{Name: "allocs-notify", Timeout: time.Minute, Run: func(rt Runtime, p Profile) (Metrics, error) {
			a, err := AllocsPerNotification(rt, p.n(5000, 2000))
			return Metrics{"allocs": a.Allocs, "bytes": a.Bytes}, err
		}},
		{Name: "large-64k-inmem", Timeout: time.Minute, Run: largeInmem(64 << 10)},
		{Name: "large-64k-child", Timeout: time.Minute, Run: largeChild(64 << 10)},
		{Name: "large-8m-inmem", Timeout: time.Minute, Run: largeInmem(8 << 20)},
		{Name: "large-8m-child", Timeout: time.Minute, Run: largeChild(8 << 20)},
		{Name: "cancel", Timeout: time.Minute, Run: func(rt Runtime, p Profile) (Metrics, error) {
			c, err := Cancellation(rt, p.n(100, 30), 10*time.Millisecond)
			m := Metrics{
				"ret_p50_us":     us(c.ReturnP50),
				"ret_p99_us":     us(c.ReturnP99),
				"saw_pct":        100 * float64(c.HandlerSaw) / float64(max(c.N, 1)),
				"handler_p50_us": us(c.HandlerP50),
				"leaked":         float64(c.Leaked),
			}
			if err == nil && c.Leaked > 0 {
				err = fmt.Errorf("%d goroutines leaked: %s", c.Leaked, c.LeakSample)
				// Still report the figures.
				return m, &Partial{err}
			}
			return m, err
		}},
		{Name: "agentpm-rt-inmem", Envelope: true, Timeout: time.Minute, Run: agentpmRTInmem},
		{Name: "agentpm-rt-child", Envelope: true, Timeout: time.Minute, Run: agentpmRTChild},
		{Name: "agentpm-burst-inmem", Envelope: true, Timeout: time.Minute, Run: agentpmBurstInmem},
		{Name: "idle", Timeout: time.Minute, Run: func(rt Runtime, p Profile) (Metrics, error) {
			r, err := IdleMemory(rt, p.n(200, 100))
			return Metrics{
				"heap_kib":  r.HeapPerConn / 1024,
				"stack_kib": r.StackPerConn / 1024,
				"total_kib": (r.HeapPerConn + r.StackPerConn) / 1024,
			}, err
		}},
	}
}

// Partial is an error that comes with valid metrics.
type Partial struct{ Err error }

func (p *Partial) Error() string { return p.Err.Error() }
func (p *Partial) Unwrap() error { return p.Err }

// IsPartial reports whether err still comes with metrics worth reporting.
func IsPartial(err error) bool {
	var p *Partial
	return errors.As(err, &p)
}

// LookupScenario returns the scenario called name.
func LookupScenario(name string) (Scenario, error) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q", name)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func opMetrics(s OpStats) Metrics {
	return Metrics{"ns": s.NsPerOp, "allocs": s.Allocs, "bytes": s.Bytes}
}

func latMetrics(l Latency) Metrics {
	return Metrics{
		"req_s": l.PerSec, "n": float64(l.N),
		"p50_us": us(l.P50), "p90_us": us(l.P90), "p99_us": us(l.P99), "p999_us": us(l.P999),
		"cores": l.Cores(), "cpu_us_per_call": us(l.CPU) / float64(max(l.N, 1)),
	}
}

func loopConfig(callers int, child bool, p Profile) LoopConfig {
	cfg := LoopConfig{Callers: callers, Warmup: 2000, MaxCalls: 20_000, MaxTime: 1200 * time.Millisecond}
	if callers > 1 {
		cfg.MaxCalls = 50_000
	}
	if child {
		cfg.MaxTime = 2 * time.Second
	}
	if p.Quick {
		cfg.Warmup, cfg.MaxCalls, cfg.MaxTime = 500, cfg.MaxCalls/4, 300*time.Millisecond
	}
	if p.Long {
		cfg.MaxCalls, cfg.MaxTime = 1<<30, 3*time.Second
	}
	return cfg
}

func rtInmem(callers int) func(Runtime, Profile) (Metrics, error) {
	return func(rt Runtime, p Profile) (Metrics, error) {
		pair := NewPair(rt, &Service{})
		defer pair.Close(time.Second)
		l, err := RoundTrips(pair.Client, loopConfig(callers, false, p), NewPrompt())
		return latMetrics(l), err
	}
}

func rtChild(callers int) func(Runtime, Profile) (Metrics, error) {
	return func(rt Runtime, p Profile) (Metrics, error) {
		ch, err := StartChild(rt, p.Exe)
		if err != nil {
			return nil, err
		}
		l, err := RoundTrips(ch.Conn, loopConfig(callers, true, p), NewPrompt())
		if cerr := ch.Close(5 * time.Second); err == nil {
			err = cerr
		}
		return latMetrics(l), err
	}
}

func burstMetrics(r BurstResult) Metrics {
	return Metrics{"msg_s": r.PerSec, "sent": float64(r.Sent), "seen": float64(r.Seen)}
}

// burstInmem also reports this process's CPU time and context switches
// per notification during the burst (sender and receiver together).
func burstInmem(rt Runtime, p Profile) (Metrics, error) {
	pair := NewPair(rt, &Service{})
	u0, ok0 := processUsage()
	r, err := Burst(pair.Client, BurstSize, 20*time.Second, pair.Server, pair.Client)
	u1, ok1 := processUsage()
	if cerr := pair.Close(2 * time.Second); err == nil && cerr != nil {
		err = cerr
	}
	m := burstMetrics(r)
	if ok0 && ok1 {
		u1.Sub(u0).perMessage(m, "", r.Sent)
	}
	return m, err
}

// burstChild also reports CPU time and context switches per notification:
// this process's (the sender's) during the burst plus the child's (the
// receiver's) in its whole life, and the child's alone with prefix peer_.
func burstChild(rt Runtime, p Profile) (Metrics, error) {
	ch, err := StartChild(rt, p.Exe)
	if err != nil {
		return nil, err
	}
	u0, ok0 := processUsage()
	r, err := Burst(ch.Conn, BurstSize, 20*time.Second, ch.Conn)
	u1, ok1 := processUsage()
	cerr := ch.Close(2 * time.Second)
	m := burstMetrics(r)
	if peer, ok := ch.Usage(); ok && ok0 && ok1 {
		u1.Sub(u0).Add(peer).perMessage(m, "", r.Sent)
		peer.perMessage(m, "peer_", r.Sent)
	}
	if err != nil {
		if s := ch.Stderr(); s != "" {
			err = fmt.Errorf("%w; peer stderr: %s", err, firstLine(s))
		}
	} else if cerr != nil {
		err = cerr
	}
	return m, err
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func largeConfig(size int, p Profile) LoopConfig {
	if size >= 1<<20 {
		return LoopConfig{Callers: 1, Warmup: 1, MaxCalls: p.n(4, 2), MaxTime: 10 * time.Second}
	}
	return LoopConfig{Callers: 1, Warmup: 50, MaxCalls: 2000, MaxTime: p.pick(700*time.Millisecond, 300*time.Millisecond)}
}

func largeMetrics(r LargeResult) Metrics {
	m := latMetrics(r.Latency)
	m["mb_s"] = r.MBPerSec
	m["wire"] = float64(r.WireBytes)
	return m
}

func largeInmem(size int) func(Runtime, Profile) (Metrics, error) {
	return func(rt Runtime, p Profile) (Metrics, error) {
		pair := NewPair(rt, &Service{})
		defer pair.Close(time.Second)
		r, err := Large(pair.Client, size, largeConfig(size, p))
		return largeMetrics(r), err
	}
}

func largeChild(size int) func(Runtime, Profile) (Metrics, error) {
	return func(rt Runtime, p Profile) (Metrics, error) {
		ch, err := StartChild(rt, p.Exe)
		if err != nil {
			return nil, err
		}
		r, err := Large(ch.Conn, size, largeConfig(size, p))
		if cerr := ch.Close(5 * time.Second); err == nil {
			err = cerr
		}
		if err != nil {
			if s := ch.Stderr(); s != "" {
				err = fmt.Errorf("%w; peer stderr: %s", err, firstLine(s))
			}
		}
		return largeMetrics(r), err
	}
}

func codecEncode(_ Runtime, p Profile) (Metrics, error) {
	m := Metrics{}
	params := NewPrompt()
	var buf bytes.Buffer
	for _, c := range []struct {
		name string
		f    func(*bytes.Buffer, int64, string, any) error
	}{{"v1double", EncodeV1Double}, {"v1single", EncodeV1Single}, {"v2single", EncodeV2Single}} {
		s, err := Measure(p.pick(500*time.Millisecond, 150*time.Millisecond), func() error {
			buf.Reset()
			return c.f(&buf, 12345, MethodPrompt, params)
		})
		if err != nil {
			return nil, err
		}
		m[c.name+"_ns"], m[c.name+"_allocs"], m[c.name+"_bytes"] = s.NsPerOp, s.Allocs, s.Bytes
	}
	return m, nil
}

func codecDecode(_ Runtime, p Profile) (Metrics, error) {
	m := Metrics{}
	frame := RequestFrame()
	for _, c := range []struct {
		name string
		f    func([]byte, *PromptParams) error
	}{{"v1", DecodeV1}, {"v2", DecodeV2}} {
		s, err := Measure(p.pick(500*time.Millisecond, 150*time.Millisecond), func() error {
			var pp PromptParams
			if err := c.f(frame, &pp); err != nil {
				return err
			}
			if len(pp.Prompt) != 2 {
				return errors.New("decoded wrong params")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		m[c.name+"_ns"], m[c.name+"_allocs"], m[c.name+"_bytes"] = s.NsPerOp, s.Allocs, s.Bytes
	}
	return m, nil
}
