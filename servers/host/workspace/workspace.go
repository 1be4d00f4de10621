// Package workspace gives a host race-free, bounded access to the files of
// one directory tree: the workspace an agent works in.
//
// Every name is resolved by the kernel beneath the workspace's root
// directory (os.Root, which uses openat2 with RESOLVE_BENEATH on Linux and
// walks components with O_NOFOLLOW elsewhere), from one open file
// descriptor: nothing is checked by name and then opened by name, so
// swapping a directory for a link to outside between two calls cannot make
// a read or a write leave the tree. Symbolic links inside the tree are
// followed as long as they stay inside it; an absolute link, or one that
// climbs out, is refused.
//
// Only regular files are read or written. A file is opened with O_NONBLOCK
// and checked with fstat on the opened descriptor before a byte is read, so
// a FIFO, a socket, a device or a /proc magic link is refused at once and
// never blocks the caller.
//
// Reads and writes are capped in bytes ([Limits], with documented
// defaults). A write is atomic: the data goes to a temporary file created
// in the target's directory (opened once, by descriptor), is synced, and is
// renamed over the target; whatever fails, the temporary file is removed.
//
// A policy decides on the path the kernel actually reached: [Check] is
// called with the workspace-relative path of the opened file (links
// resolved, read back from the descriptor on Linux) before anything is read
// or written, so a link cannot take a read or a write past a policy that
// lists only part of the tree.
package workspace

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Defaults of Limits.
const (
	// DefaultMaxReadBytes bounds the text one read returns: 8 MiB, half
	// of a peer's usual 16 MiB frame, so the answer (JSON-escaped) fits.
	DefaultMaxReadBytes = 8 << 20
	// DefaultMaxWriteBytes bounds the data one write stores: 8 MiB.
	DefaultMaxWriteBytes = 8 << 20
)

// Limits bound what one call reads or writes. Zero members take the
// defaults.
type Limits struct {
	// MaxReadBytes bounds the bytes a read returns (the selected lines
	// when a line range is asked for). Default DefaultMaxReadBytes.
	MaxReadBytes int64
	// MaxWriteBytes bounds the bytes a write stores. Default
	// DefaultMaxWriteBytes.
	MaxWriteBytes int64
}

// Errors; the errors the methods return match these with errors.Is.
// A missing file matches fs.ErrNotExist.
var (
	// ErrOutside: the name, or a link on its way, leads out of the
	// workspace.
	ErrOutside = errors.New("outside the workspace")
	// ErrNotRegular: the name is a directory, a FIFO, a socket, a device
	// or another file that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrIsDir: the name is a directory (it matches ErrNotRegular too).
	ErrIsDir = errors.New("is a directory")
	// ErrTooLarge: the data is over the read or write cap.
	ErrTooLarge = errors.New("over the size limit")
	// ErrNotText: a read found bytes that are not UTF-8.
	ErrNotText = errors.New("not UTF-8 text")
)

// Check decides an access on the workspace-relative, slash-separated path
// the kernel reached ("src/a.go"); a non-nil error refuses it and is
// returned as is.
type Check func(rel string) error

// Workspace is one directory tree. It is safe for concurrent use.
type Workspace struct {
	dir    string // absolute, links resolved
	root   *os.Root
	lim    Limits
	noSync bool // tests only: skip fsync where it is not what is tested
}

// beforeRename, when set (tests only), runs before a write's rename and
// fails it with its error.
var beforeRename func() error

// Open opens the workspace at dir. lim may be nil.
func Open(dir string, lim *Limits) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	w := &Workspace{dir: real, root: root}
	if lim != nil {
		w.lim = *lim
	}
	if w.lim.MaxReadBytes <= 0 {
		w.lim.MaxReadBytes = DefaultMaxReadBytes
	}
	if w.lim.MaxWriteBytes <= 0 {
		w.lim.MaxWriteBytes = DefaultMaxWriteBytes
	}
	return w, nil
}

