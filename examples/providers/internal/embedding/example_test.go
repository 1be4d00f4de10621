package embedding_test

import (
	"context"
	"fmt"

	"github.com/bridgekit/bridgekit/examples/providers/internal/embedding"
)

func Example() {
	enc, err := embedding.New(embedding.Config{Dimensions: 128})
	if err != nil {
		panic(err)
	}
	s := enc.Space()
	fmt.Println(s.Provider, s.Model, s.Dimensions, s.Metric)

	query := enc.Embed("How does Harness route Knowledge?")
	docs := []string{
		"Harness routes Knowledge through KnowledgeRuntime.",
		"Approvals pause a Run before a phase.",
	}
	vecs, err := enc.EmbedBatch(context.Background(), docs)
	if err != nil {
		panic(err)
	}
	for i, v := range vecs {
		sim, _ := embedding.Cosine(query, v)
		fmt.Printf("%.2f %s\n", sim, docs[i])
	}
	// Output:
	// bridgekit hashed-ngrams-v1 128 cosine
	// 0.74 Harness routes Knowledge through KnowledgeRuntime.
	// 0.02 Approvals pause a Run before a phase.
}

// A request for another space is refused with a typed error, which a
// provider reports as embedding_space_mismatch.
func ExampleEncoder_Check() {
	enc, _ := embedding.New(embedding.Config{Dimensions: 3})
	fmt.Println(enc.Check("bridgekit", "hashed-ngrams-v1", 3, true))
	fmt.Println(enc.Check("bridgekit", "hashed-ngrams-v1", 768, true))
	// Output:
	// <nil>
	// embedding: space mismatch: 768 dimensions requested, this encoder has 3
}
