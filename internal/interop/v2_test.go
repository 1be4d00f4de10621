package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/clients/acpnegotiate"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
	"github.com/bridgekit/bridgekit/internal/acpversion"
	"github.com/bridgekit/bridgekit/internal/interop/peers"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/acprouter"
)

// nodePeer is a TypeScript peer as a child process whose stdio is a frame transport.
type nodePeer struct {
	t      frame.Transport
	stderr string // its stderr file
	exited chan struct{}
	err    error
}

// startNode starts `node script args...` in the peers' directory. Cleanup closes its stdin and waits
// for it (killing it after 10 s), and logs its stderr when the test failed.
func startNode(t *testing.T, script string, args ...string) *nodePeer {
	t.Helper()
	cmd := exec.Command(peers.Node(t), append([]string{script}, args...)...)
	cmd.Dir = peerDir
	p := &nodePeer{stderr: filepath.Join(t.TempDir(), "stderr"), exited: make(chan struct{})}
	stderr, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.t = ndjson.NewTransport(stdout, stdin, nil)
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.t.Close()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.exited
			t.Errorf("%s did not exit after its stdin closed", script)
		}
		if t.Failed() {
			log, _ := os.ReadFile(p.stderr)
			t.Logf("%s stderr:\n%s", script, log)
		}
	})
	return p
}

// wait waits for the peer to exit by itself and returns its exit error.
func (p *nodePeer) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(d):
		t.Fatalf("the peer did not exit within %v", d)
		return nil
	}
}

// turnLog records what a negotiating client gets from the agent.
type turnLog struct {
	mu    sync.Mutex
	texts []string
	idle  chan struct{}
}

func newTurnLog() *turnLog { return &turnLog{idle: make(chan struct{}, 4)} }

func (l *turnLog) text(s string) {
	l.mu.Lock()
	l.texts = append(l.texts, s)
	l.mu.Unlock()
}

func (l *turnLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.texts...)
}

func negotiator(l *turnLog) *acpnegotiate.Client {
	return &acpnegotiate.Client{
		Init: acpv2.InitializeRequest{
			Info:         acpv2.Implementation{Name: "bridgekit-go-client", Version: "0.0.0"},
			Capabilities: &acpv2.ClientCapabilities{},
			Meta:         wire.Some(jsontext.Value(`{"trace":"go"}`)),
		},
		V2: &acpv2.ClientHandlers{SessionUpdate: func(_ context.Context, n *acpv2.UpdateSessionNotification) error {
			u := n.Update
			if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil {
				l.text(c.Content.Text.Text)
			}
			if s := u.StateUpdate; s != nil && s.Idle != nil && s.Idle.EndTurn != nil {
				l.idle <- struct{}{}
			}
			return nil
		}},
		V1Init: &acp.InitializeRequest{ClientCapabilities: &acp.ClientCapabilities{}},
		V1: &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
				l.text(c.Content.Text.Text)
			}
			return nil
		}},
	}
}

// v2Turn runs session/new and a prompt on v2 and waits for the idle update that ends the turn.
func v2Turn(ctx context.Context, t *testing.T, conn *acpnegotiate.Conn, l *turnLog) {
	t.Helper()
	agent := conn.AgentV2()
	s, err := agent.SessionNew(ctx, &acpv2.NewSessionRequest{Cwd: acpv2.AbsolutePath(peerDir)})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	res, err := agent.SessionPrompt(ctx, &acpv2.PromptRequest{SessionID: s.SessionID, Prompt: []acpv2.ContentBlock{{Text: &acpv2.TextContent{Text: "hello"}}}})
	if err != nil || res.MessageID == "" {
		t.Fatalf("session/prompt: %+v, %v", res, err)
	}
	select {
	case <-l.idle:
	case <-ctx.Done():
		t.Fatalf("no idle state_update; text so far %q", l.all())
	}
}

// v1Turn runs session/new and a prompt on v1.
func v1Turn(ctx context.Context, t *testing.T, conn *acpnegotiate.Conn, prompt string) {
	t.Helper()
	agent := conn.AgentV1()
	s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: peerDir, MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{{Text: &acp.TextContent{Text: prompt}}}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("session/prompt: %+v, %v", res, err)
	}
}

