package terminal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command given its working directory open starts in that directory,
// even after the directory's path was made a link to elsewhere: what was
// checked is what it runs in.
func TestDirFileKeepsTheDirectory(t *testing.T) {
	m := newManager(t, nil)
	ws, outside := t.TempDir(), t.TempDir()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The swap, between the check and the start.
	if err := os.Rename(sub, filepath.Join(ws, "kept")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	id, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", "pwd -P; ls"}, Dir: sub, DirFile: f, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if o := waitFor(t, m, id); o.Combined != filepath.Join(ws, "kept")+"\n" {
		t.Fatalf("ran in %q, want %q", o.Combined, filepath.Join(ws, "kept"))
	}
	// A start that cannot change into the directory (here: a file closed
	// too early) fails under the directory's name, not its descriptor's.
	g, err := os.Open(filepath.Join(ws, "kept"))
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if _, err := m.Start(context.Background(), Spec{Session: "s", Program: "sh", Args: []string{"-c", "pwd"}, Dir: sub, DirFile: g}); err == nil || !strings.Contains(err.Error(), "chdir "+sub+":") {
		t.Fatalf("start in a closed directory: %v", err)
	}
}
