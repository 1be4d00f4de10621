package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/bench"
)

type report struct {
	cfg      config
	builds   []*build
	results  map[key][]outcome
	profile  string
	started  time.Time
	duration time.Duration
	load     [2]string // load average at the start and the end
	bkOpts   string    // bridgekit's options, as bench.BridgekitOptions
	commands commandFigures
}

// agg is the aggregate of the runs of one scenario for one runtime.
type agg struct {
	m    bench.Metrics // medians over the runs that produced figures
	ok   int           // runs that produced figures
	runs int
	hung int
	errs []string // distinct failure messages

	outs   []outcome // the runs, in order
	prefix string    // metric prefix for a codec scenario's sub-view
}

func (a agg) valid() bool  { return a.ok > 0 }
func (a agg) failed() bool { return a.ok < a.runs }

func (r *report) agg(build, scenario, rt string) agg {
	outs := r.results[key{build, scenario, rt}]
	a := agg{m: bench.Metrics{}, runs: len(outs), outs: outs}
	vals := map[string][]float64{}
	for _, o := range outs {
		if o.err != "" && !slices.Contains(a.errs, o.err) {
			a.errs = append(a.errs, o.err)
		}
		if o.hung {
			a.hung++
		}
		if !o.ok() {
			continue
		}
		a.ok++
		for k, v := range o.metrics {
			vals[k] = append(vals[k], v)
		}
	}
	for k, vs := range vals {
		a.m[k] = median(vs)
	}
	return a
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// sub renames the metrics prefix_* of a codec scenario to *.
func (a agg) sub(prefix string) agg {
	b := a
	b.prefix = prefix
	b.m = bench.Metrics{}
	for k, v := range a.m {
		if rest, ok := strings.CutPrefix(k, prefix+"_"); ok {
			b.m[rest] = v
		}
	}
	return b
}

type verdict struct {
	text string
	met  bool
}

type row struct {
	title    string
	scenario string
	metric   string // figure compared in the ratio columns
	higher   bool   // higher is better
	cell     func(bench.Metrics) string
	// For runtime-independent codec scenarios: the metric prefixes shown
	// in the competitor columns and in bridgekit's column.
	codecComp, codecBK string
	// acpOnly codec rows compare with acp-go-sdk alone (its generated ACP
	// types); the other competitors have no such types.
	acpOnly bool
	// acpNote, when set, stands in acp-go-sdk's column of a codec row that
	// measures bridgekit alone.
	acpNote string
	target  string
	// judge judges bridgekit's figures in build against the competitors'
	// of the same runs (by column key).
	judge func(build string, bk agg, comp map[string]agg) verdict
}

func rows() []row {
	rate := func(m bench.Metrics) string {
		return fmt.Sprintf("%s · p50 %s · p99 %s", fmtRate(m["req_s"], "/s"), fmtUS(m["p50_us"]), fmtUS(m["p99_us"]))
	}
	rateCPU := func(m bench.Metrics) string {
		return rate(m) + fmt.Sprintf(" · %.1f cores, %s CPU/call", m["cores"], fmtUS(m["cpu_us_per_call"]))
	}
	op := func(m bench.Metrics) string {
		return fmt.Sprintf("%s · %s allocs · %s", fmtNS(m["ns"]), fmtCount(m["allocs"]), fmtBytes(m["bytes"]))
	}
	allocs := func(m bench.Metrics) string {
		return fmt.Sprintf("%s allocs · %s", fmtCount(m["allocs"]), fmtBytes(m["bytes"]))
	}
	large := func(m bench.Metrics) string {
		return fmt.Sprintf("%.0f MB/s · %s · p50 %s", m["mb_s"], fmtRate(m["req_s"], "/s"), fmtUS(m["p50_us"]))
	}
	large8 := func(m bench.Metrics) string {
		return fmt.Sprintf("%.0f MB/s · p50 %s · conn OK", m["mb_s"], fmtUS(m["p50_us"]))
	}
	codec := []row{
		{
			title: "Codec: encode a request — encoding/json params→RawMessage→envelope (how all three competitors do it) vs go-json-experiment, one pass (bridgekit's codec)", scenario: "codec-encode",
			metric: "ns", cell: op, codecComp: "v1double", codecBK: "v2single",
		},
		{
			title: "Codec: encode a request in one pass — encoding/json vs go-json-experiment", scenario: "codec-encode",
			metric: "ns", cell: op, codecComp: "v1single", codecBK: "v2single",
		},
		{
			title: "Codec: decode a request, envelope then params — encoding/json vs go-json-experiment + jsonrpc.DecodeParams", scenario: "codec-decode",
			metric: "ns", cell: op, codecComp: "v1", codecBK: "v2",
		},
	}
	return slices.Concat(codec, sessionUpdateRows(op), []row{
		{title: "Send a notification: encode + write (Notify → io.Discard)", scenario: "encode-notify", metric: "ns", cell: op},
		{title: "Receive a notification: frame + decode + dispatch (pre-encoded stream, batches of 1000)", scenario: "decode-inbound", metric: "ns", cell: op},
		{
			title: "Round trip in memory (io.Pipe), 1 caller", scenario: "rt-inmem-1", metric: "req_s", higher: true, cell: rateCPU,
			target: inMemFloor, judge: inMemRoundTrip,
		},
		{
			title: "Round trip in memory (io.Pipe), 16 callers", scenario: "rt-inmem-16", metric: "req_s", higher: true, cell: rateCPU,
			target: inMemFloor, judge: inMemRoundTrip,
		},
		{
			title: "Round trip to a child process over stdio, 1 caller", scenario: "rt-child-1", metric: "req_s", higher: true, cell: rate,
			target: peerFloorText, judge: overBestPeer("req_s", peerFloor),
		},
		{
			title: "Round trip to a child process over stdio, 16 callers", scenario: "rt-child-16", metric: "req_s", higher: true, cell: rate,
			target: peerFloorText, judge: overBestPeer("req_s", peerFloor),
		},
		{
			title: "50k-notification burst then a barrier request, in memory", scenario: "burst-inmem", metric: "msg_s", higher: true, cell: burstCell,
			target: "100% delivered; " + peerFloorText, judge: all(allDelivered, overBestPeer("msg_s", peerFloor)),
		},
		{
			title: "50k-notification burst then a barrier request, child stdio", scenario: "burst-child", metric: "msg_s", higher: true, cell: burstCell,
			target: "100% delivered; " + peerFloorText, judge: all(allDelivered, overBestPeer("msg_s", peerFloor)),
		},
		{
			title: "Allocations per round trip (client + server, in memory)", scenario: "allocs-rt", metric: "allocs", cell: allocs,
			target: "≤ 20 allocs", judge: atMost("allocs", 20, "allocs"),
		},
		{title: "Allocations per notification (client + server, in memory; incl. one barrier per 500)", scenario: "allocs-notify", metric: "allocs", cell: allocs},
		{title: "64 KiB request, in memory, 1 caller", scenario: "large-64k-inmem", metric: "mb_s", higher: true, cell: large},
		{title: "64 KiB request, child stdio, 1 caller", scenario: "large-64k-child", metric: "mb_s", higher: true, cell: large},
		{title: "8 MiB request, in memory, then a normal call on the same connection", scenario: "large-8m-inmem", metric: "mb_s", higher: true, cell: large8},
		{title: "8 MiB request, child stdio, then a normal call", scenario: "large-8m-child", metric: "mb_s", higher: true, cell: large8},
		{
			title: "Cancellation: ctx cancel → Call returns (p50); handlers that saw the cancel; goroutines left after Close", scenario: "cancel", metric: "ret_p50_us",
			cell: func(m bench.Metrics) string {
				s := fmt.Sprintf("%s · handler saw %.0f%%", fmtUS(m["ret_p50_us"]), m["saw_pct"])
				if m["saw_pct"] > 0 {
					s += " (after " + fmtUS(m["handler_p50_us"]) + ")"
				}
				return s + fmt.Sprintf(" · %.0f leaked", m["leaked"])
			},
		},
		{
			title: "Idle memory per connection (heap + goroutine stacks, 200 pairs after one call each)", scenario: "idle", metric: "total_kib",
			cell: func(m bench.Metrics) string {
				return fmt.Sprintf("%.1f KiB (heap %.1f + stacks %.1f)", m["total_kib"], m["heap_kib"], m["stack_kib"])
			},
			target: "≤ 64 KiB", judge: atMost("total_kib", 64, "KiB"),
		},
	})
}

// The floors of issue 30, against the best of the three competitors in the same run: at least peerFloor×
// on every round trip and burst, in both builds, and inMemDefaultFloor× on the round trips in memory in the
// default build.
const (
	peerFloor         = 1.25
	inMemDefaultFloor = 2
)

var (
	peerFloorText = fmt.Sprintf("≥ %g× the best other", peerFloor)
	inMemFloor    = fmt.Sprintf("≥ %g× the best other (default build), ≥ %g× (jsonv2)", float64(inMemDefaultFloor), peerFloor)
)

// inMemRoundTrip judges a round trip in memory: inMemDefaultFloor× the best competitor in the default
// build, peerFloor× in the others.
func inMemRoundTrip(build string, bk agg, comp map[string]agg) verdict {
	want := peerFloor
	if build == "default" {
		want = inMemDefaultFloor
	}
	return overBestPeer("req_s", want)(build, bk, comp)
}

// overBestPeer judges bridgekit's metric ÷ the best competitor's of the same run (the median over the
// runs) against want.
func overBestPeer(metric string, want float64) func(string, agg, map[string]agg) verdict {
	return func(_ string, bk agg, comp map[string]agg) verdict {
		if !bk.valid() {
			return verdict{"MISSED: bridgekit failed: " + firstErr(bk), false}
		}
		x, ok := ratioBest(bk, comp, metric, true)
		switch {
		case !ok:
			return verdict{"n/a: no competitor has a figure", false}
		case x >= want:
			return verdict{fmt.Sprintf("met: %.2f× ≥ %g×", x, want), true}
		}
		return verdict{fmt.Sprintf("MISSED: %.2f× < %g×", x, want), false}
	}
}

// all is met when every judge is, and says what each found.
func all(judges ...func(string, agg, map[string]agg) verdict) func(string, agg, map[string]agg) verdict {
	return func(build string, bk agg, comp map[string]agg) verdict {
		met, texts := true, []string{}
		for _, j := range judges {
			v := j(build, bk, comp)
			met = met && v.met
			texts = append(texts, v.text)
		}
		return verdict{strings.Join(texts, "; "), met}
	}
}

// sessionUpdateRows are the session/update decoding rows, one a document
// (bench.UpdateDocs): acp-go-sdk's generated types beside gen/acp's, or
// bridgekit's alone for Harn's documents, which acp-go-sdk has no type for
// (gen/acp, then gen/harn's harn.UpdateOf, as a Harn host decodes them).
func sessionUpdateRows(op func(bench.Metrics) string) []row {
	var rs []row
	for _, d := range bench.UpdateDocs() {
		rw := row{
			title: fmt.Sprintf("Codec: decode session/update params (%s, %d B) — acp-go-sdk's generated types (encoding/json) vs gen/acp (go-json-experiment)",
				d.What, len(d.JSON)),
			scenario: "codec-session-update", metric: "ns", cell: op,
			codecComp: d.Name + "_acp", codecBK: d.Name + "_bk", acpOnly: true,
		}
		if d.BridgekitOnly {
			rw.title = fmt.Sprintf("Codec: decode session/update params (%s, %d B) — gen/acp then gen/harn's UpdateOf (go-json-experiment) alone", d.What, len(d.JSON))
			rw.acpNote = "n/a (acp-go-sdk reads it as another variant)"
		}
		rs = append(rs, rw)
	}
	return rs
}

func burstCell(m bench.Metrics) string {
	return fmt.Sprintf("%s, %s/%s delivered", fmtRate(m["msg_s"], " msg/s"), fmtCount(m["seen"]), fmtCount(bench.BurstSize))
}

// burstUsageCell is burstCell with the CPU time and context switches per
// notification, when the platform reports them: of the whole pair, and of
// the receiving child (peer_*) when there is one.
func burstUsageCell(m bench.Metrics) string {
	s := fmtRate(m["msg_s"], " msg/s")
	if _, ok := m["csw_msg"]; !ok {
		return s
	}
	usage := func(prefix string) string {
		return fmt.Sprintf("CPU %s µs/msg (sys %s), %s switches/msg (%s voluntary)",
			fmtSmall(m[prefix+"user_us_msg"]+m[prefix+"sys_us_msg"]), fmtSmall(m[prefix+"sys_us_msg"]),
			fmtSmall(m[prefix+"csw_msg"]), fmtSmall(m[prefix+"vcsw_msg"]))
	}
	if _, ok := m["peer_csw_msg"]; !ok {
		return s + " · " + usage("")
	}
	return s + " · both processes: " + usage("") + " · receiving child: " + usage("peer_")
}

// referenceRows are the rows of the table comparing bridgekit with the
// minimal reference runtime (bench.References); their judge is given the
// reference's figures where the main table's gives acp-go-sdk's.
func referenceRows() []row {
	return []row{
		{title: "Round trip in memory (io.Pipe), 1 caller", scenario: "rt-inmem-1", metric: "req_s", higher: true, cell: func(m bench.Metrics) string {
			return fmt.Sprintf("%s · p50 %s · %s CPU/call", fmtRate(m["req_s"], "/s"), fmtUS(m["p50_us"]), fmtUS(m["cpu_us_per_call"]))
		}},
		{title: "50k-notification burst then a barrier request, in memory", scenario: "burst-inmem", metric: "msg_s", higher: true, cell: burstUsageCell},
		{title: "50k-notification burst then a barrier request, child stdio", scenario: "burst-child", metric: "msg_s", higher: true, cell: burstUsageCell},
	}
}

// referenceKey is the runtime of the reference table.
const referenceKey = "minimal"

func firstErr(a agg) string {
	if len(a.errs) == 0 {
		return "no result"
	}
	return shorten(a.errs[0], 100)
}

// value returns metric of run i, if that run produced figures.
func (a agg) value(i int, metric string) (float64, bool) {
	if i >= len(a.outs) || !a.outs[i].ok() {
		return 0, false
	}
	if a.prefix != "" {
		metric = a.prefix + "_" + metric
	}
	v, ok := a.outs[i].metrics[metric]
	return v, ok
}

// ratio is bridgekit's advantage over other (> 1: bridgekit better): the
// median over the runs of the ratio within each run, so that both figures
// of a ratio were measured at about the same time.
func ratio(bk, other agg, metric string, higher bool) (float64, bool) {
	var rs []float64
	for i := range min(len(bk.outs), len(other.outs)) {
		b, ok1 := bk.value(i, metric)
		o, ok2 := other.value(i, metric)
		if !ok1 || !ok2 || b == 0 || o == 0 {
			continue
		}
		if higher {
			rs = append(rs, b/o)
		} else {
			rs = append(rs, o/b)
		}
	}
	if len(rs) == 0 {
		return 0, false
	}
	return median(rs), true
}

// ratioBest is bridgekit's advantage over the best competitor of each run: the median over the runs of
// bridgekit's figure ÷ the best of the competitors' figures in that run.
func ratioBest(bk agg, comp map[string]agg, metric string, higher bool) (float64, bool) {
	var rs []float64
	for i := range bk.outs {
		b, ok := bk.value(i, metric)
		if !ok || b == 0 {
			continue
		}
		best, found := 0.0, false
		for _, c := range columns {
			o, ok := comp[c].value(i, metric)
			if !ok || o == 0 {
				continue
			}
			if !found || higher && o > best || !higher && o < best {
				best, found = o, true
			}
		}
		if !found {
			continue
		}
		if higher {
			rs = append(rs, b/best)
		} else {
			rs = append(rs, best/b)
		}
	}
	if len(rs) == 0 {
		return 0, false
	}
	return median(rs), true
}

// atMost judges a figure that does not depend on the machine or the competitors.
func atMost(metric string, limit float64, unit string) func(string, agg, map[string]agg) verdict {
	return func(_ string, bk agg, _ map[string]agg) verdict {
		if !bk.valid() {
			return verdict{"MISSED: bridgekit failed", false}
		}
		if v := bk.m[metric]; v > limit {
			return verdict{fmt.Sprintf("MISSED: %s > %s %s", fmtNum(v), fmtNum(limit), unit), false}
		}
		return verdict{fmt.Sprintf("met: %s ≤ %s %s", fmtNum(bk.m[metric]), fmtNum(limit), unit), true}
	}
}

func allDelivered(_ string, bk agg, _ map[string]agg) verdict {
	if !bk.valid() || bk.failed() {
		return verdict{"MISSED: " + firstErr(bk), false}
	}
	if bk.m["seen"] != bench.BurstSize {
		return verdict{fmt.Sprintf("MISSED: %.0f of %d delivered", bk.m["seen"], bench.BurstSize), false}
	}
	return verdict{fmt.Sprintf("met: %d/%d in every run", bench.BurstSize, bench.BurstSize), true}
}

var columns = []string{"acp", "xexp", "sourcegraph"}

func columnName(k string) string {
	rt, err := bench.Lookup(k)
	if err != nil {
		return k
	}
	return rt.Name()
}

// cellFor renders one figure, with failures.
func cellFor(a agg, cell func(bench.Metrics) string) string {
	if a.runs == 0 {
		return "—"
	}
	if !a.valid() {
		what := "FAILED"
		if a.hung == a.runs {
			what = "HUNG"
		}
		return fmt.Sprintf("**%s** (%d/%d runs): %s", what, a.runs-a.ok, a.runs, shorten(a.errs[0], 110))
	}
	s := cell(a.m)
	if a.failed() {
		s += fmt.Sprintf(" (**failed %d/%d runs**: %s)", a.runs-a.ok, a.runs, shorten(a.errs[0], 80))
	} else if len(a.errs) > 0 {
		s += " (" + shorten(a.errs[0], 80) + ")"
	}
	return s
}

func (r *report) table() string {
	var sb strings.Builder
	sb.WriteString("| scenario | build | ")
	for _, c := range columns {
		sb.WriteString(columnName(c) + " | ")
	}
	sb.WriteString("**bridgekit** | bridgekit vs acp | bridgekit vs best other | target (issue 30) | met? |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, rw := range rows() {
		for _, b := range r.builds {
			if _, ok := r.results[key{b.name, rw.scenario, r.anyKey(rw)}]; !ok {
				continue
			}
			comp := map[string]agg{}
			var bk agg
			if rw.codecComp != "" {
				a := r.agg(b.name, rw.scenario, codecKey)
				for _, c := range columns {
					comp[c] = a.sub(rw.codecComp)
				}
				bk = a.sub(rw.codecBK)
			} else {
				for _, c := range columns {
					comp[c] = r.agg(b.name, rw.scenario, c)
				}
				bk = r.agg(b.name, rw.scenario, "bridgekit")
			}
			fmt.Fprintf(&sb, "| %s | %s | ", rw.title, b.name)
			for i, c := range columns {
				if rw.acpNote != "" && i == 0 {
					sb.WriteString(rw.acpNote + " | ")
					continue
				}
				if rw.codecComp != "" && i > 0 {
					if rw.acpOnly {
						sb.WriteString("n/a (no ACP types) | ")
					} else {
						sb.WriteString("(same as acp) | ")
					}
					continue
				}
				sb.WriteString(cellFor(comp[c], rw.cell) + " | ")
			}
			sb.WriteString("**" + cellFor(bk, rw.cell) + "** | ")
			// Ratios: > 1 means bridgekit is better.
			if x, ok := ratio(bk, comp["acp"], rw.metric, rw.higher); ok {
				fmt.Fprintf(&sb, "%.2f× | ", x)
			} else {
				sb.WriteString("— | ")
			}
			best, bestName := agg{}, ""
			for _, c := range columns {
				a := comp[c]
				if !a.valid() {
					continue
				}
				if bestName == "" || (rw.higher && a.m[rw.metric] > best.m[rw.metric]) || (!rw.higher && a.m[rw.metric] < best.m[rw.metric]) {
					best, bestName = a, columnName(c)
				}
			}
			if rw.codecComp != "" {
				sb.WriteString("— | ")
			} else if x, ok := ratioBest(bk, comp, rw.metric, rw.higher); ok {
				fmt.Fprintf(&sb, "%.2f× (best median: %s) | ", x, bestName)
			} else {
				sb.WriteString("— | ")
			}
			if rw.judge != nil {
				v := rw.judge(b.name, bk, comp)
				fmt.Fprintf(&sb, "%s | %s |\n", rw.target, mark(v))
			} else {
				sb.WriteString("— | — |\n")
			}
		}
	}
	return sb.String()
}

// variants renders the round trips of bridgekit's other configurations
// (bench.Variants) beside the compared one, with the targets they would
// meet; empty when none was measured.
func (r *report) variants() string {
	var sb strings.Builder
	for _, v := range bench.Variants() {
		for _, rw := range rows() {
			for _, b := range r.builds {
				va := r.agg(b.name, rw.scenario, v.Key())
				if va.runs == 0 {
					continue
				}
				if sb.Len() == 0 {
					sb.WriteString("| scenario | build | configuration | acp-go-sdk | bridgekit (compared above) | **this configuration** | this vs acp | target (issue) | would be met? |\n")
					sb.WriteString("|---|---|---|---|---|---|---|---|---|\n")
				}
				acp := r.agg(b.name, rw.scenario, "acp")
				fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | **%s** | ", rw.title, b.name, v.Name(), cellFor(acp, rw.cell), cellFor(r.agg(b.name, rw.scenario, "bridgekit"), rw.cell), cellFor(va, rw.cell))
				if x, ok := ratio(va, acp, rw.metric, rw.higher); ok {
					fmt.Fprintf(&sb, "%.2f× | ", x)
				} else {
					sb.WriteString("— | ")
				}
				if rw.judge != nil {
					comp := map[string]agg{}
					for _, c := range columns {
						comp[c] = r.agg(b.name, rw.scenario, c)
					}
					fmt.Fprintf(&sb, "%s | %s |\n", rw.target, mark(rw.judge(b.name, va, comp)))
				} else {
					sb.WriteString("— | — |\n")
				}
			}
		}
	}
	return sb.String()
}

// references renders bridgekit beside the minimal reference runtime in
// the scenarios measured with it; empty when it was not measured.
func (r *report) references() string {
	var sb strings.Builder
	for _, rw := range referenceRows() {
		for _, b := range r.builds {
			ref := r.agg(b.name, rw.scenario, referenceKey)
			if ref.runs == 0 {
				continue
			}
			if sb.Len() == 0 {
				fmt.Fprintf(&sb, "| scenario | build | %s | **bridgekit** | rate, bridgekit ÷ minimal | system time per msg, bridgekit ÷ minimal | context switches per msg, bridgekit ÷ minimal |\n", columnName(referenceKey))
				sb.WriteString("|---|---|---|---|---|---|---|\n")
			}
			bk := r.agg(b.name, rw.scenario, "bridgekit")
			fmt.Fprintf(&sb, "| %s | %s | %s | **%s** | %s | %s | %s |\n", rw.title, b.name, cellFor(ref, rw.cell), cellFor(bk, rw.cell),
				quotient(bk, ref, rw.metric, 0), quotient(bk, ref, "sys_us_msg", minSysPerMsg), quotient(bk, ref, "csw_msg", 0))
		}
	}
	return sb.String()
}

// minSysPerMsg is the system time per notification (µs) below which the
// report does not compare it: 2.5 ms over a 50k burst, finer than the
// kernel's tick-sampled split of CPU time into user and system.
const minSysPerMsg = 0.05

// quotient renders bridgekit's metric ÷ ref's (the median of the per-run
// quotients), and the receiving child's (peer_metric) when measured; "—"
// when not measured, and "too small to compare" when either median is
// below floor.
func quotient(bk, ref agg, metric string, floor float64) string {
	q := func(metric string) (string, bool) {
		x, ok := ratio(bk, ref, metric, true)
		switch {
		case !ok:
			return "", false
		case bk.m[metric] < floor || ref.m[metric] < floor:
			return "— (too small to compare)", true
		}
		return fmt.Sprintf("%.2f×", x), true
	}
	s, ok := q(metric)
	if !ok {
		return "—"
	}
	if p, ok := q("peer_" + metric); ok {
		s += " (receiving child: " + p + ")"
	}
	return s
}

func (r *report) anyKey(rw row) string {
	if rw.codecComp != "" {
		return codecKey
	}
	return "bridgekit"
}

func mark(v verdict) string {
	if v.met {
		return "✅ " + v.text
	}
	if strings.HasPrefix(v.text, "n/a") {
		return v.text
	}
	return "❌ " + v.text
}

// targetSummary lists every target with its verdict per build.
func (r *report) targetSummary() string {
	var sb strings.Builder
	for _, rw := range rows() {
		if rw.judge == nil {
			continue
		}
		for _, b := range r.builds {
			if _, ok := r.results[key{b.name, rw.scenario, "bridgekit"}]; !ok {
				continue
			}
			comp := map[string]agg{}
			for _, c := range columns {
				comp[c] = r.agg(b.name, rw.scenario, c)
			}
			v := rw.judge(b.name, r.agg(b.name, rw.scenario, "bridgekit"), comp)
			fmt.Fprintf(&sb, "- [%s] %s — %s: %s\n", b.name, shortTitle(rw.title), rw.target, mark(v))
		}
	}
	for _, l := range r.commands.verdicts() {
		sb.WriteString("- " + l + "\n")
	}
	for _, l := range r.commands.remoteVerdicts() {
		sb.WriteString("- " + l + "\n")
	}
	return sb.String()
}

var parenthetical = regexp.MustCompile(`\s*\([^)]*\)`)

// shortTitle drops the parenthetical details of a row title.
func shortTitle(t string) string {
	return parenthetical.ReplaceAllString(t, "")
}

// failures lists every failed run with its full message.
func (r *report) failures() string {
	var lines []string
	for _, b := range r.builds {
		for _, sc := range bench.Scenarios() {
			keys := append([]string{codecKey}, append(slices.Clone(columns), "bridgekit")...)
			for _, rt := range append(bench.Variants(), bench.References()...) {
				keys = append(keys, rt.Key())
			}
			for _, rk := range keys {
				for i, o := range r.results[key{b.name, sc.Name, rk}] {
					if o.err == "" {
						continue
					}
					lines = append(lines, fmt.Sprintf("- %s, %s, %s, run %d: %s", b.name, sc.Name, columnName(rk), i+1, o.err))
				}
			}
		}
	}
	if len(lines) == 0 {
		return "None.\n"
	}
	return strings.Join(lines, "\n") + "\n"
}

func (r *report) machine() string {
	var sb strings.Builder
	cpu := "unknown"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "unknown"
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(data))
	}
	mem := "unknown"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %f kB", &kb); err == nil {
			mem = fmt.Sprintf("%.0f GiB", kb/1024/1024)
		}
	}
	goVersion := runtime.Version()
	if out, err := exec.Command("go", "version").Output(); err == nil {
		goVersion = strings.TrimSpace(string(out))
	}
	fmt.Fprintf(&sb, "- Date: %s (run took %v)\n", r.started.UTC().Format("2006-01-02 15:04 MST"), r.duration.Round(time.Second))
	fmt.Fprintf(&sb, "- Machine: %s, %d logical CPUs, %s RAM, Linux %s, %s/%s\n", cpu, runtime.NumCPU(), mem, kernel, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&sb, "- Go: %s\n", goVersion)
	fmt.Fprintf(&sb, "- Load average (1/5/15 min) at the start: %s; at the end: %s (including this run; the VM is shared, other jobs may have run)\n", r.load[0], r.load[1])
	var foreign []float64
	retries := 0
	for _, outs := range r.results {
		for _, o := range outs {
			foreign = append(foreign, o.foreign)
			retries += o.retries
		}
	}
	if len(foreign) > 0 {
		sort.Float64s(foreign)
		fmt.Fprintf(&sb, "- CPU kept busy by other processes (or stolen by the hypervisor) during the %d measurements: median %.2f, 90th percentile %.2f, max %.2f CPUs; %d measurements were repeated because this exceeded %.1f CPUs (the least disturbed attempt is kept)\n",
			len(foreign), median(foreign), foreign[(len(foreign)-1)*9/10], foreign[len(foreign)-1], retries, maxForeign)
	}
	// The load at the end includes this run's own work; at the start it
	// is someone else's.
	var l1 float64
	if _, err := fmt.Sscanf(r.load[0], "%f", &l1); err == nil && l1 > 0.75*float64(runtime.NumCPU()) {
		sb.WriteString("- **Warning: the machine was busy with other work when this run started; absolute figures may be depressed and ratios noisier than usual.**\n")
	}
	for _, b := range r.builds {
		exp := b.info.GOEXPERIMENT
		if exp == "" {
			exp = "(none)"
		}
		fmt.Fprintf(&sb, "- Build `%s`: %s, GOEXPERIMENT=%s, GOMAXPROCS=%d\n", b.name, b.info.GoVersion, exp, b.info.GOMAXPROCS)
	}
	if len(r.builds) > 0 {
		deps := r.builds[0].info.Deps
		fmt.Fprintf(&sb, "- Runtimes: bridgekit (this checkout, runtime/jsonrpc, %s), github.com/coder/acp-go-sdk %s, golang.org/x/exp/jsonrpc2 %s, github.com/sourcegraph/jsonrpc2 %s; codec github.com/go-json-experiment/json %s\n",
			r.bkOpts, deps["github.com/coder/acp-go-sdk"], deps["golang.org/x/exp/jsonrpc2"], deps["github.com/sourcegraph/jsonrpc2"], deps["github.com/go-json-experiment/json"])
	}
	mode := "full"
	if r.cfg.quick {
		mode = "quick (-quick: shorter loops)"
	}
	fmt.Fprintf(&sb, "- Runs: %d per build, %s; every figure is the median over the runs\n", r.cfg.runs, mode)
	return sb.String()
}

