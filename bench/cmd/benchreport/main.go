// Command benchreport runs the bench scenarios for every runtime, in the
// default build and with GOEXPERIMENT=jsonv2, and prints one table of
// medians with the ratios and the performance targets; it also writes the
// table, the machine and the method to docs/performance.md.
//
// Every measurement runs in a fresh worker process (this binary, rebuilt
// per build), so runtimes cannot disturb each other's heap or goroutines,
// and a worker that hangs is killed and reported instead of stalling the
// run. Run it from the bench directory:
//
//	go run ./cmd/benchreport [-quick] [-runs 3] [-builds default,jsonv2] [-out ../docs/performance.md]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/bench"
)

func main() {
	bench.MaybeRunPeer()

	var (
		worker     = flag.Bool("worker", false, "internal: run one scenario and write its result")
		scenario   = flag.String("scenario", "", "internal: scenario for -worker")
		rtKey      = flag.String("rt", "", "internal: runtime for -worker")
		resultPath = flag.String("result", "", "internal: result file for -worker")
		cpuProf    = flag.String("cpuprofile", "", "internal: CPU profile of the -worker scenario")
		memProf    = flag.String("memprofile", "", "internal: allocation profile of the -worker scenario")

		quick   = flag.Bool("quick", false, "short measurements, one run per build (about a minute)")
		runs    = flag.Int("runs", 0, "runs per build; figures are medians (default 5, or 1 with -quick)")
		builds  = flag.String("builds", "default,jsonv2", "builds to measure: default and/or jsonv2")
		out     = flag.String("out", "../docs/performance.md", "report file to write (empty: stdout only; -quick defaults to empty)")
		only    = flag.String("only", "", "comma-separated scenarios to run (default all)")
		profile = flag.Bool("profile", true, "profile bridgekit's in-memory round trip and include the top entries")
		raw     = flag.String("raw", "", "also save the raw results (every run) as JSON to this file")
		render  = flag.String("render", "", "measure nothing: print and write the report from a file saved with -raw (and the figures -trace-figures and -validate-figures name, when given)")
		traceF  = flag.String("trace-figures", "trace-overhead.json", "bridgekit trace's overhead, as `make bench-trace` writes it (empty: leave out)")
		valF    = flag.String("validate-figures", "validate-throughput.json", "bridgekit validate's throughput, as `make bench-validate` writes it (empty: leave out)")
		remF    = flag.String("remote-figures", "remote-transports.json", "the remote transports against the TS SDK's, as `make bench-remote` writes it (empty: leave out)")
		permF   = flag.String("permission-figures", "permission-decision.json", "the permission decision's CPU per byte, as `make bench-permission` writes it (empty: leave out)")
		termF   = flag.String("terminal-figures", "terminal-output.json", "a terminal output flood's CPU per MiB, as `make bench-terminal` writes it (empty: leave out)")
	)
	flag.Parse()
	permissionFiguresPath = *permF
	terminalFiguresPath = *termF

	if *worker {
		if err := runWorker(*scenario, *rtKey, *resultPath, *cpuProf, *memProf, *quick); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}

	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *quick && !outSet {
		*out = "" // a quick run does not replace the committed report
	}
	if *runs <= 0 {
		*runs = 5
		if *quick {
			*runs = 1
		}
	}
	cfg := config{quick: *quick, runs: *runs, out: *out, profile: *profile, raw: *raw, traceFigures: *traceF, validateFigures: *valF, remoteFigures: *remF}
	if *render != "" {
		rep, err := loadRaw(*render)
		if err != nil {
			fatalf("%v", err)
		}
		rep.cfg.out = cfg.out
		// The command's figures are read afresh when named: a later
		// make bench-trace or bench-validate renders into a saved run.
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "trace-figures" || f.Name == "validate-figures" || f.Name == "remote-figures" || f.Name == "permission-figures" || f.Name == "terminal-figures" {
				rep.commands = loadCommandFigures(cfg.traceFigures, cfg.validateFigures, cfg.remoteFigures)
			}
		})
		if err := publish(rep); err != nil {
			fatalf("%v", err)
		}
		return
	}
	for _, b := range strings.Split(*builds, ",") {
		switch b = strings.TrimSpace(b); b {
		case "default", "jsonv2":
			cfg.builds = append(cfg.builds, b)
		case "":
		default:
			fatalf("unknown build %q (want default or jsonv2)", b)
		}
	}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if _, err := bench.LookupScenario(s); err != nil {
				fatalf("%v", err)
			}
			cfg.only = append(cfg.only, s)
		}
	}
	if err := orchestrate(cfg); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchreport: "+format+"\n", args...)
	os.Exit(1)
}

