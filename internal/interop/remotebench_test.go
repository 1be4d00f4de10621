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
	// The TS client's own CPU time per update of a burst (user and system, microseconds), by transport and
	// pair ("ts-ts", "ts-go"), medians of the runs. Its inverse bounds the burst rate of that client
	// whatever the server: a server-side floor above it cannot be met.
	TSClientBurstCPUus map[string]map[string]float64
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

// goClientRun times calls echo round trips and a burst of n updates with bridgekit's client.
func goClientRun(t *testing.T, url string, calls, n int) (rtPerS, burstPerS float64) {
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
	t0 := time.Now()
	for i := 0; i < calls; i++ {
		var out struct {
			I int `json:"i"`
		}
		if err := conn.Call(ctx, "_bench/echo", map[string]int{"i": i}, &out); err != nil || out.I != i {
			t.Fatalf("echo %d: %v %d", i, err, out.I)
		}
	}
	rtPerS = float64(calls) / time.Since(t0).Seconds()
	t0 = time.Now()
	if _, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: text("burst " + strconv.Itoa(n))}); err != nil {
		t.Fatal(err)
	}
	<-done
	burstPerS = float64(n) / time.Since(t0).Seconds()
	return rtPerS, burstPerS
}

// tsClientRun runs remote-client.mjs's bench scenario against url; cpuUs is the client's CPU time per
// update of the burst.
func tsClientRun(t *testing.T, node, url string, calls, n int) (rtPerS, burstPerS, cpuUs float64) {
	report := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(node, "remote-client.mjs", url, report, "bench", strconv.Itoa(calls), strconv.Itoa(n))
	cmd.Dir = peerDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("remote-client.mjs bench: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(report)
	var r struct {
		RoundTripNs  float64 `json:"roundTripNs"`
		BurstNs      float64 `json:"burstNs"`
		BurstUpdates int     `json:"burstUpdates"`
		BurstCPUus   float64 `json:"burstCpuUs"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.BurstUpdates != n {
		t.Fatalf("report %s: %v", data, err)
	}
	return 1e9 / r.RoundTripNs, float64(n) / (r.BurstNs / 1e9), r.BurstCPUus / float64(n)
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
		RoundTrips: map[string]map[string]float64{}, Bursts: map[string]map[string]float64{},
		TSClientBurstCPUus: map[string]map[string]float64{}}
	if n, err := strconv.Atoi(os.Getenv("BRIDGEKIT_REMOTE_BENCH_RUNS")); err == nil && n > 0 {
		f.Runs = n
	}
	transports := []string{"websocket", "http"}
	if v := os.Getenv("BRIDGEKIT_REMOTE_BENCH_TRANSPORTS"); v != "" {
		transports = strings.Split(v, ",")
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f.LoadAverage = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	tsBase := startTSServer(t)
	srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return echoAgent() },
		&srvremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 4}, Server: remote.Options{MaxLogBytes: 64 << 20}})
	hs := httptest.NewServer(srv)
	defer func() { hs.CloseClientConnections(); srv.Close(); hs.Close() }()
	goBase := hs.URL + "/acp"
	for _, transport := range transports {
		url := func(base string) string {
			if transport == "websocket" {
				return "ws" + strings.TrimPrefix(base, "http")
			}
			return base
		}
		rt := map[string][]float64{}
		bu := map[string][]float64{}
		cpu := map[string][]float64{}
		for run := 0; run < f.Runs; run++ {
			// The pairs take turns, so that a change of load on the machine falls on all of them.
			for _, pair := range []string{"ts-ts", "ts-go", "go-ts", "go-go"} {
				server := tsBase
				if strings.HasSuffix(pair, "-go") {
					server = goBase
				}
				var r, b float64
				t0 := time.Now()
				calls := f.Calls
				if transport == "http" {
					calls = f.HTTPCalls
				}
				if strings.HasPrefix(pair, "ts-") {
					var c float64
					r, b, c = tsClientRun(t, node, url(server), calls, f.Burst)
					cpu[pair] = append(cpu[pair], c)
				} else {
					r, b = goClientRun(t, url(server), calls, f.Burst)
				}
				t.Logf("%s %s run %d: %.0f round trips/s, %.0f updates/s (%v)", transport, pair, run, r, b, time.Since(t0).Round(time.Millisecond))
				rt[pair] = append(rt[pair], r)
				bu[pair] = append(bu[pair], b)
			}
		}
		f.RoundTrips[transport] = map[string]float64{}
		f.Bursts[transport] = map[string]float64{}
		f.TSClientBurstCPUus[transport] = map[string]float64{}
		for pair := range rt {
			f.RoundTrips[transport][pair] = median(rt[pair])
			f.Bursts[transport][pair] = median(bu[pair])
		}
		for pair := range cpu {
			f.TSClientBurstCPUus[transport][pair] = median(cpu[pair])
		}
		t.Logf("%s round trips/s %v, burst updates/s %v", transport, f.RoundTrips[transport], f.Bursts[transport])
		if c := f.TSClientBurstCPUus[transport]["ts-go"]; c > 0 && f.Bursts[transport]["ts-ts"] > 0 {
			ceiling := 1e6 / c
			t.Logf("%s burst: the TS client spends %.1f us of CPU an update against bridgekit's server (%.1f against its own): whatever the server, it cannot pass %.0f updates/s, %.2fx the TS SDK's server", transport,
				c, f.TSClientBurstCPUus[transport]["ts-ts"], ceiling, ceiling/f.Bursts[transport]["ts-ts"])
		}
	}
	f.BridgekitP50us, f.BareP50us = wsOverhead(t, "ws"+strings.TrimPrefix(goBase, "http"))
	t.Logf("WebSocket round trip p50: bridgekit %.1f us, bare coder/websocket %.1f us", f.BridgekitP50us, f.BareP50us)
	f.IdleSessions = 1000
	f.IdleBytesPerConn = idleMemory(t, f.IdleSessions)
	t.Logf("idle: %.0f bytes per session", f.IdleBytesPerConn)
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
	bc := bareEcho(t, ctx)
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

// idleMemory opens sessions idle WebSocket sessions (initialize, session/new) to a server in a process
// of its own and returns its heap and stack growth per session.
func idleMemory(t *testing.T, sessions int) float64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRemoteIdleServer$")
	cmd.Env = append(os.Environ(), "BRIDGEKIT_IDLE_SERVER=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSpace(line)
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

// TestRemoteIdleServer is the server process of idleMemory: it serves echoAgent in process on /acp and
// its heap and stacks in use (after a GC) on /mem, until its stdin closes.
func TestRemoteIdleServer(t *testing.T) {
	if os.Getenv("BRIDGEKIT_IDLE_SERVER") == "" {
		t.Skip("the server process of TestRemoteBench's idle measure")
	}
	srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return echoAgent() }, &srvremote.Options{Server: remote.Options{MaxConns: 5000, MaxConnsPerPrincipal: 5000, PingInterval: -1}})
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
		srv := srvremote.NewServer(func(remote.ConnInfo) *acp.AgentHandlers { return echoAgent() },
			&srvremote.Options{Conn: rpc.Options{MaxConcurrentRequests: 4}, Server: remote.Options{MaxLogBytes: 64 << 20}})
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
		bc := bareEcho(b, ctx)
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

// bareEcho dials a bare coder/websocket server that echoes every message, the reference of the WebSocket
// round-trip row; both close when tb ends.
func bareEcho(tb testing.TB, ctx context.Context) *websocket.Conn {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if c.Write(context.Background(), typ, b) != nil {
				return
			}
		}
	}))
	tb.Cleanup(echo.Close)
	bc, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(echo.URL, "http"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bc.CloseNow() })
	return bc
}