// A Go client asking for v2 does a whole v2 turn with the TypeScript SDK's v2 agent behind its router
// (serving v1 and v2, or v2 alone).
func TestGoClientTypeScriptV2Agent(t *testing.T) {
	for _, route := range []string{"v1v2", "v2"} {
		t.Run(route, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			report := filepath.Join(t.TempDir(), "report.json")
			p := startNode(t, "v2-agent.mjs", "--route="+route, "--report="+report)
			l := newTurnLog()
			conn, err := negotiator(l).Connect(ctx, p.t)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if conn.Version != acpnegotiate.V2 || conn.InitV2.Info.Name != "ts-v2-agent" {
				t.Fatalf("v%d, %+v %+v", conn.Version, conn.InitV2, conn.InitV1)
			}
			v2Turn(ctx, t, conn, l)
			if got := l.all(); !reflect.DeepEqual(got, []string{"hello from the ts v2 agent"}) {
				t.Errorf("text %q", got)
			}
		})
	}
}

// A Go client asking for v2 falls back to v1 with v1-only TypeScript agents, and does a whole v1 turn:
// the plain v1 agent (agent.mjs, no router) and the SDK's router serving v1 alone. The router's rewrite
// of the Go client's v2 initialize, as the TypeScript v1 agent got it, agrees with bridgekit's.
func TestGoClientFallsBackToTypeScriptV1Agents(t *testing.T) {
	t.Run("plain v1 agent", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		p := startNode(t, "agent.mjs")
		l := newTurnLog()
		conn, err := negotiator(l).Connect(ctx, p.t)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if conn.Version != acpnegotiate.V1 || conn.InitV1.ProtocolVersion != 1 {
			t.Fatalf("v%d, %+v", conn.Version, conn.InitV1)
		}
		v1Turn(ctx, t, conn, "updates only")
		if got := l.all(); len(got) != 3 {
			t.Errorf("text %q, want three chunks", got)
		}
	})
	t.Run("router serving v1", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		report := filepath.Join(t.TempDir(), "report.json")
		p := startNode(t, "v2-agent.mjs", "--route=v1", "--report="+report)
		l := newTurnLog()
		c := negotiator(l)
		conn, err := c.Connect(ctx, p.t)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if conn.Version != acpnegotiate.V1 || conn.InitV1.AgentInfo.IsAbsent() {
			t.Fatalf("v%d, %+v", conn.Version, conn.InitV1)
		}
		v1Turn(ctx, t, conn, "hello")
		if got := l.all(); !reflect.DeepEqual(got, []string{"hello from the ts v1 agent"}) {
			t.Errorf("text %q", got)
		}
		// What the TypeScript v1 agent got is what bridgekit's router gives for the same params (the v1
		// agent's own parse may drop members v1 stable does not name: theirs must be a part of ours).
		var got struct {
			V1 []jsontext.Value `json:"v1"`
		}
		data, _ := os.ReadFile(report)
		if err := json.Unmarshal(data, &got); err != nil || len(got.V1) != 1 {
			t.Fatalf("report %s: %v", data, err)
		}
		init := c.Init
		init.ProtocolVersion = 2
		sent, err := json.Marshal(&init)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := acpversion.RewriteInitialize(sent, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		var theirsV, oursV any
		json.Unmarshal(got.V1[0], &theirsV)
		json.Unmarshal(ours, &oursV)
		if path := notWithin(theirsV, oursV, ""); path != "" {
			t.Errorf("the TypeScript router gave the v1 agent\n%s\nbridgekit's gives\n%s\nthey differ at %s", got.V1[0], ours, path)
		}
		if !strings.Contains(string(got.V1[0]), `"fs":{"readTextFile":false,"writeTextFile":false}`) {
			t.Errorf("the v1 agent got %s", got.V1[0])
		}
	})
}

// notWithin returns the path of the first value of a that b does not hold ("" when a is within b).
func notWithin(a, b any, path string) string {
	am, ok := a.(map[string]any)
	if !ok {
		if !reflect.DeepEqual(a, b) {
			return path
		}
		return ""
	}
	bm, ok := b.(map[string]any)
	if !ok {
		return path
	}
	for k, v := range am {
		if p := notWithin(v, bm[k], path+"/"+k); p != "" {
			return p
		}
	}
	return ""
}

