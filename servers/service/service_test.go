package service_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.IgnoreSpawner()) }

// wire is a raw line exchange with a server over in-memory pipes.
type wire struct {
	t     *testing.T
	in    *io.PipeWriter
	lines *bufio.Scanner
	done  chan error
}

func serve(t *testing.T, srv *service.Server) *wire {
	t.Helper()
	toSrv, fromTest := io.Pipe()
	fromSrv, toTest := io.Pipe()
	w := &wire{t: t, in: fromTest, lines: bufio.NewScanner(fromSrv), done: make(chan error, 1)}
	go func() { w.done <- srv.Serve(context.Background(), toSrv, toTest); toTest.Close() }()
	t.Cleanup(func() {
		w.in.Close()
		select {
		case err := <-w.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return at the end of its input")
		}
		fromSrv.Close()
	})
	return w
}

// frame is one answer, decoded loosely.
type frame struct {
	Protocol string         `json:"protocol"`
	Version  int            `json:"version"`
	Kind     string         `json:"kind"`
	ID       jsontext.Value `json:"id"`
	Service  *string        `json:"service"`
	Result   jsontext.Value `json:"result"`
	Error    *struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable *bool  `json:"retryable"`
	} `json:"error"`
}

// ask writes line and reads the answer.
func (w *wire) ask(line string) frame {
	w.t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		w.t.Fatal(err)
	}
	if !w.lines.Scan() {
		w.t.Fatalf("no answer to %s", line)
	}
	var f frame
	if err := json.Unmarshal(w.lines.Bytes(), &f); err != nil {
		w.t.Fatalf("answer %s: %v", w.lines.Bytes(), err)
	}
	if f.Protocol != "agentpm-service" || f.Version != 1 || f.Service == nil {
		w.t.Errorf("answer without the envelope's members: %s", w.lines.Bytes())
	}
	return f
}

func request(kind, id, role, method, payload string) string {
	return fmt.Sprintf(`{"protocol":"agentpm-service","version":1,"kind":%q,"id":%s,"service":%q,"method":%q,"payload":%s}`, kind, id, role, method, payload)
}

func initialize(role, registry string, extra string) string {
	return request("initialize", fmt.Sprintf(`"%s-%s-1"`, role, registry), role, "initialize",
		fmt.Sprintf(`{"role":%q,"registry_id":%q,"protocol_version":1%s}`, role, registry, extra))
}