type config struct {
	quick   bool
	runs    int
	builds  []string
	only    []string
	out     string
	profile bool
	raw     string // save the raw results here
	// The bridgekit command's figures, measured by make bench-trace and
	// make bench-validate (commands.go).
	traceFigures, validateFigures, remoteFigures string
}

// build is one compilation of this command, used as the worker binary.
type build struct {
	name string // "default" or "jsonv2"
	bin  string
	info buildInfo
}

type key struct{ build, scenario, rt string }

type outcome struct {
	metrics bench.Metrics
	err     string
	partial bool
	hung    bool
	foreign float64 // CPUs kept busy by other processes (or stolen) meanwhile
	retries int     // attempts discarded because of foreign load
}

func (o outcome) ok() bool { return o.err == "" || o.partial }

// codecKey is the runtime column under which runtime-independent
// scenarios are stored.
const codecKey = "codec"

func orchestrate(cfg config) error {
	start := time.Now()
	loadStart := loadAverage()
	tmp, err := os.MkdirTemp("", "benchreport")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var builds []*build
	for _, name := range cfg.builds {
		b, err := buildWorker(tmp, name)
		if err != nil {
			return err
		}
		builds = append(builds, b)
		logf("built %s worker: %s, GOEXPERIMENT=%q, GOMAXPROCS=%d", name, b.info.GoVersion, b.info.GOEXPERIMENT, b.info.GOMAXPROCS)
	}

	scenarios := bench.Scenarios()
	if len(cfg.only) > 0 {
		scenarios = slices.DeleteFunc(scenarios, func(s bench.Scenario) bool { return !slices.Contains(cfg.only, s.Name) })
	}
	rts := bench.Runtimes()
	results := map[key][]outcome{}
	// Runs are the outer loop so that the two builds, like the runtimes,
	// are measured at interleaved times on a machine whose load drifts.
	for run := range cfg.runs {
		for _, b := range builds {
			for _, sc := range scenarios {
				keys := []string{codecKey}
				if sc.Envelope {
					keys = []string{envelopeKey}
				} else if !sc.Codec {
					keys = keys[:0]
					rts := rts
					if sc.Sequential {
						rts = append(slices.Clone(rts), bench.Variants()...)
					}
					if sc.Reference {
						rts = append(slices.Clone(rts), bench.References()...)
					}
					// Rotate the order from run to run so that no runtime
					// always goes first.
					for i := range rts {
						keys = append(keys, rts[(i+run)%len(rts)].Key())
					}
				}
				for _, rk := range keys {
					o := runMeasured(b, sc, rk, cfg.quick, tmp)
					k := key{b.name, sc.Name, rk}
					results[k] = append(results[k], o)
					logf("[run %d/%d %s] %-16s %-12s %s", run+1, cfg.runs, b.name, sc.Name, rk, summary(o))
				}
			}
		}
	}

	var prof string
	if cfg.profile && len(builds) > 0 {
		prof = profileBridgekit(builds[0], cfg.quick, tmp)
	}

	rep := &report{
		cfg:      cfg,
		builds:   builds,
		results:  results,
		profile:  prof,
		started:  start,
		duration: time.Since(start),
		load:     [2]string{loadStart, loadAverage()},
		bkOpts:   bench.BridgekitOptions(),
		commands: loadCommandFigures(cfg.traceFigures, cfg.validateFigures, cfg.remoteFigures),
	}
	if cfg.raw != "" {
		if err := saveRaw(cfg.raw, rep); err != nil {
			return err
		}
		logf("saved raw results to %s", cfg.raw)
	}
	return publish(rep)
}

