package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func open(t *testing.T, lim *Limits) (*Workspace, string) {
	t.Helper()
	w, err := Open(t.TempDir(), lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, w.Dir()
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadText(t *testing.T) {
	w, dir := open(t, &Limits{MaxReadBytes: 12})
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, "big.txt"), strings.Repeat("x\n", 100))
	write(t, filepath.Join(dir, "bin"), "\xff\xfe")
	for _, c := range []struct {
		name string
		rng  ReadRange
		want string
		err  error
	}{
		{"a.txt", ReadRange{}, "", ErrTooLarge}, // 14 bytes, cap 12
		{"a.txt", ReadRange{Line: 2}, "two\nthree\n", nil},
		{"a.txt", ReadRange{Line: 2, Limit: 1}, "two\n", nil},
		{filepath.Join(dir, "a.txt"), ReadRange{Limit: 2}, "one\ntwo\n", nil},
		{"a.txt", ReadRange{Line: 9}, "", nil},
		{"big.txt", ReadRange{Line: 90, Limit: 3}, "x\nx\nx\n", nil}, // a range within the cap of a file over it
		{"bin", ReadRange{}, "", ErrNotText},
		{"missing", ReadRange{}, "", fs.ErrNotExist},
		{".", ReadRange{}, "", ErrNotRegular},
		{"../x", ReadRange{}, "", ErrOutside},
		{"/etc/passwd", ReadRange{}, "", ErrOutside},
	} {
		got, err := w.ReadText(c.name, c.rng, nil)
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("ReadText(%s, %+v) = %q, %v; want %q, %v", c.name, c.rng, got, err, c.want, c.err)
		}
	}
}

func TestLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	w, dir := open(t, nil)
	outside := filepath.Join(t.TempDir(), "secret")
	write(t, outside, "secret")
	write(t, filepath.Join(dir, "docs/in.txt"), "inside")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(dir, "abs")))
	must(os.Symlink("../../"+filepath.Base(filepath.Dir(outside))+"/secret", filepath.Join(dir, "rel")))
	must(os.Symlink("docs/in.txt", filepath.Join(dir, "ok")))
	must(os.Symlink("/proc/self/fd/1", filepath.Join(dir, "stdout")))
	must(os.Symlink("/proc/self/fd/0", filepath.Join(dir, "stdin")))
	for _, name := range []string{"abs", "rel", "stdout", "stdin"} {
		if got, err := w.ReadText(name, ReadRange{}, nil); !errors.Is(err, ErrOutside) {
			t.Errorf("read %s = %q, %v; want ErrOutside", name, got, err)
		}
		if err := w.WriteFile(name+"/x", []byte("x"), nil); err == nil {
			t.Errorf("write under %s succeeded", name)
		}
	}
	// A link inside is followed, and Check sees where it leads.
	var seen string
	got, err := w.ReadText("ok", ReadRange{}, func(rel string) error { seen = rel; return nil })
	if got != "inside" || err != nil {
		t.Fatalf("read ok = %q, %v", got, err)
	}
	if runtime.GOOS == "linux" && seen != "docs/in.txt" {
		t.Errorf("Check saw %q, want docs/in.txt", seen)
	}
	deny := errors.New("no")
	if _, err := w.ReadText("ok", ReadRange{}, func(string) error { return deny }); err != deny {
		t.Errorf("Check's refusal: %v", err)
	}
	// A write at a link replaces the link, it does not write through it.
	must(w.WriteFile("abs", []byte("mine"), nil))
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("the outside file was written: %q", b)
	}
}

