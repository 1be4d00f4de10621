package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// The targets of issue 16 on the bridgekit command are measured in its own
// module (cmd/bridgekit), not by the workers: `make bench-trace` and `make
// bench-validate`, which `make bench` runs before benchreport, leave their
// figures in JSON files in the bench directory, and benchreport renders
// them (flags -trace-figures, -validate-figures).

// traceFigures is what cmd/bridgekit's TestTraceOverhead writes.
type traceFigures struct {
	Measured                    time.Time
	LoadAverage                 string
	Relay1P50us, Trace1P50us    float64
	Relay16PerS, Trace16PerS    float64
	P50Ratio, ThroughputRatio   float64
	Calls1, Calls16, Reps       int
	Relay1P99us, Trace1P99us    float64
	TraceJSONLBytesPerRoundTrip float64
}

// validateFigures is what cmd/bridgekit/internal/validate's
// TestValidateThroughput writes.
type validateFigures struct {
	Measured         time.Time
	Target           float64
	FramesPerSec     float64
	NsPerFrame       float64
	CPUNsPerFrame    float64
	UserNsPerFrame   float64
	CPUFramesPerSec  float64
	Runs, FramesEach int
	Seconds          float64
	GOMAXPROCS       int
	LoadAverage      string
}

// permissionFigures is what servers/host/permission's
// TestDecisionCostIsLinearInBytes writes (make bench-permission; issue
// 33, finding 4): CPU per request byte of deciding the red team's worst
// shapes at 1 and 16 MiB, and the floor (one lstat of each distinct path
// of the 16 MiB request) measured in the same run.
type permissionFigures struct {
	Measured    time.Time
	LoadAverage string
	Shapes      []struct {
		Shape                          string
		SmallBytes, LargeBytes         int
		SmallNsPerByte, LargeNsPerByte float64
		FloorNsPerByte                 float64
	}
}

// terminalFigures is what servers/host/terminal's TestOutputFloodCPU
// writes (make bench-terminal; issue 33, finding 8): per write size, the
// host's CPU per MiB of a flood from 16 terminals, once their rings are
// full, and an io.Copy's of the same bytes from as many children writing
// 64 KiB at a time, measured in the same run (what a terminal costs
// whatever it prints, a flood of one write, subtracted from both); the
// figures are the run of the median ratio, Ratios every run's.
type terminalFigures struct {
	Measured    time.Time
	LoadAverage string
	MaxRatio    float64
	Floods      []struct {
		WriteBytes, Terminals, BytesEach int
		Host, Copy                       struct {
			Bytes    int64
			CPU      time.Duration
			NsPerMiB float64
			WallSecs float64
		}
		Ratio  float64
		Ratios []float64
	}
}

// terminalFiguresPath is the file -terminal-figures names.
var terminalFiguresPath = "terminal-output.json"

// terminalMaxRatio is finding 8's bound: the host's CPU per MiB of a
// terminal flood at most 3× an io.Copy's of the same bytes.
const terminalMaxRatio = 3.0

// terminalMet judges one flood's ratio.
func terminalMet(host, cp float64) verdict {
	if cp <= 0 {
		return verdict{"MISSED: no io.Copy figure", false}
	}
	return atMostRatio(host/cp, terminalMaxRatio, fmt.Sprintf("host %s a MiB, io.Copy %s", fmtMS(host), fmtMS(cp)))
}

// commandFigures are the command's, the remote transports' and the
// permission decision's figures, as read (an error saying why one is
// missing).
type commandFigures struct {
	Trace         *traceFigures      `json:",omitempty"`
	Validate      *validateFigures   `json:",omitempty"`
	Remote        *remoteFigures     `json:",omitempty"`
	Permission    *permissionFigures `json:",omitempty"`
	Terminal      *terminalFigures   `json:",omitempty"`
	TraceErr      string             `json:",omitempty"`
	ValidateErr   string             `json:",omitempty"`
	RemoteErr     string             `json:",omitempty"`
	PermissionErr string             `json:",omitempty"`
	TerminalErr   string             `json:",omitempty"`
}

// permissionFiguresPath is the file -permission-figures names.
var permissionFiguresPath = "permission-decision.json"

