package agentpmservice_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// providerEnv turns the test binary into a knowledge provider speaking
// agentpm-service on its stdin and stdout, for the tests over real pipes.
const providerEnv = "BRIDGEKIT_TEST_KNOWLEDGE_PROVIDER"

func init() {
	if os.Getenv(providerEnv) != "" {
		os.Exit(serveKnowledge())
	}
}

// serveKnowledge is a knowledge provider on the generated handlers: it
// answers initialize for the knowledge role and retrieve, and serves
// nothing else.
func serveKnowledge() int {
	ready, role := true, "knowledge"
	h := &agentpmservice.ServiceHandlers{
		InitializeKnowledge: func(_ context.Context, p *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
			version := int64(1)
			return &agentpmservice.KnowledgeReadiness{RegistryID: &p.RegistryID, Ready: &ready, Role: &role, ProtocolVersion: &version,
				Modes: []string{"context_document"}, Features: []string{}}, nil
		},
		Retrieve: func(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			r := p.Request
			content := "about " + *r.Query
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: r.Package, Version: r.Version, Mode: r.Mode, Query: r.Query, Content: &content}, nil
		},
	}
	conn := rpc.NewConn(os.Stdin, os.Stdout, agentpmservice.NewCodec("", "knowledge"), h, agentpmservice.ConnOptions(nil))
	<-conn.Done()
	conn.Close()
	return 0
}

// provider starts the provider as a child process and returns its pipes.
func provider(t *testing.T) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), providerEnv+"=1")
	cmd.Stderr = os.Stderr
	if stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("provider: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("provider did not exit at end of input")
		}
	})
	return stdin, stdout
}

// The knowledge role served by the engine in one process and called
// through it from another, over OS pipes, with the generated types.
func TestKnowledgeProviderOverPipes(t *testing.T) {
	stdin, stdout := provider(t)
	conn := rpc.NewConn(stdout, stdin, agentpmservice.NewCodec("knowledge-kb-", ""), nil, agentpmservice.ConnOptions(nil))
	defer conn.Close()
	svc := agentpmservice.NewServicePeer(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ready, err := svc.InitializeKnowledge(ctx, &agentpmservice.KnowledgeInitialize{RegistryID: "kb", Packages: []agentpmservice.KnowledgeRuntimeSnapshot{}})
	if err != nil || ready.Ready == nil || !*ready.Ready || *ready.RegistryID != "kb" || ready.Modes[0] != "context_document" {
		t.Fatalf("initialize: %+v, %v", ready, err)
	}
	query := "auth"
	res, err := svc.Retrieve(ctx, &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{
		Package: "@zack/python-docs", Version: "1.0.0", Mode: agentpmservice.KnowledgeRequestModeContextDocument, Query: &query}})
	if err != nil || !res.Ok || *res.Content != "about auth" || res.Package != "@zack/python-docs" {
		t.Fatalf("retrieve: %+v, %v", res, err)
	}
	// The other role's methods are not served: a typed unsupported-capability error.
	_, err = svc.Embed(ctx, &agentpmservice.EmbedPayload{Provider: "p", Model: "m", Dimensions: 2, Text: "x"})
	e, ok := errors.AsType[*rpc.Error](err)
	if !errors.Is(err, rpc.ErrMethodNotFound) || !ok || e.Name != "unsupported_capability" {
		t.Fatalf("embed: %v", err)
	}
	if _, err := svc.InitializeEmbedding(ctx, &agentpmservice.EmbeddingInitialize{RegistryID: "e"}); !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("initialize for the embedding role: %v", err)
	}
}

// Frames that fail the protocol's gates, written by hand, each get a typed
// error frame; the provider goes on serving.
func TestKnowledgeProviderGatesOverPipes(t *testing.T) {
	stdin, stdout := provider(t)
	lines := bufio.NewScanner(stdout)
	codec := envelope.NewCodec(envelope.Service, "", "")
	ask := func(line string) *rpc.Message {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s", line)
		}
		m := new(rpc.Message)
		if err := codec.Decode(lines.Bytes(), m); err != nil {
			t.Fatalf("answer %s: %v", lines.Bytes(), err)
		}
		if !strings.Contains(lines.Text(), `"service":"knowledge"`) {
			t.Errorf("answer without the role: %s", lines.Text())
		}
		return m
	}
	frame := func(protocol string, version, id, method string) string {
		return fmt.Sprintf(`{"protocol":%q,"version":%s,"kind":"request","id":%s,"service":"knowledge","method":%q,"payload":{"request":{"package":"p","version":"1","mode":"context_document","query":"q"}}}`, protocol, version, id, method)
	}
	for _, tc := range []struct {
		name, line, id string
		want           error
		code           string
	}{
		{"wrong protocol", frame("agentpm-harness-machine", "1", `"a"`, "retrieve"), `"a"`, rpc.ErrInvalidRequest, "protocol_error"},
		{"wrong version", frame("agentpm-service", "2", `"b"`, "retrieve"), `"b"`, rpc.ErrInvalidRequest, "protocol_error"},
		{"numeric id", frame("agentpm-service", "1", "3", "retrieve"), "", rpc.ErrParse, "malformed_frame"},
		{"unknown method", frame("agentpm-service", "1", `"d"`, "forget"), `"d"`, rpc.ErrMethodNotFound, "unsupported_capability"},
		{"malformed line", `{"protocol":`, "", rpc.ErrParse, "malformed_frame"},
	} {
		m := ask(tc.line)
		if m.Kind != rpc.KindError || string(m.ID) != tc.id || !errors.Is(m.Err, tc.want) || m.Err.Name != tc.code || m.Err.Retryable == nil {
			t.Errorf("%s: answered %v id=%s %+v", tc.name, m.Kind, m.ID, m.Err)
		}
	}
	m := ask(frame("agentpm-service", "1", `"ok"`, "retrieve"))
	if m.Kind != rpc.KindResponse || string(m.ID) != `"ok"` || !strings.Contains(string(m.Body), `"about q"`) {
		t.Fatalf("after the bad frames: %v %s", m.Kind, m.Body)
	}
}
