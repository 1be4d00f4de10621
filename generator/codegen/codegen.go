// Package codegen is bridgekit's generator as a library: it loads the spec
// (spec/catalogue/*.json, the schema files they list, spec/overrides.json),
// builds the IR, emits gen/<package>/*_gen.go and docs/reference/, and
// reports what it read and wrote. `bridgekit generate` (what `make
// generate` runs) and the generator's own command bridgekit-gen call
// [Generate]; `bridgekit validate` reads the catalogues' methods with
// [LoadFS] and [Spec.Methods] from the spec embedded in the root module.
//
// A problem in the spec is an [*Error] (several: [Errors]) naming the file
// and, where the generator knows it, the JSON pointer of what is wrong.
package codegen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/emit"
	"github.com/bridgekit/bridgekit/generator/internal/ir"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

// output is one generated file, path relative to the repository root.
type output struct {
	path string
	data []byte
}

// Spec is everything loaded from a repository's spec/ directory.
type Spec struct {
	// Root is the repository root Load read, "" for a spec read with LoadFS.
	Root       string
	Catalogues []*catalogue.Catalogue
	// Files holds the loaded schema files by their name under spec/schemas.
	Files     map[string]*schema.File
	Overrides *schema.Overrides

	fsys  fs.FS             // the spec directory
	where map[string]*where // each catalogue file's, for locating errors
}

// Load reads the overrides, every catalogue (spec/catalogue/*.json) and the
// schema files they list from the checkout at root.
func Load(root string) (*Spec, error) {
	s, err := LoadFS(os.DirFS(filepath.Join(root, "spec")))
	if s != nil {
		s.Root = root
	}
	return s, err
}

