package bench

// AgentPM's envelopes through bridgekit's engine, against JSON-RPC 2.0
// through the same engine with the same payloads and the same handlers:
// what the envelope framing (runtime/envelope) costs next to the JSON-RPC
// one (runtime/jsonrpc). Two workloads, the ones AgentPM's protocols put
// on a host: service round trips (a process provider's knowledge
// retrieve, agentpm-service) and a burst of Harness events
// (harness_event, agentpm-harness-machine).

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/jsonrpc"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The JSON-RPC spellings of the AgentPM methods measured: the role and the
// method, the way agentpm-service names them apart.
const (
	MethodRetrieve     = "knowledge/retrieve"
	MethodHarnessEvent = "harness_event"
)

// RetrieveRequest is the retrieve payload of the service round trips: the
// shape of AgentPM's knowledge_runtime_request fixture.
func RetrieveRequest() *agentpmservice.RetrievePayload {
	q, top, threshold, cite := "How does Harness route Knowledge to a process provider?", int64(3), 0.72, true
	return &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: "@zack/docs", Version: "1.2.3", Mode: agentpmservice.KnowledgeRequestModeVectorQuery,
		Query: &q, TopK: &top, ScoreThreshold: &threshold, ReturnCitations: &cite}}
}

// retrieveResult is the answer: the shape of AgentPM's
// knowledge_runtime_result fixture, with three results.
var retrieveResult = func() *agentpmservice.KnowledgeRuntimeResult {
	req := RetrieveRequest().Request
	res := &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: req.Package, Version: req.Version, Mode: req.Mode, Query: req.Query}
	texts := []string{
		"Harness routes Knowledge through KnowledgeRuntime, which calls the configured process provider over agentpm-service.",
		"A process provider answers retrieve with ranked chunks and citations; domain failures come back as ok:false.",
		"Providers are initialized once per session with workspace-safe metadata and must report their role and capabilities.",
	}
	for i, text := range texts {
		n := strconv.Itoa(i + 1)
		title, uri := "Harness Guide", "agentpm://knowledge/@zack/docs/1.2.3/guide#"+n
		res.Results = append(res.Results, agentpmservice.KnowledgeRetrievalResult{Rank: int64(i + 1), Score: 0.93 - 0.05*float64(i),
			ChunkID: "chunk_00" + n, SourceID: "source_guide", SourceTitle: &title, SourceURI: &uri, Text: &text,
			ChunkMetadata: jsontext.Value(`{"section":"runtime"}`), SourceMetadata: jsontext.Value(`{"title":"Harness Guide"}`)})
		res.Citations = append(res.Citations, agentpmservice.KnowledgeCitation{ChunkID: "chunk_00" + n, SourceID: "source_guide", Title: &title, URI: &uri})
	}
	return res
}()

// retrieve is the provider's handler, the same for both framings.
func retrieve(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
	if p.Request.Package != "@zack/docs" || p.Request.Query == nil {
		return nil, fmt.Errorf("unexpected retrieve request %+v", p.Request)
	}
	return retrieveResult, nil
}

// The AgentPM runtimes: not compared with the others, but they implement
// Runtime so that StartChild and MaybeRunPeer run them as child peers.
// Their connections serve, and call, knowledge retrieve only.
var (
	agentpmEnvelope = agentpmRT{key: "agentpm-envelope", envelope: true}
	agentpmJSONRPC  = agentpmRT{key: "agentpm-jsonrpc"}
)

// agentpmRuntimes lists them for Lookup.
func agentpmRuntimes() []Runtime { return []Runtime{agentpmEnvelope, agentpmJSONRPC} }

type agentpmRT struct {
	key      string
	envelope bool
}

func (rt agentpmRT) Key() string { return rt.key }

func (rt agentpmRT) Name() string {
	if rt.envelope {
		return "bridgekit, agentpm-service envelopes"
	}
	return "bridgekit, JSON-RPC 2.0"
}

