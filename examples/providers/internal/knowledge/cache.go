package knowledge

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// cacheFormat changes whenever the layout of cacheFile does.
const cacheFormat = 1

// cacheFile is what Options.CachePath holds (encoding/gob): every file's
// stat, digest, text, chunks and term frequencies, so a restart re-reads
// only what changed.
type cacheFile struct {
	Format    int
	Signature string
	BuiltAt   int64
	Files     []*fileEntry
}

// loadCache returns the cached snapshot, nil when there is no cache, or an
// error when the cache is unusable (the caller then starts afresh).
func loadCache(path, signature string) (*snapshot, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var c cacheFile
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&c); err != nil {
		return nil, fmt.Errorf("corrupt cache: %w", err)
	}
	if c.Format != cacheFormat || c.Signature != signature {
		return nil, fmt.Errorf("cache written with other settings (format %d, %q)", c.Format, c.Signature)
	}
	files := make(map[string]*fileEntry, len(c.Files))
	for _, e := range c.Files {
		if e == nil || e.Path == "" || files[e.Path] != nil {
			return nil, errors.New("corrupt cache: bad file entry")
		}
		files[e.Path] = e
	}
	s := build(files)
	s.builtAt = time.Unix(0, c.BuiltAt)
	return s, nil
}

// saveCache writes s to Options.CachePath atomically (a temporary file
// synced and renamed over it). A failure is logged, not returned: the
// cache only saves time.
func (ix *Index) saveCache(s *snapshot) {
	if ix.opt.CachePath == "" {
		return
	}
	if err := writeCache(ix.opt.CachePath, ix.signature(), s); err != nil {
		ix.log.Warn("knowledge: cannot write the index cache", "path", ix.opt.CachePath, "err", err)
	}
}

func writeCache(path, signature string, s *snapshot) (err error) {
	c := cacheFile{Format: cacheFormat, Signature: signature, BuiltAt: s.builtAt.UnixNano()}
	for _, e := range s.files {
		c.Files = append(c.Files, e)
	}
	slices.SortFunc(c.Files, func(a, b *fileEntry) int {
		if a.Path < b.Path {
			return -1
		}
		return 1
	})
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	if err = gob.NewEncoder(w).Encode(&c); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
