package shells

import (
	"path"
	"strings"
)

// pathOps manipulates paths by the rules of the platform being described,
// not of the machine running the code, so Windows paths are handled
// correctly when a test describes Windows on Linux.
type pathOps struct{ windows bool }

func (p pathOps) isSep(c byte) bool { return c == '/' || (p.windows && c == '\\') }

// volumeLen is the length of a leading Windows drive ("C:") or UNC prefix
// ("\\server\share").
func (p pathOps) volumeLen(s string) int {
	if !p.windows {
		return 0
	}
	if len(s) >= 2 && s[1] == ':' && isLetter(s[0]) {
		return 2
	}
	if len(s) >= 2 && p.isSep(s[0]) && p.isSep(s[1]) {
		// \\server\share
		n := 2
		for n < len(s) && !p.isSep(s[n]) {
			n++
		}
		if n < len(s) {
			n++
			for n < len(s) && !p.isSep(s[n]) {
				n++
			}
		}
		return n
	}
	return 0
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func (p pathOps) isAbs(s string) bool {
	if !p.windows {
		return strings.HasPrefix(s, "/")
	}
	if len(s) >= 2 && p.isSep(s[0]) && p.isSep(s[1]) {
		return true
	}
	return len(s) >= 3 && s[1] == ':' && isLetter(s[0]) && p.isSep(s[2])
}

// clean tidies a path for reporting: path.Clean on Unix; on Windows forward
// slashes become backslashes and repeated separators collapse.
func (p pathOps) clean(s string) string {
	if !p.windows {
		return path.Clean(s)
	}
	v := p.volumeLen(s)
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(s[:v], "/", `\`))
	prevSep := false
	for i := v; i < len(s); i++ {
		c := s[i]
		if p.isSep(c) {
			if prevSep {
				continue
			}
			prevSep = true
			b.WriteByte('\\')
			continue
		}
		prevSep = false
		b.WriteByte(c)
	}
	out := b.String()
	if len(out) > v+1 && strings.HasSuffix(out, `\`) {
		out = out[:len(out)-1]
	}
	return out
}

// split returns the directory and the final element of s.
func (p pathOps) split(s string) (dir, base string) {
	v := p.volumeLen(s)
	i := len(s) - 1
	for i >= v && !p.isSep(s[i]) {
		i--
	}
	dir, base = s[:i+1], s[i+1:]
	if len(dir) > v+1 {
		dir = dir[:len(dir)-1]
	}
	return dir, base
}

func (p pathOps) base(s string) string { _, b := p.split(s); return b }

func (p pathOps) dir(s string) string { d, _ := p.split(s); return d }

func (p pathOps) join(dir, name string) string {
	sep := "/"
	if p.windows {
		sep = `\`
	}
	if dir == "" {
		return name
	}
	if p.isSep(dir[len(dir)-1]) {
		return dir + name
	}
	return dir + sep + name
}

// sameName compares file names the way the file system does (Windows file
// names are case-insensitive).
func (p pathOps) sameName(a, b string) bool {
	if p.windows {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// stem is the name of an executable without a Windows executable extension.
func (p pathOps) stem(s string) string {
	b := p.base(s)
	if p.windows {
		if i := strings.LastIndexByte(b, '.'); i > 0 {
			switch strings.ToLower(b[i:]) {
			case ".exe", ".com", ".bat", ".cmd":
				b = b[:i]
			}
		}
	}
	return b
}
