package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPaths: whatever name the peer sends, a read or a write either stays
// beneath the root or fails; Rel never maps a name outside.
func FuzzPaths(f *testing.F) {
	for _, s := range []string{"a", "../a", "/etc/passwd", "a/../../b", "link/x", "link", "sub/../link/x", ".", "..", "a\x00b", "//", "sub/./f"} {
		f.Add(s)
	}
	parent := f.TempDir()
	dir := filepath.Join(parent, "ws")
	outside := filepath.Join(parent, "out")
	for _, d := range []string{filepath.Join(dir, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "f"), []byte("OUT"), 0o644)
	os.Symlink("../out", filepath.Join(dir, "link"))
	os.Symlink(outside, filepath.Join(dir, "abs"))
	w, err := Open(dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if rel, err := w.Rel(name); err == nil {
			if strings.HasPrefix(rel, "../") || rel == ".." || filepath.IsAbs(rel) {
				t.Fatalf("Rel(%q) = %q", name, rel)
			}
		}
		if got, err := w.ReadText(name, ReadRange{}, nil); err == nil && strings.Contains(got, "OUT") {
			t.Fatalf("read %q escaped", name)
		}
		if err := w.WriteFile(name, []byte("IN"), nil); err == nil {
			rel, _ := w.Rel(name)
			if !strings.HasPrefix(filepath.Join(dir, rel), dir) {
				t.Fatalf("write %q outside", name)
			}
		} else if errors.Is(err, ErrTooLarge) {
			t.Fatalf("write %q: %v", name, err)
		}
		entries, _ := os.ReadDir(outside)
		if len(entries) != 1 {
			t.Fatalf("write %q landed outside: %v", name, entries)
		}
	})
}