// Dir is the workspace's absolute directory, links resolved.
func (w *Workspace) Dir() string { return w.dir }

// Limits returns the limits in force.
func (w *Workspace) Limits() Limits { return w.lim }

// FS is the workspace as an fs.FS, resolved beneath the root like every
// other access (for fs.WalkDir).
func (w *Workspace) FS() fs.FS { return w.root.FS() }

// Close releases the root directory's descriptor.
func (w *Workspace) Close() error { return w.root.Close() }

// Rel maps name, absolute or relative to the workspace, to its
// workspace-relative, slash-separated form ("." for the root), lexically:
// links are not followed here (the kernel follows them, beneath the root,
// when the file is opened). A name that leaves the workspace lexically is
// ErrOutside.
func (w *Workspace) Rel(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty path: %w", fs.ErrInvalid)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("path with a NUL byte: %w", fs.ErrInvalid)
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.dir, p)
	}
	rel, err := filepath.Rel(w.dir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s: %w", name, ErrOutside)
	}
	return filepath.ToSlash(rel), nil
}

// wrap turns os.Root's escape errors into ErrOutside.
func wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "path escapes from parent") || errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("%s: %w", name, ErrOutside)
	}
	return err
}

// openRegular opens rel (workspace-relative) for reading without blocking
// and returns it only if it is a regular file, with the real relative path
// Check is given.
func (w *Workspace) openRegular(rel string) (*os.File, string, error) {
	f, err := w.root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK|oNoCtty, 0)
	if err != nil {
		return nil, "", wrap(rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, "", notRegular(rel, fi.Mode())
	}
	real, err := w.realRel(f, rel)
	if err != nil {
		f.Close()
		return nil, "", err
	}
	return f, real, nil
}

// realRel is the workspace-relative path of the open f, read back from its
// descriptor where the platform can (fallback: the name it was opened by).
func (w *Workspace) realRel(f *os.File, fallback string) (string, error) {
	p, ok, err := fdPath(f)
	if err != nil {
		return "", fmt.Errorf("%s: the path of the opened file: %w", fallback, err)
	}
	if !ok {
		return fallback, nil
	}
	rel, err := filepath.Rel(w.dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w", fallback, ErrOutside)
	}
	return filepath.ToSlash(rel), nil
}

// ErrLink: a write would make a directory through a link that leads
// nowhere (a dangling link on its way), where no policy can see where it
// would land.
var ErrLink = errors.New("a dangling link on the way")

