package codegen

import (
	"context"
	"errors"
	"fmt"
	"go/types"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/tools/go/packages"
)

// APIChanges is what changed in the Go API of one generated package, as
// golang.org/x/exp/apidiff reports it: the exported identifiers added,
// removed and changed, each change incompatible (a program built on the
// old API may no longer compile, or may behave differently) or compatible.
type APIChanges struct {
	// Dir is the package's directory, slash-separated, relative to the
	// root ("gen/harn"); Path its import path.
	Dir, Path string
	// Added and Removed: the whole package is new, or gone.
	Added, Removed bool
	// Incompatible and Compatible are apidiff's messages, sorted
	// ("SessionUpdate.Progress: removed", "UpdateOf: added").
	Incompatible, Compatible []string
	// Err says why the package's API could not be compared (it did not
	// type-check before or after); the lists are empty then.
	Err string
}

// Empty reports whether nothing changed in the package's API.
func (c APIChanges) Empty() bool {
	return !c.Added && !c.Removed && len(c.Incompatible)+len(c.Compatible) == 0 && c.Err == ""
}

// WriteAPIChanges writes changes as text, one package after another: a
// line per package saying what happened to it, then its incompatible
// changes and its compatible ones, indented (a new or removed package's
// identifiers, one a line). Packages whose API did not change are left
// out; with none left it writes nothing.
func WriteAPIChanges(w io.Writer, changes []APIChanges) error {
	var b strings.Builder
	for _, c := range changes {
		switch {
		case c.Empty():
			continue
		case c.Err != "":
			fmt.Fprintf(&b, "%s: API not compared: %s\n", c.Dir, c.Err)
		case c.Added:
			fmt.Fprintf(&b, "%s: new package, %d exported identifiers\n", c.Dir, len(c.Compatible))
			for _, m := range c.Compatible {
				fmt.Fprintf(&b, "  %s\n", m)
			}
		case c.Removed:
			fmt.Fprintf(&b, "%s: package removed, %d exported identifiers\n", c.Dir, len(c.Incompatible))
			for _, m := range c.Incompatible {
				fmt.Fprintf(&b, "  %s\n", m)
			}
		default:
			fmt.Fprintf(&b, "%s: %d incompatible, %d compatible changes\n", c.Dir, len(c.Incompatible), len(c.Compatible))
			for _, l := range []struct {
				title string
				msgs  []string
			}{{"incompatible", c.Incompatible}, {"compatible", c.Compatible}} {
				if len(l.msgs) == 0 {
					continue
				}
				fmt.Fprintf(&b, "  %s:\n", l.title)
				for _, m := range l.msgs {
					fmt.Fprintf(&b, "    %s\n", m)
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// DiffAPI compares the Go API of the generated packages (gen/*) of two
// checkouts of the repository, oldRoot and newRoot (each a module root
// with go.mod): a package in one alone is added or removed whole. It
// type-checks both with the go command (golang.org/x/tools/go/packages),
// so the module's dependencies must be at hand, and compares each package
// with golang.org/x/exp/apidiff. The result is sorted by directory.
func DiffAPI(ctx context.Context, oldRoot, newRoot string) ([]APIChanges, error) {
	oldDirs, err := genDirs(oldRoot)
	if err != nil {
		return nil, err
	}
	newDirs, err := genDirs(newRoot)
	if err != nil {
		return nil, err
	}
	dirs := slices.Compact(slices.Sorted(slices.Values(append(oldDirs, newDirs...))))
	old, oldErr := loadAPI(ctx, oldRoot, oldDirs)
	if oldErr != nil && ctx.Err() != nil {
		return nil, oldErr
	}
	cur, newErr := loadAPI(ctx, newRoot, newDirs)
	if newErr != nil && ctx.Err() != nil {
		return nil, newErr
	}
	return diffLoaded(dirs, old, cur, oldErr, newErr), nil
}

// genDirs lists the generated packages of a checkout: the directories
// under gen/ holding a *_gen.go file, slash-separated.
func genDirs(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "gen", "*", "*_gen.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		rel, err := filepath.Rel(root, filepath.Dir(f))
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// apiSet is a checkout's type-checked packages, by directory, and why a
// package could not be type-checked.
type apiSet struct {
	pkgs map[string]*types.Package
	errs map[string]string
}

// loadAPI type-checks the packages in dirs (relative to root) from source,
// their dependencies from export data, tests left out.
func loadAPI(ctx context.Context, root string, dirs []string) (*apiSet, error) {
	set := &apiSet{pkgs: map[string]*types.Package{}, errs: map[string]string{}}
	if len(dirs) == 0 {
		return set, nil
	}
	patterns := make([]string, len(dirs))
	for i, d := range dirs {
		patterns[i] = "./" + d
	}
	cfg := &packages.Config{
		Context: ctx,
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedTypes | packages.NeedImports,
		Dir:     root,
		Env:     append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off"),
	}
	loaded, err := packages.Load(cfg, patterns...)
	if err != nil {
		return set, err
	}
	abs, _ := filepath.Abs(root)
	for _, p := range loaded {
		dir := dirOf(abs, p)
		if dir == "" {
			continue
		}
		if len(p.Errors) > 0 {
			var msgs []string
			for _, e := range p.Errors {
				msgs = append(msgs, e.Msg)
			}
			set.errs[dir] = strings.Join(msgs, "; ")
			continue
		}
		set.pkgs[dir] = p.Types
	}
	return set, nil
}

// dirOf is the directory of a loaded package relative to root, from its
// files, or "" when it has none there.
func dirOf(root string, p *packages.Package) string {
	for _, f := range append(slices.Clone(p.GoFiles), p.CompiledGoFiles...) {
		if rel, err := filepath.Rel(root, filepath.Dir(f)); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return ""
}

// diffLoaded compares the two sets package by package.
func diffLoaded(dirs []string, old, cur *apiSet, oldErr, newErr error) []APIChanges {
	var out []APIChanges
	for _, d := range dirs {
		c := APIChanges{Dir: d}
		o, n := old.get(d), cur.get(d)
		switch {
		case oldErr != nil || newErr != nil:
			c.Err = errors.Join(oldErr, newErr).Error()
		case old.errs[d] != "":
			c.Err = "before: " + old.errs[d]
		case cur.errs[d] != "":
			c.Err = "after: " + cur.errs[d]
		case o == nil && n == nil:
			continue
		case o == nil:
			c.Added = true
			o = types.NewPackage(n.Path(), n.Name())
		case n == nil:
			c.Removed = true
			n = types.NewPackage(o.Path(), o.Name())
		}
		if c.Err == "" {
			if n != nil {
				c.Path = n.Path()
			} else if o != nil {
				c.Path = o.Path()
			}
			for _, ch := range apidiff.Changes(o, n).Changes {
				if ch.Compatible {
					c.Compatible = append(c.Compatible, ch.Message)
				} else {
					c.Incompatible = append(c.Incompatible, ch.Message)
				}
			}
			slices.Sort(c.Compatible)
			slices.Sort(c.Incompatible)
		}
		out = append(out, c)
	}
	return out
}

func (s *apiSet) get(dir string) *types.Package {
	if s == nil {
		return nil
	}
	return s.pkgs[dir]
}

// changedGenDirs lists the package directories of outs whose Go files a
// generation changes: written with other content, new, or removed as
// stale.
func changedGenDirs(root string, outs []output, stale []string) []string {
	var dirs []string
	for _, o := range outs {
		if !strings.HasPrefix(o.path, "gen/") || !strings.HasSuffix(o.path, ".go") || strings.HasSuffix(o.path, "_test.go") {
			continue
		}
		if old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(o.path))); err == nil && string(old) == string(o.data) {
			continue
		}
		dirs = append(dirs, path.Dir(o.path))
	}
	for _, s := range stale {
		if strings.HasPrefix(s, "gen/") && strings.HasSuffix(s, ".go") && !strings.HasSuffix(s, "_test.go") {
			dirs = append(dirs, path.Dir(s))
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}
