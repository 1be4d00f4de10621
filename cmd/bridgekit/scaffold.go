package main

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/generator/codegen"
	"github.com/bridgekit/bridgekit/generator/scaffold"
)

func init() {
	register(command{name: "scaffold", summary: "add a method or host/call operation, regenerate, write a handler stub", run: runScaffold,
		subcommands: []string{"method", "operation"}})
}

const scaffoldSynopsis = `method|operation [flags]

  bridgekit scaffold method    --catalogue C --wire NAME --from SIDE --to SIDE [--kind request|notification] [--role R]
  bridgekit scaffold operation --catalogue C --name NS.OP [--method WIRE]   (--catalogue defaults to harn)

Adds the catalogue entry (status experimental) and open-object stub schemas in
a schema file of ours (never a vendored one), regenerates gen/ and
docs/reference/, then prints a handler func for the new field on stdout, or
writes it to --stub FILE. A name that exists already fails and changes nothing.

Run 'bridgekit help scaffold method' or 'bridgekit help scaffold operation'
for their flags.`

// scaffoldSubSynopsis are the usage texts of scaffold's subcommands.
var scaffoldSubSynopsis = map[string]string{
	"method": `--catalogue C --wire NAME --from SIDE --to SIDE [--kind request|notification] [--role R] [flags]

Adds a method to catalogue C (status experimental) with open-object stub
schemas for its params and result, regenerates, and writes a handler func
for the field the receiving side's handler struct gets.

Flags:`,
	"operation": `--name NS.OP [--catalogue C] [--method WIRE] [flags]

Adds a host/call operation (or an operation of another method that
carries them: --method, --match) to catalogue C (default harn), with
stub schemas for its arguments and result, regenerates, and writes a
handler func for its field.

Flags:`,
}

