package service_test

// The test binary doubles as the providers the tests start: with
// BRIDGEKIT_FAKE_PROVIDER set it serves one of the behaviours below on its
// stdin and stdout and exits.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

const fakeEnv = "BRIDGEKIT_FAKE_PROVIDER"

func init() {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fake(mode))
	}
}

func fake(mode string) int {
	switch mode {
	case "knowledge":
		return fakeKnowledge()
	case "embedding":
		srv, err := service.New(agentpmservice.ServiceRoleEmbedding, &agentpmservice.ServiceHandlers{
			InitializeEmbedding: func(context.Context, *agentpmservice.EmbeddingInitialize) (*agentpmservice.EmbeddingReadiness, error) {
				return &agentpmservice.EmbeddingReadiness{EmbeddingSpaces: []agentpmservice.EmbeddingSpace{{Provider: "p", Model: "m", Dimensions: 1}}}, nil
			},
			Embed: func(context.Context, *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
				return &agentpmservice.EmbedResult{Numbers: []float64{1}}, nil
			},
		}, nil)
		if err != nil {
			panic(err)
		}
		_ = srv.Serve(context.Background(), os.Stdin, os.Stdout)
		return 0
	case "exit":
		fmt.Fprintln(os.Stderr, "cannot open the index: permission denied")
		return 1
	case "deaf":
		// Reads nothing, answers nothing, until it is killed.
		time.Sleep(time.Hour)
		return 0
	}
	// The rest answer the handshake by hand, then read until the end of input.
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 0
	}
	var req struct {
		ID      string `json:"id"`
		Service string `json:"service"`
	}
	_ = json.Unmarshal(in.Bytes(), &req)
	reply := func(protocol string, version int, service, result string) {
		fmt.Printf(`{"protocol":%q,"version":%d,"kind":"initialized","id":%q,"service":%q,"result":%s}`+"\n", protocol, version, req.ID, service, result)
	}
	ok := `{"ready":true,"modes":["vector_query"]}`
	switch mode {
	case "readiness-role":
		reply("agentpm-service", 1, "knowledge", `{"role":"embedding","ready":true,"modes":["vector_query"]}`)
	case "readiness-version":
		reply("agentpm-service", 1, "knowledge", `{"protocol_version":2,"modes":["vector_query"]}`)
	case "readiness-version-fraction":
		reply("agentpm-service", 1, "knowledge", `{"protocol_version":1.5,"modes":["vector_query"]}`)
	case "readiness-version-float":
		reply("agentpm-service", 1, "knowledge", `{"protocol_version":1.0,"ready":true,"modes":["vector_query"]}`)
	case "readiness-registry":
		reply("agentpm-service", 1, "knowledge", `{"registry_id":"other","modes":["vector_query"]}`)
	case "readiness-not-ready":
		reply("agentpm-service", 1, "knowledge", `{"ready":false,"modes":["vector_query"]}`)
	case "readiness-no-modes":
		reply("agentpm-service", 1, "knowledge", `{"ready":true,"modes":["telepathy"]}`)
	case "readiness-malformed":
		reply("agentpm-service", 1, "knowledge", `{"ready":true,"modes":"vector_query"}`)
	case "hook-partial":
		reply("agentpm-service", 1, req.Service, `{"ready":true,"hooks":["before_tool_call"]}`)
	case "hook-unknown":
		reply("agentpm-service", 1, req.Service, `{"ready":true,"hooks":["before_tool_call","after_lunch"]}`)
	case "memory-partial":
		reply("agentpm-service", 1, req.Service, `{"space_models":["collection"],"retrieval_modes":["key"],"retention_actions":[],"constraints":[],"capacity":false,"durable_trigger_state":false,"atomic_batches":false,"packages":[{"package":"@a/notes","version":"1.0.0","ready":true}]}`)
	case "frame-service":
		reply("agentpm-service", 1, "embedding", ok)
	case "frame-no-service":
		fmt.Printf(`{"protocol":"agentpm-service","version":1,"kind":"initialized","id":%q,"result":%s}`+"\n", req.ID, ok)
	case "frame-version":
		reply("agentpm-service", 2, "knowledge", ok)
	case "frame-protocol":
		reply("agentpm-harness-machine", 1, "knowledge", ok)
	case "silent":
	case "slow-exit":
		reply("agentpm-service", 1, req.Service, ok)
	case "no-read":
		// Answers the handshake, then reads no more, until it is killed.
		reply("agentpm-service", 1, req.Service, ok)
		time.Sleep(time.Hour)
	}
	for in.Scan() {
	}
	if mode == "slow-exit" {
		// Work to finish at the end of input (an index to save), then a
		// mark that it was finished.
		time.Sleep(500 * time.Millisecond)
		_ = os.WriteFile(os.Getenv("BRIDGEKIT_FAKE_MARK"), []byte("saved"), 0o600)
	}
	return 0
}