// publish prints the table and writes the report file.
func publish(rep *report) error {
	cfg := rep.cfg
	table := rep.table()
	fmt.Println(table)
	if v := rep.variants(); v != "" {
		fmt.Println(v)
	}
	if ref := rep.references(); ref != "" {
		fmt.Println(ref)
	}
	if env := rep.envelopes(); env != "" {
		fmt.Println(env)
	}
	fmt.Println(rep.commands.section())
	fmt.Println(rep.commands.remoteSection())
	fmt.Println(rep.targetSummary())
	if cfg.out != "" {
		doc := rep.document(table, readAnalysis(cfg.out))
		if err := os.WriteFile(cfg.out, []byte(doc), 0o644); err != nil {
			return err
		}
		logf("wrote %s", cfg.out)
	}
	return nil
}

// loadAverage returns the 1-, 5- and 15-minute load averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// buildWorker compiles this command for the named build.
func buildWorker(tmp, name string) (*build, error) {
	b := &build{name: name, bin: filepath.Join(tmp, "benchreport-"+name)}
	env := withoutEnv(os.Environ(), "GOEXPERIMENT")
	if name == "jsonv2" {
		env = append(env, "GOEXPERIMENT=jsonv2")
	}
	cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/benchreport")
	cmd.Env = env
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the %s worker: %w", name, err)
	}
	res := filepath.Join(tmp, "info-"+name+".json")
	info := exec.Command(b.bin, "-worker", "-scenario", "info", "-result", res)
	info.Stderr = os.Stderr
	if err := info.Run(); err != nil {
		return nil, fmt.Errorf("%s worker info: %w", name, err)
	}
	data, err := os.ReadFile(res)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &b.info); err != nil {
		return nil, err
	}
	if name == "jsonv2" && !strings.Contains(b.info.GOEXPERIMENT, "jsonv2") {
		return nil, fmt.Errorf("jsonv2 worker reports GOEXPERIMENT=%q", b.info.GOEXPERIMENT)
	}
	return b, nil
}

func withoutEnv(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// runOne runs one scenario for one runtime in a fresh worker process,
// killing it after the scenario's timeout.
func runOne(b *build, sc bench.Scenario, rtKey string, quick bool, tmp, cpuProf, memProf string) outcome {
	res := filepath.Join(tmp, fmt.Sprintf("result-%d.json", time.Now().UnixNano()))
	defer os.Remove(res)
	args := []string{"-worker", "-scenario", sc.Name, "-rt", rtKey, "-result", res}
	if quick {
		args = append(args, "-quick")
	}
	if cpuProf != "" {
		args = append(args, "-cpuprofile", cpuProf)
	}
	if memProf != "" {
		args = append(args, "-memprofile", memProf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sc.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = withoutEnv(os.Environ(), bench.PeerEnv)
	var stderr strings.Builder
	cmd.Stderr = &limitWriter{w: &stderr, n: 4096}
	cmd.WaitDelay = 2 * time.Second
	busy0, statOK := busyCPU()
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	foreign := 0.0
	if busy1, ok := busyCPU(); ok && statOK && cmd.ProcessState != nil {
		own := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		foreign = max(0, (busy1-busy0-own)/wall.Seconds())
	}
	if ctx.Err() != nil {
		return outcome{hung: true, err: fmt.Sprintf("hung: killed after %v", sc.Timeout), foreign: foreign}
	}
	data, rerr := os.ReadFile(res)
	if err != nil || rerr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && err != nil {
			msg = err.Error()
		} else if msg == "" {
			msg = rerr.Error()
		}
		return outcome{err: "worker failed: " + oneLine(msg)}
	}
	var wr workerResult
	if err := json.Unmarshal(data, &wr); err != nil {
		return outcome{err: "bad worker result: " + err.Error()}
	}
	o := outcome{metrics: wr.Metrics, err: wr.Err, partial: wr.Partial, foreign: foreign}
	if strings.HasPrefix(wr.Err, bench.ErrHung.Error()+":") {
		o.hung = true
	}
	return o
}

// maxForeign is the load from other processes (in CPUs) above which a
// measurement is repeated, at most maxAttempts times in all.
const (
	maxForeign  = 0.5
	maxAttempts = 3
)

// runMeasured runs one measurement and repeats it (keeping the least
// disturbed attempt) while other processes kept more than maxForeign CPUs
// busy during it: on a shared 2-CPU machine such a figure says more about
// the neighbours than about the runtime.
func runMeasured(b *build, sc bench.Scenario, rtKey string, quick bool, tmp string) outcome {
	best := runOne(b, sc, rtKey, quick, tmp, "", "")
	for attempt := 1; attempt < maxAttempts && best.ok() && best.foreign > maxForeign; attempt++ {
		logf("    %s %s: %.2f CPUs of foreign load, measuring again", sc.Name, rtKey, best.foreign)
		o := runOne(b, sc, rtKey, quick, tmp, "", "")
		o.retries = best.retries + 1
		if !o.ok() || o.foreign >= best.foreign {
			best.retries = o.retries
			continue
		}
		best = o
	}
	return best
}

// busyCPU returns the CPU seconds all CPUs have spent busy (including
// time stolen by the hypervisor) since boot, from /proc/stat.
func busyCPU() (float64, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var busy float64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		var n float64
		if _, err := fmt.Sscanf(v, "%f", &n); err != nil {
			return 0, false
		}
		busy += n
	}
	return busy / 100, true // USER_HZ is 100 on Linux
}

type limitWriter struct {
	w interface{ WriteString(string) (int, error) }
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		s := string(p[:min(len(p), l.n)])
		l.n -= len(s)
		l.w.WriteString(s)
	}
	return len(p), nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return s
}

