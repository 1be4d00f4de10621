package shells

import (
	"errors"
	"path"
	"strings"
)

// fakePlatform describes an imaginary machine. Unix paths may go through
// symbolic links (links maps a link's absolute path to its target, relative
// targets being relative to the link's directory); Windows paths never do.
type fakePlatform struct {
	goos     string
	env      map[string]string
	exec     map[string]bool   // executable regular files (link targets)
	files    map[string]string // readable files
	login    string            // "" means LoginShell fails
	links    map[string]string
	lookPath map[string]string // name -> absolute path
}

var errFakeNotFound = errors.New("fake: not found")

func (f *fakePlatform) GOOS() string { return f.goos }

func (f *fakePlatform) LookupEnv(k string) (string, bool) { v, ok := f.env[k]; return v, ok }

func (f *fakePlatform) IsExecutable(p string) bool {
	r, err := f.EvalSymlinks(p)
	return err == nil && f.exec[r]
}

func (f *fakePlatform) ReadFile(p string) ([]byte, error) {
	if s, ok := f.files[p]; ok {
		return []byte(s), nil
	}
	return nil, errFakeNotFound
}

func (f *fakePlatform) LoginShell() (string, error) {
	if f.login == "" {
		return "", errFakeNotFound
	}
	return f.login, nil
}

func (f *fakePlatform) LookPath(name string) (string, error) {
	if p, ok := f.lookPath[name]; ok {
		return p, nil
	}
	return "", errFakeNotFound
}

func (f *fakePlatform) EvalSymlinks(p string) (string, error) {
	if f.goos == "windows" || !strings.HasPrefix(p, "/") {
		return p, nil
	}
	p = path.Clean(p)
	for range 40 {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur, changed := "", false
		for i, part := range parts {
			cur += "/" + part
			t, ok := f.links[cur]
			if !ok {
				continue
			}
			if !strings.HasPrefix(t, "/") {
				t = path.Join(path.Dir(cur), t)
			}
			p = path.Join(t, strings.Join(parts[i+1:], "/"))
			changed = true
			break
		}
		if !changed {
			return p, nil
		}
	}
	return "", errors.New("fake: too many links")
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}