// fakeKnowledge is a knowledge provider on servers/service whose retrieve
// misbehaves on request: the query names what to do.
func fakeKnowledge() int {
	h := &agentpmservice.ServiceHandlers{
		InitializeKnowledge: func(_ context.Context, p *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
			r := &agentpmservice.KnowledgeReadiness{Modes: []string{"vector_query"}, Packages: []agentpmservice.KnowledgePackageAttestation{}}
			for _, snap := range p.Packages {
				name := snap.Name
				r.Packages = append(r.Packages, agentpmservice.KnowledgePackageAttestation{Package: &name, Version: snap.Version, Ready: !strings.HasPrefix(name, "missing")})
			}
			return r, nil
		},
		Retrieve: func(ctx context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
			q := *p.Request.Query
			content := "about " + q
			switch {
			case strings.HasPrefix(q, "slow:"):
				ms, _ := strconv.Atoi(strings.TrimPrefix(q, "slow:"))
				time.Sleep(time.Duration(ms) * time.Millisecond)
			case q == "die":
				fmt.Fprintln(os.Stderr, "fatal: the index is corrupt")
				os.Exit(3)
			case q == "env":
				content = strings.Join(os.Environ(), "\n")
			case q == "echo-refuse":
				return nil, &rpc.Error{Name: "request_failed", Message: "bad key " + os.Getenv("BRIDGEKIT_TEST_PROVIDER_KEY") + " / " + os.Getenv("BRIDGEKIT_TEST_OTHER_VALUE")}
			case q == "echo-die":
				fmt.Fprintln(os.Stderr, "fatal: key", os.Getenv("BRIDGEKIT_TEST_PROVIDER_KEY"), "and", os.Getenv("BRIDGEKIT_TEST_OTHER_VALUE"))
				os.Exit(3)
			case q == "refuse":
				return nil, &rpc.Error{Name: "request_failed", Message: "the index refused the query"}
			}
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: p.Request.Package, Version: p.Request.Version, Mode: p.Request.Mode, Content: &content}, nil
		},
	}
	srv, err := service.New(agentpmservice.ServiceRoleKnowledge, h, nil)
	if err != nil {
		panic(err)
	}
	// Misbehaviours that need the request id write their frames by hand,
	// ahead of the real answer (which then comes late).
	inner := srv.Handler()
	wrapped := rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
		var p struct {
			Request struct {
				Query string `json:"query"`
			} `json:"request"`
		}
		_ = json.Unmarshal(req.Params, &p)
		id := req.ID.String()
		switch p.Request.Query {
		case "id":
			content := id
			return &agentpmservice.KnowledgeRuntimeResult{Ok: true, Package: "p", Version: "1", Mode: "vector_query", Content: &content}, nil
		case "garbage":
			fmt.Println("panic: this is not a frame")
		case "numeric":
			fmt.Println(`{"protocol":"agentpm-service","version":1,"kind":"response","id":7,"service":"knowledge","result":{}}`)
		case "wrong-protocol":
			fmt.Printf(`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":%s,"service":"knowledge","result":{}}`+"\n", id)
		case "wrong-version":
			fmt.Printf(`{"protocol":"agentpm-service","version":2,"kind":"response","id":%s,"service":"knowledge","result":{}}`+"\n", id)
		case "event-with-id":
			fmt.Printf(`{"protocol":"agentpm-service","version":1,"kind":"event","id":%s,"service":"knowledge","method":"progress","payload":{}}`+"\n", id)
		case "wrong-service":
			fmt.Printf(`{"protocol":"agentpm-service","version":1,"kind":"response","id":%s,"service":"memory","result":{}}`+"\n", id)
		case "malformed-with-id":
			fmt.Printf(`{"protocol":"agentpm-service","version":1,"kind":"response","id":%s,"service":"knowledge","result":`+"\n", id)
		}
		return inner.Handle(ctx, req)
	})
	conn := rpc.NewConn(os.Stdin, os.Stdout, agentpmservice.NewCodec("", "knowledge"), wrapped, agentpmservice.ConnOptions(nil))
	<-conn.Done()
	conn.Close()
	return 0
}