const (
	analysisBegin = "<!-- analysis:begin -->"
	analysisEnd   = "<!-- analysis:end -->"
)

// readAnalysis returns the hand-written analysis block of an existing
// report, which regeneration keeps.
func readAnalysis(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.Index(s, analysisBegin)
	j := strings.Index(s, analysisEnd)
	if i < 0 || j < i {
		return ""
	}
	return strings.TrimSpace(s[i+len(analysisBegin) : j])
}

func (r *report) document(table, analysis string) string {
	var sb strings.Builder
	sb.WriteString("# Performance\n\n")
	sb.WriteString("<!-- Generated by `make bench` (bench/cmd/benchreport). Everything outside the analysis block is rewritten on every run. -->\n\n")
	sb.WriteString("How bridgekit's JSON-RPC runtime (`runtime/jsonrpc`) compares with the Go SDKs people would otherwise pick, measured by the same harness, in the same run, on the same machine, with the same payload and the same handler. The floors are issue 30's, all ratios against the best of acp-go-sdk, x/exp/jsonrpc2 and sourcegraph/jsonrpc2 in the same run, in both builds: at least " + fmt.Sprintf("%g", peerFloor) + "× on the round trips (in memory and to a child, 1 and 16 callers) and the 50k-notification bursts, at least " + fmt.Sprintf("%g", float64(inMemDefaultFloor)) + "× on the round trips in memory in the default build; besides, at most 20 allocations per round trip, every burst delivered in full and at most 64 KiB of idle memory per connection. No target is an absolute figure (issue 30 retired the performance anchors' §7 figures); the other rows are reported with no floor.\n\n")
	sb.WriteString("## Machine and build\n\n")
	sb.WriteString(r.machine())
	sb.WriteString("\n## Results\n\n")
	sb.WriteString("Figures are medians of the runs. Ratios are bridgekit's advantage — > 1× means bridgekit is faster, allocates less or uses less memory — computed within each run (both figures measured minutes apart at most) and then the median taken over the runs, so they can differ slightly from the ratio of the two medians shown. Codec rows compare codecs, not runtimes: all three competitors encode and decode with encoding/json the same way, so their columns repeat one figure.\n\n")
	sb.WriteString(table)
	if v := r.variants(); v != "" {
		sb.WriteString("\n### bridgekit with requests handled one at a time\n\n")
		sb.WriteString("The table above compares bridgekit handling requests concurrently (`" + r.bkOpts + "`), as acp-go-sdk, which starts a goroutine per inbound request, does. `runtime/jsonrpc`'s default Options handle requests one at a time in arrival order instead (servers/host, the Harn host, runs 8 at a time). That configuration was measured in the same runs; for reference, the targets it would meet:\n\n")
		sb.WriteString(v)
	}
	if ref := r.references(); ref != "" {
		sb.WriteString("\n### bridgekit against a minimal one-goroutine runtime\n\n")
		sb.WriteString(referenceIntro)
		sb.WriteString(ref)
	}
	if env := r.envelopes(); env != "" {
		sb.WriteString("\n### AgentPM envelopes against JSON-RPC\n\n")
		sb.WriteString(envelopeIntro)
		sb.WriteString(env)
	}
	sb.WriteString("\n### The bridgekit command: trace's overhead and validate's throughput\n\n")
	sb.WriteString(commandsIntro)
	sb.WriteString(r.commands.section())
	sb.WriteString("\n### Remote transports: bridgekit against the TypeScript SDK's\n\n")
	sb.WriteString(remoteIntro)
	sb.WriteString(r.commands.remoteSection())
	sb.WriteString("\n## Targets\n\n")
	sb.WriteString(r.targetSummary())
	sb.WriteString("\n## Failures\n\nEvery run that failed, hung or reported a problem, with the runtime's own words:\n\n")
	sb.WriteString(r.failures())
	if r.profile != "" {
		sb.WriteString("\n## Profile of bridgekit's round trip\n\n")
		fmt.Fprintf(&sb, "`%s` build, from `benchreport -worker -rt bridgekit -scenario rt-inmem-1` (and `rt-inmem-16`) `-cpuprofile`, which then loops for 3 s, and `-scenario allocs-rt -memprofile` (MemProfileRate=1), read with `go tool pprof -top`. Client and server run in the same process, so both sides show; the benchmark service's own work (params struct, result struct) is included.\n\n", r.builds[0].name)
		sb.WriteString(r.profile)
	}
	sb.WriteString("\n## Analysis\n\n")
	sb.WriteString(analysisBegin + "\n")
	if analysis != "" {
		sb.WriteString(analysis + "\n")
	} else {
		sb.WriteString("(No analysis written yet. Text between these markers survives `make bench`.)\n")
	}
	sb.WriteString(analysisEnd + "\n")
	sb.WriteString("\n## Method\n\n")
	sb.WriteString(method)
	return sb.String()
}

