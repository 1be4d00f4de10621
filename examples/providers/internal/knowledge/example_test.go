package knowledge_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/bridgekit/bridgekit/examples/providers/internal/knowledge"
)

func Example() {
	ctx := context.Background()
	ix, err := knowledge.Open(ctx, "testdata/docs", knowledge.Options{BaseURI: "agentpm://knowledge/@zack/docs/1.2.3/"})
	if err != nil {
		panic(err)
	}
	hits, err := ix.Search(ctx, knowledge.Query{Text: "How does Harness route Knowledge?", TopK: 2})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Printf("%d %.3f %s > %s\n", h.Rank, h.Score, h.Chunk.Path, strings.Join(h.Chunk.Headings, " > "))
		fmt.Println("  ", h.Citation.URI)
	}
	// Output:
	// 1 0.488 guide.md > Harness > Knowledge
	//    agentpm://knowledge/@zack/docs/1.2.3/guide.md#L12-L14
	// 2 0.228 guide.md > Harness > Knowledge > Citations
	//    agentpm://knowledge/@zack/docs/1.2.3/guide.md#L18-L19
}

// A context_document request reads a whole document.
func ExampleIndex_Document() {
	ix, err := knowledge.Open(context.Background(), "testdata/docs", knowledge.Options{})
	if err != nil {
		panic(err)
	}
	doc, err := ix.Document("runtime/providers.md")
	if err != nil {
		panic(err)
	}
	fmt.Println(doc.Title, len(doc.Chunks), doc.Chunks[1].Headings)
	_, err = ix.Document("missing.md")
	fmt.Println(err)
	// Output:
	// Process providers 2 [Process providers Restarts]
	// knowledge: no such document: "missing.md"
}
