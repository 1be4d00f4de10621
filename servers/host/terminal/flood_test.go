//go:build unix

package terminal

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// floodScript is the flood's command (sh -c floodScript sh GATE1 GATE2
// FILL SIZE COUNT): once let go by the first gate (a FIFO: a line to
// read), it writes FILL bytes (filling the terminal's ring, so that the
// flood is measured as it goes on, not what its first MiB costs); once
// let go by the second, COUNT writes of SIZE bytes, as fast as dd makes
// them.
const floodScript = `read x <"$1" && head -c "$3" /dev/zero && read x <"$2" && exec dd if=/dev/zero bs="$4" count="$5" status=none`

// floodArgs are sh's arguments for a flood of total bytes in writes of
// size bytes.
func floodArgs(g1, g2 gate, size, total int) []string {
	return []string{"-c", floodScript, "sh", g1.path, g2.path, strconv.Itoa(floodFill), strconv.Itoa(size), strconv.Itoa(total / size)}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gate is a FIFO the flood's writers wait on: held open by the test (so
// that a writer's open returns at once), it lets one writer go for each
// line written to it (sh's read takes a byte at a time from a pipe).
type gate struct {
	path string
	f    *os.File
}

func newGate(tb testing.TB) gate {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "gate")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		tb.Fatal(err)
	}
	// O_RDWR does not wait for the other end.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return gate{path, f}
}

// open lets n writers go.
func (g gate) open(tb testing.TB, n int) {
	tb.Helper()
	if _, err := g.f.WriteString(strings.Repeat("\n", n)); err != nil {
		tb.Fatal(err)
	}
}

// floodFigure is one flood's measure: CPU per MiB of output.
type floodFigure struct {
	Bytes     int64
	CPU       time.Duration
	NsPerMiB  float64
	WallSecs  float64
	Terminals int
}

func perMiB(cpu time.Duration, bytes int64) float64 {
	return float64(cpu) / (float64(bytes) / (1 << 20))
}

// floodFill is what each command writes before the measure: its ring's
// size (DefaultOutputBytes) and a pipe's capacity (at most 1 MiB) more.
const floodFill = DefaultOutputBytes + 1<<20

// waitUntil polls done (every millisecond, before the measure starts) up
// to a minute.
func waitUntil(t *testing.T, what string, done func() bool) {
	t.Helper()
	for start := time.Now(); !done(); time.Sleep(time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("%s: not within a minute", what)
		}
	}
}

