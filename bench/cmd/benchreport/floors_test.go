package main

import (
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/bench"
)

// The floors are ratios against the best competitor of each run: the
// median over the runs of bridgekit ÷ the best other, with a competitor
// that failed a run left out of that run.
func TestFloorsAgainstTheBestPeer(t *testing.T) {
	r := &report{results: map[key][]outcome{}}
	runs := func(build, scenario, rt, metric string, vs ...float64) {
		var outs []outcome
		for _, v := range vs {
			if v == 0 {
				outs = append(outs, outcome{err: "connection closed"})
				continue
			}
			outs = append(outs, outcome{metrics: bench.Metrics{metric: v}})
		}
		r.results[key{build, scenario, rt}] = outs
	}
	judge := func(build, scenario string) verdict {
		comp := map[string]agg{}
		for _, c := range columns {
			comp[c] = r.agg(build, scenario, c)
		}
		return rowFor(t, scenario).judge(build, r.agg(build, scenario, "bridgekit"), comp)
	}

	// Per run, the best other: x/exp in run 1 (50k), acp in runs 2 and 3
	// (60k, 40k): ratios 2.4, 2.0, 2.5, median 2.4.
	for _, b := range []string{"default", "jsonv2"} {
		runs(b, "rt-inmem-1", "acp", "req_s", 45_000, 60_000, 40_000)
		runs(b, "rt-inmem-1", "xexp", "req_s", 50_000, 55_000, 30_000)
		runs(b, "rt-inmem-1", "sourcegraph", "req_s", 20_000, 20_000, 20_000)
		runs(b, "rt-inmem-1", "bridgekit", "req_s", 120_000, 120_000, 100_000)
	}
	if v := judge("default", "rt-inmem-1"); !v.met || v.text != "met: 2.40× ≥ 2×" {
		t.Errorf("default build: %+v", v)
	}
	// In memory, the default build's floor is 2×, the others' 1.25×.
	runs("default", "rt-inmem-1", "bridgekit", "req_s", 90_000, 100_000, 70_000)
	runs("jsonv2", "rt-inmem-1", "bridgekit", "req_s", 90_000, 100_000, 70_000)
	if v := judge("default", "rt-inmem-1"); v.met || !strings.HasPrefix(v.text, "MISSED: 1.75× < 2×") {
		t.Errorf("default build below 2×: %+v", v)
	}
	if v := judge("jsonv2", "rt-inmem-1"); !v.met || v.text != "met: 1.75× ≥ 1.25×" {
		t.Errorf("jsonv2 build: %+v", v)
	}

	// A burst: every run delivered in full and 1.25× the best other; acp
	// failed run 2, so x/exp is that run's best.
	runs("default", "burst-child", "acp", "msg_s", 100_000, 0, 100_000)
	runs("default", "burst-child", "xexp", "msg_s", 80_000, 80_000, 90_000)
	runs("default", "burst-child", "sourcegraph", "msg_s", 50_000, 50_000, 50_000)
	r.results[key{"default", "burst-child", "bridgekit"}] = []outcome{
		{metrics: bench.Metrics{"msg_s": 130_000, "seen": bench.BurstSize}},
		{metrics: bench.Metrics{"msg_s": 90_000, "seen": bench.BurstSize}},
		{metrics: bench.Metrics{"msg_s": 120_000, "seen": bench.BurstSize}},
	}
	if v := judge("default", "burst-child"); v.met || !strings.Contains(v.text, "met: 50000/50000 in every run; MISSED: 1.20× < 1.25×") {
		t.Errorf("burst: %+v", v)
	}

	// Allocations do not depend on the competitors.
	r.results[key{"default", "allocs-rt", "bridgekit"}] = []outcome{{metrics: bench.Metrics{"allocs": 21}}}
	if v := judge("default", "allocs-rt"); v.met || v.text != "MISSED: 21 > 20 allocs" {
		t.Errorf("allocations: %+v", v)
	}
}

func rowFor(t *testing.T, scenario string) row {
	t.Helper()
	for _, rw := range rows() {
		if rw.scenario == scenario && rw.judge != nil {
			return rw
		}
	}
	t.Fatalf("no row with a target for %s", scenario)
	return row{}
}
