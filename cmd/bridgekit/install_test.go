package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

// The repository's modules as they are published: the SDK, the generator
// and this command, at one version. cmd/bridgekit's go.mod requires the
// other two at that version (see docs/bridgekit/README.md, "Installing").
var published = []struct{ path, dir string }{
	{"github.com/bridgekit/bridgekit", "."},
	{"github.com/bridgekit/bridgekit/generator", "generator"},
	{"github.com/bridgekit/bridgekit/cmd/bridgekit", "cmd/bridgekit"},
}

// releaseVersion returns the version cmd/bridgekit's go.mod requires the
// SDK and the generator at, and fails unless it is a real release version
// (no pseudo-version) with no replace directive: what `go install …@v`
// needs of the module it installs.
func releaseVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Replace) > 0 {
		t.Fatalf("cmd/bridgekit/go.mod has replace directives (go install …@version refuses them): %v", mf.Replace[0].Old)
	}
	var version string
	for _, p := range published[:2] {
		var v string
		for _, r := range mf.Require {
			if r.Mod.Path == p.path {
				v = r.Mod.Version
			}
		}
		switch {
		case v == "":
			t.Fatalf("cmd/bridgekit/go.mod does not require %s", p.path)
		case !semver.IsValid(v) || module.IsPseudoVersion(v) || semver.Prerelease(v) != "":
			t.Fatalf("cmd/bridgekit/go.mod requires %s %s: not a release version", p.path, v)
		case version != "" && v != version:
			t.Fatalf("cmd/bridgekit/go.mod requires the SDK and the generator at different versions (%s, %s)", version, v)
		}
		version = v
	}
	return version
}

