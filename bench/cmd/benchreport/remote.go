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

// The targets of issue 32 on the remote transports are measured in the root module's internal/interop
// (TestRemoteBench, which needs node and the TypeScript SDK's peers): `make bench-remote`, which `make
// bench` runs before benchreport, leaves its figures in bench/remote-transports.json (flag
// -remote-figures).

// remoteFigures is what internal/interop's TestRemoteBench writes.
type remoteFigures struct {
	Measured                  time.Time
	LoadAverage               string
	Calls, HTTPCalls, Burst   int
	Runs                      int
	RoundTrips, Bursts        map[string]map[string]float64
	ConcurrentRoundTrips      map[string]map[string]float64
	Callers                   int
	ClientBurstCPUus          map[string]map[string]float64
	TSServerBurstCPUus        map[string]float64
	BridgekitP50us, BareP50us float64
	IdleSessions              int
	IdleBytesPerConn          float64
}

// The limits.
const (
	remoteMinRatio    = 2.0
	remoteMaxOverhead = 1.5
	remoteIdleBytes   = 64 << 10
)

func loadRemoteFigures(path string) (*remoteFigures, string) {
	if path == "" {
		return nil, "not read (no file given)"
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Sprintf("not measured: %s is missing (`make bench-remote` writes it)", path)
	}
	var f remoteFigures
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", path, err)
	}
	return &f, ""
}

func atLeastRatio(x, limit float64, detail string) verdict {
	if x >= limit {
		return verdict{fmt.Sprintf("met: %.2f× ≥ %g× (%s)", x, limit, detail), true}
	}
	return verdict{fmt.Sprintf("MISSED: %.2f× < %g× (%s)", x, limit, detail), false}
}

// rows are the comparisons, by transport and measure. A server's rate is judged with the same
// client against both servers, and a client's with the same server against both clients; the peer held
// fixed is bridgekit's, the one that holds the measured side back least (the TS client's own CPU per
// message caps its rate whatever the server, and the TS server's caps any client's). The pairing with the
// TS peer fixed is given beside each row.
func (f *remoteFigures) rows() []struct {
	what   string
	detail string
	v      verdict
} {
	type row = struct {
		what   string
		detail string
		v      verdict
	}
	var out []row
	for _, tr := range []string{"websocket", "http"} {
		name := map[string]string{"websocket": "WebSocket", "http": "Streamable HTTP"}[tr]
		for _, m := range []struct {
			label string
			by    map[string]map[string]float64
			unit  string
		}{{"round trips", f.RoundTrips, "/s"}, {"50k-update burst", f.Bursts, " updates/s"}} {
			p := m.by[tr]
			if p == nil {
				continue
			}
			srv := fmt.Sprintf("bridgekit's client: against bridgekit's server %s, against the TS SDK's %s. (TS client: %s against bridgekit's, %s against its own: %.2f×)",
				fmtRate(p["go-go"], m.unit), fmtRate(p["go-ts"], m.unit), fmtRate(p["ts-go"], m.unit), fmtRate(p["ts-ts"], m.unit), divide(p["ts-go"], p["ts-ts"]))
			cli := fmt.Sprintf("against bridgekit's server: bridgekit's client %s, the TS SDK's %s. (Against the TS server: bridgekit's client %s, the TS SDK's %s: %.2f×)",
				fmtRate(p["go-go"], m.unit), fmtRate(p["ts-go"], m.unit), fmtRate(p["go-ts"], m.unit), fmtRate(p["ts-ts"], m.unit), divide(p["go-ts"], p["ts-ts"]))
			if c := f.ConcurrentRoundTrips[tr]; m.unit == "/s" && c != nil && f.Callers > 0 {
				srv += fmt.Sprintf(" From %d concurrent callers: bridgekit's client %s against bridgekit's server, %s against the TS SDK's (%.2f×).",
					f.Callers, fmtRate(c["go-go"], m.unit), fmtRate(c["go-ts"], m.unit), divide(c["go-go"], c["go-ts"]))
				cli += fmt.Sprintf(" From %d concurrent callers, against bridgekit's server: bridgekit's client %s, the TS SDK's %s (%.2f×).",
					f.Callers, fmtRate(c["go-go"], m.unit), fmtRate(c["ts-go"], m.unit), divide(c["go-go"], c["ts-go"]))
			}
			if m.unit == " updates/s" {
				if c := f.ClientBurstCPUus[tr]["ts-go"]; c > 0 {
					srv += fmt.Sprintf(" The TS client spends %.1f µs of CPU on each update it reads.", c)
				}
				if c := f.TSServerBurstCPUus[tr]; c > 0 {
					cli += fmt.Sprintf(" The TS server spends %.1f µs of CPU on each update it sends", c)
					if g, gg := f.ClientBurstCPUus[tr]["go-ts"], f.ClientBurstCPUus[tr]["go-go"]; g > 0 {
						cli += fmt.Sprintf("; bridgekit's client %.1f µs on each it reads from it (%.1f from bridgekit's server)", g, gg)
					}
					cli += "."
				}
			}
			out = append(out,
				row{fmt.Sprintf("%s %s: bridgekit's server ≥ %g× the TS SDK's", name, m.label, remoteMinRatio), srv, atLeastRatio(divide(p["go-go"], p["go-ts"]), remoteMinRatio, "server")},
				row{fmt.Sprintf("%s %s: bridgekit's client ≥ %g× the TS SDK's", name, m.label, remoteMinRatio), cli, atLeastRatio(divide(p["go-go"], p["ts-go"]), remoteMinRatio, "client")})
		}
	}
	out = append(out, row{fmt.Sprintf("WebSocket round trip through bridgekit ≤ %g× a bare coder/websocket echo (p50, 1 caller)", remoteMaxOverhead),
		fmt.Sprintf("bridgekit %s, bare echo %s", fmtUS(f.BridgekitP50us), fmtUS(f.BareP50us)),
		atMostRatio(divide(f.BridgekitP50us, f.BareP50us), remoteMaxOverhead, "p50")})
	idle := verdict{fmt.Sprintf("met: %.1f KiB ≤ 64 KiB", f.IdleBytesPerConn/1024), f.IdleBytesPerConn <= remoteIdleBytes}
	if !idle.met {
		idle.text = fmt.Sprintf("MISSED: %.1f KiB > 64 KiB", f.IdleBytesPerConn/1024)
	}
	out = append(out, row{fmt.Sprintf("%s idle WebSocket sessions: ≤ 64 KiB each on the server (heap and stacks)", fmtCount(float64(f.IdleSessions))),
		fmt.Sprintf("%.0f B a session (HeapInuse + StackInuse growth of a server process of its own, after GC)", f.IdleBytesPerConn), idle})
	return out
}