// makeMissing makes the missing directories of dir (workspace-relative,
// slash-separated) after check, if not nil, allowed the path the write
// would reach: the real path of dir's deepest existing directory, then the
// names still to be made, then base. The directories are made one by one
// from that very directory, by descriptor, each opened without following a
// link: a directory swapped for a link while they are made stops it
// (ErrLink), and nothing is made anywhere else. A dangling link on the way
// is ErrLink too: the write would land wherever it points. (A directory
// the policy denies would otherwise be made before the check that denies
// writing in it.)
func (w *Workspace) makeMissing(dir, base string, check Check) error {
	existing, missing := deepestExisting(dir, "/", ".", func(p string) error {
		_, err := w.root.Lstat(filepath.FromSlash(p))
		return err
	})
	if existing != "." || len(missing) == 0 {
		fi, err := w.root.Lstat(filepath.FromSlash(existing))
		switch {
		case err == nil && fi.IsDir():
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			target, err := w.root.Stat(filepath.FromSlash(existing))
			switch {
			case err == nil && target.IsDir(): // a link to a directory: followed, beneath the root
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("%s: %w", existing, ErrLink)
			case err == nil:
				return notRegular(existing, target.Mode())
			default:
				return wrap(existing, err)
			}
		case err == nil:
			return fmt.Errorf("%s: not a directory: %w", existing, fs.ErrInvalid)
		default:
			return wrap(existing, err)
		}
	}
	if len(missing) == 0 {
		return nil // nothing to make: the check after opening dir decides
	}
	d, real, err := w.openDir(existing)
	if err != nil {
		return err
	}
	defer d.Close()
	if check != nil {
		if err := check(path.Join(real, path.Join(missing...), base)); err != nil {
			return err
		}
	}
	df, err := d.Open(".")
	if err != nil {
		return wrap(existing, err)
	}
	defer df.Close()
	if err := mkdirChain(d, df, missing); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// deepestExisting splits p, a clean path of elements separated by sep,
// into its deepest prefix that lstat finds (root when none: "/" or "."),
// and the names of the missing elements after it. When lstat fails on p
// with anything but fs.ErrNotExist, or finds it, p is that prefix and
// nothing is missing: the caller sees the failure again.
//
// A path that exists implies each of its prefixes does, so the prefix is
// found by galloping and bisecting on the number of elements: O(log n)
// lstat calls, of the existing prefix's length at most, where walking up
// one element at a time costs O(n) calls of O(n) bytes each, which a peer
// naming deep missing paths turns into CPU squared in its request's bytes
// (issue 33, finding 4).
func deepestExisting(p, sep, root string, lstat func(string) error) (existing string, missing []string) {
	if err := lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	rest := p
	if root != "." {
		if rest = strings.TrimPrefix(p, root); rest == p {
			return p, nil
		}
	}
	if rest == "" || rest == "." {
		return p, nil
	}
	// ends[k] is the length of rest's first k+1 elements.
	var ends []int
	for i := 0; i < len(rest); i++ {
		if rest[i] == sep[0] {
			ends = append(ends, i)
		}
	}
	ends = append(ends, len(rest))
	prefix := func(k int) string { // the first k elements, k ≥ 1
		if root == "." {
			return rest[:ends[k-1]]
		}
		return root + rest[:ends[k-1]]
	}
	// Invariant: the first lo elements exist (0: the root), the first hi
	// do not. Galloping from the root first bounds the bytes looked up by
	// four times the deepest existing prefix's (a peer's missing path is
	// deep in what does not exist, rarely in what does).
	lo, hi := 0, len(ends)
	for k := 1; k < hi; k *= 2 {
		if lstat(prefix(k)) != nil {
			hi = k
			break
		}
		lo = k
	}
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if lstat(prefix(mid)) == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	existing = root
	if lo > 0 {
		existing = prefix(lo)
	}
	tail := rest
	if lo > 0 {
		tail = rest[ends[lo-1]+1:]
	}
	return existing, strings.Split(tail, sep)
}

// afterMkdir, when set (tests only), runs after each directory a write
// makes, with its name.
var afterMkdir func(name string)

// openDir opens the directory dir, beneath the root, and returns it with
// its real workspace-relative path. The caller closes it.
func (w *Workspace) openDir(dir string) (*os.Root, string, error) {
	d, err := w.root.OpenRoot(filepath.FromSlash(dir))
	if err != nil {
		return nil, "", wrap(dir, err)
	}
	df, err := d.Open(".")
	if err != nil {
		d.Close()
		return nil, "", wrap(dir, err)
	}
	defer df.Close()
	real, err := w.realRel(df, dir)
	if err != nil {
		d.Close()
		return nil, "", err
	}
	return d, real, nil
}

// notRegular is the error for rel, of mode m, which is not a regular file.
func notRegular(rel string, m fs.FileMode) error {
	if m.IsDir() {
		return fmt.Errorf("%s: %w (%w)", rel, ErrIsDir, ErrNotRegular)
	}
	return fmt.Errorf("%s (%s): %w", rel, kind(m), ErrNotRegular)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a link"
	}
	return "not a regular file"
}

// ReadRange selects lines of a read: Line counts from 1 (0 means 1),
// Limit is the most lines returned (0 or less means no bound).
type ReadRange struct {
	Line, Limit int64
}