// The permission decision's limits (issue 33): at most 32× from 1 to 16
// MiB (linear is 16×), and TestDecisionCostIsLinearInBytes's ceiling.
const (
	permissionMaxGrowth  = 32.0
	permissionMaxPerByte = 1000.0 // ns
)

// The limits.
const (
	traceMaxRatio  = 1.2
	validateTarget = 20000
)

func loadCommandFigures(tracePath, validatePath, remotePath string) commandFigures {
	var c commandFigures
	c.Remote, c.RemoteErr = loadRemoteFigures(remotePath)
	read := func(path, make string, v any) string {
		if path == "" {
			return "not read (no file given)"
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("not measured: %s is missing (`make %s` writes it)", path, make)
		}
		if err == nil {
			err = json.Unmarshal(data, v)
		}
		if err != nil {
			return fmt.Sprintf("%s: %v", path, err)
		}
		return ""
	}
	var t traceFigures
	if c.TraceErr = read(tracePath, "bench-trace", &t); c.TraceErr == "" {
		c.Trace = &t
	}
	var v validateFigures
	if c.ValidateErr = read(validatePath, "bench-validate", &v); c.ValidateErr == "" {
		c.Validate = &v
	}
	var p permissionFigures
	if c.PermissionErr = read(permissionFiguresPath, "bench-permission", &p); c.PermissionErr == "" {
		c.Permission = &p
	}
	var tf terminalFigures
	if c.TerminalErr = read(terminalFiguresPath, "bench-terminal", &tf); c.TerminalErr == "" {
		c.Terminal = &tf
	}
	return c
}

// permissionMet reports whether a shape meets the limits, and says how.
func permissionMet(smallBytes, largeBytes int, small, large float64) verdict {
	growth := large * float64(largeBytes) / (small * float64(smallBytes))
	text := fmt.Sprintf("%.1f× the CPU for %.1f× the bytes; %s a byte", growth, float64(largeBytes)/float64(smallBytes), fmtNS(large))
	if growth <= permissionMaxGrowth && large <= permissionMaxPerByte && small <= permissionMaxPerByte {
		return verdict{"met: " + text, true}
	}
	return verdict{"MISSED: " + text, false}
}

func measuredAt(t time.Time, load string) string {
	s := "time not recorded"
	if !t.IsZero() {
		s = t.UTC().Format("2006-01-02 15:04 MST")
	}
	if load != "" {
		s += ", load average " + load
	}
	return s
}

// verdicts are the command's targets with their verdicts, one a line.
func (c commandFigures) verdicts() []string {
	var out []string
	if t := c.Trace; t != nil {
		out = append(out,
			fmt.Sprintf("[trace] Round trip through `bridgekit trace`, 1 caller — p50 ≤ %g× a plain relay's (issue 16): %s", traceMaxRatio,
				mark(atMostRatio(t.P50Ratio, traceMaxRatio, fmt.Sprintf("relay p50 %s, trace %s", fmtUS(t.Relay1P50us), fmtUS(t.Trace1P50us))))))
	} else {
		out = append(out, "[trace] Round trips through `bridgekit trace` ≤ 1.2× a plain relay (issue 16): "+c.TraceErr)
	}
	if v := c.Validate; v != nil {
		vd := verdict{fmt.Sprintf("%s frames/s", fmtRate(v.FramesPerSec, "")), v.FramesPerSec >= validateTarget}
		if vd.met {
			vd.text = "met: " + vd.text
		} else {
			vd.text = "MISSED: " + vd.text
		}
		out = append(out, fmt.Sprintf("[validate] `bridgekit validate`: frames/s of mixed ACP traffic on one core ≥ %s (issue 16): %s (%s CPU per frame: %s frames per CPU second)",
			fmtRate(validateTarget, ""), mark(vd), fmtNS(v.CPUNsPerFrame), fmtRate(v.CPUFramesPerSec, "")))
	} else {
		out = append(out, "[validate] `bridgekit validate` ≥ 20k frames/s on one core (issue 16): "+c.ValidateErr)
	}
	if p := c.Permission; p != nil {
		for _, s := range p.Shapes {
			out = append(out, fmt.Sprintf("[permission] Deciding a request of %s, 1 → 16 MiB: CPU ≤ %g× (linear is 16×), ≤ %s a byte (issue 33): %s", s.Shape,
				permissionMaxGrowth, fmtNS(permissionMaxPerByte), mark(permissionMet(s.SmallBytes, s.LargeBytes, s.SmallNsPerByte, s.LargeNsPerByte))))
		}
	} else {
		out = append(out, "[permission] Deciding a permission request linear in its bytes (issue 33): "+c.PermissionErr)
	}
	if tf := c.Terminal; tf != nil {
		for _, f := range tf.Floods {
			out = append(out, fmt.Sprintf("[terminal] %d terminals flooding output in writes of %s: the host's CPU per MiB ≤ %g× io.Copy's (issue 33): %s",
				f.Terminals, fmtWriteSize(f.WriteBytes), terminalMaxRatio, mark(terminalMet(f.Host.NsPerMiB, f.Copy.NsPerMiB))))
		}
	} else {
		out = append(out, "[terminal] A terminal output flood's CPU per MiB ≤ 3× io.Copy's (issue 33): "+c.TerminalErr)
	}
	return out
}

