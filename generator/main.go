// Command bridgekit-gen generates bridgekit's typed Go bindings and reference
// docs from the protocol schemas and method catalogues under spec/.
//
//	bridgekit-gen generate [-root DIR]   regenerate gen/ and docs/reference/
//	bridgekit-gen scaffold [-root DIR] -catalogue NAME (-wire METHOD -from SIDE -to SIDE [-kind KIND] [-role R] | -op NAME) [-go NAME]
//	                                     add a new method (catalogue entry and schema stubs)
//	bridgekit-gen fmt [-root DIR]        rewrite the catalogues in their canonical layout
//	bridgekit-gen apidiff -old DIR [-new DIR]
//	                                     the Go API changes of gen/ between two checkouts
//
// The stages are explicit: load (catalogue, schema and override files), build
// the IR, emit Go and Markdown; they live in package codegen, which
// `bridgekit generate` (what `make generate` runs) calls as a library.
// docs/generator.md describes the mapping rules.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/bridgekit/bridgekit/generator/codegen"
)

func main() {
	if len(os.Args) < 2 {
		usage(2)
	}
	var err error
	switch os.Args[1] {
	case "generate":
		fs := flag.NewFlagSet("generate", flag.ExitOnError)
		root := fs.String("root", "..", "repository root (holds spec/, gen/ and docs/)")
		api := fs.Bool("api", true, "print the Go API changes of the packages whose Go files change")
		_ = fs.Parse(os.Args[2:])
		var rep *codegen.Report
		rep, err = codegen.Generate(context.Background(), codegen.Options{Root: *root, Changelog: *api})
		if err == nil {
			for _, l := range reportLines(rep) {
				fmt.Println("generated", l)
			}
			err = codegen.WriteAPIChanges(os.Stdout, rep.API)
		}
	case "apidiff":
		fs := flag.NewFlagSet("apidiff", flag.ExitOnError)
		oldRoot := fs.String("old", "", "the earlier checkout (a module root; git archive REV | tar -x -C DIR makes one)")
		newRoot := fs.String("new", "..", "the later checkout")
		_ = fs.Parse(os.Args[2:])
		if *oldRoot == "" {
			usage(2)
		}
		var changes []codegen.APIChanges
		changes, err = codegen.DiffAPI(context.Background(), *oldRoot, *newRoot)
		if err == nil {
			err = codegen.WriteAPIChanges(os.Stdout, changes)
		}
	case "scaffold":
		err = scaffoldMain(os.Args[2:])
	case "fmt":
		fs := flag.NewFlagSet("fmt", flag.ExitOnError)
		root := fs.String("root", "..", "repository root")
		_ = fs.Parse(os.Args[2:])
		err = formatCatalogues(*root)
	case "-h", "-help", "--help", "help":
		usage(0)
	default:
		usage(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridgekit-gen:", err)
		os.Exit(1)
	}
}

// usage prints the usage and exits with code (0 when asked for with -h).
func usage(code int) {
	fmt.Fprintln(os.Stderr, "usage: bridgekit-gen generate [-root DIR] [-api=false] | apidiff -old DIR [-new DIR] | fmt [-root DIR] | scaffold [-root DIR] -catalogue NAME (-wire METHOD -from SIDE -to SIDE [-kind request|notification] [-role ROLE] | -op NAME [-method WIRE]) [-go NAME] [-schema FILE]")
	os.Exit(code)
}

// Generate regenerates gen/ and docs/reference/ under root and returns one
// line per file: its path, "(unchanged)" after it when it was already up
// to date, "removed " before it for a stale file deleted.
func Generate(root string) ([]string, error) {
	rep, err := codegen.Generate(context.Background(), codegen.Options{Root: root})
	if err != nil {
		return nil, err
	}
	return reportLines(rep), nil
}

// reportLines is Generate's lines of a report.
func reportLines(rep *codegen.Report) []string {
	var lines []string
	lines = append(lines, rep.Written...)
	for _, u := range rep.Unchanged {
		lines = append(lines, u+" (unchanged)")
	}
	for _, r := range rep.Removed {
		lines = append(lines, "removed "+r)
	}
	return lines
}