// ReadText reads the UTF-8 text of the regular file name (absolute or
// workspace-relative), the lines rng selects. check, if not nil, decides on
// the real path before anything is read. The text returned is at most
// Limits.MaxReadBytes, else ErrTooLarge; lines before rng.Line are skipped
// without being kept.
func (w *Workspace) ReadText(name string, rng ReadRange, check Check) (string, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return "", err
	}
	f, real, err := w.openRegular(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if check != nil {
		if err := check(real); err != nil {
			return "", err
		}
	}
	text, err := readLines(f, rng, w.lim.MaxReadBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	return text, nil
}

// readLines reads the lines rng selects from r, at most max bytes of them.
func readLines(r io.Reader, rng ReadRange, max int64) (string, error) {
	line := max64(rng.Line, 1)
	br := bufio.NewReaderSize(r, 64<<10)
	// Skip whole lines before the first wanted one.
	for n := int64(1); n < line; {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			n++
		}
		if err == io.EOF {
			return "", nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return "", err
		}
	}
	var out []byte
	lines := int64(0)
	for rng.Limit <= 0 || lines < rng.Limit {
		chunk, err := br.ReadSlice('\n')
		if int64(len(out))+int64(len(chunk)) > max {
			return "", fmt.Errorf("more than %d bytes: %w", max, ErrTooLarge)
		}
		out = append(out, chunk...)
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			lines++
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return "", err
		}
	}
	if !utf8.Valid(out) {
		return "", ErrNotText
	}
	return string(out), nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// ReadFile reads the whole regular file name, at most
// Limits.MaxReadBytes, checked as ReadText is; it does not require text.
func (w *Workspace) ReadFile(name string, check Check) ([]byte, error) {
	return w.ReadFileLimit(name, w.lim.MaxReadBytes, check)
}

// ReadFileLimit is ReadFile with a cap of its own (at most
// Limits.MaxReadBytes).
func (w *Workspace) ReadFileLimit(name string, max int64, check Check) ([]byte, error) {
	max = min(max, w.lim.MaxReadBytes)
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	f, real, err := w.openRegular(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if check != nil {
		if err := check(real); err != nil {
			return nil, err
		}
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", rel, max, ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", rel, max, ErrTooLarge)
	}
	return data, nil
}

