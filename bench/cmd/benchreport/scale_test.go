package main

import (
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/bench"
)

// The §7 figures are scaled to the machine by acp-go-sdk's figure in the
// default build, for both builds, and a verdict says how.
func TestSection7Scaled(t *testing.T) {
	r := &report{results: map[key][]outcome{}}
	put := func(build, scenario, rt string, m bench.Metrics) {
		r.results[key{build, scenario, rt}] = []outcome{{metrics: m}}
	}
	// acp-go-sdk at 0.62x of §7's machine (14.3k against 23k req/s, p50 67
	// against 37 µs): the 80k req/s target becomes 49.7k, 10 µs 18.1 µs.
	put("default", "rt-inmem-1", "acp", bench.Metrics{"req_s": 14_300, "p50_us": 67})
	put("jsonv2", "rt-inmem-1", "acp", bench.Metrics{"req_s": 20_600, "p50_us": 45})
	row := rowFor(t, "rt-inmem-1")
	for _, c := range []struct {
		build  string
		bk     bench.Metrics
		met    bool
		inText string
	}{
		{"default", bench.Metrics{"req_s": 45_600, "p50_us": 19.5}, false, "45.6k < 49.7k req/s (80.0k × 14.3k/23.0k), 19.5 > 18.1 µs p50 (10 × 67/37)"},
		{"default", bench.Metrics{"req_s": 50_000, "p50_us": 18}, true, "50.0k ≥ 49.7k req/s"},
		// jsonv2 is judged by the default build's acp-go-sdk, not its own.
		{"jsonv2", bench.Metrics{"req_s": 50_000, "p50_us": 18}, true, "(80.0k × 14.3k/23.0k)"},
	} {
		put(c.build, "rt-inmem-1", "bridgekit", c.bk)
		v := row.judgeAbs(r.agg(c.build, "rt-inmem-1", "bridgekit"), r.acpGauge(c.build))
		if v.met != c.met || !strings.Contains(v.text, c.inText) {
			t.Errorf("%s %v: got %+v, want met=%v and %q", c.build, c.bk, v, c.met, c.inText)
		}
	}

	// The burst is gauged by the round trip of the same transport; with
	// no acp-go-sdk figure to scale by, the verdict says so and is not met.
	burst := rowFor(t, "burst-child")
	put("default", "burst-child", "bridgekit", bench.Metrics{"msg_s": 140_000})
	v := burst.judgeAbs(r.agg("default", "burst-child", "bridgekit"), r.acpGauge("default"))
	if v.met || !strings.HasPrefix(v.text, "n/a") {
		t.Errorf("burst without a gauge: %+v", v)
	}
	put("default", "rt-child-1", "acp", bench.Metrics{"req_s": 7_200})
	v = burst.judgeAbs(r.agg("default", "burst-child", "bridgekit"), r.acpGauge("default"))
	if !v.met || !strings.Contains(v.text, "140.0k ≥ 138.5k msg/s (150.0k × 7200/7800)") {
		t.Errorf("burst gauged by rt-child-1: %+v", v)
	}

	// The in-memory burst is gauged by acp-go-sdk's own in-memory burst
	// (§4's 91k msg/s), and by its in-memory round trip when it survived
	// no burst run here.
	inmem := rowFor(t, "burst-inmem")
	put("default", "burst-inmem", "bridgekit", bench.Metrics{"msg_s": 80_000})
	r.results[key{"default", "burst-inmem", "acp"}] = []outcome{{err: "notification queue overflow"}}
	v = inmem.judgeAbs(r.agg("default", "burst-inmem", "bridgekit"), r.acpGauge("default"))
	if v.met || !strings.Contains(v.text, "80.0k < 93.3k msg/s (150.0k × 14.3k/23.0k: acp-go-sdk's rt-inmem-1, as it has no burst-inmem here)") {
		t.Errorf("in-memory burst gauged by the round trip: %+v", v)
	}
	r.results[key{"default", "burst-inmem", "acp"}] = append(r.results[key{"default", "burst-inmem", "acp"}], outcome{metrics: bench.Metrics{"msg_s": 45_500}})
	v = inmem.judgeAbs(r.agg("default", "burst-inmem", "bridgekit"), r.acpGauge("default"))
	if !v.met || !strings.Contains(v.text, "80.0k ≥ 75.0k msg/s (150.0k × 45.5k/91.0k)") {
		t.Errorf("in-memory burst gauged by acp-go-sdk's burst: %+v", v)
	}

	// Allocation figures do not depend on the machine.
	alloc := rowFor(t, "allocs-rt")
	put("default", "allocs-rt", "bridgekit", bench.Metrics{"allocs": 13, "bytes": 2000})
	v = alloc.judgeAbs(r.agg("default", "allocs-rt", "bridgekit"), r.acpGauge("default"))
	if v.met || v.text != "MISSED: 2000 > 1740.8 B" {
		t.Errorf("allocation bytes: %+v", v)
	}
	if v := alloc.judge(r.agg("default", "allocs-rt", "bridgekit"), agg{}); !v.met {
		t.Errorf("allocation count: %+v", v)
	}
}

func rowFor(t *testing.T, scenario string) row {
	t.Helper()
	for _, rw := range rows() {
		if rw.scenario == scenario && rw.judgeAbs != nil {
			return rw
		}
	}
	t.Fatalf("no row with a §7 figure for %s", scenario)
	return row{}
}