// TestFIFORefused: a FIFO is refused at once, for reading and writing, and
// never blocks the caller.
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("FIFOs")
	}
	w, dir := open(t, nil)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "tofifo")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, n := range []string{"fifo", "tofifo"} {
			if _, err := w.ReadText(n, ReadRange{}, nil); !errors.Is(err, ErrNotRegular) {
				t.Errorf("read %s: %v, want ErrNotRegular", n, err)
			}
			if _, err := w.ReadFile(n, nil); !errors.Is(err, ErrNotRegular) {
				t.Errorf("ReadFile %s: %v, want ErrNotRegular", n, err)
			}
		}
		if err := w.WriteFile("fifo", []byte("x"), nil); !errors.Is(err, ErrNotRegular) {
			t.Errorf("write fifo: %v, want ErrNotRegular", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
}

func TestWriteFile(t *testing.T) {
	w, dir := open(t, &Limits{MaxWriteBytes: 8})
	if err := w.WriteFile("src/deep/a.txt", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "src/deep/a.txt")); string(b) != "hello" || err != nil {
		t.Fatalf("%q %v", b, err)
	}
	if err := os.Chmod(filepath.Join(dir, "src/deep/a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(filepath.Join(dir, "src/deep/a.txt"), []byte("again"), nil); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "src/deep/a.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want kept 0600", fi.Mode())
	}
	if err := w.WriteFile("big", []byte("123456789"), nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if err := w.WriteFile("src", []byte("x"), nil); !errors.Is(err, ErrNotRegular) {
		t.Errorf("over a directory: %v", err)
	}
	if err := w.WriteFile("../x", []byte("x"), nil); !errors.Is(err, ErrOutside) {
		t.Errorf("outside: %v", err)
	}
	if err := w.WriteFile("src/b", []byte("x"), func(rel string) error {
		if rel != "src/b" {
			t.Errorf("Check saw %q", rel)
		}
		return fs.ErrPermission
	}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Check's refusal: %v", err)
	}
	noTemps(t, dir)
}

// TestWriteFailureLeavesNoTemp: a write that fails after its temporary
// file exists (here just before the rename) removes it.
func TestWriteFailureLeavesNoTemp(t *testing.T) {
	w, dir := open(t, nil)
	beforeRename = func() error { return errors.New("disk gone") }
	defer func() { beforeRename = nil }()
	if err := w.WriteFile("a/x", []byte("x"), nil); err == nil || err.Error() != "disk gone" {
		t.Fatalf("write: %v", err)
	}
	noTemps(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "a/x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target exists: %v", err)
	}
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestSwapRace flips a workspace path between a directory inside and a
// link to outside while reads and writes go through it, 3,000 times each:
// no read returns the outside file, and no write lands outside or leaves a
// temporary file. (d is a link that is atomically replaced, so the path
// never goes missing and every read or write meets one of the two.)
func TestSwapRace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	w, dir := open(t, nil)
	w.noSync = true // fsync is not what is tested, and costs seconds here
	outside := t.TempDir()
	write(t, filepath.Join(outside, "f"), "OUTSIDE")
	write(t, filepath.Join(dir, "real/f"), "inside")
	d := filepath.Join(dir, "d")
	if err := os.Symlink("real", d); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := "real"
			if i%2 == 1 {
				target = outside
			}
			tmp := filepath.Join(dir, "d.new")
			_ = os.Remove(tmp)
			if err := os.Symlink(target, tmp); err == nil {
				_ = os.Rename(tmp, d)
			}
		}
	})
	const n = 3000
	reads, writes := 0, 0
	for i := range n {
		got, err := w.ReadText("d/f", ReadRange{}, nil)
		if err == nil {
			if got != "inside" {
				t.Fatalf("read %d escaped: %q", i, got)
			}
			reads++
		}
		if w.WriteFile("d/w", []byte("x"), nil) == nil {
			writes++
		}
	}
	close(stop)
	wg.Wait()
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		if e.Name() != "f" {
			t.Errorf("a write escaped: %s/%s", outside, e.Name())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "OUTSIDE" {
		t.Errorf("the outside file changed: %q", b)
	}
	noTemps(t, dir)
	t.Logf("%d of %d reads and %d writes went through the link while it pointed inside", reads, n, writes)
}

