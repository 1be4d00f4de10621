package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The bridgekit command's figures are read from the files make
// bench-trace and make bench-validate write, judged against issue 16's
// targets, and rendered with what is missing said so.
func TestCommandFigures(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "trace.json")
	va := filepath.Join(dir, "validate.json")
	os.WriteFile(tr, []byte(`{"Measured":"2026-12-02T10:00:00Z","LoadAverage":"1.0 1.0 1.0","Relay1P50us":90,"Trace1P50us":99,
		"Relay16PerS":50000,"Trace16PerS":20000,"P50Ratio":1.1,"ThroughputRatio":2.5,"Calls1":20000,"Calls16":100000,"Reps":5}`), 0o644)
	os.WriteFile(va, []byte(`{"Measured":"2026-12-02T10:00:00Z","Target":20000,"FramesPerSec":25000,"NsPerFrame":40000,
		"CPUNsPerFrame":38000,"UserNsPerFrame":37000,"CPUFramesPerSec":26315,"Runs":5,"FramesEach":50000,"Seconds":2,"GOMAXPROCS":1}`), 0o644)
	c := loadCommandFigures(tr, va, "")
	if c.Trace == nil || c.Validate == nil {
		t.Fatalf("not read: %+v", c)
	}
	v := strings.Join(c.verdicts(), "\n")
	for _, want := range []string{"✅ met: 1.10× ≤ 1.2×", "✅ met: 25.0k frames/s", "26.3k frames per CPU second"} {
		if !strings.Contains(v, want) {
			t.Errorf("verdicts lack %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "16 callers") {
		t.Errorf("issue 30 retired the 16-caller throughput target:\n%s", v)
	}
	sec := c.section()
	for _, want := range []string{"**25.0k frames/s**", "2026-12-02 10:00 UTC", "relay 50.0k/s, trace 20.0k/s"} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q:\n%s", want, sec)
		}
	}
	os.WriteFile(va, []byte(`{"FramesPerSec":9000,"CPUNsPerFrame":55000}`), 0o644)
	if v := strings.Join(loadCommandFigures(tr, va, "").verdicts(), "\n"); !strings.Contains(v, "❌ MISSED: 9.0k frames/s") {
		t.Errorf("below the target: %s", v)
	}
	missing := loadCommandFigures(filepath.Join(dir, "none.json"), "", "")
	if missing.Trace != nil || !strings.Contains(missing.TraceErr, "make bench-trace") || missing.ValidateErr == "" {
		t.Errorf("missing files: %+v", missing)
	}
	if sec := missing.section(); !strings.Contains(sec, "not measured") {
		t.Errorf("section for missing files:\n%s", sec)
	}
}

// The remote transports' figures render with their verdicts.
func TestRemoteFigures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "remote.json")
	f := remoteFigures{Calls: 2000, HTTPCalls: 200, Burst: 50000, Runs: 3,
		RoundTrips:     map[string]map[string]float64{"websocket": {"ts-ts": 600, "ts-go": 2100, "go-ts": 1000, "go-go": 3500}},
		Bursts:         map[string]map[string]float64{"websocket": {"ts-ts": 5000, "ts-go": 11000, "go-ts": 14000, "go-go": 16000}},
		BridgekitP50us: 45, BareP50us: 31, IdleSessions: 1000, IdleBytesPerConn: 70000}
	data, _ := json.Marshal(f)
	os.WriteFile(path, data, 0o644)
	c := loadCommandFigures("", "", path)
	v := strings.Join(c.remoteVerdicts(), "\n")
	for _, want := range []string{"round trips: bridgekit's server ≥ 2× the TS SDK's (issue 32): ✅ met: 3.50×", "round trips: bridgekit's client ≥ 2× the TS SDK's (issue 32): ❌ MISSED: 1.67×", "burst: bridgekit's server ≥ 2× the TS SDK's (issue 32): ❌ MISSED: 1.14×", "burst: bridgekit's client ≥ 2× the TS SDK's (issue 32): ❌ MISSED: 1.45×", "✅ met: 1.45×", "❌ MISSED: 68.4 KiB"} {
		if !strings.Contains(v, want) {
			t.Errorf("verdicts lack %q:\n%s", want, v)
		}
	}
	if sec := c.remoteSection(); !strings.Contains(sec, "| WebSocket round trips: bridgekit's server ≥ 2× the TS SDK's |") {
		t.Errorf("section:\n%s", sec)
	}
	if missing := loadCommandFigures("", "", filepath.Join(dir, "none.json")); !strings.Contains(missing.remoteSection(), "make bench-remote") {
		t.Error("a missing file is not said")
	}
}

