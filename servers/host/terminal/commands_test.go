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