// Open serves knowledge retrieve when svc is not nil (what it serves is
// retrieve, not svc's methods); otherwise it is a client. Both use the
// engine's default Options, as a process provider and its host would.
func (rt agentpmRT) Open(r io.Reader, w io.Writer, svc *Service) Conn {
	if rt.envelope {
		if svc != nil {
			return bridgekitConn{agentpmservice.NewConn(r, w, &agentpmservice.ServiceHandlers{Retrieve: retrieve}, nil)}
		}
		return envelopeClient{bridgekitConn{rpc.NewConn(r, w, agentpmservice.NewCodec("kb-", ""), nil, agentpmservice.ConnOptions(nil))}}
	}
	var h rpc.Handler
	if svc != nil {
		h = rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method != MethodRetrieve {
				return nil, rpc.MethodNotFound(req.Method)
			}
			var p agentpmservice.RetrievePayload
			if err := rpc.DecodeParams(req.Params, &p); err != nil {
				return nil, err
			}
			return retrieve(ctx, &p)
		})
	}
	return bridgekitConn{jsonrpc.NewConn(r, w, h, nil)}
}

// envelopeClient calls knowledge/retrieve as agentpm-service's retrieve
// request of role knowledge.
type envelopeClient struct{ bridgekitConn }

func (c envelopeClient) Call(ctx context.Context, method string, params, result any) error {
	if method != MethodRetrieve {
		return fmt.Errorf("agentpm-service: no method %s here", method)
	}
	return c.c.Send(ctx, rpc.Outbound{Method: agentpmservice.MethodRetrieve, Qualifier: string(agentpmservice.ServiceRoleKnowledge), Params: params}, result)
}

// retrieveTrips makes knowledge retrieve round trips on c.
func retrieveTrips(c Conn, cfg LoopConfig) (Latency, error) {
	req := RetrieveRequest()
	return Loop(cfg, func() func(context.Context) error {
		var res agentpmservice.KnowledgeRuntimeResult
		return func(ctx context.Context) error {
			res = agentpmservice.KnowledgeRuntimeResult{}
			if err := c.Call(ctx, MethodRetrieve, req, &res); err != nil {
				return err
			}
			if !res.Ok || len(res.Results) != 3 || len(res.Citations) != 3 {
				return fmt.Errorf("wrong retrieve result %+v", res)
			}
			return nil
		}
	})
}

// counting counts the bytes written through it.
type counting struct {
	w io.Writer
	n atomic.Int64
}

func (c *counting) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *counting) Close() error { return closeBoth(nil, c.w) }

// framings are the two sides of every AgentPM scenario, with their metric
// prefixes, in the order they run.
var framings = []struct {
	prefix string
	rt     agentpmRT
}{{"env_", agentpmEnvelope}, {"jsonrpc_", agentpmJSONRPC}}

// rounds is how many times each framing is measured in a scenario, the two
// taking turns so that a drift of the machine's load touches both.
const rounds = 2

// agentpmRT in memory: service round trips, one caller, both framings in
// turn; each framing's figures over all its rounds, plus the bytes on the
// wire per call.
func agentpmRTInmem(_ Runtime, p Profile) (Metrics, error) {
	cfg := loopConfig(1, false, p)
	cfg.MaxCalls /= rounds
	cfg.MaxTime /= rounds
	m := Metrics{}
	lat := map[string][]Latency{}
	for round := range rounds {
		for _, f := range framings {
			cr, sw := io.Pipe()
			sr, cw := io.Pipe()
			up, down := &counting{w: cw}, &counting{w: sw}
			client, server := f.rt.Open(cr, up, nil), f.rt.Open(sr, down, &Service{})
			l, err := retrieveTrips(client, cfg)
			pair := &Pair{Client: client, Server: server, closers: []io.Closer{cr, sw, sr, cw}}
			calls := int64(cfg.Warmup + l.N)
			if cerr := pair.Close(time.Second); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.rt.Name(), err)
			}
			lat[f.prefix] = append(lat[f.prefix], l)
			if round == 0 {
				m[f.prefix+"req_bytes"] = float64(up.n.Load()) / float64(calls)
				m[f.prefix+"res_bytes"] = float64(down.n.Load()) / float64(calls)
			}
		}
	}
	for prefix, ls := range lat {
		merged(m, prefix, ls)
	}
	return m, nil
}

