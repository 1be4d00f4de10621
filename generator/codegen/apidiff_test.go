package codegen

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeTree writes files (slash paths relative to dir) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// DiffAPI compares the generated packages of two checkouts with apidiff:
// a changed field type and a removed function are incompatible, an added
// type compatible; a package in one checkout alone is added or removed
// whole; a package that does not type-check is reported, not compared;
// only packages under gen/ with a *_gen.go file count, hand-written files
// of theirs included.
func TestDiffAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks with the go command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const mod = "module example.com/m\n\ngo 1.26\n"
	oldRoot, newRoot := t.TempDir(), t.TempDir()
	writeTree(t, oldRoot, map[string]string{
		"go.mod":               mod,
		"gen/foo/foo_gen.go":   "package foo\n\ntype A struct{ X int }\n\nfunc F() {}\n",
		"gen/foo/extra.go":     "package foo\n\nfunc Hand() {}\n",
		"gen/gone/gone_gen.go": "package gone\n\nconst C = 1\n",
		"gen/broken/b_gen.go":  "package broken\n\nvar V = 1\n",
		"internal/x/x.go":      "package x\n\nfunc NotGenerated() {}\n",
	})
	writeTree(t, newRoot, map[string]string{
		"go.mod":              mod,
		"gen/foo/foo_gen.go":  "package foo\n\ntype A struct{ X string }\n\ntype B int\n",
		"gen/foo/extra.go":    "package foo\n\nfunc Hand() {}\n",
		"gen/fresh/f_gen.go":  "package fresh\n\ntype New struct{}\n",
		"gen/broken/b_gen.go": "package broken\n\nvar V = undefined\n",
		"internal/x/x.go":     "package x\n",
	})
	changes, err := DiffAPI(ctx, oldRoot, newRoot)
	if err != nil {
		t.Fatal(err)
	}
	byDir := map[string]APIChanges{}
	for _, c := range changes {
		byDir[c.Dir] = c
	}
	var dirs []string
	for d := range byDir {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	if !slices.Equal(dirs, []string{"gen/broken", "gen/foo", "gen/fresh", "gen/gone"}) {
		t.Fatalf("packages %v", dirs)
	}
	foo := byDir["gen/foo"]
	if foo.Path != "example.com/m/gen/foo" || foo.Added || foo.Removed || foo.Err != "" ||
		!slices.ContainsFunc(foo.Incompatible, func(m string) bool { return strings.HasPrefix(m, "A.X: changed from int to string") }) ||
		!slices.Contains(foo.Incompatible, "F: removed") || !slices.Contains(foo.Compatible, "B: added") ||
		slices.ContainsFunc(append(foo.Incompatible, foo.Compatible...), func(m string) bool { return strings.Contains(m, "Hand") }) {
		t.Errorf("gen/foo: %+v", foo)
	}
	if fresh := byDir["gen/fresh"]; !fresh.Added || !slices.Contains(fresh.Compatible, "New: added") {
		t.Errorf("gen/fresh: %+v", fresh)
	}
	if gone := byDir["gen/gone"]; !gone.Removed || !slices.Contains(gone.Incompatible, "C: removed") {
		t.Errorf("gen/gone: %+v", gone)
	}
	if broken := byDir["gen/broken"]; !strings.HasPrefix(broken.Err, "after: ") || !strings.Contains(broken.Err, "undefined") {
		t.Errorf("gen/broken: %+v", broken)
	}

	var out bytes.Buffer
	if err := WriteAPIChanges(&out, changes); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"gen/broken: API not compared: after: ",
		"gen/foo: 2 incompatible, 1 compatible changes\n  incompatible:\n    A.X: changed from int to string\n    F: removed\n  compatible:\n    B: added\n",
		"gen/fresh: new package, 1 exported identifiers\n  New: added\n",
		"gen/gone: package removed, 1 exported identifiers\n  C: removed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	// Nothing changed: nothing written.
	same, err := DiffAPI(ctx, newRoot, newRoot)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	for _, c := range same {
		if c.Dir != "gen/broken" && !c.Empty() {
			t.Errorf("%s changed against itself: %+v", c.Dir, c)
		}
	}
}

// changedGenDirs names the packages whose non-test Go files a generation
// changes, creates or removes; docs, tests and unchanged files do not
// count.
func TestChangedGenDirs(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"gen/a/types_gen.go": "package a\n",
		"gen/b/types_gen.go": "package b\n",
	})
	outs := []output{
		{"gen/a/types_gen.go", []byte("package a\n")},
		{"gen/a/fuzz_gen_test.go", []byte("package a\n// changed\n")},
		{"gen/b/types_gen.go", []byte("package b\n\ntype T int\n")},
		{"gen/c/types_gen.go", []byte("package c\n")},
		{"docs/reference/a.md", []byte("x")},
	}
	got := changedGenDirs(root, outs, []string{"gen/d/types_gen.go", "gen/e/fuzz_gen_test.go", "docs/reference/old.md"})
	if !slices.Equal(got, []string{"gen/b", "gen/c", "gen/d"}) {
		t.Fatalf("changed %v", got)
	}
}