func atMostRatio(x, limit float64, detail string) verdict {
	if x > 0 && x <= limit {
		return verdict{fmt.Sprintf("met: %.2f× ≤ %g× (%s)", x, limit, detail), true}
	}
	return verdict{fmt.Sprintf("MISSED: %.2f× > %g× (%s)", x, limit, detail), false}
}

// section renders the command's figures for the report.
func (c commandFigures) section() string {
	var sb strings.Builder
	sb.WriteString("| target (issue 16) | figures | met? |\n|---|---|---|\n")
	if t := c.Trace; t != nil {
		fmt.Fprintf(&sb, "| `bridgekit trace --out FILE` to a child, 1 caller: p50 ≤ %g× a plain relay's | relay p50 %s (p99 %s), trace p50 %s (p99 %s): **%.2f×**; median of %d runs of %d calls, %s | %s |\n",
			traceMaxRatio, fmtUS(t.Relay1P50us), fmtUS(t.Relay1P99us), fmtUS(t.Trace1P50us), fmtUS(t.Trace1P99us), t.P50Ratio,
			t.Reps, t.Calls1, measuredAt(t.Measured, t.LoadAverage), mark(atMostRatio(t.P50Ratio, traceMaxRatio, "p50")))
		fmt.Fprintf(&sb, "| same, 16 callers: throughput, for information (issue 30 retired issue 16's target: caller, responder and proxy share the two cores) | relay %s, trace %s: the relay **%.2f×** trace; %d calls a run, %.0f B of JSONL a round trip | — |\n",
			fmtRate(t.Relay16PerS, "/s"), fmtRate(t.Trace16PerS, "/s"), t.ThroughputRatio, t.Calls16, t.TraceJSONLBytesPerRoundTrip)
	} else {
		fmt.Fprintf(&sb, "| `bridgekit trace` ≤ %g× a plain relay | %s | — |\n", traceMaxRatio, c.TraceErr)
	}
	if v := c.Validate; v != nil {
		met := "❌ MISSED"
		if v.FramesPerSec >= validateTarget {
			met = "✅ met"
		}
		fmt.Fprintf(&sb, "| `bridgekit validate`: frames/s of mixed ACP traffic on one core ≥ %s | **%s frames/s** (%s a frame) by wall time with GOMAXPROCS=%d; CPU time (user + system) %s a frame, user %s: %s frames per CPU second; median of %d runs of %.1f s (%s frames each), %s | %s |\n",
			fmtRate(validateTarget, ""), fmtRate(v.FramesPerSec, ""), fmtNS(v.NsPerFrame), v.GOMAXPROCS, fmtNS(v.CPUNsPerFrame), fmtNS(v.UserNsPerFrame),
			fmtRate(v.CPUFramesPerSec, ""), v.Runs, v.Seconds, fmtCount(float64(v.FramesEach)), measuredAt(v.Measured, v.LoadAverage), met)
	} else {
		fmt.Fprintf(&sb, "| `bridgekit validate` ≥ %s frames/s on one core | %s | — |\n", fmtRate(validateTarget, ""), c.ValidateErr)
	}
	if p := c.Permission; p != nil {
		for _, s := range p.Shapes {
			fmt.Fprintf(&sb, "| permission decision (issue 33), %s: CPU per request byte, 1 → 16 MiB ≤ %g× growth and ≤ %s a byte | %s (%.1f MB) and **%s a path byte** (%.1f MB); the floor, one lstat of each distinct path, %s a byte: the decision **%.0f×** it; %s | %s |\n",
				s.Shape, permissionMaxGrowth, fmtNS(permissionMaxPerByte), fmtNS(s.SmallNsPerByte), float64(s.SmallBytes)/1e6, fmtNS(s.LargeNsPerByte), float64(s.LargeBytes)/1e6,
				fmtNS(s.FloorNsPerByte), s.LargeNsPerByte/max(s.FloorNsPerByte, 1e-9), measuredAt(p.Measured, p.LoadAverage),
				mark(permissionMet(s.SmallBytes, s.LargeBytes, s.SmallNsPerByte, s.LargeNsPerByte)))
		}
	} else {
		fmt.Fprintf(&sb, "| permission decision linear in its bytes (issue 33) | %s | — |\n", c.PermissionErr)
	}
	if tf := c.Terminal; tf != nil {
		for _, f := range tf.Floods {
			fmt.Fprintf(&sb, "| terminal output (issue 33), %d terminals writing %s at a time: the host's CPU per MiB ≤ %g× an io.Copy's of the same bytes | host **%s a MiB** (%s of CPU for %.0f MiB in %.2f s), io.Copy %s a MiB (%s for %.0f MiB in %.2f s): **%.2f×**; the run of the median ratio of %d (%s), %s | %s |\n",
				f.Terminals, fmtWriteSize(f.WriteBytes), terminalMaxRatio, fmtMS(f.Host.NsPerMiB), f.Host.CPU.Round(time.Millisecond/10), float64(f.Host.Bytes)/(1<<20), f.Host.WallSecs,
				fmtMS(f.Copy.NsPerMiB), f.Copy.CPU.Round(time.Millisecond/10), float64(f.Copy.Bytes)/(1<<20), f.Copy.WallSecs, f.Host.NsPerMiB/max(f.Copy.NsPerMiB, 1e-9),
				len(f.Ratios), fmtRatios(f.Ratios), measuredAt(tf.Measured, tf.LoadAverage), mark(terminalMet(f.Host.NsPerMiB, f.Copy.NsPerMiB)))
		}
	} else {
		fmt.Fprintf(&sb, "| terminal output flood ≤ 3× io.Copy's CPU per MiB (issue 33) | %s | — |\n", c.TerminalErr)
	}
	return sb.String()
}

