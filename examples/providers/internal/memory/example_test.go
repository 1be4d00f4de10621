package memory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/examples/providers/internal/memory"
)

func Example() {
	dir, _ := os.MkdirTemp("", "memory-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := memory.Open(filepath.Join(dir, "memory.db"), memory.Options{})
	if err != nil {
		panic(err)
	}
	scope := memory.Scope{"user": "ada"}
	for _, body := range []string{`{"body":"launch readiness note","topic":"launch"}`, `{"body":"ops handoff note","topic":"ops"}`} {
		_, err := store.Write(ctx, memory.WriteRequest{
			Package: "@zack/notes", PackageVersion: "0.1.0", Space: "notes", SpaceModel: memory.Collection,
			RecordType: "note", SchemaVersion: "1.0.0", Scope: scope, Operation: memory.Create,
			Content: jsontext.Value(body), Now: "2026-09-11T00:00:00Z",
		})
		if err != nil {
			panic(err)
		}
	}
	store.Close() // a restart: everything written is still there

	store, err = memory.Open(filepath.Join(dir, "memory.db"), memory.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	recs, err := store.Read(ctx, memory.ReadRequest{
		Package: "@zack/notes", PackageVersion: "0.1.0", Space: "notes", Scope: scope,
		Mode: memory.ModeFilter, Filter: map[string]jsontext.Value{"topic": jsontext.Value(`"ops"`)},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.RecordType, string(r.Content), r.ScopeJSON)
	}
	_, err = store.Read(ctx, memory.ReadRequest{Package: "@zack/notes", PackageVersion: "0.1.0", Space: "notes", Scope: scope, Mode: memory.ModeSemantic})
	fmt.Println(errors.Is(err, memory.ErrUnsupported), err)
	// Output:
	// note {"body":"ops handoff note","topic":"ops"} {"user":"ada"}
	// true unsupported_capability: semantic retrieval is not supported by this store
}
