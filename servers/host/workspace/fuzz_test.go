package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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

// resolveByWalk is Resolve as it was before issue 33's finding 4, one
// element up at a time (quadratic in the path's length): the oracle that
// FuzzResolveDepth holds Resolve to.
func resolveByWalk(w *Workspace, name string) (string, error) {
	if _, err := w.Rel(name); err != nil && !errors.Is(err, ErrOutside) {
		return "", err
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.dir, p)
	}
	p = filepath.Clean(p)
	existing, missing := p, ""
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", ErrOutside
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		missing = filepath.Join(filepath.Base(existing), missing)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", ErrOutside
	}
	rel, err := filepath.Rel(w.dir, filepath.Join(real, missing))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", ErrOutside
	}
	return filepath.ToSlash(rel), nil
}

// FuzzResolveDepth: Resolve, which finds a path's deepest existing prefix
// by galloping and bisecting, answers as the walk up one element at a
// time did, for paths of every depth: existing directories (d/d/...) up to
// some depth, then missing names, through links to directories, to
// outside, dangling, and to a file on the way, absolute or relative.
func FuzzResolveDepth(f *testing.F) {
	for _, s := range []struct {
		exist, missing uint16
		via            uint8
		abs            bool
	}{{0, 0, 0, false}, {3, 0, 0, true}, {3, 5, 1, true}, {40, 2000, 2, false}, {1, 1, 3, true}, {200, 3, 4, false}, {5, 1, 5, true}} {
		f.Add(s.exist, s.missing, s.via, s.abs)
	}
	parent := f.TempDir()
	dir := filepath.Join(parent, "ws")
	deep := filepath.Join(dir, strings.Repeat("d/", 300))
	for _, d := range []string{deep, filepath.Join(parent, "out", "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "d", "d", "file"), nil, 0o644)
	os.Symlink("d/d", filepath.Join(dir, "in"))
	os.Symlink("../out", filepath.Join(dir, "out"))
	os.Symlink("nowhere/x", filepath.Join(dir, "dangling"))
	os.Symlink("d/d/file", filepath.Join(dir, "tofile"))
	os.Symlink("loop", filepath.Join(dir, "loop"))
	w, err := Open(dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer w.Close()
	vias := []string{"", "in", "out", "dangling", "tofile", "loop", "d/d/file"}
	f.Fuzz(func(t *testing.T, exist, missing uint16, via uint8, abs bool) {
		exist, missing = exist%320, missing%2100
		var b strings.Builder
		if v := vias[int(via)%len(vias)]; v != "" {
			b.WriteString(v)
		}
		for range exist {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString("d")
		}
		for i := range missing {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString("m" + strconv.Itoa(int(i%10)))
		}
		name := b.String()
		if abs {
			name = filepath.Join(dir, name)
		}
		got, err := w.Resolve(name)
		want, wantErr := resolveByWalk(w, name)
		if got != want || (err == nil) != (wantErr == nil) || err != nil && errors.Is(wantErr, ErrOutside) != errors.Is(err, ErrOutside) {
			t.Fatalf("Resolve(%q) = %q, %v; the walk: %q, %v", name, got, err, want, wantErr)
		}
	})
}
