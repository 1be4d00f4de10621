package interop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/wsecho"
	"github.com/bridgekit/bridgekit/runtime/remote"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	srvremote "github.com/bridgekit/bridgekit/servers/acpremote"
)

// RemoteFigures is what TestRemoteBench writes (make bench-remote), for bench/cmd/benchreport.
type RemoteFigures struct {
	Measured    time.Time
	LoadAverage string
	Calls       int // round trips a run (WebSocket)
	HTTPCalls   int // round trips a run over Streamable HTTP (the TS SDK's take ~25 ms each)
	Burst       int // updates of a burst
	Runs        int
	// By transport ("websocket", "http") and pair ("ts-ts", "ts-go", "go-ts", "go-go": client-server):
	// round trips per second and burst updates per second, medians of the runs.
	RoundTrips map[string]map[string]float64
	Bursts     map[string]map[string]float64
	// ConcurrentRoundTrips: the same number of round trips from Callers concurrent callers, per second.
	ConcurrentRoundTrips map[string]map[string]float64
	Callers              int
	// The client's own CPU time per update of a burst (user and system, microseconds), by transport and
	// pair, medians of the runs. The TS client's inverse bounds its burst rate whatever the server: a
	// server-side floor above it cannot be met. (bridgekit's client shares its process with nothing
	// else while it runs: the server it measures is in a process of its own.)
	ClientBurstCPUus map[string]map[string]float64
	// The TS server's CPU time per update it sends in a burst to bridgekit's client (microseconds, by
	// transport, median of the runs; 0 where /proc is not there to read it): its inverse bounds the rate
	// any client gets from that server.
	TSServerBurstCPUus map[string]float64
	// A WebSocket round trip through bridgekit (Go client and server) against a bare coder/websocket echo
	// of the same frames, p50 of one caller.
	BridgekitP50us, BareP50us float64
	// Idle memory: heap and stacks of a server process per idle WebSocket session (initialize and
	// session/new done), for IdleSessions sessions.
	IdleSessions     int
	IdleBytesPerConn float64
}

// echoAgent answers _bench/echo and bursts updates ("burst N").
func echoAgent() *acp.AgentHandlers {
	return &acp.AgentHandlers{
		Initialize: func(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
			return &acp.InitializeResponse{ProtocolVersion: 1}, nil
		},
		SessionNew: func(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
			return &acp.NewSessionResponse{SessionID: "bench-1"}, nil
		},
		SessionPrompt: func(ctx context.Context, p *acp.PromptRequest) (*acp.PromptResponse, error) {
			n := 0
			fmt.Sscanf(acp.PromptText(p.Prompt), "burst %d", &n)
			client := acp.ClientPeerFrom(ctx)
			for i := 0; i < n; i++ {
				if err := client.SessionUpdate(ctx, acp.AgentText(p.SessionID, "chunk "+strconv.Itoa(i))); err != nil {
					return nil, err
				}
			}
			return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		},
		Fallback: rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method == "_bench/echo" {
				return jsontext.Value(append([]byte(nil), req.Params...)), nil
			}
			return nil, rpc.ErrMethodNotFound
		}),
	}
}

// benchCallers is the number of concurrent callers of the throughput round trips.
const benchCallers = 16

// clientRun is what one client's run measures.
type clientRun struct {
	rt, rtConcurrent float64 // round trips per second, one caller and benchCallers callers
	burst            float64 // updates per second
	clientCPUus      float64 // the client's own CPU per update of the burst
	serverCPUus      float64 // the server's, where the run was given a way to tell it (0 otherwise)
}