func summary(o outcome) string {
	if !o.ok() {
		return "FAILED: " + o.err
	}
	var parts []string
	for _, k := range []string{"req_s", "msg_s", "env_req_s", "jsonrpc_req_s", "env_msg_s", "jsonrpc_msg_s", "sys_us_msg", "csw_msg", "peer_csw_msg", "mb_s", "p50_us", "allocs", "ns", "total_kib", "ret_p50_us", "saw_pct", "leaked", "v1double_ns", "v2single_ns", "v1_ns", "v2_ns"} {
		if v, ok := o.metrics[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%.4g", k, v))
		}
	}
	s := strings.Join(parts, " ") + fmt.Sprintf(" [foreign %.2f]", o.foreign)
	if o.err != "" {
		s += " (" + o.err + ")"
	}
	return s
}

// profileBridgekit profiles bridgekit's in-memory round trip (CPU) and its
// allocations per round trip, and returns the top entries of each.
func profileBridgekit(b *build, quick bool, tmp string) string {
	var sb strings.Builder
	cpu1 := filepath.Join(tmp, "cpu1.prof")
	cpu16 := filepath.Join(tmp, "cpu16.prof")
	mem := filepath.Join(tmp, "mem.prof")
	for _, p := range []struct{ scenario, cpu, mem string }{
		{"rt-inmem-1", cpu1, ""},
		{"rt-inmem-16", cpu16, ""},
		{"allocs-rt", "", mem},
	} {
		sc, _ := bench.LookupScenario(p.scenario)
		if o := runOne(b, sc, "bridgekit", quick, tmp, p.cpu, p.mem); !o.ok() {
			return "profiling failed: " + o.err
		}
	}
	for _, p := range []struct {
		title, file string
		args        []string
	}{
		{"CPU, in-memory round trips, 1 caller, 3 s (flat)", cpu1, []string{"-top", "-nodecount=25"}},
		{"CPU, in-memory round trips, 1 caller, 3 s (cumulative)", cpu1, []string{"-top", "-cum", "-nodecount=30"}},
		{"CPU, in-memory round trips, 16 callers, 3 s (flat)", cpu16, []string{"-top", "-nodecount=20"}},
		{"Allocations (objects), 5,000 sequential in-memory round trips after 500 warm-up calls", mem, []string{"-top", "-sample_index=alloc_objects", "-nodecount=20"}},
		{"Allocations (bytes), same", mem, []string{"-top", "-sample_index=alloc_space", "-nodecount=12"}},
	} {
		args := append([]string{"tool", "pprof"}, p.args...)
		args = append(args, b.bin, p.file)
		out, err := exec.Command("go", args...).CombinedOutput()
		fmt.Fprintf(&sb, "#### %s\n\n```\n", p.title)
		if err != nil {
			fmt.Fprintf(&sb, "go tool pprof failed: %v\n", err)
		}
		sb.WriteString(trimPprofHeader(string(out)))
		sb.WriteString("\n```\n\n")
	}
	return sb.String()
}

// trimPprofHeader drops the File/Build ID/Time lines of pprof's output.
func trimPprofHeader(s string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "File: ") || strings.HasPrefix(l, "Build ID: ") || strings.HasPrefix(l, "Time: ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