// The permission decision's figures (issue 33, finding 4): a row per
// shape, judged against its growth and per-byte limits.
func TestPermissionFigures(t *testing.T) {
	dir := t.TempDir()
	old := permissionFiguresPath
	defer func() { permissionFiguresPath = old }()
	permissionFiguresPath = filepath.Join(dir, "permission.json")
	os.WriteFile(permissionFiguresPath, []byte(`{"Measured":"2026-12-06T10:48:01Z","LoadAverage":"2.0 2.0 2.0","Shapes":[
		{"Shape":"deep missing locations","SmallBytes":1000000,"LargeBytes":16000000,"SmallNsPerByte":70,"LargeNsPerByte":75,"FloorNsPerByte":2.5},
		{"Shape":"quadratic","SmallBytes":1000000,"LargeBytes":16000000,"SmallNsPerByte":70,"LargeNsPerByte":1400,"FloorNsPerByte":2.5}]}`), 0o644)
	c := loadCommandFigures("", "", "")
	if c.Permission == nil {
		t.Fatalf("not read: %+v", c)
	}
	v := strings.Join(c.verdicts(), "\n")
	for _, want := range []string{"✅ met: 17.1× the CPU for 16.0× the bytes", "❌ MISSED: 320.0× the CPU"} {
		if !strings.Contains(v, want) {
			t.Errorf("verdicts lack %q:\n%s", want, v)
		}
	}
	if sec := c.section(); !strings.Contains(sec, "a path byte** (16.0 MB)") || !strings.Contains(sec, "the decision **30×** it") {
		t.Errorf("section:\n%s", sec)
	}
	permissionFiguresPath = filepath.Join(dir, "none.json")
	if c := loadCommandFigures("", "", ""); !strings.Contains(c.PermissionErr, "make bench-permission") {
		t.Errorf("missing: %+v", c)
	}
}

// A terminal output flood's figures (issue 33, finding 8): a row per
// write size, judged against 3× io.Copy's CPU per MiB.
func TestTerminalFigures(t *testing.T) {
	dir := t.TempDir()
	old := terminalFiguresPath
	defer func() { terminalFiguresPath = old }()
	terminalFiguresPath = filepath.Join(dir, "terminal.json")
	os.WriteFile(terminalFiguresPath, []byte(`{"Measured":"2026-12-06T14:10:00Z","LoadAverage":"9.0 9.0 9.0","MaxRatio":3,"Floods":[
		{"WriteBytes":64,"Terminals":16,"BytesEach":4194304,"Host":{"Bytes":67108864,"CPU":64000000,"NsPerMiB":1000000,"WallSecs":1.5},"Copy":{"Bytes":67108864,"CPU":32000000,"NsPerMiB":500000,"WallSecs":0.2},"Ratio":2,"Ratios":[1.5,2,2.5]},
		{"WriteBytes":4096,"Terminals":16,"BytesEach":16777216,"Host":{"Bytes":268435456,"CPU":1024000000,"NsPerMiB":4000000,"WallSecs":1},"Copy":{"Bytes":268435456,"CPU":128000000,"NsPerMiB":500000,"WallSecs":0.5},"Ratio":8}]}`), 0o644)
	c := loadCommandFigures("", "", "")
	if c.Terminal == nil {
		t.Fatalf("not read: %+v", c)
	}
	v := strings.Join(c.verdicts(), "\n")
	for _, want := range []string{"writes of 64 B: the host's CPU per MiB ≤ 3× io.Copy's (issue 33): ✅ met: 2.00× ≤ 3× (host 1.00 ms a MiB, io.Copy 0.50 ms)",
		"writes of 4 KiB: the host's CPU per MiB ≤ 3× io.Copy's (issue 33): ❌ MISSED: 8.00× > 3×"} {
		if !strings.Contains(v, want) {
			t.Errorf("verdicts lack %q:\n%s", want, v)
		}
	}
	if sec := c.section(); !strings.Contains(sec, "| terminal output (issue 33), 16 terminals writing 64 B at a time") || !strings.Contains(sec, "host **1.00 ms a MiB** (64ms of CPU for 64 MiB in 1.50 s), io.Copy 0.50 ms a MiB (32ms for 64 MiB in 0.20 s): **2.00×**; the run of the median ratio of 3 (1.50×, 2.00×, 2.50×), 2026-12-06 14:10 UTC, load average 9.0 9.0 9.0 | ✅ met") {
		t.Errorf("section:\n%s", sec)
	}
	terminalFiguresPath = filepath.Join(dir, "none.json")
	if c := loadCommandFigures("", "", ""); !strings.Contains(c.TerminalErr, "make bench-terminal") {
		t.Errorf("missing: %+v", c)
	}
}
