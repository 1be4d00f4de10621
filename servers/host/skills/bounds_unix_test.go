//go:build unix

package skills

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A skills folder can come with a repository: a skill file that is a link
// to a device, a FIFO or a huge file fails Load, naming it, at once and
// without reading it all; a link to a regular file is followed.
func TestLoadBounds(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "kept.md")
	if err := os.WriteFile(elsewhere, []byte("---\nname: kept\n---\nbody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, create := range map[string]func(p string) error{
		"a link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"a FIFO":              func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"a file too large":    func(p string) error { return os.WriteFile(p, make([]byte, MaxFileBytes+1), 0o600) },
	} {
		dir := t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(dir, "kept.md")); err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(dir, "bad.md")
		if err := create(bad); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: Load = %v, want an error naming %s", name, err, bad)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: Load took %v", name, d)
		}
		os.Remove(bad)
		set, err := Load(dir)
		if err != nil || set.ByName["kept"] == nil {
			t.Errorf("%s removed: %v, %+v", name, err, set)
		}
	}
}