// TestWorkspaceTiesTheModules: the go.work at the root uses every module of
// the repository and replaces the released versions the nested modules
// require by the checkout, so that a clone builds and tests as it is.
func TestWorkspaceTiesTheModules(t *testing.T) {
	version := releaseVersion(t)
	data, err := os.ReadFile("../../go.work")
	if err != nil {
		t.Fatal(err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, u := range wf.Use {
		used[filepath.Clean(u.Path)] = true
	}
	mods, err := filepath.Glob("../../*/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../*/*/go.mod")
	mods = append(append(mods, "../../go.mod"), more...)
	for _, m := range mods {
		dir, _ := filepath.Rel("../..", filepath.Dir(m))
		if strings.HasPrefix(dir, "testdata") {
			continue
		}
		if !used[dir] {
			t.Errorf("go.work does not use %s", dir)
		}
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		mf, err := modfile.Parse(m, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range mf.Replace {
			t.Errorf("%s replaces %s: the workspace does that", m, r.Old.Path)
		}
		for _, r := range mf.Require {
			if strings.HasPrefix(r.Mod.Path, "github.com/bridgekit/bridgekit") && r.Mod.Version != version {
				t.Errorf("%s requires %s %s, want %s like cmd/bridgekit", m, r.Mod.Path, r.Mod.Version, version)
			}
		}
	}
	replaced := map[string]string{}
	for _, r := range wf.Replace {
		replaced[r.Old.Path+"@"+r.Old.Version] = filepath.Clean(r.New.Path)
	}
	for _, p := range published[:2] {
		if got := replaced[p.path+"@"+version]; got != p.dir {
			t.Errorf("go.work replaces %s@%s by %q, want %q", p.path, version, got, p.dir)
		}
	}
}

// installLines returns the lines of the README (and of the command's docs,
// which must agree) that install the command and add the SDK to a module.
func installLines(t *testing.T) (install, get string) {
	t.Helper()
	find := func(file, prefix string) string {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if i := strings.Index(line, "#"); i > 0 {
				line = strings.TrimSpace(line[:i])
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
		t.Fatalf("%s has no line starting %q", file, prefix)
		return ""
	}
	install = find("../../README.md", "go install github.com/bridgekit/bridgekit/cmd/bridgekit@")
	for _, doc := range []string{"../../docs/bridgekit/README.md", "../../docs/bridgekit/trace.md"} {
		if l := find(doc, "go install github.com/bridgekit/bridgekit/cmd/bridgekit@"); l != install {
			t.Errorf("%s installs with %q, the README with %q", doc, l, install)
		}
	}
	return install, find("../../README.md", "go get github.com/bridgekit/bridgekit@")
}

// readmePrograms returns the README's whole Go programs (fenced go blocks
// that are a package main).
func readmePrograms(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatal("the README has no program")
	}
	return out
}

// publish writes module path at version, made of the files git lists in
// dir (tracked, and untracked ones not ignored: what a tag of this
// checkout would hold), into the file-based module proxy at proxy.
func publish(t *testing.T, proxy, path, version, dir string) {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = dir
	out, err := ls.Output()
	if err != nil {
		t.Fatalf("listing the files of %s: %v", dir, err)
	}
	var files []modzip.File
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		p := filepath.Join(dir, name)
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the working tree, or a symlink
		}
		files = append(files, dirFile{name: name, path: p, info: info})
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, module.Version{Path: path, Version: version}, files); err != nil {
		t.Fatalf("zipping %s: %v", path, err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		version + ".zip":  zip.Bytes(),
		version + ".mod":  gomod,
		version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339)),
		"list":            []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type dirFile struct {
	name, path string
	info       os.FileInfo
}

func (f dirFile) Path() string                 { return f.name }
func (f dirFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f dirFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

// TestInstallFromModuleProxy installs the command as a Go user does, with
// the README's own line, from a module proxy that holds this checkout's
// modules at the version cmd/bridgekit requires (a file-based GOPROXY in
// a temporary directory, before the real one for everything else), and
// runs it; then builds the README's programs in a module of an SDK user's
// that adds bridgekit with the README's go get line.
func TestInstallFromModuleProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command from a module proxy")
	}
	t.Parallel() // mostly the go command's time: compiling the command's dependencies once
	version := releaseVersion(t)
	installLine, getLine := installLines(t)
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	for _, p := range published {
		publish(t, proxy, p.path, version, filepath.Join("../..", p.dir))
	}
	// The modules it needs from elsewhere: this machine's module cache
	// first (itself a proxy's layout), then the proxy go env names.
	cache, upstream := goEnv(t, "GOMODCACHE"), goEnv(t, "GOPROXY")
	env := append(os.Environ(),
		// -trimpath: the build does not depend on where the module cache
		// is, so a second run finds it in the build cache.
		"GOWORK=off", "GOFLAGS=-mod=mod -modcacherw -trimpath",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download"))+","+upstream,
		// The checkout's modules are not in the checksum database.
		"GONOSUMDB=github.com/bridgekit/bridgekit",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOBIN="+filepath.Join(tmp, "bin"))
	goCmd := func(dir, line string) string {
		t.Helper()
		args := strings.Fields(line)
		if args[0] != "go" {
			t.Fatalf("%q is not a go command", line)
		}
		cmd := exec.Command("go", args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		begun := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s (in %s): %v\n%s", line, dir, err, out)
		}
		t.Logf("%s: %v", line, time.Since(begun).Round(time.Millisecond))
		return string(out)
	}

	outside := filepath.Join(tmp, "elsewhere")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	goCmd(outside, installLine)
	bin := filepath.Join(tmp, "bin", "bridgekit")
	// It runs, with the spec it embeds: the recorded traffic of a real
	// agent is valid.
	traces, _ := filepath.Glob("../../testdata/acp/traffic/codex-acp-*/turn.jsonl")
	if len(traces) == 0 {
		t.Fatal("no recorded traffic")
	}
	out, err := exec.Command(bin, "validate", "-json", traces[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"problems":0`) {
		t.Fatalf("the installed bridgekit validate %s: %v\n%s", traces[0], err, out)
	}
	t.Logf("%s, then bridgekit validate: %s", installLine, strings.TrimSpace(string(out)))

	user := filepath.Join(tmp, "user")
	if err := os.Mkdir(user, 0o755); err != nil {
		t.Fatal(err)
	}
	goCmd(user, "go mod init example.com/user")
	goCmd(user, getLine)
	for i, src := range readmePrograms(t) {
		d := filepath.Join(user, fmt.Sprintf("prog%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(user, "go build -o "+os.DevNull+" ./...")
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
