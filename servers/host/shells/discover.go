package shells

import (
	"bufio"
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/bridgekit/bridgekit/gen/harn"
)

// found is one shell before ids are assigned.
type found struct {
	path   string
	source harn.ShellSource
	conf   *Configured // nil for discovered shells
}

type discoverer struct {
	p     Platform
	goos  string
	ops   pathOps
	list  []found
	seen  map[string]bool
	confs []Configured
}

// discover lists the shells of the machine described by p, in discovery
// order, with unique ids.
func discover(p Platform, confs []Configured) []harn.Shell {
	goos := p.GOOS()
	d := &discoverer{
		p:     p,
		goos:  goos,
		ops:   pathOps{windows: goos == "windows"},
		seen:  map[string]bool{},
		confs: confs,
	}
	for i := range confs {
		c := &confs[i]
		path := c.Path
		if !d.ops.isAbs(path) {
			if lp, err := p.LookPath(path); err == nil && d.ops.isAbs(lp) {
				path = lp
			}
		}
		d.add(path, harn.ShellSourceConfigured, c)
	}
	if d.ops.windows {
		d.windows()
	} else {
		d.unix()
	}
	return d.shells()
}

func (d *discoverer) unix() {
	if v, ok := d.p.LookupEnv("SHELL"); ok {
		d.addDiscovered(strings.TrimSpace(v), harn.ShellSourceEnv, true)
	}
	if v, err := d.p.LoginShell(); err == nil {
		d.addDiscovered(strings.TrimSpace(v), harn.ShellSourceLogin, true)
	}
	if data, err := d.p.ReadFile("/etc/shells"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			// An entry is a path; anything after whitespace is not.
			if f := strings.Fields(line); len(f) > 0 {
				d.addDiscovered(f[0], harn.ShellSourceEtcShells, false)
			}
		}
	}
	if !d.anyAvailable() {
		d.add("/bin/sh", harn.ShellSourceFallback, nil)
	}
}

func (d *discoverer) windows() {
	root := "C:\\Windows"
	if v, ok := d.p.LookupEnv("SystemRoot"); ok && strings.TrimSpace(v) != "" {
		root = strings.TrimSpace(v)
	}
	sys32 := d.ops.join(root, "System32")

	// PowerShell 7+: the search path, then the default install location.
	if lp, err := d.p.LookPath("pwsh"); err == nil {
		d.addDiscovered(lp, harn.ShellSourceHost, false)
	} else if pf, ok := d.p.LookupEnv("ProgramFiles"); ok && pf != "" {
		if c := d.ops.join(pf, `PowerShell\7\pwsh.exe`); d.p.IsExecutable(c) {
			d.add(c, harn.ShellSourceHost, nil)
		}
	}
	// Windows PowerShell 5.x.
	if lp, err := d.p.LookPath("powershell"); err == nil {
		d.addDiscovered(lp, harn.ShellSourceHost, false)
	} else if c := d.ops.join(sys32, `WindowsPowerShell\v1.0\powershell.exe`); d.p.IsExecutable(c) {
		d.add(c, harn.ShellSourceHost, nil)
	}
	// cmd.exe: %ComSpec%, then the search path, then System32.
	cmd := d.ops.join(sys32, "cmd.exe")
	if v, ok := d.p.LookupEnv("ComSpec"); ok && strings.TrimSpace(v) != "" {
		d.addDiscovered(strings.TrimSpace(v), harn.ShellSourceEnv, false)
	} else if lp, err := d.p.LookPath("cmd"); err == nil {
		d.addDiscovered(lp, harn.ShellSourceHost, false)
	} else if d.p.IsExecutable(cmd) {
		d.add(cmd, harn.ShellSourceHost, nil)
	}
	if !d.anyAvailable() {
		d.add(cmd, harn.ShellSourceFallback, nil)
	}
}