const referenceIntro = `For information, with no target (issue 30): a minimal runtime that reads, decodes and handles every message on one goroutine. ` + "`bench.Minimal`" + ` (` + "`bench/rt_minimal.go`" + `) is that runtime: one goroutine per connection reads a line (` + "`bufio.Reader.ReadSlice`" + `), decodes its envelope once with go-json-experiment, runs the same handler with the same params decoding as bridgekit's adapter there and then, and hands responses to the callers waiting for them; every message is written with one ` + "`Write`" + ` under a mutex. It has no concurrency, no backpressure beyond the pipe and no cancellation, so it is a lower bound, not a competitor, and it is measured in the burst scenarios, in the same runs as the table above. Both ends of a connection run the runtime under test, so the senders differ too (the minimal runtime makes one ` + "`write`" + ` per notification). The 1-caller round trip in memory is measured against it too, for no target, as a reference: a runtime with one goroutine a side and nothing but the pipe, the payload's JSON and its own envelope decoding (reflective, so slower than bridgekit's) between two calls. It is not a floor: an ` + "`io.Pipe`" + ` ping-pong of the same line with no JSON at all costs a fraction of its round trip (` + "`go test -run '^$' -bench PipePingPong`" + ` in bench/ measures it).

CPU time and context switches per notification come from getrusage: in memory, the worker process during the burst (both ends); to a child, the worker during the burst plus the child over its whole life (its start-up adds about 2.5 ms and 40 switches, under 0.05 µs and 0.001 switches per notification) — and the receiving child alone, shown separately, since the hand-off the issue suspects is on the receiving side. The kernel splits CPU time into user and system by sampling at the clock tick, so the system time of one burst is approximate (it is not compared below 0.05 µs per notification); context switches are counted exactly. Quotients are bridgekit ÷ minimal within each run, then the median over the runs: above 1× is better for msg/s, below 1× is better for time and switches.

`

