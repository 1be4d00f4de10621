package main

import (
	"os"
	"path/filepath"
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

// generate writes gen/ and docs/reference/ and says what it read and
// wrote; run again, it finds every file unchanged.
func TestGenerateReports(t *testing.T) {
	if testing.Short() {
		t.Skip("generates every package twice")
	}
	root := copySpecTo(t)
	status, stdout, stderr := runCmd(t, "", "generate", "-root", root)
	if status != 0 || !strings.Contains(stdout, "wrote gen/acp/types_gen.go\n") || !strings.Contains(stdout, "read 11 schema files and 7 catalogues; generated 7 packages: 29 files written, 0 unchanged, 0 removed") {
		t.Fatalf("status %d, stdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "docs/reference/acp.md")); err != nil {
		t.Error(err)
	}
	status, stdout, _ = runCmd(t, "", "generate", "-root", root, "-v")
	if status != 0 || strings.Contains(stdout, "wrote ") || !strings.Contains(stdout, "unchanged gen/harn/methods_gen.go\n") || !strings.Contains(stdout, "0 files written, 29 unchanged") {
		t.Errorf("second run: status %d:\n%s", status, stdout)
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