func runScaffold(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 || (args[0] != "method" && args[0] != "operation") {
		fs := newFlags(env, "scaffold", scaffoldSynopsis)
		if status, stop := parseFlags(fs, args); stop {
			return status
		}
		fs.Usage()
		return 2
	}
	what := args[0]
	fs := newFlags(env, "scaffold "+what, scaffoldSubSynopsis[what])
	var req scaffold.Request
	root := fs.String("root", ".", usageOf("root", "it holds spec/, gen/ and generator/"))
	fs.StringVar(&req.Catalogue, "catalogue", "", "catalogue name under spec/catalogue (harn, acp, agentpm-service, ...)")
	fs.StringVar(&req.Go, "go", "", "Go name of the handler field and peer method (default: from the wire or operation name)")
	fs.StringVar(&req.Schema, "schema", "", "schema file under spec/schemas for the stubs (default: the catalogue's first if ours, else <package>-extensions.schema.json)")
	fs.StringVar(&req.Doc, "doc", "", "doc of the new entry")
	stub := fs.String("stub", "", "write the handler stub to this Go `FILE` (must not exist) instead of stdout")
	stubPkg := fs.String("stub-package", "", "package of the stub (default: that of the Go files beside --stub, else the directory's name, else main)")
	noGen := fs.Bool("no-generate", false, "change spec/ only, and write no stub: run make generate yourself")
	var kind string
	var match string
	if what == "method" {
		fs.StringVar(&req.Wire, "wire", "", "wire method name (host/example_ping, _example/ping, lookup)")
		fs.StringVar(&req.From, "from", "", "sending side (harn: vm or host; acp: client or agent; agentpm-service: harness)")
		fs.StringVar(&req.To, "to", "", "receiving side: its handler struct gets the field")
		fs.StringVar(&kind, "kind", "request", "request or notification")
		fs.StringVar(&req.Role, "role", "", usageOf("role", "agentpm-service: the method's qualifier (model, knowledge, ...)"))
	} else {
		fs.StringVar(&req.Operation, "name", "", "operation name, host/call's name member: <capability>.<operation>")
		fs.StringVar(&match, "match", "", "for a method selecting by several members: key=value,key=value (agentpm host_service: role=...,method=...)")
		fs.StringVar(&req.Method, "method", "", "wire name of the method carrying the operation (default: the catalogue's only one)")
	}
	if status, stop := parseFlags(fs, args[1:]); stop {
		return status
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "bridgekit scaffold: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if what == "method" {
		req.Kind = scaffold.Kind(kind)
		if req.Catalogue == "" || req.Wire == "" || req.From == "" || req.To == "" {
			fmt.Fprintln(env.Stderr, "bridgekit scaffold method: needs --catalogue, --wire, --from and --to")
			return 2
		}
	} else {
		if req.Catalogue == "" {
			req.Catalogue = "harn"
		}
		if match != "" {
			req.Match = map[string]string{}
			for _, kv := range strings.Split(match, ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" || v == "" {
					fmt.Fprintf(env.Stderr, "bridgekit scaffold operation: --match %q: want key=value,...\n", match)
					return 2
				}
				req.Match[k] = v
			}
		}
		if !req.IsOperation() {
			fmt.Fprintln(env.Stderr, "bridgekit scaffold operation: needs --name (or --match)")
			return 2
		}
	}
	if *stub != "" {
		if _, err := os.Stat(*stub); err == nil {
			fmt.Fprintf(env.Stderr, "bridgekit scaffold: %s exists: the stub is never written over a file\n", *stub)
			return 1
		}
	}
	progress := func(format string, a ...any) {
		if env.Terminal {
			fmt.Fprintf(env.Stderr, format+"\n", a...)
		}
	}

	ch, err := scaffold.Plan(*root, req)
	if err != nil {
		fmt.Fprintln(env.Stderr, "bridgekit scaffold:", err)
		return 1
	}
	if err := ch.Apply(); err != nil {
		fmt.Fprintln(env.Stderr, "bridgekit scaffold:", err)
		return 1
	}
	changed := ch.Files()
	if *noGen {
		for _, f := range changed {
			fmt.Fprintln(env.Stdout, f)
		}
		return 0
	}
	progress("scaffold: %s; regenerating", strings.Join(changed, ", "))
	start := time.Now()
	generated, err := regenerate(ctx, *root)
	if err != nil {
		if rerr := ch.Revert(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("putting spec/ back: %w", rerr))
		}
		fmt.Fprintf(env.Stderr, "bridgekit scaffold: regenerating failed, spec/ is as it was:\n%v\n", err)
		return 1
	}
	progress("scaffold: regenerated in %s", time.Since(start).Round(time.Millisecond))
	pkg := *stubPkg
	if pkg == "" {
		pkg = "main"
		if *stub != "" {
			pkg = packageOf(filepath.Dir(*stub))
		}
	}
	src, err := scaffold.HandlerStub(*root, ch, pkg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit scaffold: %s is scaffolded and generated, but its handler stub failed: %v\n", ch.Go, err)
		return 1
	}
	if *stub == "" {
		_, _ = env.Stdout.Write(src)
		return 0
	}
	f, err := os.OpenFile(*stub, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, err = f.Write(src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit scaffold: %s is scaffolded and generated, but its handler stub failed: %v\n", ch.Go, err)
		return 1
	}
	for _, p := range append(append(changed, generated...), *stub) {
		fmt.Fprintln(env.Stdout, p)
	}
	return 0
}

// regenerate runs the generator as `bridgekit generate` (and so `make
// generate`) does, and returns the files it changed (relative to root).
func regenerate(ctx context.Context, root string) ([]string, error) {
	rep, err := codegen.Generate(ctx, codegen.Options{Root: root})
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	changed := make([]string, 0, len(rep.Written)+len(rep.Removed))
	for _, p := range append(slices.Clone(rep.Written), rep.Removed...) {
		changed = append(changed, filepath.Join(root, filepath.FromSlash(p)))
	}
	return changed, nil
}

// packageOf names the package of the Go files in dir: theirs, else the
// directory's name when it is an identifier, else main.
func packageOf(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly); err == nil {
			return af.Name.Name
		}
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		if name := filepath.Base(abs); token.IsIdentifier(name) && !token.IsKeyword(name) {
			return name
		}
	}
	return "main"
}