const method = `- **Harness.** ` + "`bench/`" + ` is its own Go module (` + "`github.com/bridgekit/bridgekit/bench`" + `, with a ` + "`replace`" + ` of bridgekit to the checkout), so the competitors never become dependencies of bridgekit. One adapter interface (` + "`bench.Runtime`" + `: ` + "`Open(r, w, svc)`" + ` returning a ` + "`Conn`" + ` with ` + "`Call`, `Notify`, `Done`, `Err`, `Close`" + `) drives all four runtimes:
  - bridgekit: ` + "`jsonrpc.NewConn`" + ` with ` + "`Options{MaxConcurrentRequests: 16}`" + ` (requests handled concurrently, each on a goroutine of its own, as acp-go-sdk handles them; 16 is the most callers any scenario has in flight; queue 256, 16 MiB frame limit); handler decodes with ` + "`jsonrpc.DecodeParams`" + `. The round trips are also measured with default ` + "`Options`" + ` (requests one at a time in arrival order) and shown in their own table.
  - acp-go-sdk v0.13.5, the version the anchors measured (the module proxy serves it when asked by version, though its version list stops at v0.13.0): ` + "`acp.NewConnection`" + ` with a ` + "`MethodHandler`" + `, ` + "`acp.SendRequest[T]`" + ` / ` + "`SendNotification`" + ` (requests in a goroutine each, notifications queued, 1024 deep).
  - x/exp/jsonrpc2 (module ` + "`golang.org/x/exp/jsonrpc2`" + `, latest pseudo-version): ` + "`jsonrpc2.Dial`" + ` over the given stream with ` + "`RawFramer`" + ` and the default sequential handler queue.
  - sourcegraph/jsonrpc2: ` + "`NewConn`" + ` over ` + "`NewPlainObjectStream`" + ` (newline-delimited JSON); requests handled in a goroutine each, notifications inline in order.
  - minimal (one goroutine), ` + "`bench/rt_minimal.go`" + `, measured in the burst scenarios only and shown in its own table, never in the comparison: one goroutine per connection reads each line, decodes its envelope once with go-json-experiment and handles it there and then; one ` + "`Write`" + ` per message under a mutex.
- **Payload.** A ` + "`session/prompt`" + `-like request of 430 bytes on the wire with id 1 and its newline (the anchors' "about 425"): ` + "`sessionId`" + `, two text content blocks (160 bytes and 17 bytes of text), ` + "`_meta.traceparent`" + `; result ` + "`{\"stopReason\":\"end_turn\",\"echoed\":N}`" + `. Every handler decodes the params into a struct with its runtime's codec and returns a struct. Notifications (` + "`session/update`" + `) carry the same params.
- **Transports.** In memory: two ` + "`io.Pipe`" + `s in one process. Child: the worker re-executes itself with ` + "`BRIDGEKIT_BENCH_PEER=<runtime>`" + ` as a server on its stdin/stdout, connected by real OS pipes.
- **Round trips.** 1 or 16 concurrent callers; 2,000 warm-up calls, then up to 20,000 (1 caller) or 50,000 (16 callers) measured calls, capped at 1.2 s in memory and 2 s to a child. Latency percentiles come from the sorted per-call samples; req/s is calls ÷ wall time. In memory, "cores" is the process's CPU time (getrusage, client and server together) ÷ wall time, and "CPU/call" that CPU time ÷ calls.
- **Burst.** 50,000 notifications sent back to back, then a ` + "`bench/barrier`" + ` request that answers once the server has handled all of them; msg/s is 50,000 ÷ (first send → barrier reply). A run fails if the connection closes or nothing completes within 20 s (the worker is killed after 40 s); acp-go-sdk's fixed 1024-entry notification queue overflows and it closes the connection, which is reported as such. CPU time and context switches per notification are read with getrusage (the worker during the burst, plus the child peer's whole life from wait4).
- **Large messages.** The first text block grows to 64 KiB (or 8 MiB) of prose with a newline every 80 bytes (escaped as ` + "`\\n`" + `); MB/s counts request bytes on the wire. After the 8 MiB calls a normal call must still succeed on the same connection.
- **Cancellation.** 100 calls to a handler that waits for its context (at most 10 ms); each call's context is cancelled once the handler has started. Reported: cancel → ` + "`Call`" + ` returns (p50), share of handlers whose context was cancelled by the peer, and goroutines still running 2 s after both ends are closed (against the count before the pair was opened).
- **Allocations.** ` + "`runtime.MemStats`" + ` deltas (Mallocs, TotalAlloc) over 5,000 sequential in-memory round trips (or notifications, sent in batches of 500 each followed by a barrier call), client and server together, after a warm-up.
- **Idle memory.** Live heap (after two GCs) and goroutine stack growth for 200 in-memory pairs after one call each, divided by 400 connections.
- **Codec micro-benchmarks.** Time-boxed loops (0.5 s) over the 425-byte request, ` + "`runtime.MemStats`" + ` for allocations. ` + "`session/update`" + ` decoding: the params of notifications of a prompt turn (` + "`bench/sessionupdate.go`" + `: an ` + "`agent_message_chunk`" + `, a ` + "`tool_call`" + ` with a location and raw input, a ` + "`tool_call_update`" + ` with text content and a diff, a four-entry ` + "`plan`" + `) decoded into acp-go-sdk's generated ` + "`SessionNotification`" + ` with encoding/json (as its connection does) and into gen/acp's with ` + "`rpc.DecodeParams`" + ` (as a bridgekit handler does), and Harn's ` + "`progress`" + ` update (fields under ` + "`_meta.harn`" + `) by bridgekit alone, as a Harn host decodes it (gen/acp keeps it verbatim, since ACP does not know its tag, and gen/harn's ` + "`harn.UpdateOf`" + ` types it): acp-go-sdk has no type for it and reads it, without an error, as a ` + "`session_info_update`" + `. A sanity check first requires both libraries to read the same values member by member, and bridgekit's value, encoded again, to be the document.
- **Isolation and noise.** Every measurement runs in a fresh worker process, and the CPU time other processes used meanwhile is measured (busy time from ` + "`/proc/stat`" + ` minus the worker's own, children included); a measurement disturbed by more than half a CPU of foreign load is repeated up to twice and the least disturbed attempt kept. Each worker is built once per build (default and ` + "`GOEXPERIMENT=jsonv2`" + `) and killed if it exceeds its time limit. Runs are the outer loop (run 1 of both builds, then run 2, …) and the runtime order rotates from run to run, so slow drifts of the machine's load spread over all columns. Figures are medians of the runs; ratios are medians of the per-run ratios. The machine is a shared VM (other jobs may run at the same time): treat differences below about 1.3× as noise.
- **Reproduce.** ` + "`make bench`" + ` (or ` + "`cd bench && go run ./cmd/benchreport`" + `; ` + "`-quick`" + ` (` + "`make bench-quick`" + `) for a one-minute smoke run that does not touch this file, ` + "`-only rt-inmem-1,burst-inmem`" + ` for a subset, ` + "`-out ''`" + ` to leave this file alone, ` + "`-raw results.json`" + ` to keep every run's figures and ` + "`-render results.json`" + ` to rebuild this file from them without measuring). The same scenarios exist as ` + "`testing.B`" + ` benchmarks: ` + "`cd bench && go test -run '^$' -bench .`" + `; ` + "`go test ./...`" + ` in ` + "`bench/`" + ` runs only the fast sanity tests. To try another concurrency bound, set ` + "`BRIDGEKIT_BENCH_MAX_CONCURRENT=n`" + ` (becomes the compared bridgekit's ` + "`Options.MaxConcurrentRequests`" + ` everywhere, child peers included).
`

func shorten(s string, n int) string {
	s = oneLine(s)
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func fmtRate(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM%s", v/1e6, unit)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk%s", v/1e3, unit)
	default:
		return fmt.Sprintf("%.0f%s", v, unit)
	}
}

func fmtUS(us float64) string {
	switch {
	case us >= 1000:
		return fmt.Sprintf("%.2f ms", us/1000)
	case us >= 10:
		return fmt.Sprintf("%.0f µs", us)
	default:
		return fmt.Sprintf("%.1f µs", us)
	}
}

func fmtNS(ns float64) string {
	if ns >= 1000 {
		return fmt.Sprintf("%.2f µs", ns/1000)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1024:
		return fmt.Sprintf("%.1f KiB", b/1024)
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}

func fmtCount(v float64) string {
	if v == math.Trunc(v) || v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtNum(v float64) string {
	switch {
	case v >= 1e4:
		return fmtRate(v, "")
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// fmtSmall formats a figure per message, which is often well below 1.
func fmtSmall(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 0.1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
