package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The speed target of issue 16: a round trip through trace to a child
// costs at most 1.2x a plain relay of the same pipes (a process with two
// io.Copy loops, no decoding), at p50 with 1 caller and in throughput with
// 16 callers. Both middles are processes of their own between the caller
// and the same child, a JSON-RPC responder (this test binary in child
// mode). trace records to a JSONL file (--out), as it would in use.
//
// TestTraceOverhead measures when BRIDGEKIT_TRACE_BENCH names a file to
// write the results to (make bench-trace, which make bench runs before
// bench/cmd/benchreport renders the file into docs/performance.md); else
// it is skipped. BRIDGEKIT_TRACE_BENCH_QUICK=1 shortens it.

// Child modes of the test binary, chosen by environment (see init).
const (
	modeEnv      = "BRIDGEKIT_TEST_MODE"
	modeResponse = "responder"
	modeRelay    = "relay"
)

func init() {
	switch os.Getenv(modeEnv) {
	case modeResponse:
		responder()
		os.Exit(0)
	case modeRelay:
		os.Exit(relay(os.Args[len(os.Args)-1]))
	}
}

// responder answers every JSON-RPC request line with a result of about
// the size of session/prompt's, echoing the id.
func responder() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			out.Flush()
			return
		}
		i := bytes.Index(line, []byte(`"id":`))
		if i < 0 {
			continue
		}
		j := i + 5 + bytes.IndexAny(line[i+5:], ",}")
		out.WriteString(`{"jsonrpc":"2.0","id":`)
		out.Write(line[i+5 : j])
		out.WriteString(`,"result":{"stopReason":"end_turn","_meta":{"usage":{"inputTokens":120,"outputTokens":48}}}}` + "\n")
		if in.Buffered() == 0 {
			out.Flush()
		}
	}
}

// relay is the baseline middle: start the child, copy both ways.
func relay(child string) int {
	cmd := exec.Command(child)
	cmd.Env = append(os.Environ(), modeEnv+"="+modeResponse)
	cmd.Stderr = os.Stderr
	w, _ := cmd.StdinPipe()
	r, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() { io.Copy(w, os.Stdin); w.Close() }()
	io.Copy(os.Stdout, r)
	cmd.Wait()
	return 0
}

type overheadResult struct {
	Measured                    time.Time
	LoadAverage                 string  // at the start, 1/5/15 minutes
	Relay1P50us, Trace1P50us    float64 // 1 caller, p50 round trip
	Relay16PerS, Trace16PerS    float64 // 16 callers, round trips per second
	P50Ratio, ThroughputRatio   float64 // trace ÷ relay (p50), relay ÷ trace (throughput): ≤ 1.2 meets the target
	Calls1, Calls16, Reps       int
	Relay1P99us, Trace1P99us    float64
	TraceJSONLBytesPerRoundTrip float64
}

func TestTraceOverhead(t *testing.T) {
	outPath := os.Getenv("BRIDGEKIT_TRACE_BENCH")
	if outPath == "" {
		t.Skip("set BRIDGEKIT_TRACE_BENCH=FILE to measure (make bench does)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	calls1, calls16, reps := 20000, 100000, 5
	if os.Getenv("BRIDGEKIT_TRACE_BENCH_QUICK") != "" {
		calls1, calls16, reps = 3000, 20000, 1
	}
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "trace.jsonl")
	middles := map[string]func() *exec.Cmd{
		"relay": func() *exec.Cmd {
			c := exec.Command(self, "-test.run=^$", self)
			c.Env = append(os.Environ(), modeEnv+"="+modeRelay)
			return c
		},
		"trace": func() *exec.Cmd {
			os.Remove(jsonl)
			c := exec.Command(bins.bridgekit, "trace", "--out", jsonl, "--", self)
			c.Env = append(os.Environ(), modeEnv+"="+modeResponse)
			return c
		},
	}
	p50 := map[string][]float64{}
	p99 := map[string][]float64{}
	tput := map[string][]float64{}
	var jsonlPerRT float64
	for rep := 0; rep < reps; rep++ {
		for _, name := range []string{"relay", "trace"} { // alternate, so both see the same load
			lat := roundTrips(t, middles[name](), 1, calls1)
			p50[name] = append(p50[name], percentile(lat, 50))
			p99[name] = append(p99[name], percentile(lat, 99))
			start := time.Now()
			roundTrips(t, middles[name](), 16, calls16)
			tput[name] = append(tput[name], float64(calls16)/time.Since(start).Seconds())
			if name == "trace" {
				if fi, err := os.Stat(jsonl); err == nil {
					jsonlPerRT = float64(fi.Size()) / float64(calls16)
				}
			}
		}
	}
	res := overheadResult{
		Measured: time.Now().UTC(), LoadAverage: load,
		Relay1P50us: median(p50["relay"]), Trace1P50us: median(p50["trace"]),
		Relay1P99us: median(p99["relay"]), Trace1P99us: median(p99["trace"]),
		Relay16PerS: median(tput["relay"]), Trace16PerS: median(tput["trace"]),
		Calls1: calls1, Calls16: calls16, Reps: reps, TraceJSONLBytesPerRoundTrip: jsonlPerRT,
	}
	res.P50Ratio = res.Trace1P50us / res.Relay1P50us
	res.ThroughputRatio = res.Relay16PerS / res.Trace16PerS
	b, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", b)
	if err := os.WriteFile(outPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// roundTrips runs calls round trips through the middle from callers
// goroutines and returns each one's latency in µs.
func roundTrips(t *testing.T, cmd *exec.Cmd, callers, calls int) []float64 {
	t.Helper()
	w, _ := cmd.StdinPipe()
	r, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waiting := map[int64]chan struct{}{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			i := bytes.Index(line, []byte(`"id":`))
			j := i + 5 + bytes.IndexByte(line[i+5:], ',')
			id, _ := strconv.ParseInt(string(line[i+5:j]), 10, 64)
			mu.Lock()
			ch := waiting[id]
			delete(waiting, id)
			mu.Unlock()
			if ch != nil {
				close(ch)
			}
		}
	}()
	lat := make([]float64, calls)
	var wmu sync.Mutex
	var wg sync.WaitGroup
	per := calls / callers
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			buf := make([]byte, 0, 512)
			for k := 0; k < per; k++ {
				id := int64(c*per + k + 1)
				ch := make(chan struct{})
				mu.Lock()
				waiting[id] = ch
				mu.Unlock()
				buf = fmt.Appendf(buf[:0], `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess-0123456789","prompt":[{"type":"text","text":"Summarise the open pull requests and flag the ones that touch the runtime."}]}}`+"\n", id)
				start := time.Now()
				wmu.Lock()
				_, err := w.Write(buf)
				wmu.Unlock()
				if err != nil {
					return
				}
				<-ch
				lat[id-1] = float64(time.Since(start)) / float64(time.Microsecond)
			}
		}(c)
	}
	wg.Wait()
	w.Close()
	<-readDone
	cmd.Wait()
	return lat[:per*callers]
}

func percentile(v []float64, p float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p/100)]
}

func median(v []float64) float64 { return percentile(v, 50) }