// The TypeScript SDK's v2 client does a whole v2 turn with a Go agent behind servers/acprouter, which
// serves v1 and v2 on the child's stdio.
func TestTypeScriptV2ClientGoRouter(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	report := filepath.Join(t.TempDir(), "report.json")
	p := startNode(t, "v2-client.mjs", report)
	var prompted sync.WaitGroup
	v2 := &acpv2.AgentHandlers{
		Initialize: func(_ context.Context, r *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
			return &acpv2.InitializeResponse{ProtocolVersion: r.ProtocolVersion, Info: acpv2.Implementation{Name: "bridgekit-go-agent", Version: "0.0.0"}}, nil
		},
		SessionNew: func(context.Context, *acpv2.NewSessionRequest) (*acpv2.NewSessionResponse, error) {
			return &acpv2.NewSessionResponse{SessionID: "go-v2-session"}, nil
		},
		SessionPrompt: func(ctx context.Context, r *acpv2.PromptRequest) (*acpv2.PromptResponse, error) {
			// Acknowledged at once; the turn's updates follow the answer.
			client := acpv2.ClientPeerFrom(ctx)
			bg := context.WithoutCancel(ctx)
			prompted.Go(func() {
				for _, u := range []string{
					`{"sessionUpdate":"state_update","state":"running"}`,
					`{"sessionUpdate":"agent_message_chunk","messageId":"go-agent-msg","content":{"type":"text","text":"hello from the go v2 agent"}}`,
					`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`,
				} {
					var up acpv2.SessionUpdate
					if err := json.Unmarshal([]byte(u), &up); err != nil {
						t.Error(err)
						return
					}
					if err := client.SessionUpdate(bg, &acpv2.UpdateSessionNotification{SessionID: r.SessionID, Update: up}); err != nil {
						t.Error(err)
						return
					}
				}
			})
			return &acpv2.PromptResponse{MessageID: "go-user-msg"}, nil
		},
	}
	a := &acprouter.Agent{V1: (&goAgent{}).handlers(), V2: v2}
	conn, err := a.Serve(ctx, p.t)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := p.wait(t, 30*time.Second); err != nil {
		log, _ := os.ReadFile(p.stderr)
		t.Fatalf("v2-client.mjs: %v\n%s", err, log)
	}
	prompted.Wait()
	if conn.Version != acprouter.V2 {
		t.Fatalf("routed to v%d", conn.Version)
	}
	var r struct {
		Init struct {
			ProtocolVersion int `json:"protocolVersion"`
			Info            struct{ Name string }
		}
		MessageID  string
		StopReason string
		Updates    []map[string]any
		Error      *string
	}
	data, _ := os.ReadFile(report)
	if err := json.Unmarshal(data, &r, json.MatchCaseInsensitiveNames(true)); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	if r.Error != nil || r.Init.ProtocolVersion != 2 || r.Init.Info.Name != "bridgekit-go-agent" || r.MessageID != "go-user-msg" || r.StopReason != "end_turn" || len(r.Updates) != 3 {
		t.Fatalf("client report: %s", data)
	}
	if c, _ := r.Updates[1]["content"].(map[string]any); c["text"] != "hello from the go v2 agent" {
		t.Errorf("updates %v", r.Updates)
	}
}

// The TypeScript SDK's v1 client (client.mjs) gets v1 from a Go agent behind servers/acprouter serving v1
// and v2, and its cancelled turn runs as with a plain v1 agent.
func TestTypeScriptV1ClientGoRouter(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	report := filepath.Join(t.TempDir(), "report.json")
	p := startNode(t, "client.mjs", report)
	ga := &goAgent{}
	a := &acprouter.Agent{V1: ga.handlers(), V2: &acpv2.AgentHandlers{}}
	conn, err := a.Serve(ctx, p.t)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ga.conn.Store(conn.Conn)
	if conn.Version != acprouter.V1 || conn.Requested != 1 {
		t.Fatalf("routed to v%d (asked %d)", conn.Version, conn.Requested)
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		log, _ := os.ReadFile(p.stderr)
		t.Fatalf("client.mjs: %v\n%s", err, log)
	}
	data, _ := os.ReadFile(report)
	checkCancelReport(t, ga, data)
}

