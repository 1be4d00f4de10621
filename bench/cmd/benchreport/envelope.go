package main

import (
	"fmt"
	"strings"

	"github.com/bridgekit/bridgekit/bench"
)

// envelopeKey is the runtime under which the envelope scenarios
// (bench.Scenario.Envelope) are stored: bridgekit's engine, measured with
// both framings in one worker.
const envelopeKey = "bridgekit"

// envelopeRow is a row of the envelope table: a scenario measured with
// AgentPM's envelopes (metrics env_*) and JSON-RPC (jsonrpc_*), and the
// scenario of the comparison above whose bridgekit JSON-RPC figure is
// shown beside it.
type envelopeRow struct {
	title, scenario string
	metric          string // compared: envelope ÷ JSON-RPC
	cell            func(m bench.Metrics, prefix string) string
	// same is the comparison's scenario and runtime of the same shape
	// (one caller, in memory or to a child; a burst in memory), with its
	// cell.
	same, sameRT string
	sameCell     func(m bench.Metrics) string
}

func envelopeRows() []envelopeRow {
	rt := func(m bench.Metrics, p string) string {
		return fmt.Sprintf("%s · p50 %s · p99 %s · %s CPU/call", fmtRate(m[p+"req_s"], "/s"), fmtUS(m[p+"p50_us"]), fmtUS(m[p+"p99_us"]), fmtUS(m[p+"cpu_us_per_call"]))
	}
	rtBytes := func(m bench.Metrics, p string) string {
		return rt(m, p) + fmt.Sprintf(" · %.0f B up, %.0f B down", m[p+"req_bytes"], m[p+"res_bytes"])
	}
	burst := func(m bench.Metrics, p string) string {
		s := fmtRate(m[p+"msg_s"], " msg/s")
		if _, ok := m[p+"csw_msg"]; ok {
			s += fmt.Sprintf(" · CPU %s µs/msg · %s switches/msg", fmtSmall(m[p+"user_us_msg"]+m[p+"sys_us_msg"]), fmtSmall(m[p+"csw_msg"]))
		}
		return s
	}
	rate := func(m bench.Metrics) string {
		return fmt.Sprintf("%s · p50 %s (one request at a time, session/prompt, 430 B)", fmtRate(m["req_s"], "/s"), fmtUS(m["p50_us"]))
	}
	return []envelopeRow{
		{"service round trip (knowledge retrieve), 1 caller, in memory", "agentpm-rt-inmem", "req_s", rtBytes, "rt-inmem-1", "bridgekit-seq", rate},
		{"service round trip (knowledge retrieve), 1 caller, child stdio", "agentpm-rt-child", "req_s", rt, "rt-child-1", "bridgekit-seq", rate},
		{"harness_event burst, in memory", "agentpm-burst-inmem", "msg_s", burst, "burst-inmem", "bridgekit", func(m bench.Metrics) string {
			return fmtRate(m["msg_s"], " msg/s") + " (session/update, 430 B)"
		}},
	}
}

// envelopes renders the envelope table; empty when none was measured.
func (r *report) envelopes() string {
	var sb strings.Builder
	for _, rw := range envelopeRows() {
		for _, b := range r.builds {
			a := r.agg(b.name, rw.scenario, envelopeKey)
			if a.runs == 0 {
				continue
			}
			if sb.Len() == 0 {
				sb.WriteString("| scenario | build | **agentpm envelopes** | JSON-RPC 2.0, same payload | envelope ÷ JSON-RPC | bridgekit JSON-RPC in the comparison above, same run |\n")
				sb.WriteString("|---|---|---|---|---|---|\n")
			}
			if !a.valid() {
				fmt.Fprintf(&sb, "| %s | %s | failed: %s | — | — | — |\n", rw.title, b.name, firstErr(a))
				continue
			}
			same := "not measured in this run"
			if sa := r.agg(b.name, rw.same, rw.sameRT); sa.valid() {
				same = rw.sameCell(sa.m)
			}
			fmt.Fprintf(&sb, "| %s | %s | **%s** | %s | %s | %s |\n", rw.title, b.name,
				rw.cell(a.m, "env_"), rw.cell(a.m, "jsonrpc_"), envelopeRatio(a, rw.metric), same)
		}
	}
	return sb.String()
}

// envelopeRatio is the median over the runs of envelope ÷ JSON-RPC for a
// higher-is-better metric.
func envelopeRatio(a agg, metric string) string {
	var qs []float64
	for _, o := range a.outs {
		if !o.ok() {
			continue
		}
		e, j := o.metrics["env_"+metric], o.metrics["jsonrpc_"+metric]
		if e > 0 && j > 0 {
			qs = append(qs, e/j)
		}
	}
	if len(qs) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", median(qs))
}

const envelopeIntro = `The same engine (` + "`runtime/rpc`" + `) framing AgentPM's protocols with ` + "`runtime/envelope`" + ` and, with the same payloads, handlers and typed decoding, JSON-RPC 2.0 with ` + "`runtime/jsonrpc`" + `; both framings run in one worker process, taking turns twice each, so their figures come from the same minutes. Service round trips are agentpm-service ` + "`retrieve`" + ` requests of role knowledge (the shape of AgentPM's knowledge fixtures: a 3-result answer with citations, about 1.3 KB) from a host to a process provider, one at a time with the engine's default Options, against the same payload as a JSON-RPC ` + "`knowledge/retrieve`" + ` request; the bytes are per call on the wire, up (request) and down (answer). The burst is 50,000 ` + "`harness_event`" + ` frames (a knowledge_retrieved action event with a correlation id, also the frame's id) from the Harness's side to the client's, each decoded into ` + "`agentpmmachine.HarnessEvent`" + `, timed until the last is handled, against the same event as JSON-RPC notifications. Envelope ÷ JSON-RPC above 1× means the envelopes are faster. The last column repeats the bridgekit JSON-RPC figure of the comparison's scenario of the same shape in the same run (its own, smaller, session/prompt payload), for scale.

`