func divide(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (c commandFigures) remoteVerdicts() []string {
	if c.Remote == nil {
		return []string{"[remote] bridgekit's remote transports against the TS SDK's (issue 32): " + c.RemoteErr}
	}
	var out []string
	for _, r := range c.Remote.rows() {
		out = append(out, fmt.Sprintf("[remote] %s (issue 32): %s", r.what, mark(r.v)))
	}
	return out
}

const remoteIntro = "Measured in the root module by `make bench-remote` (`internal/interop/remotebench_test.go`, `TestRemoteBench`), which `make bench` runs first, and read from `bench/remote-transports.json`. The TypeScript SDK 2.4.0's transports (`experimental/server` with `ws` 8.18.3 in Node, `experimental/http-client`, `experimental/ws-client`: `testdata/interop/acp-ts/remote-agent.mjs` and `remote-client.mjs`) and bridgekit's (`servers/acpremote`, `clients/acpremote`) run on this machine in one run, each server in a process of its own, the four client-server pairs taking turns; each client times, in its own process, sequential round trips of an extension request (`_bench/echo`; the rows judge these, and give the same number from 16 concurrent callers beside them) and a prompt that streams 50,000 `session/update` notifications, to the last one handled. A server is judged by one client's rates against both servers, a client by its rates and the other client's against one server; the peer held fixed is bridgekit's, because a TS peer caps the rate whatever the other side is (on 2026-12-06 the TS client spent 23-36 µs of CPU on each update it read and the TS server 23-28 µs on each it sent, on a machine of two cores; the burst rows give this run's figures). The pairing with the TS peer held fixed is given in parentheses. The bare echo is a coder/websocket client and server exchanging the same frame, alternating with bridgekit's round trips, both servers in the measuring process. Figures are medians of the runs, and a row judges the ratio of two medians; the pairs take turns within each run, so that a change of load on the shared machine falls on all of them, and the load average at the time is given.\n\n"

func (c commandFigures) remoteSection() string {
	var sb strings.Builder
	sb.WriteString("| target (issue 32) | figures | met? |\n|---|---|---|\n")
	if c.Remote == nil {
		fmt.Fprintf(&sb, "| bridgekit's remote transports against the TS SDK's | %s | — |\n", c.RemoteErr)
		return sb.String()
	}
	f := c.Remote
	for _, r := range f.rows() {
		fmt.Fprintf(&sb, "| %s | %s | %s |\n", r.what, r.detail, mark(r.v))
	}
	fmt.Fprintf(&sb, "\n%d runs; %s round trips a run over WebSocket, %s over Streamable HTTP (the TS SDK's take tens of milliseconds each there); %s.\n",
		f.Runs, fmtCount(float64(f.Calls)), fmtCount(float64(f.HTTPCalls)), measuredAt(f.Measured, f.LoadAverage))
	return sb.String()
}
