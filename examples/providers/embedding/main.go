// Command embedding is an AgentPM embedding provider: a configured
// `type: "process"` embedding implementation that speaks agentpm-service v1
// on stdin and stdout and answers embed with deterministic, L2-normalised
// feature-hashing vectors (package internal/embedding: lexical, not neural).
//
//	embedding [-dimensions 256] [-provider bridgekit] [-model hashed-ngrams-v1] [-v]
//
// The handshake advertises one embedding space (provider, model,
// dimensions, normalized, cosine). An embed request for another space is
// answered with an embedding_space_mismatch error frame; an empty provider or
// model in the request matches any. Diagnostics go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"time"

	"github.com/bridgekit/bridgekit/examples/providers/internal/cli"
	"github.com/bridgekit/bridgekit/examples/providers/internal/embedding"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

func main() {
	dims := flag.Int("dimensions", embedding.DefaultDimensions, "vector length")
	provider := flag.String("provider", embedding.DefaultProvider, "provider name advertised in the embedding space")
	model := flag.String("model", embedding.DefaultModel, "model name advertised in the embedding space")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Parse()
	log := cli.Logger(*verbose)
	enc, err := embedding.New(embedding.Config{Dimensions: *dims, Provider: *provider, Model: *model})
	if err != nil {
		os.Exit(cli.Fatal("embedding", err))
	}
	srv, err := service.New(agentpmservice.ServiceRoleEmbedding, handlers(enc), &service.Options{Conn: rpc.Options{Logger: log}})
	if err != nil {
		os.Exit(cli.Fatal("embedding", err))
	}
	os.Exit(cli.Serve("embedding", srv, log, 5*time.Second, nil))
}

// handlers serves the embedding role with enc.
func handlers(enc *embedding.Encoder) *agentpmservice.ServiceHandlers {
	sp := enc.Space()
	id, metric := sp.ID, sp.Metric
	space := agentpmservice.EmbeddingSpace{Provider: sp.Provider, Model: sp.Model, Dimensions: int64(sp.Dimensions),
		Normalized: sp.Normalized, ID: &id, Metric: &metric}
	return &agentpmservice.ServiceHandlers{
		InitializeEmbedding: func(context.Context, *agentpmservice.EmbeddingInitialize) (*agentpmservice.EmbeddingReadiness, error) {
			return &agentpmservice.EmbeddingReadiness{EmbeddingSpaces: []agentpmservice.EmbeddingSpace{space}}, nil
		},
		Embed: func(ctx context.Context, p *agentpmservice.EmbedPayload) (*agentpmservice.EmbedResult, error) {
			if err := enc.Check(p.Provider, p.Model, int(p.Dimensions), p.Normalized); err != nil {
				if errors.Is(err, embedding.ErrSpaceMismatch) {
					return nil, service.Errorf(agentpmservice.ErrEmbeddingSpaceMismatch.Name, false, "%v", err)
				}
				return nil, service.Errorf(agentpmservice.ErrEmbeddingProviderFailed.Name, false, "%v", err)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			v := enc.Embed(p.Text)
			return &agentpmservice.EmbedResult{Object: &agentpmservice.EmbedResultObject{Vector: &agentpmservice.EmbedVector{Vector: v}}}, nil
		},
	}
}