func TestRel(t *testing.T) {
	w, dir := open(t, nil)
	for in, want := range map[string]string{
		dir: ".", dir + "/a/../b": "b", "a/b": "a/b", "./a": "a",
	} {
		if got, err := w.Rel(in); got != want || err != nil {
			t.Errorf("Rel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "../a", dir + "/..", "/", "", "a\x00b", filepath.Dir(dir) + "/x"} {
		if got, err := w.Rel(in); err == nil {
			t.Errorf("Rel(%q) = %q, want an error", in, got)
		}
	}
}

func TestDirname(t *testing.T) {
	w, dir := open(t, nil)
	write(t, filepath.Join(dir, "src/a"), "a")
	if got, err := w.Dirname("src"); got != filepath.Join(dir, "src") || err != nil {
		t.Errorf("Dirname(src) = %q, %v", got, err)
	}
	if _, err := w.Dirname("src/a"); err == nil {
		t.Error("a file as a directory")
	}
	if _, err := w.Dirname("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := w.Dirname(".."); !errors.Is(err, ErrOutside) {
		t.Errorf("outside: %v", err)
	}
}

// OpenDir opens the directory it checked: renamed afterwards, the open
// file is still that directory, whatever now sits at its path.
func TestOpenDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	w, dir := open(t, nil)
	write(t, filepath.Join(dir, "src/a"), "a")
	os.Symlink("src", filepath.Join(dir, "in"))
	os.Symlink(t.TempDir(), filepath.Join(dir, "out"))
	f, path, err := w.OpenDir("in")
	if err != nil || (runtime.GOOS == "linux" && path != filepath.Join(dir, "src")) {
		t.Fatalf("OpenDir(in) = %q, %v", path, err)
	}
	defer f.Close()
	if err := os.Rename(filepath.Join(dir, "src"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(t.TempDir(), filepath.Join(dir, "src"))
	names, err := f.Readdirnames(-1)
	if err != nil || len(names) != 1 || names[0] != "a" {
		t.Errorf("the open directory lists %q, %v", names, err)
	}
	for name, want := range map[string]error{"out": ErrOutside, "src": ErrOutside, "moved/a": fs.ErrInvalid, "nope": fs.ErrNotExist, "..": ErrOutside} {
		if f, _, err := w.OpenDir(name); !errors.Is(err, want) {
			t.Errorf("OpenDir(%q): %v, want %v", name, err, want)
			if f != nil {
				f.Close()
			}
		}
	}
}

func TestResolve(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	w, dir := open(t, nil)
	write(t, filepath.Join(dir, "src/a"), "a")
	os.Symlink(t.TempDir(), filepath.Join(dir, "out"))
	os.Symlink("src", filepath.Join(dir, "in"))
	os.Symlink("loop", filepath.Join(dir, "loop"))
	for in, want := range map[string]string{"src/a": "src/a", "in/a": "src/a", "in/new/x": "src/new/x", dir + "/src": "src"} {
		if got, err := w.Resolve(in); got != want || err != nil {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"out/x", "../x", "loop/x", "/etc"} {
		if got, err := w.Resolve(in); !errors.Is(err, ErrOutside) {
			t.Errorf("Resolve(%q) = %q, %v; want ErrOutside", in, got, err)
		}
	}
}

// TestDeniedWriteMakesNoDirectory: a write that check refuses makes none
// of the directories it would need, and check sees the real path they
// would make, through a link to another directory too.
func TestDeniedWriteMakesNoDirectory(t *testing.T) {
	w, dir := open(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret", filepath.Join(dir, "pub")); err != nil {
		t.Fatal(err)
	}
	var seen []string
	deny := func(rel string) error {
		seen = append(seen, rel)
		return fs.ErrPermission
	}
	for _, name := range []string{"a/b/c/d/f.txt", "pub/new/f.txt"} {
		seen = nil
		if err := w.WriteFile(name, []byte("x"), deny); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s: %v", name, err)
		}
		if len(seen) != 1 {
			t.Errorf("%s: check saw %q", name, seen)
		}
	}
	if seen[0] != "secret/new/f.txt" {
		t.Errorf("check saw %q through the link, want the real path secret/new/f.txt", seen[0])
	}
	for _, d := range []string{"a", "secret/new"} {
		if _, err := os.Lstat(filepath.Join(dir, d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was made for a denied write: %v", d, err)
		}
	}
	// Allowed, the directories are made and the check runs again on the
	// opened directory's real path.
	seen = nil
	if err := w.WriteFile("pub/new/f.txt", []byte("x"), func(rel string) error { seen = append(seen, rel); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"secret/new/f.txt", "secret/new/f.txt"}; !slices.Equal(seen, want) {
		t.Errorf("check saw %q, want %q", seen, want)
	}
}

// TestDeniedWriteCreatesNothing is finding 6 of issue 33's red team: a
// write the policy denies creates nothing (no directory, no file, no
// link), through a dangling link or a race. The policy here allows
// src/** only; secrets/ is in the workspace, where os.Root lets a link
// lead.
func TestDeniedWriteCreatesNothing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	srcOnly := func(rel string) error {
		if strings.HasPrefix(rel, "src/") {
			return nil
		}
		return fs.ErrPermission
	}
	setup := func(t *testing.T) (*Workspace, string) {
		w, dir := open(t, nil)
		w.noSync = true
		for _, d := range []string{"src", "secrets"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return w, dir
	}
	// secretsUntouched fails unless secrets/ holds exactly want.
	secretsUntouched := func(t *testing.T, dir string, want ...string) {
		t.Helper()
		var got []string
		filepath.WalkDir(filepath.Join(dir, "secrets"), func(p string, _ fs.DirEntry, _ error) error {
			if rel, _ := filepath.Rel(dir, p); rel != "secrets" {
				got = append(got, filepath.ToSlash(rel))
			}
			return nil
		})
		if !slices.Equal(got, want) {
			t.Errorf("secrets/ holds %q, want %q", got, want)
		}
	}
	t.Run("dangling link to a directory", func(t *testing.T) {
		// The red team's: src/sd -> ../secrets/newdir, missing.
		w, dir := setup(t)
		os.Symlink("../secrets/newdir", filepath.Join(dir, "src/sd"))
		if err := w.WriteFile("src/sd/x/f.txt", []byte("x"), srcOnly); err == nil {
			t.Fatal("the write was allowed")
		}
		secretsUntouched(t, dir)
	})
	t.Run("dangling link deeper", func(t *testing.T) {
		w, dir := setup(t)
		os.MkdirAll(filepath.Join(dir, "src/a/b"), 0o755)
		os.Symlink("../../../secrets/n1/n2", filepath.Join(dir, "src/a/b/l"))
		if err := w.WriteFile("src/a/b/l/c/d/f.txt", []byte("x"), srcOnly); !errors.Is(err, ErrLink) {
			t.Fatalf("got %v, want ErrLink", err)
		}
		secretsUntouched(t, dir)
	})
	t.Run("link to a denied directory", func(t *testing.T) {
		w, dir := setup(t)
		os.Symlink("../secrets", filepath.Join(dir, "src/ld"))
		if err := w.WriteFile("src/ld/new/f.txt", []byte("x"), srcOnly); !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("got %v", err)
		}
		if err := w.WriteFile("src/ld/f.txt", []byte("x"), srcOnly); !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("got %v", err)
		}
		secretsUntouched(t, dir)
	})
	t.Run("dangling link as the target", func(t *testing.T) {
		// Allowed (src/tl is the path written), and the link is replaced,
		// never followed to make secrets/t.txt.
		w, dir := setup(t)
		os.Symlink("../secrets/t.txt", filepath.Join(dir, "src/tl"))
		if err := w.WriteFile("src/tl", []byte("x"), srcOnly); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(dir, "src/tl")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("src/tl: %v %v", fi, err)
		}
		secretsUntouched(t, dir)
	})
	t.Run("denied in an existing directory", func(t *testing.T) {
		w, dir := setup(t)
		if err := w.WriteFile("secrets/f.txt", []byte("x"), srcOnly); !errors.Is(err, fs.ErrPermission) {
			t.Fatal(err)
		}
		secretsUntouched(t, dir)
	})
	t.Run("race: a made directory swapped for a link", func(t *testing.T) {
		// Between the making of src/r1 and that of src/r1/r2, the runtime
		// replaces src/r1 with a link to secrets: nothing is made there.
		w, dir := setup(t)
		defer func() { afterMkdir = nil }()
		afterMkdir = func(name string) {
			if name == "r1" {
				os.Remove(filepath.Join(dir, "src/r1"))
				os.Symlink("../secrets", filepath.Join(dir, "src/r1"))
			}
		}
		if err := w.WriteFile("src/r1/r2/r3/f.txt", []byte("x"), srcOnly); !errors.Is(err, ErrLink) {
			t.Fatalf("got %v, want ErrLink", err)
		}
		secretsUntouched(t, dir)
	})
	t.Run("race: the existing directory swapped for a link", func(t *testing.T) {
		// src/e exists; once the check passed on it and before the missing
		// directories are made, it becomes a link to secrets.
		w, dir := setup(t)
		os.Mkdir(filepath.Join(dir, "src/e"), 0o755)
		defer func() { afterMkdir = nil }()
		swapped := false
		afterMkdir = func(name string) {
			if !swapped {
				swapped = true
				os.Rename(filepath.Join(dir, "src/e"), filepath.Join(dir, "src/e.old"))
				os.Symlink("../secrets", filepath.Join(dir, "src/e"))
			}
		}
		// The directories go on in the directory that was checked (now
		// src/e.old); the file's directory, opened by its path again, is
		// not found (or would be refused).
		if err := w.WriteFile("src/e/n1/n2/f.txt", []byte("x"), srcOnly); err == nil {
			t.Fatal("the write was done")
		}
		secretsUntouched(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "src/e.old/n1/n2")); err != nil {
			t.Errorf("the directories were not made where checked: %v", err)
		}
	})
}
