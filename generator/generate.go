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

// Load reads the overrides, every catalogue and the schema files they list.
func Load(root string) ([]*catalogue.Catalogue, map[string]*schema.File, *ir.Overrides, error) {
	ov := &ir.Overrides{}
	if data, err := os.ReadFile(filepath.Join(root, "spec", "overrides.json")); err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(ov); err != nil {
			return nil, nil, nil, fmt.Errorf("spec/overrides.json: %w", err)
		}
	} else if !os.IsNotExist(err) {
		return nil, nil, nil, err
	}
	paths, err := filepath.Glob(filepath.Join(root, "spec", "catalogue", "*.json"))
	if err != nil {
		return nil, nil, nil, err
	}
	slices.Sort(paths)
	var cats []*catalogue.Catalogue
	files := map[string]*schema.File{}
	for _, p := range paths {
		c, err := catalogue.Load(p)
		if err != nil {
			return nil, nil, nil, err
		}
		c.File = filepath.ToSlash(must(filepath.Rel(root, p)))
		cats = append(cats, c)
		for _, s := range c.Schemas {
			if _, ok := files[s]; ok {
				continue
			}
			f, err := schema.LoadFile(filepath.Join(root, "spec", "schemas", s))
			if err != nil {
				return nil, nil, nil, err
			}
			files[s] = f
		}
	}
	if len(cats) == 0 {
		return nil, nil, nil, fmt.Errorf("no catalogues in %s", filepath.Join(root, "spec", "catalogue"))
	}
	return cats, files, ov, nil
}

// Build turns every catalogue into an IR package, checking the overrides
// against all of them together.
func Build(cats []*catalogue.Catalogue, files map[string]*schema.File, ov *ir.Overrides) ([]*ir.Package, error) {
	var pkgs []*ir.Package
	var errs []string
	usedTypes, usedFields := map[string]bool{}, map[string]bool{}
	for _, c := range cats {
		var fs []*schema.File
		for _, s := range c.Schemas {
			fs = append(fs, files[s])
		}
		// Each package sees only the overrides that point into its own schema files.
		sub := &ir.Overrides{Types: map[string]ir.TypeOverride{}, Fields: map[string]ir.FieldOverride{}}
		for k, v := range ov.Types {
			if inFiles(k, c.Schemas) {
				sub.Types[k] = v
				usedTypes[k] = true
			}
		}
		for k, v := range ov.Fields {
			if inFiles(k, c.Schemas) {
				sub.Fields[k] = v
				usedFields[k] = true
			}
		}
		p, err := ir.Build(c, fs, sub)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s:\n%s", c.File, err))
			continue
		}
		pkgs = append(pkgs, p)
	}
	for k := range ov.Types {
		if !usedTypes[k] {
			errs = append(errs, "spec/overrides.json: type override "+k+" points into no catalogued schema")
		}
	}
	for k := range ov.Fields {
		if !usedFields[k] {
			errs = append(errs, "spec/overrides.json: field override "+k+" points into no catalogued schema")
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return pkgs, nil
}

func inFiles(ptr string, files []string) bool {
	file, _, _ := strings.Cut(ptr, "#")
	return slices.Contains(files, file)
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
	outs := []output{{dir + "/types_gen.go", types}, {dir + "/methods_gen.go", methods}, {dir + "/fuzz_gen_test.go", fuzz}}
	enums, err := emit.Enums(p)
	if err != nil {
		return nil, err
	}
	if enums != nil {
		outs = append(outs, output{dir + "/enums_gen.go", enums})
	}
	outs = append(outs, output{"docs/reference/" + p.Name + ".md", emit.Docs(p)})
	return outs, nil
}

// Generate runs load -> IR -> emit and writes the results, removing generated
// files that are no longer produced. It returns the paths it wrote.
func Generate(root string) ([]string, error) {
	cats, files, ov, err := Load(root)
	if err != nil {
		return nil, err
	}
	pkgs, err := Build(cats, files, ov)
	if err != nil {
		return nil, err
	}
	var outs []output
	for _, p := range pkgs {
		o, err := Emit(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Catalogue.File, err)
		}
		outs = append(outs, o...)
	}
	keep := map[string]bool{}
	var written []string
	for _, o := range outs {
		full := filepath.Join(root, filepath.FromSlash(o.path))
		keep[full] = true
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
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
	for _, s := range append(stale, more...) {
		if !keep[s] {
			if err := os.Remove(s); err != nil {
				return nil, err
			}
			written = append(written, "removed "+filepath.ToSlash(must(filepath.Rel(root, s))))
		}
	}
	return written, nil
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
