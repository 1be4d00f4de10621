package service_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/middleware"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

// Options.Conn.Middleware wraps everything a provider serves, the
// handshake included; a panicking handler is an internal_error frame
// (-32603), logged with its stack, and the provider goes on serving.
func TestMiddleware(t *testing.T) {
	var log syncLog
	logger := slog.New(slog.NewTextHandler(&log, nil))
	h := &agentpmservice.ServiceHandlers{
		InitializeKnowledge: func(_ context.Context, p *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
			return &agentpmservice.KnowledgeReadiness{Modes: []string{"vector_query"}, Features: []string{}}, nil
		},
		Retrieve: func(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			if *p.Request.Query == "boom" {
				panic("index corrupted")
			}
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: p.Request.Package, Version: p.Request.Version, Mode: p.Request.Mode}, nil
		},
	}
	srv, err := service.New(agentpmservice.ServiceRoleKnowledge, h, &service.Options{Conn: rpc.Options{
		Middleware: []rpc.Middleware{middleware.Logging(logger, nil), middleware.Recover(logger)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w := serve(t, srv)
	if f := w.ask(initialize("knowledge", "kb", `,"packages":[]`)); f.Kind != "initialized" {
		t.Fatalf("handshake: %+v %+v", f, f.Error)
	}
	f := w.ask(request("request", `"r-1"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "boom")))
	if f.Error == nil || f.Error.Code != "internal_error" || !strings.Contains(f.Error.Message, "handler panicked") {
		t.Fatalf("a panicking handler answered %+v %+v", f, f.Error)
	}
	if f := w.ask(request("request", `"r-2"`, "knowledge", "retrieve", fmt.Sprintf(retrieve, "q"))); f.Kind != "response" || f.Error != nil {
		t.Fatalf("after a panic: %+v %+v", f, f.Error)
	}
	out := log.String()
	for _, want := range []string{"method=initialize qualifier=knowledge", "rpc: handler panicked", "index corrupted", "stack=", `id="\"r-2\""`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

// syncLog is a log sink the handlers' goroutines write while a test reads.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
