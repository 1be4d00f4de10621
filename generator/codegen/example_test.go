package codegen_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bridgekit/bridgekit/generator/codegen"
)

// Read a spec directory and find where a method's params and result are
// defined, and the arguments of the operations a method carries.
func ExampleSpec_Methods() {
	s, err := codegen.LoadFS(os.DirFS("../../spec"))
	if err != nil {
		fmt.Println(err)
		return
	}
	methods, err := s.Methods()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range methods {
		if m.Package == "acp" && m.Wire == "session/prompt" {
			fmt.Println(m.From, "->", m.To, m.Params, m.Result)
		}
		for _, op := range m.Operations {
			if op.Match["name"] == "process.shell_invocation" {
				fmt.Println(m.Wire, op.Go, op.Args)
			}
		}
	}
	// Output:
	// client -> agent acp/v1/schema.json#/$defs/PromptRequest acp/v1/schema.json#/$defs/PromptResponse
	// host/call ProcessShellInvocation host-shell-discovery.schema.json#/$defs/shell_invocation_request
}

// A spec that does not load is reported file by file, with JSON pointers.
func ExampleGenerate() {
	_, err := codegen.Generate(context.Background(), codegen.Options{Root: "testdata/no-such-root"})
	var problems codegen.Errors
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Println(p.File, p.Message)
		}
	}
	// Output: spec/catalogue no catalogues
}

// Find the operations a method carries, reading the catalogues alone.
func ExampleOperations() {
	methods, err := codegen.Operations(os.DirFS("../../spec"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range methods {
		if m.Wire == "host/call" {
			fmt.Println(m.Wire, len(m.Operations) > 0, m.Operations[0].Match["name"], m.Operations[0].Args)
		}
	}
	// Output: host/call true process.list_shells host-shell-discovery.schema.json#/$defs/no_args
}
