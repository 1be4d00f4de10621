package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func copySpecTo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "spec"), os.DirFS("../../spec")); err != nil {
		t.Fatal(err)
	}
	return root
}

// fixtureSpec is the generator's test-only catalogues (four small packages
// that import each other): enough to exercise every line of the report at
// a fraction of the real spec's cost, which TestGenerateFullSpec pays once.
const fixtureSpec = "../../generator/testdata/features/spec"

// copyFixtureTo lays the fixture spec under a new root, with a go.mod,
// since its packages import each other as <module>/gen/<package>.
func copyFixtureTo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "spec"), os.DirFS(fixtureSpec)); err != nil {
		t.Fatal(err)
	}
	// A module that builds against this checkout, so that generate can
	// type-check what it wrote and report the API changes.
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module generatecheck\n\ngo 1.26\n\nrequire github.com/bridgekit/bridgekit v0.0.0\n\nreplace github.com/bridgekit/bridgekit => " + repo + "\n"
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err := os.ReadFile(filepath.Join(repo, "go.sum")); err == nil {
		_ = os.WriteFile(filepath.Join(root, "go.sum"), sum, 0o644)
	}
	return root
}

// apiSection splits generate's output at its Go API changes, which follow
// the summary.
func apiSection(stdout string) (files, api string) {
	files, api, _ = strings.Cut(stdout, "Go API changes (golang.org/x/exp/apidiff):\n")
	return files, api
}

var summary = regexp.MustCompile(`(?m)^read (\d+) schema files and (\d+) catalogues; generated (\d+) packages: (\d+) files written, (\d+) unchanged, (\d+) removed\n\z`)

// report checks generate's output: one line per file (what, path), each
// path under root as the line says, then the summary, whose counts must
// match the lines; it returns the paths by what.
func report(t *testing.T, root, stdout string, schemas, catalogues int) map[string][]string {
	t.Helper()
	stdout, _ = apiSection(stdout)
	m := summary.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no summary line at the end:\n%s", stdout)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	if n(1) != schemas || n(2) != catalogues || n(3) != catalogues {
		t.Errorf("summary %q, want %d schema files, %d catalogues and packages", m[0], schemas, catalogues)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(stdout[:len(stdout)-len(m[0])], "\n"), "\n") {
		if line == "" {
			continue
		}
		what, path, ok := strings.Cut(line, " ")
		if !ok || what != "wrote" && what != "unchanged" && what != "removed" {
			t.Fatalf("line %q is not <wrote|unchanged|removed> <path>", line)
		}
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(path)))
		if exists := err == nil; exists == (what == "removed") {
			t.Errorf("%s: exists %v (%v)", line, exists, err)
		}
		got[what] = append(got[what], path)
	}
	if len(got["wrote"]) != n(4) || len(got["removed"]) != n(6) || len(got["unchanged"]) != 0 && len(got["unchanged"]) != n(5) {
		t.Errorf("summary %q disagrees with the lines: %d wrote, %d unchanged, %d removed", m[0], len(got["wrote"]), len(got["unchanged"]), len(got["removed"]))
	}
	return got
}