// WriteFile replaces (or creates) the regular file name, absolute or
// workspace-relative, with data, creating missing directories (0755). The
// target's directory is opened once, beneath the root; check, if not nil,
// decides on its real path plus the file's name before anything is
// written, and, when directories are missing, on the path they would
// make before they are made (makeMissing: never through a link, so a write
// that is denied makes nothing, a dangling link on the way is ErrLink). The data goes to a temporary file in that
// directory (".NAME.*.tmp"), synced, then renamed over the target, keeping
// an existing file's permissions (new files get 0644); on any failure the
// temporary file is removed. An existing target that is not a regular
// file (a directory, a FIFO, ...) is ErrNotRegular; a link at the target is
// replaced, not followed. data over Limits.MaxWriteBytes is ErrTooLarge,
// and nothing is touched.
func (w *Workspace) WriteFile(name string, data []byte, check Check) (err error) {
	if int64(len(data)) > w.lim.MaxWriteBytes {
		return fmt.Errorf("%s: %d bytes, more than %d: %w", name, len(data), w.lim.MaxWriteBytes, ErrTooLarge)
	}
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return notRegular(name, fs.ModeDir)
	}
	dir, base := path.Split(rel)
	dir = path.Clean(dir)
	if err := w.makeMissing(dir, base, check); err != nil {
		return err
	}
	d, realDir, err := w.openDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if check != nil {
		if err := check(path.Join(realDir, base)); err != nil {
			return err
		}
	}
	mode := fs.FileMode(0o644)
	if fi, err := d.Lstat(base); err == nil {
		switch {
		case fi.Mode().IsRegular():
			mode = fi.Mode().Perm()
		case fi.Mode()&fs.ModeSymlink != 0:
		default:
			return notRegular(rel, fi.Mode())
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return wrap(rel, err)
	}
	tmp, f, err := createTemp(d, base, mode)
	if err != nil {
		return wrap(rel, err)
	}
	defer func() {
		if err != nil {
			_ = d.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // the umask may have narrowed it
	}
	if err == nil && !w.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if beforeRename != nil {
		if err = beforeRename(); err != nil {
			return err
		}
	}
	if err = d.Rename(tmp, base); err != nil {
		return wrap(rel, err)
	}
	if !w.noSync {
		if df, err := d.Open("."); err == nil {
			_ = df.Sync() // the rename itself, best effort
			df.Close()
		}
	}
	return nil
}

// createTemp creates a new file ".BASE.RANDOM.tmp" in d.
func createTemp(d *os.Root, base string, mode fs.FileMode) (string, *os.File, error) {
	for range 100 {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := "." + base + "." + hex.EncodeToString(b[:]) + ".tmp"
		if len(name) > 255 {
			name = "." + hex.EncodeToString(b[:]) + ".tmp"
		}
		f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("no unused temporary name")
}

// Stat describes name (links beneath the root followed).
func (w *Workspace) Stat(name string) (fs.FileInfo, error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(filepath.FromSlash(rel))
	return fi, wrap(rel, err)
}

// Dirname returns the absolute path of the directory name (absolute or
// workspace-relative) names, after checking through the root that it is a
// directory inside the workspace. The path is the real one (links resolved
// on Linux), so a link swapped in for name later does not change it; but
// the directory on that path can itself be replaced by a link afterwards.
// To start a command in the directory that was checked, use OpenDir.
func (w *Workspace) Dirname(name string) (string, error) {
	f, path, err := w.OpenDir(name)
	if err != nil {
		return "", err
	}
	f.Close()
	return path, nil
}

// OpenDir opens the directory name (absolute or workspace-relative) names,
// through the root, and returns it with its real absolute path (as
// Dirname's). It is for a command's working directory: a command started
// in the open directory (terminal.Spec.DirFile) runs in it, wherever its
// path leads by then. The caller closes f.
func (w *Workspace) OpenDir(name string) (f *os.File, path string, err error) {
	rel, err := w.Rel(name)
	if err != nil {
		return nil, "", err
	}
	f, err = w.root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, "", wrap(rel, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !fi.IsDir() {
		return nil, "", fmt.Errorf("%s: not a directory: %w", rel, fs.ErrInvalid)
	}
	real, err := w.realRel(f, rel)
	if err != nil {
		return nil, "", err
	}
	return f, filepath.Join(w.dir, filepath.FromSlash(real)), nil
}

// Resolve maps name (absolute or workspace-relative) to the
// workspace-relative path it leads to now, following links through the
// deepest part of it that exists; name need not exist. It is for
// classifying the paths an agent names (a permission request's), not for
// access: the answer can change the moment after. Anything it cannot
// resolve (a loop, a permission error) is ErrOutside, so a caller that
// denies what is outside fails closed.
func (w *Workspace) Resolve(name string) (string, error) {
	if _, err := w.Rel(name); err != nil && !errors.Is(err, ErrOutside) {
		return "", err
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.dir, p)
	}
	p = filepath.Clean(p)
	sep := string(filepath.Separator)
	existing, names := deepestExisting(p, sep, filepath.VolumeName(p)+sep, func(p string) error {
		_, err := os.Lstat(p)
		return err
	})
	if _, err := os.Lstat(existing); err != nil && (len(names) == 0 || !errors.Is(err, fs.ErrNotExist)) {
		return "", fmt.Errorf("%s: %v: %w", name, err, ErrOutside)
	}
	missing := filepath.Join(names...)
	real, err := realPath(existing)
	if err != nil {
		return "", fmt.Errorf("%s: %v: %w", name, err, ErrOutside)
	}
	rel, err := filepath.Rel(w.dir, filepath.Join(real, missing))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w", name, ErrOutside)
	}
	return filepath.ToSlash(rel), nil
}