// LoadFS is Load from fsys, a spec directory (holding catalogue/,
// schemas/ and overrides.json), such as the root module's embedded
// spec.FS.
func LoadFS(fsys fs.FS) (*Spec, error) {
	paths, err := fs.Glob(fsys, "catalogue/*.json")
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	if len(paths) == 0 {
		return nil, Errors{{File: "spec/catalogue", Message: "no catalogues"}}
	}
	ov := &schema.Overrides{}
	if data, err := fs.ReadFile(fsys, "overrides.json"); err == nil {
		if ov, err = schema.ParseOverrides(data, "spec/overrides.json"); err != nil {
			return nil, specErrors("spec/overrides.json", nil, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s := &Spec{Files: map[string]*schema.File{}, Overrides: ov, fsys: fsys, where: map[string]*where{}}
	var errs Errors
	for _, p := range paths {
		file := "spec/" + p
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		s.where[file] = whereIn(data)
		c, err := catalogue.LoadFS(fsys, p, data)
		if err != nil {
			errs = append(errs, specErrors(file, s.where[file], err)...)
			continue
		}
		c.File = file
		s.Catalogues = append(s.Catalogues, c)
		for _, name := range c.Schemas {
			if _, ok := s.Files[name]; ok {
				continue
			}
			data, err := fs.ReadFile(fsys, path.Join("schemas", name))
			if err != nil {
				errs = append(errs, &Error{File: file, Pointer: "/schemas/" + fmt.Sprint(slices.Index(c.Schemas, name)), Message: err.Error()})
				continue
			}
			root, err := schema.Parse(data, name)
			if err != nil {
				errs = append(errs, specErrors("spec/schemas/"+name, nil, err)...)
				continue
			}
			s.Files[name] = &schema.File{Name: name, Root: root, Data: data}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// readSchemaFile reads a file under spec/schemas (a derivation's meta file).
func (s *Spec) readSchemaFile(name string) ([]byte, error) {
	return fs.ReadFile(s.fsys, path.Join("schemas", name))
}

// DefaultModule is the module path generated packages live under
// (<module>/gen/<package>) when the root has no go.mod.
const DefaultModule = "github.com/bridgekit/bridgekit"

// module reads the module path of root's go.mod, or DefaultModule.
func (s *Spec) module() string {
	if s.Root == "" {
		return DefaultModule
	}
	data, err := os.ReadFile(filepath.Join(s.Root, "go.mod"))
	if err != nil {
		return DefaultModule
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return DefaultModule
}

// imports resolves a catalogue's imports to the catalogues they name and,
// after them, the ones those import in turn (whose types theirs refer to),
// each once with the import path of its package; it rejects import cycles.
func (s *Spec) imports(c *catalogue.Catalogue) ([]ir.Import, error) {
	byPkg := map[string]*catalogue.Catalogue{}
	for _, o := range s.Catalogues {
		byPkg[o.Package] = o
	}
	var visit func(pkg string, path []string) error
	visit = func(pkg string, path []string) error {
		if slices.Contains(path, pkg) {
			return fmt.Errorf("import cycle: %s", strings.Join(append(path, pkg), " -> "))
		}
		if o, ok := byPkg[pkg]; ok {
			for _, next := range o.Imports {
				if err := visit(next, append(slices.Clone(path), pkg)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(c.Package, nil); err != nil {
		return nil, err
	}
	var out []ir.Import
	queue := slices.Clone(c.Imports)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if slices.ContainsFunc(out, func(im ir.Import) bool { return im.Catalogue.Package == name }) {
			continue
		}
		o, ok := byPkg[name]
		if !ok {
			return nil, fmt.Errorf("imports %q, which no catalogue generates", name)
		}
		out = append(out, ir.Import{Catalogue: o, Path: s.module() + "/gen/" + name})
		queue = append(queue, o.Imports...)
	}
	return out, nil
}

// Build turns every catalogue into an IR package: methods are expanded
// (derived from schema annotations where the catalogue says so) and built
// with the overrides, whose unused entries then fail the build. Its error
// is Errors.
func Build(s *Spec) ([]*ir.Package, error) {
	var pkgs []*ir.Package
	var errs Errors
	for _, c := range s.Catalogues {
		methods, err := c.Expand(s.Files, s.readSchemaFile)
		if err != nil {
			errs = append(errs, specErrors(c.File, s.where[c.File], err)...)
			continue
		}
		imports, err := s.imports(c)
		if err != nil {
			errs = append(errs, &Error{File: c.File, Pointer: "/imports", Message: err.Error()})
			continue
		}
		p, err := ir.BuildImporting(c, methods, s.Files, s.Overrides, imports)
		if err != nil {
			errs = append(errs, specErrors(c.File, s.where[c.File], err)...)
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(errs) == 0 {
		for _, u := range s.Overrides.Unused() {
			errs = append(errs, specErrors("spec/overrides.json", nil, errors.New(u))...)
		}
	}
	if len(errs) > 0 {
		errs.sort()
		return nil, errs
	}
	return pkgs, nil
}

// MethodSchema is one method of a catalogue, listed or derived, with the
// schema locations of its params and result ("<file>#<pointer>" under
// spec/schemas; "" when the catalogue gives none).
type MethodSchema struct {
	// Catalogue is the catalogue's protocol (harn-bridge, acp, ...),
	// Package its Go package under gen/.
	Catalogue, Package string
	Wire, Go           string
	// Qualifier holds the further envelope members naming the method
	// (agentpm-service: {"service": "knowledge"}).
	Qualifier      map[string]string
	From, To, Kind string
	Params, Result string
	// Operations are the operations the method carries (host/call's,
	// host_service's), in catalogue order; nil when it carries none.
	Operations []OperationSchema
}

// OperationSchema is one operation carried inside a method, with the
// schema locations of its arguments and result ("" when the catalogue
// gives none).
type OperationSchema struct {
	// Match holds the selector members' values (host/call: {"name":
	// "process.list_shells"}).
	Match map[string]string
	// Go is the operation's Go name (its handler field's).
	Go           string
	Args, Result string
}

// Operations lists the methods of the catalogues in fsys (a spec
// directory) that carry operations, with their operations' schema
// locations, in catalogue order. It reads the catalogues alone, not the
// schema files that LoadFS parses: a program that needs only where each
// operation's arguments are defined (bridgekit conform) pays for no more.
func Operations(fsys fs.FS) ([]MethodSchema, error) {
	paths, err := fs.Glob(fsys, "catalogue/*.json")
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []MethodSchema
	var errs Errors
	for _, p := range paths {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		c, err := catalogue.LoadFS(fsys, p, data)
		if err != nil {
			errs = append(errs, specErrors("spec/"+p, whereIn(data), err)...)
			continue
		}
		for _, m := range c.Methods {
			if m.Operations == nil {
				continue
			}
			out = append(out, methodSchema(c, m))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func methodSchema(c *catalogue.Catalogue, m catalogue.Method) MethodSchema {
	ms := MethodSchema{Catalogue: c.Protocol, Package: c.Package, Wire: m.Wire, Go: m.Go,
		Qualifier: m.Qualifier, From: m.From, To: m.To, Kind: string(m.Kind)}
	if m.Params != nil {
		ms.Params = *m.Params
	}
	if m.Result != nil {
		ms.Result = *m.Result
	}
	if m.Operations != nil {
		for _, op := range m.Operations.Items {
			o := OperationSchema{Match: op.Match, Go: op.Go}
			if op.Args != nil {
				o.Args = *op.Args
			}
			if op.Result != nil {
				o.Result = *op.Result
			}
			ms.Operations = append(ms.Operations, o)
		}
	}
	return ms
}

// Methods expands every catalogue's methods (deriving those a catalogue
// derives from its schema's annotations), in catalogue order.
func (s *Spec) Methods() ([]MethodSchema, error) {
	var out []MethodSchema
	var errs Errors
	for _, c := range s.Catalogues {
		methods, err := c.Expand(s.Files, s.readSchemaFile)
		if err != nil {
			errs = append(errs, specErrors(c.File, s.where[c.File], err)...)
			continue
		}
		for _, m := range methods {
			out = append(out, methodSchema(c, m))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Emit renders every output file of a package.
func Emit(p *ir.Package) ([]output, error) {
	dir := "gen/" + p.Name
	types, err := emit.Format("types_gen.go", emit.Types(p))
	if err != nil {
		return nil, err
	}
	mf, err := emit.Methods(p)
	if err != nil {
		return nil, err
	}
	methods, err := emit.Format("methods_gen.go", mf)
	if err != nil {
		return nil, err
	}
	fuzz, err := emit.Format("fuzz_gen_test.go", emit.Fuzz(p))
	if err != nil {
		return nil, err
	}
	return []output{
		{dir + "/types_gen.go", types},
		{dir + "/methods_gen.go", methods},
		{dir + "/fuzz_gen_test.go", fuzz},
		{"docs/reference/" + p.Name + ".md", emit.Docs(p)},
	}, nil
}

// Options say where Generate reads and writes.
type Options struct {
	// Root is the repository root: spec/ is read from it, gen/ and
	// docs/reference/ written under it.
	Root string
	// Changelog: report the Go API changes of the packages whose Go files
	// the generation changes (Report.API), by type-checking them before
	// and after (golang.org/x/exp/apidiff). It needs the go command and
	// the root module's dependencies.
	Changelog bool
}

// Report is what Generate read and wrote. Paths are relative to the root,
// slash-separated.
type Report struct {
	// SchemaFiles and Catalogues count the files read; Packages the
	// generated packages.
	SchemaFiles, Catalogues, Packages int
	// Written lists the files whose content changed (or that are new),
	// Unchanged those already up to date, Removed the generated files no
	// longer produced, which Generate deleted.
	Written, Unchanged, Removed []string
	// API lists, with Options.Changelog, the Go API changes of every
	// generated package whose Go files the generation changed, sorted by
	// directory (WriteAPIChanges writes them).
	API []APIChanges
}

// Generate runs load -> IR -> emit and writes the results under
// opts.Root, removing generated files that are no longer produced. A
// problem in the spec is returned as Errors; nothing is written then. The
// report is never nil. It stops between files when ctx ends.
func Generate(ctx context.Context, opts Options) (*Report, error) {
	s, err := Load(opts.Root)
	if err != nil {
		return &Report{}, err // a spec that does not load: nothing was read in full
	}
	return generate(ctx, s, opts.Changelog)
}

func generate(ctx context.Context, s *Spec, changelog bool) (*Report, error) {
	root := s.Root
	rep := &Report{SchemaFiles: len(s.Files), Catalogues: len(s.Catalogues)}
	pkgs, err := Build(s)
	if err != nil {
		return rep, err
	}
	rep.Packages = len(pkgs)
	var outs []output
	for _, p := range pkgs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		o, err := Emit(p)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", p.Source, err)
		}
		outs = append(outs, o...)
	}
	schemaDoc, err := CatalogueSchema()
	if err != nil {
		return rep, err
	}
	outs = append(outs, output{"docs/reference/catalogue.schema.json", schemaDoc})
	keep := map[string]bool{}
	for _, o := range outs {
		keep[filepath.Join(root, filepath.FromSlash(o.path))] = true
	}
	stale, _ := filepath.Glob(filepath.Join(root, "gen", "*", "*_gen.go"))
	staleTests, _ := filepath.Glob(filepath.Join(root, "gen", "*", "*_gen_test.go"))
	stale = append(stale, staleTests...)
	more, _ := filepath.Glob(filepath.Join(root, "docs", "reference", "*.md"))
	var remove []string
	for _, st := range append(stale, more...) {
		if !keep[st] {
			rel, _ := filepath.Rel(root, st)
			remove = append(remove, filepath.ToSlash(rel))
		}
	}
	var changed []string
	var before *apiSet
	var beforeErr error
	if changelog {
		changed = changedGenDirs(root, outs, remove)
		if len(changed) > 0 {
			// Type-checked before anything is written: the API to compare with.
			before, beforeErr = loadAPI(ctx, root, existingDirs(root, changed))
		}
	}
	for _, o := range outs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		full := filepath.Join(root, filepath.FromSlash(o.path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return rep, err
		}
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, o.data) {
			rep.Unchanged = append(rep.Unchanged, o.path)
			continue
		}
		if err := os.WriteFile(full, o.data, 0o644); err != nil {
			return rep, err
		}
		rep.Written = append(rep.Written, o.path)
	}
	for _, rel := range remove {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return rep, err
		}
		rep.Removed = append(rep.Removed, rel)
	}
	if len(changed) > 0 {
		after, afterErr := loadAPI(ctx, root, existingDirs(root, changed))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.API = diffLoaded(changed, before, after, beforeErr, afterErr)
	}
	return rep, nil
}

// existingDirs keeps the directories of dirs (relative to root) that hold
// a *_gen.go file.
func existingDirs(root string, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(d), "*_gen.go")); len(m) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// CanonicalJSON renders v indented, without HTML escaping,
// newline-terminated: the layout of the files the generator writes.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
