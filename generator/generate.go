package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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
		for _, name := range append(slices.Clone(c.Schemas), slices.Sorted(maps.Keys(c.Imports))...) {
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

// Build turns every catalogue into an IR package: methods are expanded
// (derived from schema annotations where the catalogue says so) and built
// with the overrides, whose unused entries then fail the build.
func Build(s *Spec) ([]*ir.Package, error) {
	var pkgs []*ir.Package
	errs := checkImports(s.Catalogues)
	for _, c := range s.Catalogues {
		methods, err := c.Expand(s.Files, s.readSchemaFile)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s:\n%s", c.File, err))
			continue
		}
		p, err := ir.Build(c, methods, s.Files, s.Overrides)
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

// checkImports checks that every schema file a catalogue imports is listed
// by the catalogue of the package it is imported from, so that the types a
// member refers to exist there under the same names.
func checkImports(cats []*catalogue.Catalogue) []string {
	var errs []string
	for _, c := range cats {
		for _, file := range slices.Sorted(maps.Keys(c.Imports)) {
			imp := c.Imports[file]
			owner := slices.IndexFunc(cats, func(o *catalogue.Catalogue) bool {
				return o.Package == path.Base(imp) && slices.Contains(o.Schemas, file)
			})
			if owner < 0 {
				errs = append(errs, fmt.Sprintf("%s: imports %s from %s, but no catalogue of package %s lists it in schemas", c.File, file, imp, path.Base(imp)))
			} else if cats[owner] == c {
				errs = append(errs, fmt.Sprintf("%s: imports %s from its own package", c.File, file))
			}
		}
	}
	return errs
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