// addDiscovered adds a discovered path. A relative path is looked up on the
// search path when lookPath is set and dropped otherwise, since a shell's
// path must be absolute.
func (d *discoverer) addDiscovered(path string, src harn.ShellSource, lookPath bool) {
	if path == "" {
		return
	}
	if !d.ops.isAbs(path) {
		if !lookPath {
			return
		}
		lp, err := d.p.LookPath(path)
		if err != nil || !d.ops.isAbs(lp) {
			return
		}
		path = lp
	}
	d.add(path, src, nil)
}

// add appends a shell unless it is a discovered duplicate of one already
// listed. Configured shells are always kept: a host may list one executable
// twice on purpose (say with different arguments).
func (d *discoverer) add(path string, src harn.ShellSource, conf *Configured) {
	if d.ops.isAbs(path) {
		path = d.ops.clean(path)
	}
	if d.ops.stem(path) == "" {
		return
	}
	k := d.key(path)
	if conf == nil && d.seen[k] {
		return
	}
	d.seen[k] = true
	d.list = append(d.list, found{path: path, source: src, conf: conf})
}

// key identifies the shell a path runs. Two paths are the same shell when
// they start the same file under the same name: /bin/bash and
// /usr/bin/bash on a merged-/usr system, or a Homebrew link and its target.
// /bin/sh -> dash and /bin/rbash -> bash stay distinct, because sh-like
// shells change behaviour with the name they are started as.
func (d *discoverer) key(path string) string {
	k := path
	if r, err := d.p.EvalSymlinks(path); err == nil && d.ops.sameName(d.ops.base(r), d.ops.base(path)) {
		k = r
	} else if dir, name := d.ops.split(path); dir != "" {
		if r, err := d.p.EvalSymlinks(dir); err == nil {
			k = d.ops.join(r, name)
		}
	}
	if d.ops.isAbs(k) {
		k = d.ops.clean(k)
	}
	if d.ops.windows {
		k = strings.ToLower(k)
	}
	return k
}

func (d *discoverer) anyAvailable() bool {
	for _, f := range d.list {
		if d.p.IsExecutable(f.path) {
			return true
		}
	}
	return false
}

// shells assigns ids and describes every listed shell.
//
// Id rule: a configured shell with an ID keeps it. Every other shell takes
// the file name of its executable (on Windows lower-cased and without .exe).
// When that id is taken, by a configured id or by an earlier shell in
// discovery order, the shell becomes "<name>-2", "<name>-3", ... (the
// smallest free number), and its label gains the path in parentheses so a
// picker can tell the two apart.
func (d *discoverer) shells() []harn.Shell {
	taken := map[string]bool{}
	for _, c := range d.confs {
		if c.ID != "" {
			taken[c.ID] = true
		}
	}
	out := make([]harn.Shell, 0, len(d.list))
	for _, f := range d.list {
		stem := d.ops.stem(f.path)
		k := classify(stem)
		name := stem
		if d.ops.windows {
			name = strings.ToLower(stem)
		}
		parent := d.ops.base(d.ops.dir(f.path))
		s := harn.Shell{
			Label:               k.label(stem, parent),
			Path:                f.path,
			Platform:            d.goos,
			Available:           d.p.IsExecutable(f.path),
			SupportsLogin:       k == kindSh,
			SupportsInteractive: k.supportsInteractive(),
			DefaultArgs:         k.defaultArgs(),
			LoginArgs:           k.loginArgs(),
			Source:              f.source,
		}
		id := ""
		if c := f.conf; c != nil {
			id = c.ID
			if c.Label != "" {
				s.Label = c.Label
			}
			if c.DefaultArgs != nil {
				s.DefaultArgs = slices.Clone(c.DefaultArgs)
			}
			if c.LoginArgs != nil {
				s.LoginArgs = slices.Clone(c.LoginArgs)
				s.SupportsLogin = len(c.LoginArgs) > 0
			}
		}
		if id == "" {
			id = name
			for n := 2; taken[id]; n++ {
				id = name + "-" + strconv.Itoa(n)
			}
			if id != name && (f.conf == nil || f.conf.Label == "") {
				s.Label += " (" + f.path + ")"
			}
		}
		taken[id] = true
		s.ID = id
		out = append(out, s)
	}
	return out
}
