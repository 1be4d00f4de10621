//go:build !linux

package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const oNoCtty = 0

// fdPath is unknown here: the name the file was opened by stands for it.
func fdPath(*os.File) (string, bool, error) { return "", false, nil }

// mkdirChain makes names one inside the other in dir. Here it goes by
// name beneath the workspace's root (os.Root), which does not follow a
// link out of it, but may follow one swapped in meanwhile to elsewhere in
// it.
func mkdirChain(r *os.Root, _ *os.File, names []string) error {
	p := "."
	for _, n := range names {
		p = filepath.Join(p, n)
		if err := r.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if afterMkdir != nil {
			afterMkdir(n)
		}
		fi, err := r.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s changed while it was made: %w", n, ErrLink)
		}
	}
	return nil
}

// realPath is the path p leads to, every link followed.
func realPath(p string) (string, error) { return filepath.EvalSymlinks(p) }
