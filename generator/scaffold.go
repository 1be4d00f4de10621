package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/scaffold"
)

// scaffoldMain adds a method (or, with -op, an operation carried inside a
// method such as host/call) to a catalogue through package scaffold, which
// bridgekit scaffold uses too. Run generate afterwards.
func scaffoldMain(args []string) error {
	fs := flag.NewFlagSet("scaffold", flag.ContinueOnError)
	root := fs.String("root", "..", "repository root")
	var req scaffold.Request
	fs.StringVar(&req.Catalogue, "catalogue", "", "catalogue name under spec/catalogue (e.g. harn)")
	fs.StringVar(&req.Wire, "wire", "", "wire method name (e.g. host/example)")
	fs.StringVar(&req.Operation, "op", "", "operation name instead of a method (host/call's name, e.g. project.deploy_status)")
	fs.StringVar(&req.Method, "method", "", "with -op: the method carrying the operation (default: the catalogue's only one)")
	fs.StringVar(&req.Go, "go", "", "Go name (default: derived from the wire or operation name)")
	fs.StringVar(&req.From, "from", "", "sending side")
	fs.StringVar(&req.To, "to", "", "receiving side")
	fs.StringVar(&req.Role, "role", "", "qualifier of the method (agentpm-service's role)")
	kind := fs.String("kind", "request", "request or notification")
	fs.StringVar(&req.Schema, "schema", "", "schema file for the new $defs (default: the catalogue's first if ours, else <package>-extensions.schema.json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !req.IsOperation() {
		req.Kind = scaffold.Kind(*kind)
	}
	ch, err := scaffold.Scaffold(*root, req)
	if err != nil {
		return err
	}
	for _, f := range ch.Files() {
		fmt.Println("updated", f)
	}
	fmt.Println("next: describe the stub schemas, then run `make generate` (bridgekit scaffold does both steps and writes a handler stub)")
	return nil
}

// formatCatalogues rewrites every catalogue in the canonical layout.
func formatCatalogues(root string) error {
	paths, err := filepath.Glob(filepath.Join(root, "spec", "catalogue", "*.json"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := scaffold.FormatFile(p); err != nil {
			return err
		}
	}
	return nil
}

// FormatCatalogue renders a catalogue in the canonical layout
// (scaffold.FormatCatalogue).
func FormatCatalogue(c *catalogue.Catalogue) ([]byte, error) { return scaffold.FormatCatalogue(c) }