// agentpmRTChild: the same round trips to a child process serving
// retrieve on its stdin and stdout, the topology of a process provider.
func agentpmRTChild(_ Runtime, p Profile) (Metrics, error) {
	cfg := loopConfig(1, true, p)
	cfg.MaxCalls /= rounds
	cfg.MaxTime /= rounds
	m := Metrics{}
	lat := map[string][]Latency{}
	for range rounds {
		for _, f := range framings {
			ch, err := StartChild(f.rt, p.Exe)
			if err != nil {
				return nil, err
			}
			l, err := retrieveTrips(ch.Conn, cfg)
			if cerr := ch.Close(5 * time.Second); err == nil {
				err = cerr
			}
			if err != nil {
				if s := ch.Stderr(); s != "" {
					err = fmt.Errorf("%w; peer stderr: %s", err, firstLine(s))
				}
				return nil, fmt.Errorf("%s: %w", f.rt.Name(), err)
			}
			lat[f.prefix] = append(lat[f.prefix], l)
		}
	}
	for prefix, ls := range lat {
		merged(m, prefix, ls)
	}
	return m, nil
}

// merged adds the figures of several measurements of one framing: calls
// per second over their summed time, the median of their percentiles, CPU
// per call over all calls.
func merged(m Metrics, prefix string, ls []Latency) {
	var n int
	var el, cpu time.Duration
	var p50, p99 []float64
	for _, l := range ls {
		n += l.N
		el += l.Elapsed
		cpu += l.CPU
		p50, p99 = append(p50, us(l.P50)), append(p99, us(l.P99))
	}
	m[prefix+"req_s"] = float64(n) / el.Seconds()
	m[prefix+"p50_us"] = medianOf(p50)
	m[prefix+"p99_us"] = medianOf(p99)
	m[prefix+"cpu_us_per_call"] = us(cpu) / float64(max(n, 1))
	m[prefix+"n"] = float64(n)
}

func medianOf(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// HarnessEventSample is the event of the bursts: an action event of a
// knowledge retrieval, with a correlation id (the frame id too).
func HarnessEventSample() *agentpmmachine.HarnessEvent {
	runID, phase, corr, runSeq := "run-1a2b3c4d5e6-0f1e2d3c4b5a", "phase-run-1a2b3c4d5e6-0f1e2d3c4b5a-1", "act-knowledge-1", int64(7)
	return &agentpmmachine.HarnessEvent{
		EventID: "evt-sess-1a2b3c4d5e6-a1b2c3d4e5f6-7", SessionID: "sess-1a2b3c4d5e6-a1b2c3d4e5f6", RunID: &runID,
		SessionSequence: 7, RunSequence: &runSeq, Timestamp: "2025-06-01T10:00:00.123456Z",
		EventType: agentpmmachine.EventTypeKnowledgeRetrieved, PhaseExecutionID: &phase, CorrelationID: &corr,
		Payload: agentpmmachine.EventPayload{Action: &agentpmmachine.EventPayloadAction{ActionKind: "knowledge", Identity: "@zack/docs", Status: "completed",
			Fields: jsontext.Value(`{"registry_id":"docs","mode":"vector_query","results":3,"citations":3,"duration_ms":12}`)}},
	}
}

// eventBurst sends n events from the Harness's side to the client's and
// waits until the client has handled (decoded) every one.
func eventBurst(envelope bool, n int, timeout time.Duration) (BurstResult, error) {
	cr, hw := io.Pipe() // harness -> client
	hr, cw := io.Pipe() // client -> harness
	var seen atomic.Int64
	all := make(chan struct{})
	handled := func(ev *agentpmmachine.HarnessEvent) {
		if ev.EventType != agentpmmachine.EventTypeKnowledgeRetrieved || ev.Payload.Action == nil {
			return
		}
		if seen.Add(1) == int64(n) {
			close(all)
		}
	}
	var harness, client *rpc.Conn
	var send func(context.Context, *agentpmmachine.HarnessEvent) error
	if envelope {
		client = agentpmmachine.NewConn(cr, cw, &agentpmmachine.ClientHandlers{HarnessEvent: func(_ context.Context, ev *agentpmmachine.HarnessEvent) error {
			handled(ev)
			return nil
		}}, nil)
		harness = rpc.NewConn(hr, hw, agentpmmachine.NewCodec("host-", ""), nil, agentpmmachine.ConnOptions(nil))
		send = agentpmmachine.NewClientPeer(harness).HarnessEvent
	} else {
		client = jsonrpc.NewConn(cr, cw, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			var ev agentpmmachine.HarnessEvent
			if err := rpc.DecodeParams(req.Params, &ev); err != nil {
				return nil, err
			}
			handled(&ev)
			return nil, nil
		}), nil)
		harness = jsonrpc.NewConn(hr, hw, nil, nil)
		send = func(ctx context.Context, ev *agentpmmachine.HarnessEvent) error {
			return harness.Notify(ctx, MethodHarnessEvent, ev)
		}
	}
	defer func() {
		for _, c := range []io.Closer{cr, hw, hr, cw} {
			c.Close()
		}
		harness.Close()
		client.Close()
	}()
	ev := HarnessEventSample()
	var sent atomic.Int64
	failed := make(chan error, 1)
	sentAll := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sentAll)
		ctx := context.Background()
		for range n {
			if err := send(ctx, ev); err != nil {
				failed <- fmt.Errorf("event #%d: %w", sent.Load()+1, err)
				return
			}
			sent.Add(1)
		}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-all:
		el := time.Since(start)
		// The last event can be handled before its Notify has returned:
		// count it as sent once the sender is done.
		select {
		case <-sentAll:
		case <-t.C:
		}
		return BurstResult{Sent: sent.Load(), Seen: seen.Load(), Elapsed: el, PerSec: float64(n) / el.Seconds()}, nil
	case err := <-failed:
		return BurstResult{Sent: sent.Load(), Seen: seen.Load()}, err
	case <-t.C:
		return BurstResult{Sent: sent.Load(), Seen: seen.Load()}, fmt.Errorf("%w: %d of %d events handled within %v", ErrHung, seen.Load(), n, timeout)
	}
}