// goClientRun times calls echo round trips (one caller, then benchCallers) and a burst of n updates with
// bridgekit's client; with serverCPU, it also measures the server's CPU time over the burst, as
// serverCPU tells it.
func goClientRun(t *testing.T, url string, calls, n int, serverCPU func() time.Duration) clientRun {
	ctx := context.Background()
	var mu sync.Mutex
	got := 0
	done := make(chan struct{})
	agent, err := acpremote.DialAgent(ctx, url, &acp.ClientHandlers{SessionUpdate: func(context.Context, *acp.SessionNotification) error {
		mu.Lock()
		got++
		if got == n {
			close(done)
		}
		mu.Unlock()
		return nil
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: "/", MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	conn := agent.Conn()
	echo := func(i int) {
		var out struct {
			I int `json:"i"`
		}
		if err := conn.Call(ctx, "_bench/echo", map[string]int{"i": i}, &out); err != nil || out.I != i {
			t.Errorf("echo %d: %v %d", i, err, out.I)
		}
	}
	var r clientRun
	t0 := time.Now()
	for i := 0; i < calls; i++ {
		echo(i)
	}
	r.rt = float64(calls) / time.Since(t0).Seconds()
	t0 = time.Now()
	var wg sync.WaitGroup
	for c := range benchCallers {
		wg.Go(func() {
			for i := c; i < calls; i += benchCallers {
				echo(i)
			}
		})
	}
	wg.Wait()
	r.rtConcurrent = float64(calls) / time.Since(t0).Seconds()
	if t.Failed() {
		t.FailNow()
	}
	var cpu0 time.Duration
	if serverCPU != nil {
		cpu0 = serverCPU()
	}
	own0 := cpuTime()
	t0 = time.Now()
	if _, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: text("burst " + strconv.Itoa(n))}); err != nil {
		t.Fatal(err)
	}
	<-done
	r.burst = float64(n) / time.Since(t0).Seconds()
	r.clientCPUus = float64((cpuTime() - own0).Microseconds()) / float64(n)
	if serverCPU != nil {
		r.serverCPUus = float64((serverCPU() - cpu0).Microseconds()) / float64(n)
	}
	return r
}

// tsClientRun runs remote-client.mjs's bench scenario against url.
func tsClientRun(t *testing.T, node, url string, calls, n int) clientRun {
	report := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(node, "remote-client.mjs", url, report, "bench", strconv.Itoa(calls), strconv.Itoa(n))
	cmd.Dir = peerDir
	cmd.Env = append(os.Environ(), "BENCH_CALLERS="+strconv.Itoa(benchCallers))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("remote-client.mjs bench: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(report)
	var r struct {
		RoundTripNs  float64 `json:"roundTripNs"`
		ConcurrentNs float64 `json:"concurrentNs"`
		BurstNs      float64 `json:"burstNs"`
		BurstUpdates int     `json:"burstUpdates"`
		BurstCPUus   float64 `json:"burstCpuUs"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.BurstUpdates != n || r.ConcurrentNs == 0 {
		t.Fatalf("report %s: %v", data, err)
	}
	return clientRun{rt: 1e9 / r.RoundTripNs, rtConcurrent: 1e9 / r.ConcurrentNs, burst: float64(n) / (r.BurstNs / 1e9), clientCPUus: r.BurstCPUus / float64(n)}
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// TestRemoteBench measures bridgekit's remote transports against the TypeScript SDK's (the four
// client-server pairs, both transports, in the same run) and against a bare coder/websocket echo, and
// the idle memory of WebSocket sessions. It runs only with BRIDGEKIT_REMOTE_BENCH set (the file it
// writes): `make bench-remote`.
func TestRemoteBench(t *testing.T) {
	out := os.Getenv("BRIDGEKIT_REMOTE_BENCH")
	if out == "" {
		t.Skip("BRIDGEKIT_REMOTE_BENCH is not set (make bench-remote)")
	}
	node := nodeWithWS(t)
	f := RemoteFigures{Measured: time.Now(), Calls: 2000, HTTPCalls: 200, Burst: 50000, Runs: 3,
		RoundTrips: map[string]map[string]float64{}, ConcurrentRoundTrips: map[string]map[string]float64{}, Bursts: map[string]map[string]float64{},
		Callers:          benchCallers,
		ClientBurstCPUus: map[string]map[string]float64{}, TSServerBurstCPUus: map[string]float64{}}
	if n, err := strconv.Atoi(os.Getenv("BRIDGEKIT_REMOTE_BENCH_RUNS")); err == nil && n > 0 {
		f.Runs = n
	}
	transports := []string{"websocket", "http"}
	if v := os.Getenv("BRIDGEKIT_REMOTE_BENCH_TRANSPORTS"); v != "" {
		transports = strings.Split(v, ",")
	}
	pairs := []string{"ts-ts", "ts-go", "go-ts", "go-go"}
	if v := os.Getenv("BRIDGEKIT_REMOTE_BENCH_PAIRS"); v != "" {
		pairs = strings.Split(v, ",") // for profiles of one pair; the report is written only with all four
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f.LoadAverage = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	tsBase, tsPid := startTSServerPid(t)
	// bridgekit's server runs in a process of its own, as the TS SDK's runs in node's: each client then
	// shares the machine, not its process, with the server it measures.
	goBase := startGoServer(t, "bench") + "/acp"
	for _, transport := range transports {
		url := func(base string) string {
			if transport == "websocket" {
				return "ws" + strings.TrimPrefix(base, "http")
			}
			return base
		}
		rt := map[string][]float64{}
		rtc := map[string][]float64{}
		bu := map[string][]float64{}
		cpu := map[string][]float64{}
		var serverCPU []float64
		for run := 0; run < f.Runs; run++ {
			// The pairs take turns, so that a change of load on the machine falls on all of them.
			for _, pair := range pairs {
				server := tsBase
				if strings.HasSuffix(pair, "-go") {
					server = goBase
				}
				t0 := time.Now()
				calls := f.Calls
				if transport == "http" {
					calls = f.HTTPCalls
				}
				var r clientRun
				if strings.HasPrefix(pair, "ts-") {
					r = tsClientRun(t, node, url(server), calls, f.Burst)
				} else {
					var sample func() time.Duration
					if pair == "go-ts" {
						sample = func() time.Duration { return procCPU(tsPid) }
					}
					r = goClientRun(t, url(server), calls, f.Burst, sample)
					if r.serverCPUus > 0 {
						serverCPU = append(serverCPU, r.serverCPUus)
					}
				}
				t.Logf("%s %s run %d: %.0f round trips/s (%.0f from %d callers), %.0f updates/s (%v)", transport, pair, run, r.rt, r.rtConcurrent, benchCallers, r.burst, time.Since(t0).Round(time.Millisecond))
				rt[pair] = append(rt[pair], r.rt)
				rtc[pair] = append(rtc[pair], r.rtConcurrent)
				bu[pair] = append(bu[pair], r.burst)
				cpu[pair] = append(cpu[pair], r.clientCPUus)
			}
		}
		f.RoundTrips[transport] = map[string]float64{}
		f.ConcurrentRoundTrips[transport] = map[string]float64{}
		f.Bursts[transport] = map[string]float64{}
		f.ClientBurstCPUus[transport] = map[string]float64{}
		for pair := range rt {
			f.RoundTrips[transport][pair] = median(rt[pair])
			f.ConcurrentRoundTrips[transport][pair] = median(rtc[pair])
			f.Bursts[transport][pair] = median(bu[pair])
		}
		for pair := range cpu {
			f.ClientBurstCPUus[transport][pair] = median(cpu[pair])
		}
		t.Logf("%s burst: the clients' CPU per update (us) %v", transport, f.ClientBurstCPUus[transport])
		if len(serverCPU) > 0 {
			f.TSServerBurstCPUus[transport] = median(serverCPU)
			t.Logf("%s burst: the TS server spends %.1f us of CPU an update it sends to bridgekit's client: whatever the client, it cannot pass %.0f updates/s", transport, f.TSServerBurstCPUus[transport], 1e6/f.TSServerBurstCPUus[transport])
		}
		t.Logf("%s round trips/s %v (%d callers: %v), burst updates/s %v", transport, f.RoundTrips[transport], benchCallers, f.ConcurrentRoundTrips[transport], f.Bursts[transport])
		if c := f.ClientBurstCPUus[transport]["ts-go"]; c > 0 && f.Bursts[transport]["ts-ts"] > 0 {
			ceiling := 1e6 / c
			t.Logf("%s burst: the TS client spends %.1f us of CPU an update against bridgekit's server (%.1f against its own): whatever the server, it cannot pass %.0f updates/s, %.2fx the TS SDK's server", transport,
				c, f.ClientBurstCPUus[transport]["ts-ts"], ceiling, ceiling/f.Bursts[transport]["ts-ts"])
		}
	}
	srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return echoAgent() }, benchServerOptions())
	hs := httptest.NewServer(srv)
	defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
	// The bare echo's server runs in this process: so does bridgekit's, for the comparison.
	f.BridgekitP50us, f.BareP50us = wsOverhead(t, "ws"+strings.TrimPrefix(hs.URL, "http")+"/acp")
	t.Logf("WebSocket round trip p50: bridgekit %.1f us, bare coder/websocket %.1f us", f.BridgekitP50us, f.BareP50us)
	f.IdleSessions = 1000
	f.IdleBytesPerConn = idleMemory(t, f.IdleSessions)
	t.Logf("idle: %.0f bytes per session", f.IdleBytesPerConn)
	if len(pairs) < 4 || len(transports) < 2 {
		// A partial run (for a profile) would render as misses: the report is left as it was.
		t.Logf("a partial run (pairs %v, transports %v): %s not written", pairs, transports, out)
		return
	}
	data, _ := json.Marshal(f)
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wsOverhead is the p50 of one caller's round trips of a session/prompt-sized frame through bridgekit
// (client and server) and through a bare coder/websocket echo.
func wsOverhead(t *testing.T, url string) (bk, bare float64) {
	ctx := context.Background()
	const n = 3000
	payload := map[string]string{"text": strings.Repeat("lorem ipsum ", 40)}
	agent, err := acpremote.DialAgent(ctx, url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
	frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "_bench/echo", "params": payload})
	bc := wsecho.Dial(t, ctx)
	var bkT, bareT []float64
	for round := 0; round < 2*n; round++ {
		t0 := time.Now()
		if round%2 == 0 {
			var out any
			if err := agent.Conn().Call(ctx, "_bench/echo", payload, &out); err != nil {
				t.Fatal(err)
			}
			bkT = append(bkT, float64(time.Since(t0).Nanoseconds())/1e3)
		} else {
			bc.Write(ctx, websocket.MessageText, frame)
			if _, _, err := bc.Read(ctx); err != nil {
				t.Fatal(err)
			}
			bareT = append(bareT, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return median(bkT), median(bareT)
}

// benchServerOptions configure bridgekit's server in the measures.
func benchServerOptions() *srvremote.Options {
	return &srvremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 4}, Server: remote.Options{MaxLogBytes: 64 << 20}}
}

// startGoServer starts bridgekit's server of echoAgent in a process of its own (TestRemoteServerProcess,
// in mode "bench" or "idle") and returns its base URL; it ends with t.
func startGoServer(t *testing.T, mode string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRemoteServerProcess$")
	cmd.Env = append(os.Environ(), "BRIDGEKIT_SERVER_PROCESS="+mode)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

// idleMemory opens sessions idle WebSocket sessions (initialize, session/new) to a server in a process
// of its own and returns its heap and stack growth per session.
func idleMemory(t *testing.T, sessions int) float64 {
	base := startGoServer(t, "idle")
	mem := func() float64 {
		resp, err := http.Get(base + "/mem")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v float64
		fmt.Fscan(resp.Body, &v)
		return v
	}
	before := mem()
	ctx := context.Background()
	conns := make([]*websocket.Conn, 0, sessions)
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	for i := 0; i < sessions; i++ {
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/acp", nil)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`))
		c.Read(ctx)
		c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`))
		c.Read(ctx)
	}
	after := mem()
	if p := os.Getenv("BRIDGEKIT_IDLE_HEAP"); p != "" {
		if resp, err := http.Get(base + "/heap"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			os.WriteFile(p, b, 0o644)
		}
	}
	return (after - before) / float64(sessions)
}

// TestRemoteServerProcess is the server process of startGoServer: it serves echoAgent on /acp (mode
// "bench": as TestRemoteBench's pairs have it; "idle": for idleMemory's thousand sessions, without
// pings) and its heap and stacks in use (after a GC) on /mem, until its stdin closes.
func TestRemoteServerProcess(t *testing.T) {
	mode := os.Getenv("BRIDGEKIT_SERVER_PROCESS")
	if mode == "" {
		t.Skip("the server process of TestRemoteBench")
	}
	opts := benchServerOptions()
	if mode == "idle" {
		opts = &srvremote.Options{Server: remote.Options{MaxConns: 5000, MaxConnsPerPrincipal: 5000, PingInterval: -1}}
	}
	srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return echoAgent() }, opts)
	mux := http.NewServeMux()
	mux.Handle("/acp", srv)
	mux.HandleFunc("/mem", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprint(w, ms.HeapInuse+ms.StackInuse)
	})
	mux.HandleFunc("/heap", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		pprof.Lookup("heap").WriteTo(w, 0)
	})
	hs := httptest.NewServer(mux)
	fmt.Println(hs.URL)
	buf := make([]byte, 1)
	os.Stdin.Read(buf)
	hs.CloseClientConnections()
	srv.Close()
	hs.Close()
}

// BenchmarkWebSocketRoundTrip is wsOverhead's two round trips as go benchmarks, for profiles and
// allocation counts: one caller's _bench/echo of a session/prompt-sized frame through bridgekit (client,
// server and agent in this process), and the same frame through a bare coder/websocket echo.
//
//	go test -run '^$' -bench BenchmarkWebSocketRoundTrip -benchmem -cpuprofile cpu.out ./internal/interop
func BenchmarkWebSocketRoundTrip(b *testing.B) {
	ctx := context.Background()
	payload := map[string]string{"text": strings.Repeat("lorem ipsum ", 40)}
	b.Run("bridgekit", func(b *testing.B) {
		srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return echoAgent() }, benchServerOptions())
		hs := httptest.NewServer(srv)
		defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
		agent, err := acpremote.DialAgent(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/acp", nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer agent.Close()
		agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			var out any
			if err := agent.Conn().Call(ctx, "_bench/echo", payload, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "_bench/echo", "params": payload})
		bc := wsecho.Dial(b, ctx)
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			bc.Write(ctx, websocket.MessageText, frame)
			if _, _, err := bc.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU reports the process's CPU time (user and system, every goroutine's: client, server and agent)
// per operation as cpu-ns/op, a figure a loaded machine disturbs less than wall time. Defer its result.
func reportCPU(b *testing.B) func() {
	t0 := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-t0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}
