package envelope_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// knowledge is a tiny agentpm-service knowledge provider written against
// the engine alone: initialize (qualified by the role) and retrieve.
func knowledge(ctx context.Context, req *rpc.Request) (any, error) {
	switch {
	case req.Method == "initialize" && req.Qualifier == "knowledge":
		var p struct {
			Role            string `json:"role"`
			ProtocolVersion int64  `json:"protocol_version"`
		}
		if err := rpc.DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		if p.Role != "knowledge" {
			return nil, &rpc.Error{Name: "wrong_role", Message: "this provider serves knowledge, not " + p.Role}
		}
		return map[string]any{"role": "knowledge", "protocol_version": 1, "ready": true,
			"modes": []string{"context_document"}, "features": []string{}}, nil
	case req.Method == "retrieve" && req.Qualifier == "knowledge":
		var p struct {
			Request struct {
				Package string `json:"package"`
				Query   string `json:"query"`
			} `json:"request"`
		}
		if err := rpc.DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "package": p.Request.Package, "content": "about " + p.Request.Query}, nil
	}
	return nil, rpc.MethodNotFound(req.Method)
}

// pipes connects a provider connection and a harness connection over two
// OS pipes.
func pipes(t *testing.T) (harnessIn *os.File, harnessOut *os.File, provider *rpc.Conn) {
	t.Helper()
	pr, hw, err := os.Pipe() // harness -> provider
	if err != nil {
		t.Fatal(err)
	}
	hr, pw, err := os.Pipe() // provider -> harness
	if err != nil {
		t.Fatal(err)
	}
	provider = rpc.NewConn(pr, pw, envelope.NewCodec(envelope.Service, "", "knowledge"), rpc.HandlerFunc(knowledge), nil)
	t.Cleanup(func() { provider.Close() })
	return hr, hw, provider
}

func TestServiceOverPipes(t *testing.T) {
	hr, hw, _ := pipes(t)
	harness := rpc.NewConn(hr, hw, envelope.NewCodec(envelope.Service, "knowledge-kb-", ""), nil, nil)
	defer harness.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var ready struct {
		Role  string `json:"role"`
		Ready bool   `json:"ready"`
	}
	init := rpc.Outbound{Method: "initialize", Qualifier: "knowledge", Params: map[string]any{"role": "knowledge", "registry_id": "kb", "protocol_version": 1}}
	if err := harness.Send(ctx, init, &ready); err != nil || !ready.Ready || ready.Role != "knowledge" {
		t.Fatalf("initialize: %+v, %v", ready, err)
	}
	var res struct {
		OK      bool   `json:"ok"`
		Content string `json:"content"`
	}
	retrieve := rpc.Outbound{Method: "retrieve", Qualifier: "knowledge", Params: map[string]any{"request": map[string]any{"package": "@zack/docs", "version": "1.0.0", "mode": "context_document", "query": "auth"}}}
	if err := harness.Send(ctx, retrieve, &res); err != nil || !res.OK || res.Content != "about auth" {
		t.Fatalf("retrieve: %+v, %v", res, err)
	}
	// A method of another role, and a wrong role, get typed errors.
	err := harness.Send(ctx, rpc.Outbound{Method: "embed", Qualifier: "embedding", Params: map[string]any{}}, nil)
	if !errors.Is(err, rpc.ErrMethodNotFound) {
		t.Fatalf("embed: %v", err)
	}
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Name != "unsupported_capability" {
		t.Fatalf("embed: %#v", err)
	}
	err = harness.Send(ctx, rpc.Outbound{Method: "initialize", Qualifier: "knowledge", Params: map[string]any{"role": "memory"}}, nil)
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Name != "wrong_role" {
		t.Fatalf("wrong role: %v", err)
	}
}

