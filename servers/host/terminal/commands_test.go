package terminal

import (
	"regexp"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	c, err := NewCommands([]string{"echo **", "git status", "go test ./pkg/*", "ls -?", "echo a && echo b", " printf '%s' x ", "rm *"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"echo"}, true},
		{[]string{"echo", "a", "b c"}, true},
		{[]string{"/bin/echo", "a"}, false},
		{[]string{"git", "status"}, true},
		{[]string{"git", "status", "--short"}, false},
		{[]string{"go", "test", "./pkg/a/b"}, true},
		{[]string{"go", "test", "./cmd/a"}, false},
		{[]string{"go", "test"}, false},
		{[]string{"ls", "-l"}, true},
		{[]string{"ls", "-la"}, false},
		{[]string{"rm", "-rf", "/"}, false},
	} {
		if _, got := c.Match(tc.argv[0], tc.argv[1:]); got != tc.want {
			t.Errorf("%q: allowed %v", tc.argv, got)
		}
	}
	for _, tc := range []struct {
		line        string
		want, exact bool
	}{
		{"echo hello world", true, false},
		{"echo a && echo b", true, true},
		{" echo a && echo b\t", true, true},
		{"printf '%s' x", true, true},
		{"go test x; rm -rf ~", false, false},
		{"go test $(id)", false, false},
		{"rm *", false, false},
		{"echo =rm", false, false},
		{"", false, false},
	} {
		if _, exact, ok := c.MatchShellLine(tc.line); ok != tc.want || exact != tc.exact {
			t.Errorf("%q: allowed %v exactly %v", tc.line, ok, exact)
		}
	}
	if _, err := NewCommands([]string{" "}); err == nil {
		t.Error("an empty pattern")
	}
	var none *Commands
	if _, ok := none.Match("echo", nil); ok {
		t.Error("nil Commands allowed")
	}
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"a*b", "ab", true}, {"a*b", "axxb", true}, {"a*b", "axxbc", false},
		{"*.go", "x/y.go", true}, {"?", "é", true}, {"a?c", "ac", false}, {"**", "anything", true},
	} {
		if got := Wildcard(tc.pat, tc.s); got != tc.want {
			t.Errorf("Wildcard(%q, %q) = %v", tc.pat, tc.s, got)
		}
	}
}

// FuzzShellLine: every line a wildcard pattern allows is plain words
// (checked by a regular expression, apart from PlainShellLine); any other
// allowed line is exactly the wildcard-free pattern.
func FuzzShellLine(f *testing.F) {
	for _, s := range []string{"echo a", "go test ./...", "echo a && echo b", "go test x; rm -rf ~", "echo $(id)", "echo =x", "echo a\nb", "echo\u00a0a", "git status"} {
		f.Add(s)
	}
	c, _ := NewCommands([]string{"echo **", "go test *", "git status", "echo a && echo b"})
	plain := regexp.MustCompile(`^[ \t]*([A-Za-z0-9_./:+-][A-Za-z0-9_./:+=-]*[ \t]+)*([A-Za-z0-9_./:+-][A-Za-z0-9_./:+=-]*)?[ \t]*$`)
	f.Fuzz(func(t *testing.T, line string) {
		p, exact, ok := c.MatchShellLine(line)
		if !ok {
			return
		}
		if exact {
			if strings.Trim(line, " \t") != p || strings.ContainsAny(p, "*?") {
				t.Fatalf("%q allowed exactly by %q", line, p)
			}
			return
		}
		if !plain.MatchString(line) {
			t.Fatalf("%q allowed (%s) though it is not plain words", line, p)
		}
	})
}

// TestCommandsIn: a rule with Cwd allows its command only in the
// directories it names ("." the workspace's root, patterns
// permission.Glob's); one without allows it anywhere, an unknown
// directory ("") too.
func TestCommandsIn(t *testing.T) {
	c, err := NewCommandRules([]CommandRule{{Pattern: "make test", Cwd: []string{"build", "pkg/**"}}, {Pattern: "ls", Cwd: []string{"."}}, {Pattern: "echo **"}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Scoped() {
		t.Error("not scoped")
	}
	for _, tc := range []struct {
		dir, line string
		want      bool
	}{
		{"build", "make test", true}, {"pkg", "make test", true}, {"pkg/a/b", "make test", true},
		{"src", "make test", false}, {".", "make test", false}, {"", "make test", false}, {"build/x", "make test", false},
		{".", "ls", true}, {"src", "ls", false}, {"", "ls", false},
		{"src", "echo hi", true}, {"", "echo hi", true},
	} {
		w := strings.Fields(tc.line)
		if _, ok := c.MatchIn(tc.dir, w[0], w[1:]); ok != tc.want {
			t.Errorf("MatchIn(%q, %q) = %v", tc.dir, tc.line, ok)
		}
		if _, _, ok := c.MatchShellLineIn(tc.dir, tc.line); ok != tc.want {
			t.Errorf("MatchShellLineIn(%q, %q) = %v", tc.dir, tc.line, ok)
		}
	}
	exact, _ := NewCommandRules([]CommandRule{{Pattern: "cd a && make", Cwd: []string{"src"}}})
	if _, _, ok := exact.MatchShellLineIn("src", "cd a && make"); !ok {
		t.Error("an exact line in its directory")
	}
	if _, _, ok := exact.MatchShellLineIn("docs", "cd a && make"); ok {
		t.Error("an exact line elsewhere")
	}
	if plain, _ := NewCommands([]string{"ls"}); plain.Scoped() {
		t.Error("scoped without a cwd")
	}
}
