package policy_test

import (
	"path"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/policy"
)

// FuzzOverlap: Overlap never says no when a path matches both patterns
// (Check's soundness rests on it), and never panics.
func FuzzOverlap(f *testing.F) {
	for _, s := range [][3]string{
		{"src/**", "**/*.go", "src/a.go"}, {"*", "src/**", "src"}, {".*/**", "**/config", ".git/config"},
		{"a/[bc]/x", "a/b*/x", "a/b/x"}, {"**/**", "a/**/b", "a/b"}, {"[!a]*", "?", "b"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, name string) {
		if len(a) > 200 || len(b) > 200 || len(name) > 200 {
			return
		}
		ab, ba := policy.Overlap(a, b), policy.Overlap(b, a)
		if ab != ba {
			t.Fatalf("Overlap(%q, %q) = %v, the other way %v", a, b, ab, ba)
		}
		if permission.CheckPathGlob(a) != nil || permission.CheckPathGlob(b) != nil {
			return
		}
		if permission.Glob(a, name) && permission.Glob(b, name) && !ab {
			t.Fatalf("%q matches %q and %q, but Overlap says they do not meet", name, a, b)
		}
	})
}

// programs are commands FuzzCheck allows: code runners (reaching the
// whole workspace or not) and commands that run nothing of it.
var programs = []string{"git status", "go test", "cargo build", "make test", "npm test", "pytest", "tox", "env", "./run.sh", "sh x", "ls", "echo", "go version", "wc"}

// FuzzCheck: a terminal.allow rule for a program that runs workspace code,
// in a directory cwd, beside a write of the path w, is found exactly when
// the package's doc says the program reaches w from cwd: w anywhere for
// git, go and cargo; else w below cwd, a file in cwd or a directory above
// it, or below a hidden directory or node_modules there. trust silences
// it.
func FuzzCheck(f *testing.F) {
	f.Add(uint8(0), "src", "src/.git/config", false)
	f.Add(uint8(3), "build", "src/Makefile", false)
	f.Add(uint8(3), "a/b", "Makefile", false)
	f.Add(uint8(4), "a/b", "node_modules/x/index.js", false)
	f.Add(uint8(4), "a/b", "a/.npmrc", false)
	f.Add(uint8(5), "x", "x/conftest.py", true)
	f.Add(uint8(10), "x", "x/y", false)
	f.Fuzz(func(t *testing.T, prog uint8, cwd, w string, trust bool) {
		clean := func(p string) string { // a path of plain segments
			var segs []string
			for s := range strings.SplitSeq(p, "/") {
				s = strings.Map(func(r rune) rune {
					if r >= 'a' && r <= 'z' || r == '.' || r == '_' {
						return r
					}
					return -1
				}, s)
				if s != "" && s != "." && s != ".." && len(segs) < 8 {
					segs = append(segs, s)
				}
			}
			return strings.Join(segs, "/")
		}
		cwd, w = clean(cwd), clean(w)
		if cwd == "" || w == "" {
			return
		}
		cmd := programs[int(prog)%len(programs)]
		doc, err := json.Marshal(map[string]any{
			"fs":       map[string]any{"write": []string{w}},
			"terminal": map[string]any{"allow": []any{map[string]any{"command": cmd, "cwd": []string{cwd}, "trust_workspace_code": trust}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := policy.Parse(doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		why, whole := policy.CodeRunner(strings.Fields(cmd))
		want := why != "" && !trust && (whole || reachable(cwd, w))
		if got := len(p.Check()) > 0; got != want {
			t.Fatalf("%s: findings %v, want %v", doc, p.Check(), want)
		}
	})
}

// reachable is the doc's model of where a command run in cwd reads what
// it runs.
func reachable(cwd, w string) bool {
	if w == cwd || strings.HasPrefix(w, cwd+"/") {
		return true
	}
	for dir := cwd; ; dir = path.Dir(dir) {
		if dir == "." {
			dir = ""
		}
		rest, ok := strings.CutPrefix(w, dir)
		if dir != "" {
			rest, ok = strings.CutPrefix(w, dir+"/")
		}
		if ok {
			first, below, nested := strings.Cut(rest, "/")
			if !nested || strings.HasPrefix(first, ".") || first == "node_modules" && below != "" {
				return true
			}
		}
		if dir == "" {
			return false
		}
	}
}

// FuzzParse: whatever the file, Parse fails or gives a policy that Check
// and every decision read without panicking.
func FuzzParse(f *testing.F) {
	f.Add(`{"fs": {"write": ["src/**"]}, "terminal": {"allow": ["echo **", "git status", {"command": "make", "cwd": ["b/**"]}]}}`)
	f.Add(`{"permissions": [{"id": "x", "kinds": ["execute"], "commands": ["go test **"], "decision": "allow"}]}`)
	f.Add(`{"terminal": {"allow": [{"command": "a && b", "trust_workspace_code": true}]}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		p, err := policy.Parse([]byte(doc))
		if err != nil {
			return
		}
		for _, fd := range p.Check() {
			if fd.Command == "" || fd.Write == "" || fd.Why == "" {
				t.Fatalf("%s: an empty finding %+v", doc, fd)
			}
		}
		p.FSAccess("src/a.go", true)
		p.Commands().MatchIn("src", "git", []string{"status"})
		p.Commands().MatchShellLineIn(".", "git status")
	})
}