const commandsIntro = "Measured in cmd/bridgekit's module by `make bench-trace` and `make bench-validate`, which `make bench` runs first, and read from `bench/trace-overhead.json` and `bench/validate-throughput.json`. **trace**: `cmd/bridgekit/overhead_test.go` (`TestTraceOverhead`): a caller makes JSON-RPC round trips of session/prompt-sized frames through a middle process to the same child responder, the middle being either a plain relay (two `io.Copy` loops) or `bridgekit trace --out FILE`, the two taking turns; the ratio is trace ÷ relay for p50 and relay ÷ trace for throughput. **validate**: `cmd/bridgekit/internal/validate/bench_test.go` (`TestValidateThroughput`, the loop of `BenchmarkValidate`): the recorded traffic of three real ACP agents (`testdata/acp/traffic/*/turn.jsonl`: initialize, session/new, prompts, session/update streams, fs, terminal and permission requests and their replies), every frame matched to its method, validated against its JSON Schema, decoded into its generated type, re-encoded and compared, with GOMAXPROCS=1; frames per CPU second is the rate a core of its own would give, which other jobs on the machine do not depress.\n\n"

// fmtWriteSize words a write size: 64 B, 4 KiB.
func fmtWriteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// fmtMS words nanoseconds in milliseconds.
func fmtMS(ns float64) string { return fmt.Sprintf("%.2f ms", ns/1e6) }

// fmtRatios words ratios: 1.20×, 1.50×.
func fmtRatios(rs []float64) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%.2f×", r))
	}
	return strings.Join(parts, ", ")
}