// preInitialize are messages sent before initialize, for the routers' table.
var preInitialize = []string{
	`nonsense`,
	`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
	`7`,
	`"text"`,
	`null`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	`{"jsonrpc":"2.0","id":4,"result":{}}`,
	`{"id":5}`,
	`{"error":{"code":1}}`,
	`{"jsonrpc":"2.0"}`,
	`{}`,
	`{"jsonrpc":"1.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/"}}`,
	`{"jsonrpc":"2.0","id":6,"method":7}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":65536}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":-1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1.5}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`,
	`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":2.5,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":2}}`,
	`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c"}}}`,
}

// The reply of each router, by message: bridgekit's (internal/acpversion, as servers/acprouter writes it)
// and the TypeScript SDK 2.4.0's (its router behind its NDJSON stream) are the same, code, message, id
// and data, for every router configuration; only the text of a schema parser's complaint
// ("invalid initialize params: ...") is each SDK's own. Each configuration's run ends with an initialize
// both route.
func TestRouterAgreesWithTypeScript(t *testing.T) {
	for _, c := range []struct {
		route string
		cfg   acpversion.Config
	}{{"v1v2", acpversion.Config{V1: true, V2: true}}, {"v2", acpversion.Config{V2: true}}, {"v1", acpversion.Config{V1: true}}} {
		t.Run(c.route, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			p := startNode(t, "v2-agent.mjs", "--route="+c.route)
			final := `{"jsonrpc":"2.0","id":"final","method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`
			var ours []string
			for _, m := range preInitialize {
				d := c.cfg.Decide([]byte(m))
				if d.Version != 0 {
					continue // routed: not a message before initialize for this router
				}
				if err := p.t.Write(ctx, []byte(m)); err != nil {
					t.Fatal(err)
				}
				if d.Reply != nil {
					ours = append(ours, normalReply(t, d.Reply))
				}
			}
			if err := p.t.Write(ctx, []byte(final)); err != nil {
				t.Fatal(err)
			}
			var theirs []string
			for {
				f, err := p.t.Read(ctx)
				if err != nil {
					t.Fatalf("after %q: %v", theirs, err)
				}
				if strings.Contains(string(f), `"id":"final"`) {
					break
				}
				theirs = append(theirs, normalReply(t, f))
			}
			if d := c.cfg.Decide([]byte(final)); d.Version == 0 {
				t.Fatalf("bridgekit does not route %s", final)
			}
			t.Logf("%d replies to %d messages", len(theirs), len(preInitialize))
			if len(theirs) < 15 {
				t.Errorf("only %d replies: %q", len(theirs), theirs)
			}
			if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
				t.Errorf("replies differ:\nbridgekit:\n%s\nTypeScript:\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
			}
		})
	}
}

// normalReply re-encodes an error reply with its members in one order and numbers as JavaScript prints
// them, dropping the text of a schema parser's complaint.
func normalReply(t *testing.T, f []byte) string {
	t.Helper()
	var r struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(f, &r); err != nil {
		t.Fatalf("reply %s: %v", f, err)
	}
	if s, ok := r.Error.Data.(string); ok && strings.HasPrefix(s, "invalid initialize params: ") {
		r.Error.Data = "invalid initialize params: ..."
	}
	out, _ := json.Marshal(r, json.Deterministic(true))
	return string(out)
}