// rawLines drives the provider with lines written by hand and returns each
// line it answers.
func TestServiceGatesOverPipes(t *testing.T) {
	hr, hw, _ := pipes(t)
	defer hw.Close()
	lines := bufio.NewScanner(hr)
	ask := func(line string) map[string]jsontext.Value {
		t.Helper()
		if _, err := hw.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", line, lines.Err())
		}
		var m map[string]jsontext.Value
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", lines.Bytes(), err)
		}
		return m
	}
	for _, tc := range []struct {
		line, id, code string
	}{
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"a","service":"knowledge","method":"retrieve","payload":{}}`, `"a"`, `"protocol_error"`},
		{`{"protocol":"agentpm-service","version":2,"kind":"request","id":"b","service":"knowledge","method":"retrieve","payload":{}}`, `"b"`, `"protocol_error"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"request","id":3,"service":"knowledge","method":"retrieve","payload":{}}`, "", `"malformed_frame"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"request","id":"d","service":"knowledge","method":"forget","payload":{}}`, `"d"`, `"unsupported_capability"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"request","id":"e","service":"knowledge","method":"retrieve","payload":{"request":7}}`, `"e"`, `"invalid_request"`},
		{`not json at all`, "", `"malformed_frame"`},
	} {
		m := ask(tc.line)
		var e struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable *bool  `json:"retryable"`
		}
		if err := json.Unmarshal(m["error"], &e); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if string(m["kind"]) != `"error"` || string(m["id"]) != tc.id || `"`+e.Code+`"` != tc.code || e.Retryable == nil || string(m["service"]) != `"knowledge"` {
			t.Errorf("%s\nanswered %v (error %+v)", tc.line, m, e)
		}
	}
	// The connection is still fine.
	m := ask(`{"protocol":"agentpm-service","version":1,"kind":"request","id":"ok","service":"knowledge","method":"retrieve","payload":{"request":{"package":"p","query":"q"}}}`)
	if string(m["kind"]) != `"response"` || !strings.Contains(string(m["result"]), `"about q"`) {
		t.Fatalf("after the bad frames: %v", m)
	}
}

// rawPeer connects a Conn's ends (hr, hw) to a peer written by hand, which
// reads what the Conn writes from pr and writes to it on pw.
func rawPeer(t *testing.T) (hr, hw, pr, pw *os.File) {
	t.Helper()
	pr, hw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	hr, pw, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pr.Close()
		pw.Close()
	})
	return hr, hw, pr, pw
}

// A reply that fails a gate fails the call it answers with a typed error.
func TestReplyFailingAGateFailsTheCall(t *testing.T) {
	hr, hw, pr, pw := rawPeer(t)
	harness := rpc.NewConn(hr, hw, envelope.NewCodec(envelope.Service, "kb-", ""), nil, nil)
	defer harness.Close()
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		if strings.Contains(line, `"id":"kb-1"`) {
			pw.WriteString(`{"protocol":"agentpm-service","version":9,"kind":"response","id":"kb-1","service":"knowledge","result":{}}` + "\n")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := harness.Send(ctx, rpc.Outbound{Method: "retrieve", Qualifier: "knowledge"}, nil)
	if !errors.Is(err, envelope.ErrVersion) {
		t.Fatalf("got %v, want ErrVersion", err)
	}
}

// A frame over the limit is judged by its start: a request is refused
// under its own id, an event is not answered, and a reply fails the call
// it answers at once.
func TestOversizedFrames(t *testing.T) {
	hr, hw, pr, pw := rawPeer(t)
	client := rpc.NewConn(hr, hw, envelope.NewCodec(envelope.Machine, "c-", ""), nil, &rpc.Options{MaxFrame: 200})
	defer client.Close()
	peer := bufio.NewReader(pr)
	long := strings.Repeat("x", 300)

	// An event over the limit is not answered: the next frame written is
	// the refusal of the request after it.
	pw.WriteString(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"corr-1","method":"harness_event","payload":{"text":"` + long + `"}}` + "\n")
	pw.WriteString(`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","payload":{"text":"` + long + `"}}` + "\n")
	// A request of the harness's, over the limit.
	pw.WriteString(`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"host-1","method":"host_service","payload":{"text":"` + long + `"}}` + "\n")
	line, err := peer.ReadString('\n')
	if err != nil || !strings.Contains(line, `"kind":"error","id":"host-1"`) || !strings.Contains(line, "frame exceeds the 200-byte limit") {
		t.Fatalf("the refusal: %q, %v", line, err)
	}

	// A reply of the harness's, over the limit.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.Call(ctx, "start_run", map[string]string{"input": "x"}, nil) }()
	if line, err = peer.ReadString('\n'); err != nil || !strings.Contains(line, `"id":"c-1"`) {
		t.Fatalf("the request: %q, %v", line, err)
	}
	pw.WriteString(`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"c-1","payload":{"output":"` + long + `"}}` + "\n")
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waits for its answer")
	}
	var fe *rpc.FrameError
	if !errors.As(err, &fe) || fe.Kind != rpc.FrameTooLarge {
		t.Fatalf("Call = %v, want a FrameTooLarge error", err)
	}
}