// generate writes gen/ and docs/reference/ and says what it read, wrote and
// removed, one line per file; run again, it finds every file unchanged
// (listed with -v); a generated file it no longer produces is removed.
func TestGenerateReports(t *testing.T) {
	root := copyFixtureTo(t)
	cats, _ := filepath.Glob(filepath.Join(root, "spec/catalogue/*.json"))
	schemas, _ := filepath.Glob(filepath.Join(root, "spec/schemas/*.json"))
	status, stdout, stderr := runCmd(t, "", "generate", "-root", root)
	if status != 0 {
		t.Fatalf("status %d, stdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	first := report(t, root, stdout, len(schemas), len(cats))
	// The changelog: every package is new.
	if _, api := apiSection(stdout); !strings.Contains(api, "gen/features: new package, ") || !strings.Contains(api, "\n  Methods: added\n") || strings.Contains(api, "not compared") {
		t.Errorf("first run's API changes:\n%s", api)
	}
	for _, want := range []string{"gen/features/types_gen.go", "gen/featuresuse/methods_gen.go", "gen/vendored/fuzz_gen_test.go", "docs/reference/features.md", "docs/reference/catalogue.schema.json"} {
		if !slices.Contains(first["wrote"], want) {
			t.Errorf("first run did not write %s: %v", want, first["wrote"])
		}
	}
	if len(first["removed"]) != 0 {
		t.Errorf("first run removed %v", first["removed"])
	}

	status, stdout, _ = runCmd(t, "", "generate", "-root", root, "-v")
	second := report(t, root, stdout, len(schemas), len(cats))
	if status != 0 || len(second["wrote"]) != 0 || len(second["removed"]) != 0 || !slices.Equal(second["unchanged"], first["wrote"]) {
		t.Errorf("second run: status %d, want every file of the first unchanged:\n%s", status, stdout)
	}

	// Stale output: a generated file no catalogue produces any more goes,
	// a hand-written one beside it stays; without -v, unchanged files are
	// counted, not listed.
	for _, f := range []string{"gen/features/old_gen.go", "gen/features/old_gen_test.go", "docs/reference/old.md", "gen/features/hand.go"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("package features\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status, stdout, _ = runCmd(t, "", "generate", "-root", root)
	third := report(t, root, stdout, len(schemas), len(cats))
	if want := []string{"gen/features/old_gen.go", "gen/features/old_gen_test.go", "docs/reference/old.md"}; status != 0 || !slices.Equal(third["removed"], want) {
		t.Errorf("third run: status %d, removed %v, want %v:\n%s", status, third["removed"], want, stdout)
	}
	if third["unchanged"] != nil || third["wrote"] != nil || !strings.Contains(stdout, fmt.Sprintf("0 files written, %d unchanged, 3 removed", len(first["wrote"]))) {
		t.Errorf("third run lists unchanged files without -v, or rewrote some:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(root, "gen/features/hand.go")); err != nil {
		t.Errorf("a hand-written file was removed: %v", err)
	}
}

// The real spec: one run, whose report counts every schema file and
// catalogue, and whose output is what the repository commits (make
// generate's output, which make check keeps current).
func TestGenerateFullSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("generates every package")
	}
	root := copySpecTo(t)
	status, stdout, stderr := runCmd(t, "", "generate", "-root", root)
	if status != 0 || !strings.Contains(stdout, "read 13 schema files and 9 catalogues; generated 9 packages: 37 files written, 0 unchanged, 0 removed") {
		t.Fatalf("status %d, stdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	wrote := report(t, root, stdout, 13, 9)["wrote"]
	if !slices.Contains(wrote, "gen/acp/types_gen.go") || !slices.Contains(wrote, "docs/reference/acp.md") {
		t.Errorf("wrote %v", wrote)
	}
	for _, f := range wrote {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if committed, err := os.ReadFile(filepath.Join("../..", filepath.FromSlash(f))); err != nil || !bytes.Equal(got, committed) {
			t.Errorf("%s differs from the committed file (run make generate): %v", f, err)
		}
	}
}

// A broken catalogue fails with its file and JSON pointer, status 1, and
// nothing written.
func TestGenerateBrokenCatalogue(t *testing.T) {
	root := copySpecTo(t)
	p := filepath.Join(root, "spec/catalogue/harn.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), `"params": "harn-host.schema.json#/$defs/host_capabilities_params"`, `"params": "harn-host.schema.json#/$defs/nosuch"`, 1)
	if broken == string(data) {
		t.Fatal("harn.json changed: the test's edit no longer applies")
	}
	if err := os.WriteFile(p, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	status, stdout, _ := runCmd(t, "", "generate", "-root", root)
	want := `spec/catalogue/harn.json#/methods/0/params: $ref "harn-host.schema.json#/$defs/nosuch": no such $defs entry`
	if status != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "nothing written") {
		t.Errorf("status %d, stdout:\n%s\nwant %q", status, stdout, want)
	}
	if _, err := os.Stat(filepath.Join(root, "gen")); !os.IsNotExist(err) {
		t.Errorf("gen/ written despite the error: %v", err)
	}
	if status, _, _ := runCmd(t, "", "generate", "-root", root, "extra"); status != 2 {
		t.Errorf("an argument: status %d, want 2", status)
	}
}