func knowledgeServer(t *testing.T) *service.Server {
	t.Helper()
	h := &agentpmservice.ServiceHandlers{
		InitializeKnowledge: func(_ context.Context, p *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
			return &agentpmservice.KnowledgeReadiness{Modes: []string{"vector_query"}, Features: []string{}}, nil
		},
		Retrieve: func(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			switch q := *p.Request.Query; q {
			case "retry":
				return nil, service.Errorf("index_busy", true, "the index is being rebuilt")
			case "plain":
				return nil, errors.New("disk on fire")
			}
			content := "about " + *p.Request.Query
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: p.Request.Package, Version: p.Request.Version, Mode: p.Request.Mode, Content: &content}, nil
		},
	}
	srv, err := service.New(agentpmservice.ServiceRoleKnowledge, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

const retrieve = `{"request":{"package":"p","version":"1","mode":"vector_query","query":%q}}`

// A protocol version written 1.0 is version 1 (JSON Schema's integers).
func TestHandshakeVersionWrittenAsFloat(t *testing.T) {
	w := serve(t, knowledgeServer(t))
	f := w.ask(request("initialize", `"i-1"`, "knowledge", "initialize", `{"role":"knowledge","registry_id":"kb","protocol_version":1.0,"packages":[]}`))
	if f.Kind != "initialized" || string(f.ID) != `"i-1"` {
		t.Fatalf("initialize with protocol_version 1.0: %+v %+v", f, f.Error)
	}
}

// Every gate of the handshake and of requests answers with a typed error
// frame (code, message, retryable), and the server goes on serving.
func TestHandshakeAndGates(t *testing.T) {
	w := serve(t, knowledgeServer(t))
	check := func(name string, f frame, id, code string) {
		t.Helper()
		if f.Kind != "error" || string(f.ID) != id || f.Error == nil || f.Error.Code != code || f.Error.Retryable == nil || *f.Error.Retryable {
			t.Errorf("%s: got %+v %+v, want %s error with id %s", name, f, f.Error, code, id)
		}
	}
	check("before initialize", w.ask(request("request", `"r-0"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "q"))), `"r-0"`, "protocol_error")
	check("another role's handshake", w.ask(initialize("embedding", "kb", "")), `"embedding-kb-1"`, "unsupported_capability")
	check("a payload naming another role", w.ask(request("initialize", `"i-2"`, "knowledge", "initialize", `{"role":"memory","registry_id":"kb","protocol_version":1,"packages":[]}`)),
		`"i-2"`, "unsupported_capability")
	check("another protocol version in the payload", w.ask(request("initialize", `"i-3"`, "knowledge", "initialize", `{"role":"knowledge","registry_id":"kb","protocol_version":2,"packages":[]}`)),
		`"i-3"`, "protocol_error")
	check("a protocol version that is not a number", w.ask(request("initialize", `"i-4"`, "knowledge", "initialize", `{"role":"knowledge","registry_id":"kb","protocol_version":"1","packages":[]}`)),
		`"i-4"`, "protocol_error")
	check("a protocol version of 1.5", w.ask(request("initialize", `"i-5"`, "knowledge", "initialize", `{"role":"knowledge","registry_id":"kb","protocol_version":1.5,"packages":[]}`)),
		`"i-5"`, "protocol_error")
	check("another envelope version", w.ask(strings.Replace(initialize("knowledge", "kb", `,"packages":[]`), `"version":1`, `"version":2`, 1)), `"knowledge-kb-1"`, "protocol_error")
	check("another protocol", w.ask(strings.Replace(initialize("knowledge", "kb", `,"packages":[]`), `"agentpm-service"`, `"agentpm-harness-machine"`, 1)), `"knowledge-kb-1"`, "protocol_error")
	check("a payload without packages", w.ask(initialize("knowledge", "kb", "")), `"knowledge-kb-1"`, "invalid_request")

	f := w.ask(initialize("knowledge", "kb", `,"packages":[]`))
	if f.Kind != "initialized" || string(f.ID) != `"knowledge-kb-1"` || *f.Service != "knowledge" {
		t.Fatalf("initialize: %+v", f)
	}
	var ready agentpmservice.KnowledgeReadiness
	if err := json.Unmarshal(f.Result, &ready); err != nil || *ready.Role != "knowledge" || *ready.ProtocolVersion != 1 || *ready.RegistryID != "kb" || !*ready.Ready {
		t.Fatalf("readiness %s: %v", f.Result, err)
	}

	f = w.ask(request("request", `"r-1"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "auth")))
	if f.Kind != "response" || string(f.ID) != `"r-1"` || !strings.Contains(string(f.Result), `"about auth"`) {
		t.Fatalf("retrieve: %+v %s", f, f.Result)
	}
	check("a method of another role", w.ask(request("request", `"r-2"`, "embedding", "embed", `{}`)), `"r-2"`, "unsupported_capability")
	check("a request without a role", w.ask(`{"protocol":"agentpm-service","version":1,"kind":"request","id":"r-3","method":"retrieve","payload":{}}`), `"r-3"`, "unsupported_capability")
	check("an unknown method", w.ask(request("request", `"r-4"`, "knowledge", "forget", `{}`)), `"r-4"`, "unsupported_capability")
	check("a numeric id", w.ask(request("request", `5`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "q"))), ``, "malformed_frame")
	check("a malformed line", w.ask(`{"protocol":"agentpm-service","id":"r-6",`), `"r-6"`, "malformed_frame")
	check("params that do not fit", w.ask(request("request", `"r-7"`, "knowledge", "retrieve", `{"request":{"package":1}}`)), `"r-7"`, "invalid_request")
	check("a plain handler error", w.ask(request("request", `"r-8"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "plain"))), `"r-8"`, "internal_error")

	f = w.ask(request("request", `"r-9"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "retry")))
	if f.Kind != "error" || f.Error.Code != "index_busy" || f.Error.Message != "the index is being rebuilt" || !*f.Error.Retryable {
		t.Errorf("a typed handler error: %+v", f.Error)
	}
	f = w.ask(request("request", `"r-10"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "still serving")))
	if f.Kind != "response" || !strings.Contains(string(f.Result), "still serving") {
		t.Errorf("after the bad frames: %+v", f)
	}
}

// The handshake advertises what the handlers serve, not what the provider
// claims, and answers ready false rather than claim what it cannot do.
func TestLiveCapabilities(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		claim := &agentpmservice.MemoryDescriptor{SpaceModels: []agentpmservice.MemorySpaceModel{"collection"},
			RetrievalModes: []agentpmservice.MemoryReadMode{"key"}, AtomicBatches: true, DurableTriggerState: true}
		h := &agentpmservice.ServiceHandlers{
			InitializeMemory: func(context.Context, *agentpmservice.MemoryInitialize) (*agentpmservice.MemoryReadiness, error) {
				return &agentpmservice.MemoryReadiness{Descriptor: claim}, nil
			},
			MemoryRead: func(context.Context, *agentpmservice.MemoryReadPayload) (*agentpmservice.MemoryReadResult, error) {
				return nil, nil
			},
			MemoryWrite: func(context.Context, *agentpmservice.MemoryWritePayload) (*agentpmservice.MemoryWriteResult, error) {
				return nil, nil
			},
		}
		srv, err := service.New(agentpmservice.ServiceRoleMemory, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		f := serve(t, srv).ask(initialize("memory", "m", `,"spaces":[]`))
		var r agentpmservice.MemoryReadiness
		if err := json.Unmarshal(f.Result, &r); err != nil {
			t.Fatal(err)
		}
		if *r.AtomicBatches || r.Descriptor.AtomicBatches || *r.DurableTriggerState || !*r.Ready || len(r.SpaceModels) != 1 || r.Packages == nil || r.Capabilities != nil {
			t.Errorf("readiness %s", f.Result)
		}
		if !claim.AtomicBatches {
			t.Error("the provider's descriptor was changed")
		}
	})
	t.Run("hook", func(t *testing.T) {
		h := &agentpmservice.ServiceHandlers{
			BeforeToolCall: func(context.Context, *agentpmservice.BeforeToolCallHook) (*agentpmservice.BeforeToolCallDecision, error) {
				return &agentpmservice.BeforeToolCallDecision{Continue: &agentpmservice.BeforeToolCallDecisionContinue{}}, nil
			},
		}
		srv, err := service.New(agentpmservice.ServiceRoleHook, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := serve(t, srv)
		f := w.ask(initialize("hook", "h", `,"hooks":["before_tool_call","before_model_request"]`))
		if !strings.Contains(string(f.Result), `"ready":false`) || !strings.Contains(string(f.Result), `"hooks":["before_tool_call"]`) {
			t.Errorf("a configured hook that is not served: %s", f.Result)
		}
		f = w.ask(initialize("hook", "h", `,"hooks":["before_tool_call"]`))
		if !strings.Contains(string(f.Result), `"ready":true`) {
			t.Errorf("every configured hook served: %s", f.Result)
		}
		// invoke is answered from the hook-id fields.
		f = w.ask(request("request", `"h-2"`, "hook", "invoke", `{"hook":"before_tool_call","input":{"phase_id":"p","tool":"t","arguments":{}}}`))
		if f.Kind != "response" || string(f.Result) != `{"decision":"continue"}` {
			t.Errorf("invoke: %+v %s", f.Error, f.Result)
		}
		f = w.ask(request("request", `"h-3"`, "hook", "invoke", `{"hook":"before_memory_read","input":{}}`))
		if f.Kind != "error" || f.Error.Code != "unsupported_capability" {
			t.Errorf("invoke of a hook not served: %+v", f)
		}
	})
	t.Run("embedding without spaces", func(t *testing.T) {
		h := &agentpmservice.ServiceHandlers{
			InitializeEmbedding: func(context.Context, *agentpmservice.EmbeddingInitialize) (*agentpmservice.EmbeddingReadiness, error) {
				return &agentpmservice.EmbeddingReadiness{}, nil
			},
			Embed: func(context.Context, *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
				return nil, nil
			},
		}
		srv, err := service.New(agentpmservice.ServiceRoleEmbedding, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f := serve(t, srv).ask(initialize("embedding", "e", "")); !strings.Contains(string(f.Result), `"ready":false`) {
			t.Errorf("readiness %s", f.Result)
		}
	})
	t.Run("approval", func(t *testing.T) {
		h := &agentpmservice.ServiceHandlers{
			RequestApproval: func(context.Context, *agentpmservice.RequestApprovalPayload) (*agentpmservice.ApprovalDecision, error) {
				return &agentpmservice.ApprovalDecision{}, nil
			},
		}
		srv, err := service.New(agentpmservice.ServiceRoleApproval, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		f := serve(t, srv).ask(initialize("approval", "controller", ""))
		if string(f.Result) != `{"registry_id":"controller","ready":true,"role":"approval","protocol_version":1,"request_approval":true}` {
			t.Errorf("readiness %s", f.Result)
		}
	})
}

func TestNewRefusesWhatCannotServe(t *testing.T) {
	retrieve := func(context.Context, *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
		return nil, nil
	}
	knowledgeInit := func(context.Context, *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
		return nil, nil
	}
	for _, tc := range []struct {
		name string
		role agentpmservice.ServiceRole
		h    agentpmservice.ServiceHandlers
		want error
	}{
		{"unknown role", "oracle", agentpmservice.ServiceHandlers{}, service.ErrUnknownRole},
		{"no method", agentpmservice.ServiceRoleKnowledge, agentpmservice.ServiceHandlers{InitializeKnowledge: knowledgeInit}, service.ErrIncomplete},
		{"no initialize", agentpmservice.ServiceRoleKnowledge, agentpmservice.ServiceHandlers{Retrieve: retrieve}, service.ErrIncomplete},
		{"no hook", agentpmservice.ServiceRoleHook, agentpmservice.ServiceHandlers{}, service.ErrIncomplete},
		{"another role", agentpmservice.ServiceRoleKnowledge, agentpmservice.ServiceHandlers{InitializeKnowledge: knowledgeInit, Retrieve: retrieve,
			Embed: func(context.Context, *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
				return nil, nil
			}}, service.ErrOtherRole},
	} {
		if _, err := service.New(tc.role, &tc.h, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	srv, err := service.New(agentpmservice.ServiceRoleKnowledge, &agentpmservice.ServiceHandlers{InitializeKnowledge: knowledgeInit, Retrieve: retrieve}, nil)
	if err != nil || strings.Join(srv.Methods(), ",") != "initialize,retrieve" || srv.Role() != "knowledge" {
		t.Errorf("%v %v", srv.Methods(), err)
	}
}

// A handshake that a peer sends through the generated peer and codec,
// as the Harness does: the server and the typed client agree.
func TestServeWithPeer(t *testing.T) {
	toSrv, fromPeer := io.Pipe()
	fromSrv, toPeer := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- knowledgeServer(t).Serve(ctx, toSrv, toPeer) }()
	conn := rpc.NewConn(fromSrv, fromPeer, agentpmservice.NewCodec("knowledge-kb-", ""), nil, agentpmservice.ConnOptions(nil))
	peer := agentpmservice.NewServicePeer(conn)
	ready, err := peer.InitializeKnowledge(ctx, &agentpmservice.KnowledgeInitialize{RegistryID: "kb", Packages: []agentpmservice.KnowledgeRuntimeSnapshot{}})
	if err != nil || !*ready.Ready {
		t.Fatal(ready, err)
	}
	retry := &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{Package: "p", Version: "1", Mode: "vector_query", Query: ptr("retry")}}
	_, err = peer.Retrieve(ctx, retry)
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Name != "index_busy" || e.Retryable == nil || !*e.Retryable {
		t.Errorf("typed error: %v", err)
	}
	// Serve returns ctx's error at once when ctx ends.
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return when its context ended")
	}
	conn.Close()
	if _, err := peer.Retrieve(context.Background(), retry); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("after close: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
