package service_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

// An embedding provider: the handlers of its role, served by a Server.
// Here it is driven in process through the generated peer, as the Harness
// would drive it over the provider's stdin and stdout
// (srv.Serve(ctx, os.Stdin, os.Stdout)).
func Example() {
	h := &agentpmservice.ServiceHandlers{
		InitializeEmbedding: func(context.Context, *agentpmservice.EmbeddingInitialize) (*agentpmservice.EmbeddingReadiness, error) {
			return &agentpmservice.EmbeddingReadiness{EmbeddingSpaces: []agentpmservice.EmbeddingSpace{
				{Provider: "example", Model: "letters-v1", Dimensions: 2, Normalized: true}}}, nil
		},
		Embed: func(_ context.Context, p *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
			if strings.ContainsAny(p.Text, "aeiou") {
				return &agentpmservice.EmbedResult{Numbers: []float64{1, 0}}, nil
			}
			return &agentpmservice.EmbedResult{Numbers: []float64{0, 1}}, nil
		},
	}
	srv, err := service.New(agentpmservice.ServiceRoleEmbedding, h, nil)
	if err != nil {
		panic(err)
	}

	// The Harness's side of the pipes.
	toProvider, harnessOut := io.Pipe()
	harnessIn, fromProvider := io.Pipe()
	go srv.Serve(context.Background(), toProvider, fromProvider)
	conn := rpc.NewConn(harnessIn, harnessOut, agentpmservice.NewCodec("embedding-e-", ""), nil, agentpmservice.ConnOptions(nil))
	defer conn.Close()
	harness := agentpmservice.NewServicePeer(conn)

	ctx := context.Background()
	ready, _ := harness.InitializeEmbedding(ctx, &agentpmservice.EmbeddingInitialize{RegistryID: "e"})
	fmt.Println(*ready.Role, *ready.Ready, ready.EmbeddingSpaces[0].Model)
	payload := &agentpmservice.EmbedPayload{Provider: "example", Model: "letters-v1", Dimensions: 2, Normalized: true, Text: "hello"}
	res, _ := harness.Embed(ctx, payload)
	v, err := agentpmservice.CheckEmbedding(payload, res)
	fmt.Println(v, err)
	_, err = harness.Retrieve(ctx, &agentpmservice.RetrievePayload{Request: agentpmservice.KnowledgeRuntimeRequest{Package: "p", Version: "1", Mode: "vector_query"}})
	fmt.Println(err)
	// Output:
	// embedding true letters-v1
	// [1 0] <nil>
	// rpc error unsupported_capability: unsupported capability: retrieve is for the knowledge role; this service serves the embedding role only
}
