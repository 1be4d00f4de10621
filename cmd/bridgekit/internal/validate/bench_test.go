package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// traffic returns the recorded traffic of the real ACP agents (mixed:
// initialize, session/new, prompts, a stream of session/update, fs,
// terminal and permission requests, their replies).
func traffic(tb testing.TB) [][]byte {
	tb.Helper()
	files, _ := filepath.Glob("../../../../testdata/acp/traffic/*/turn.jsonl")
	if len(files) == 0 {
		tb.Fatal("no traffic")
	}
	var streams [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		streams = append(streams, data)
	}
	return streams
}

// validateAll validates every stream, failing on any problem, and returns
// the frames read.
func validateAll(tb testing.TB, v *Validator, streams [][]byte) int {
	n := 0
	for _, s := range streams {
		st, err := v.Stream("bench", bytes.NewReader(s), func(p Problem) { tb.Fatalf("%s", p) })
		if err != nil {
			tb.Fatal(err)
		}
		n += st.Frames
	}
	return n
}

// BenchmarkValidate validates the recorded traffic of the real ACP agents
// and reports frames per second. Run it alone on an idle machine, on one
// core:
//
//	go test -run '^$' -bench Validate -cpu 1 ./internal/validate
func BenchmarkValidate(b *testing.B) {
	streams := traffic(b)
	v := newValidator(b, "")
	validateAll(b, v, streams) // compile every schema the traffic uses before timing
	size := 0
	for _, s := range streams {
		size += len(s)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var ru0, ru1 syscall.Rusage
	b.ResetTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	n := 0
	for b.Loop() {
		n += validateAll(b, v, streams)
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/frame")
	// The process's CPU time (user + system) per frame: what a frame costs
	// on a core of its own, however busy the machine.
	cpu := ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/frame")
}

// ValidateTarget is issue 16's: validate checks at least this many frames
// of mixed ACP traffic per second on one core.
const ValidateTarget = 20000

// throughput is what TestValidateThroughput writes (bench/cmd/benchreport
// reads it into docs/performance.md).
type throughput struct {
	Measured         time.Time
	Target           float64 // frames/s
	FramesPerSec     float64 // median over the runs, by wall time
	NsPerFrame       float64 // wall
	CPUNsPerFrame    float64 // user + system CPU time of the process
	UserNsPerFrame   float64
	CPUFramesPerSec  float64 // frames per CPU second: the rate on an idle core
	Runs, FramesEach int     // runs, frames per run (median)
	Seconds          float64 // per run
	GOMAXPROCS       int
	LoadAverage      string // at the start, 1/5/15 minutes
}

// TestValidateThroughput measures, when BRIDGEKIT_VALIDATE_BENCH names a
// file to write the results to (make bench-validate does), how many frames
// of the recorded ACP traffic validate checks per second with GOMAXPROCS=1,
// by wall time and by the process's CPU time (which a busy machine does
// not inflate); else it is skipped. BRIDGEKIT_VALIDATE_BENCH_QUICK=1
// shortens it.
func TestValidateThroughput(t *testing.T) {
	out := os.Getenv("BRIDGEKIT_VALIDATE_BENCH")
	if out == "" {
		t.Skip("set BRIDGEKIT_VALIDATE_BENCH=FILE to measure (make bench-validate does)")
	}
	runs, per := 5, 2*time.Second
	if os.Getenv("BRIDGEKIT_VALIDATE_BENCH_QUICK") != "" {
		runs, per = 3, 500*time.Millisecond
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	streams := traffic(t)
	v := newValidator(t, "")
	validateAll(t, v, streams)
	var fps, wallNs, cpuNs, userNs, framesEach []float64
	for range runs {
		runtime.GC()
		var ru0, ru1 syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru0); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n := 0
		for time.Since(start) < per {
			n += validateAll(t, v, streams)
		}
		wall := time.Since(start)
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru1); err != nil {
			t.Fatal(err)
		}
		user := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano())
		cpu := user + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
		fps = append(fps, float64(n)/wall.Seconds())
		wallNs = append(wallNs, float64(wall.Nanoseconds())/float64(n))
		cpuNs = append(cpuNs, float64(cpu.Nanoseconds())/float64(n))
		userNs = append(userNs, float64(user.Nanoseconds())/float64(n))
		framesEach = append(framesEach, float64(n))
	}
	res := throughput{
		Measured: time.Now().UTC(), Target: ValidateTarget,
		FramesPerSec: median(fps), NsPerFrame: median(wallNs), CPUNsPerFrame: median(cpuNs), UserNsPerFrame: median(userNs),
		Runs: runs, FramesEach: int(median(framesEach)), Seconds: per.Seconds(), GOMAXPROCS: 1, LoadAverage: load,
	}
	res.CPUFramesPerSec = 1e9 / res.CPUNsPerFrame
	b, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", b)
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