// hostFlood runs terminals commands that each write floodFill bytes, then
// total bytes in writes of size bytes, and measures the CPU this process
// (the host) spends from the second gate's opening until every terminal
// has exited with its output read.
func hostFlood(t *testing.T, terminals, size, total int) floodFigure {
	t.Helper()
	m := newManager(t, nil)
	g1, g2 := newGate(t), newGate(t)
	var terms []*term
	for range terminals {
		id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: floodArgs(g1, g2, size, total),
			Env: []string{"PATH=" + os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		tm, err := m.get("s", id)
		if err != nil {
			t.Fatal(err)
		}
		terms = append(terms, tm)
	}
	written := func(tm *term) int64 {
		tm.out.mu.Lock()
		defer tm.out.mu.Unlock()
		return tm.out.total
	}
	g1.open(t, terminals)
	waitUntil(t, "the rings' filling", func() bool {
		for _, tm := range terms {
			if written(tm) < floodFill {
				return false
			}
		}
		return true
	})
	c0, w0 := processCPU(t), time.Now()
	g2.open(t, terminals)
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for _, tm := range terms {
		// Its exit, not an answer: building an answer costs CPU per
		// request (the kept output), not per byte of the flood.
		select {
		case <-tm.done:
		case <-timeout.C:
			t.Fatal("the flood has not ended within a minute")
		}
	}
	f := floodFigure{CPU: processCPU(t) - c0, WallSecs: time.Since(w0).Seconds(), Terminals: terminals}
	for _, tm := range terms {
		if o := m.output(tm); o.Status.ExitCode == nil || *o.Status.ExitCode != 0 {
			t.Fatalf("the flood ended %+v: %q", o.Status, o.Combined[max(0, len(o.Combined)-200):])
		}
		f.Bytes += written(tm) - floodFill
	}
	m.Close(5 * time.Second)
	if want := int64(terminals * total); f.Bytes != want {
		t.Fatalf("the terminals kept count of %d bytes, want %d", f.Bytes, want)
	}
	f.NsPerMiB = perMiB(f.CPU, f.Bytes)
	return f
}

// countWriter counts what it is given, and keeps nothing.
type countWriter struct{ n atomic.Int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// copyFlood is the floor: the same commands, whose flood is 64 KiB
// writes, each copied by io.Copy (into a writer that keeps nothing) as it
// comes, measured the same way.
func copyFlood(t *testing.T, children, total int) floodFigure {
	t.Helper()
	g1, g2 := newGate(t), newGate(t)
	var cmds []*exec.Cmd
	var pipes []io.Reader
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	for range children {
		c := exec.Command("sh", floodArgs(g1, g2, min(64<<10, total), total)...)
		c.Env = []string{"PATH=" + os.Getenv("PATH")}
		p, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, pipes = append(cmds, c), append(pipes, p)
	}
	var wg sync.WaitGroup
	counts := make([]countWriter, children)
	for i, p := range pipes {
		// io.Copy's own 32 KiB buffer, as os/exec's copying has
		// (io.Discard would read 8 KiB at a time).
		wg.Go(func() { _, _ = io.Copy(&counts[i], p) })
	}
	g1.open(t, children)
	waitUntil(t, "the fill", func() bool {
		for i := range counts {
			if counts[i].n.Load() < floodFill {
				return false
			}
		}
		return true
	})
	c0, w0 := processCPU(t), time.Now()
	g2.open(t, children)
	wg.Wait()
	f := floodFigure{CPU: processCPU(t) - c0, WallSecs: time.Since(w0).Seconds(), Terminals: children}
	for i := range counts {
		f.Bytes += counts[i].n.Load() - floodFill
	}
	if want := int64(children * total); f.Bytes != want {
		t.Fatalf("copied %d bytes, want %d", f.Bytes, want)
	}
	f.NsPerMiB = perMiB(f.CPU, f.Bytes)
	return f
}

// floodMaxRatio is finding 8's bound: the host's CPU per MiB of a
// terminal flood at most 3× an io.Copy's of the same bytes.
const floodMaxRatio = 3.0

// TestOutputFloodCPU (issue 33, finding 8): 16 terminals flooding output
// in small writes cost the host at most 3× the CPU per MiB that copying
// the same bytes with io.Copy costs, measured in the same run (CPU time of
// this process, not wall time: the machine may be loaded), each command
// first filling its ring (so that what is measured is the flood going on,
// not its first MiB). Reading each write as it came (os/exec's copying)
// cost 6.4× (64-byte writes, load average about 17).
//
// With BRIDGEKIT_TERMINAL_BENCH=FILE (make bench-terminal) it measures
// longer floods of several write sizes and writes their figures to FILE,
// which bench/cmd/benchreport renders.
func TestOutputFloodCPU(t *testing.T) {
	posix(t)
	if runtime.GOOS != "linux" {
		t.Skip("the coalescing reader is Linux's")
	}
	out := os.Getenv("BRIDGEKIT_TERMINAL_BENCH")
	const terminals = 16
	type shape struct{ size, total int }
	shapes := []shape{{64, 4 << 20}}
	runs := 3
	if out != "" {
		shapes = []shape{{16, 2 << 20}, {64, 4 << 20}, {4 << 10, 16 << 20}, {64 << 10, 16 << 20}}
		runs = 3
	}
	type row struct {
		WriteBytes, Terminals int
		BytesEach             int
		Host, Copy            floodFigure
		Ratio                 float64   // the median run's
		Ratios                []float64 // every run's, lowest first
	}
	var rows []row
	for _, s := range shapes {
		// A few runs of each, host and io.Copy side by side: CPU time is
		// what the work costs, plus what the machine's other load makes
		// it cost. The test passes on a run within the bound; the bench
		// records the run of the median ratio.
		type run struct {
			host, cp floodFigure
			ratio    float64
		}
		var done []run
		for range runs {
			// What a terminal costs whatever it prints (its start is
			// before, its exit within the measure) is the same flood of
			// one write: subtracted, so that the figure is per MiB.
			h0, h := hostFlood(t, terminals, s.size, s.size), hostFlood(t, terminals, s.size, s.total)
			c0, c := copyFlood(t, terminals, s.size), copyFlood(t, terminals, s.total)
			h.CPU -= h0.CPU
			c.CPU -= c0.CPU
			h.NsPerMiB, c.NsPerMiB = perMiB(h.CPU, h.Bytes), perMiB(c.CPU, c.Bytes)
			r := run{h, c, h.NsPerMiB / c.NsPerMiB}
			t.Logf("writes of %d B: host %.2f ms/MiB (%v CPU for %.1f MiB in %.2f s, less %v for one write each), io.Copy %.2f ms/MiB (%v in %.2f s, less %v): %.2f×",
				s.size, h.NsPerMiB/1e6, h.CPU, float64(h.Bytes)/(1<<20), h.WallSecs, h0.CPU, c.NsPerMiB/1e6, c.CPU, c.WallSecs, c0.CPU, r.ratio)
			done = append(done, r)
			if out == "" && r.ratio <= floodMaxRatio && c.CPU > 0 {
				break
			}
		}
		slices.SortFunc(done, func(a, b run) int { return cmp.Compare(a.ratio, b.ratio) })
		if best := done[0]; best.ratio > floodMaxRatio || best.cp.CPU <= 0 {
			t.Errorf("16 terminals writing %d B at a time cost the host %.2f ms of CPU per MiB, %.1f× io.Copy's %.2f ms (the best of %d runs): want at most %g×",
				s.size, best.host.NsPerMiB/1e6, best.ratio, best.cp.NsPerMiB/1e6, len(done), floodMaxRatio)
		}
		med := done[len(done)/2]
		var ratios []float64
		for _, r := range done {
			ratios = append(ratios, r.ratio)
		}
		rows = append(rows, row{WriteBytes: s.size, Terminals: terminals, BytesEach: s.total, Host: med.host, Copy: med.cp, Ratio: med.ratio, Ratios: ratios})
	}
	if out != "" {
		load, _ := os.ReadFile("/proc/loadavg")
		fields := strings.Fields(string(load))
		b, err := json.Marshal(struct {
			Measured    time.Time
			LoadAverage string
			MaxRatio    float64
			Floods      []row
		}{time.Now().UTC(), strings.Join(fields[:min(3, len(fields))], " "), floodMaxRatio, rows})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("figures written to %s", out)
	}
}