// agentpmBurstInmem: a burst of BurstSize harness_event frames in memory,
// both framings in turn, with CPU time and context switches per event.
func agentpmBurstInmem(_ Runtime, p Profile) (Metrics, error) {
	n := p.n(BurstSize, BurstSize/5)
	m := Metrics{}
	rates := map[string][]float64{}
	usage := map[string]Usage{}
	for range rounds {
		for _, f := range framings {
			u0, ok0 := processUsage()
			r, err := eventBurst(f.rt.envelope, n, 20*time.Second)
			u1, ok1 := processUsage()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.rt.Name(), err)
			}
			rates[f.prefix] = append(rates[f.prefix], r.PerSec)
			if ok0 && ok1 {
				usage[f.prefix] = usage[f.prefix].Add(u1.Sub(u0))
			}
		}
	}
	for prefix, rs := range rates {
		m[prefix+"msg_s"] = medianOf(rs)
		if u, ok := usage[prefix]; ok {
			u.perMessage(m, prefix, int64(n*rounds))
		}
	}
	m["sent"] = float64(n)
	return m, nil
}

// EventFrameSizes returns the size on the wire of the burst's event, as an
// agentpm-harness-machine frame and as a JSON-RPC notification.
func EventFrameSizes() (envelope, jsonRPC int, err error) {
	size := func(env bool) (int, error) {
		var buf lockedBuffer
		in, _ := io.Pipe()
		var c *rpc.Conn
		var err error
		if env {
			c = rpc.NewConn(in, &buf, agentpmmachine.NewCodec("host-", ""), nil, agentpmmachine.ConnOptions(nil))
			err = agentpmmachine.NewClientPeer(c).HarnessEvent(context.Background(), HarnessEventSample())
		} else {
			c = jsonrpc.NewConn(in, &buf, nil, nil)
			err = c.Notify(context.Background(), MethodHarnessEvent, HarnessEventSample())
		}
		c.Close()
		return buf.len(), err
	}
	if envelope, err = size(true); err != nil {
		return 0, 0, err
	}
	jsonRPC, err = size(false)
	return envelope, jsonRPC, err
}

// lockedBuffer collects what a connection writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	return len(p), nil
}

func (b *lockedBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.b)
}
