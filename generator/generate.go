package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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
	Root       string
	Catalogues []*catalogue.Catalogue
	// Files holds the loaded schema files by their name under spec/schemas.
	Files     map[string]*schema.File
	Overrides *schema.Overrides
}

// Load reads the overrides, every catalogue (spec/catalogue/*.json) and the
// schema files they list.
func Load(root string) (*Spec, error) {
	paths, err := filepath.Glob(filepath.Join(root, "spec", "catalogue", "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	return LoadCatalogues(root, paths)
}

// LoadCatalogues is Load for the given catalogue files.
func LoadCatalogues(root string, paths []string) (*Spec, error) {
	ov, err := schema.LoadOverrides(filepath.Join(root, "spec", "overrides.json"))
	if err != nil {
		return nil, err
	}
	s := &Spec{Root: root, Files: map[string]*schema.File{}, Overrides: ov}
	for _, p := range paths {
		c, err := catalogue.Load(p)
		if err != nil {
			return nil, err
		}
		if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
			c.File = filepath.ToSlash(rel)
		}
		s.Catalogues = append(s.Catalogues, c)
		for _, name := range c.Schemas {
			if _, ok := s.Files[name]; ok {
				continue
			}
			f, err := schema.LoadFile(filepath.Join(root, "spec", "schemas"), name)
			if err != nil {
				return nil, err
			}
			s.Files[name] = f
		}
	}
	if len(s.Catalogues) == 0 {
		return nil, fmt.Errorf("no catalogues in %s", filepath.Join(root, "spec", "catalogue"))
	}
	return s, nil
}

// readSchemaFile reads a file under spec/schemas (a derivation's meta file).
func (s *Spec) readSchemaFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.Root, "spec", "schemas", filepath.FromSlash(name)))
}

// DefaultModule is the module path generated packages live under
// (<module>/gen/<package>) when the root has no go.mod.
const DefaultModule = "github.com/bridgekit/bridgekit"

// module reads the module path of root's go.mod, or DefaultModule.
func (s *Spec) module() string {
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
// with the overrides, whose unused entries then fail the build.
func Build(s *Spec) ([]*ir.Package, error) {
	var pkgs []*ir.Package
	var errs []string
	for _, c := range s.Catalogues {
		methods, err := c.Expand(s.Files, s.readSchemaFile)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s:\n%s", c.File, err))
			continue
		}
		imports, err := s.imports(c)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s", c.File, err))
			continue
		}
		p, err := ir.BuildImporting(c, methods, s.Files, s.Overrides, imports)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s:\n%s", c.File, err))
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(errs) == 0 {
		errs = s.Overrides.Unused()
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return pkgs, nil
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

// Generate runs load -> IR -> emit and writes the results, removing generated
// files that are no longer produced. It returns the paths it wrote.
func Generate(root string) ([]string, error) {
	s, err := Load(root)
	if err != nil {
		return nil, err
	}
	return generate(s)
}

func generate(s *Spec) ([]string, error) {
	root := s.Root
	pkgs, err := Build(s)
	if err != nil {
		return nil, err
	}
	var outs []output
	for _, p := range pkgs {
		o, err := Emit(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Source, err)
		}
		outs = append(outs, o...)
	}
	schemaDoc, err := CatalogueSchema()
	if err != nil {
		return nil, err
	}
	outs = append(outs, output{"docs/reference/catalogue.schema.json", schemaDoc})
	keep := map[string]bool{}
	var written []string
	for _, o := range outs {
		full := filepath.Join(root, filepath.FromSlash(o.path))
		keep[full] = true
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, o.data) {
			written = append(written, o.path+" (unchanged)")
			continue
		}
		if err := os.WriteFile(full, o.data, 0o644); err != nil {
			return nil, err
		}
		written = append(written, o.path)
	}
	stale, _ := filepath.Glob(filepath.Join(root, "gen", "*", "*_gen.go"))
	staleTests, _ := filepath.Glob(filepath.Join(root, "gen", "*", "*_gen_test.go"))
	stale = append(stale, staleTests...)
	more, _ := filepath.Glob(filepath.Join(root, "docs", "reference", "*.md"))
	for _, st := range append(stale, more...) {
		if !keep[st] {
			if err := os.Remove(st); err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, st)
			written = append(written, "removed "+filepath.ToSlash(rel))
		}
	}
	return written, nil
}

// canonicalJSON renders v indented, without HTML escaping, newline-terminated.
func canonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