// The TypeScript SDK 2.4.0's v2 client has no fallback: against servers/acprouter serving v1 alone it
// fails. This pins what the router answers it (the v1 agent's answer to the downgraded initialize,
// protocolVersion 1, under the client's id) and how the client takes it (its v2 schema refuses an
// answer with agentInfo but no info: a ZodError, before it sends anything else), so that a change on
// either side shows here.
func TestTypeScriptV2ClientGoV1OnlyRouter(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	report := filepath.Join(t.TempDir(), "report.json")
	p := startNode(t, "v2-client.mjs", report)
	var mu sync.Mutex
	var got []string // what the v1 agent was handed
	record := func(next rpc.Handler) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			mu.Lock()
			got = append(got, req.Method+" "+string(req.Params))
			mu.Unlock()
			return next.Handle(ctx, req)
		})
	}
	rec := &writeLog{Transport: p.t}
	a := &acprouter.Agent{V1: record((&goAgent{}).handlers())}
	conn, err := a.Serve(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if conn.Version != acprouter.V1 || conn.Requested != 2 {
		t.Fatalf("routed to v%d (asked %d)", conn.Version, conn.Requested)
	}
	if err := p.wait(t, 20*time.Second); err == nil {
		t.Fatal("v2-client.mjs succeeded against a v1-only agent")
	}
	data, _ := os.ReadFile(report)
	var r struct {
		Init      any
		SessionID *string
		Error     string
	}
	if err := json.Unmarshal(data, &r, json.MatchCaseInsensitiveNames(true)); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	// The SDK's v2 schema refuses the v1 answer, which has agentInfo where v2 requires info: a ZodError at
	// "info", before any check of protocolVersion and before session/new.
	if r.Init != nil || r.SessionID != nil || !strings.HasPrefix(r.Error, "ZodError") || !strings.Contains(r.Error, `"info"`) {
		t.Errorf("client report: %s", data)
	}
	mu.Lock()
	defer mu.Unlock()
	const wantInit = `initialize {"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"configOptions":{"boolean":{}}},"plan":{},"auth":{"terminal":false}},"clientInfo":{"name":"ts-v2-client","version":"2.4.0"}}`
	if len(got) != 1 || got[0] != wantInit {
		t.Errorf("the v1 agent got %q, want only %s", got, wantInit)
	}
	writes := rec.all()
	if len(writes) != 1 {
		t.Fatalf("the router wrote %q, want one answer", writes)
	}
	var answer struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      jsontext.Value `json:"id"`
		Result  map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(writes[0]), &answer); err != nil || answer.Result["protocolVersion"] != 1.0 || answer.Result["agentInfo"] == nil || answer.Result["info"] != nil {
		t.Errorf("the router answered %s (%v)", writes[0], err)
	}
}

// writeLog records the frames written to a transport.
type writeLog struct {
	frame.Transport
	mu     sync.Mutex
	frames []string
}

func (w *writeLog) Write(ctx context.Context, f []byte) error {
	w.mu.Lock()
	w.frames = append(w.frames, string(f))
	w.mu.Unlock()
	return w.Transport.Write(ctx, f)
}

func (w *writeLog) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.frames)
}

// After a v2 initialize, servers/acprouter and the TypeScript SDK 2.4.0's router-served v2 agent refuse
// the same way a request whose id is neither a string nor an integer: -32600 under a null id, with the
// same message, a repeated initialize included.
func TestV2RequestIDsAgreeWithTypeScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	initialize := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`
	bad := []string{
		`{"jsonrpc":"2.0","id":1.5,"method":"session/new","params":{"cwd":"/"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"session/new","params":{"cwd":"/"}}`,
		`{"jsonrpc":"2.0","id":-0.5,"method":"session/list","params":{}}`,
		`{"jsonrpc":"2.0","id":2.5,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`,
	}
	run := func(tr frame.Transport) []string {
		t.Helper()
		var out []string
		for _, m := range append([]string{initialize}, bad...) {
			if err := tr.Write(ctx, []byte(m)); err != nil {
				t.Fatal(err)
			}
			f, err := tr.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m == initialize {
				if !strings.Contains(string(f), `"result"`) {
					t.Fatalf("initialize: %s", f)
				}
				continue
			}
			out = append(out, normalReply(t, f))
		}
		return out
	}
	p := startNode(t, "v2-agent.mjs", "--route=v2")
	theirs := run(p.t)

	at, ct := frame.Pipe()
	defer ct.Close()
	served := make(chan *acprouter.Conn, 1)
	go func() {
		conn, _ := (&acprouter.Agent{V2: &acpv2.AgentHandlers{
			Initialize: func(context.Context, *acpv2.InitializeRequest) (*acpv2.InitializeResponse, error) {
				return &acpv2.InitializeResponse{ProtocolVersion: 2, Info: acpv2.Implementation{Name: "go", Version: "0"}}, nil
			},
		}}).Serve(ctx, at)
		served <- conn
	}()
	ours := run(ct)
	if conn := <-served; conn != nil {
		conn.Close()
	}
	want := `{"id":null,"error":{"code":-32600,"message":"Invalid request: ACP v2 request IDs must be strings or integers","data":null}}`
	for i := range bad {
		if theirs[i] != want || ours[i] != theirs[i] {
			t.Errorf("%s:\nbridgekit  %s\nTypeScript %s", bad[i], ours[i], theirs[i])
		}
	}
}
