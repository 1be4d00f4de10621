package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/bridgekit/bridgekit/generator/codegen"
)

func init() {
	register(command{name: "generate", summary: "regenerate gen/ and docs/reference/ from spec/ (what make generate runs)", run: runGenerate})
}

// runGenerate is `bridgekit generate [-root DIR] [-v] [-api=false]`.
func runGenerate(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "generate", "[-root DIR] [-v] [-api=false]")
	root := fs.String("root", ".", "repository root: spec/ is read from it, gen/ and docs/reference/ written under it")
	verbose := fs.Bool("v", false, "list every file written, unchanged or removed")
	api := fs.Bool("api", true, "print the Go API changes of every package whose Go files change (golang.org/x/exp/apidiff; type-checks the packages before and after, with the go command)")
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "bridgekit generate: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if env.Terminal {
		fmt.Fprintf(env.Stderr, "generating from %s/spec ...\n", *root)
	}
	rep, err := codegen.Generate(ctx, codegen.Options{Root: *root, Changelog: *api})
	var specErrs codegen.Errors
	if errors.As(err, &specErrs) {
		// One line per problem, file#pointer: message, on stdout with the
		// report: what CI shows.
		for _, e := range specErrs {
			fmt.Fprintln(env.Stdout, e.Error())
		}
		if rep.Catalogues > 0 {
			fmt.Fprintf(env.Stdout, "read %d schema files and %d catalogues: ", rep.SchemaFiles, rep.Catalogues)
		}
		fmt.Fprintf(env.Stdout, "%d problems in spec/, nothing written\n", len(specErrs))
		return 1
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "bridgekit generate:", err)
		return 1
	}
	for _, w := range rep.Written {
		fmt.Fprintln(env.Stdout, "wrote", w)
	}
	if *verbose {
		for _, u := range rep.Unchanged {
			fmt.Fprintln(env.Stdout, "unchanged", u)
		}
	}
	for _, r := range rep.Removed {
		fmt.Fprintln(env.Stdout, "removed", r)
	}
	fmt.Fprintf(env.Stdout, "read %d schema files and %d catalogues; generated %d packages: %d files written, %d unchanged, %d removed\n",
		rep.SchemaFiles, rep.Catalogues, rep.Packages, len(rep.Written), len(rep.Unchanged), len(rep.Removed))
	if len(rep.API) > 0 {
		// The changelog of the regeneration: read it before a release
		// (docs/generator.md, "The API changes a regeneration reports").
		fmt.Fprintln(env.Stdout, "Go API changes (golang.org/x/exp/apidiff):")
		if err := codegen.WriteAPIChanges(env.Stdout, rep.API); err != nil {
			fmt.Fprintln(env.Stderr, "bridgekit generate:", err)
			return 1
		}
		changed := false
		for _, c := range rep.API {
			changed = changed || !c.Empty()
		}
		if !changed {
			fmt.Fprintln(env.Stdout, "none: the Go files changed, their exported API did not")
		}
	}
	return 0
}
