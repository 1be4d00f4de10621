package acpterm

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// server is a Server whose allow-list is allow.
func server(allow ...string) *Server {
	c, err := terminal.NewCommands(allow)
	if err != nil {
		panic(err)
	}
	return &Server{Commands: c}
}

func TestCommandMatch(t *testing.T) {
	p := server("echo **", "git status", "go test ./pkg/*", "ls -?")
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"echo"}, true},
		{[]string{"echo", "a", "b c"}, true},
		{[]string{"/bin/echo", "a"}, false}, // the command exactly as given
		{[]string{"git", "status"}, true},
		{[]string{"git", "status", "--short"}, false},
		{[]string{"git", "push"}, false},
		{[]string{"go", "test", "./pkg/a/b"}, true}, // * spans slashes in arguments
		{[]string{"go", "test", "./cmd/a"}, false},
		{[]string{"go", "test"}, false},
		{[]string{"ls", "-l"}, true},
		{[]string{"ls", "-la"}, false},
		{[]string{"rm", "-rf", "/"}, false},
	} {
		if got, _ := p.DecideCommand(".", tc.argv[0], tc.argv[1:]); got != tc.want {
			t.Errorf("%q: allowed %v", tc.argv, got)
		}
	}
}

// A shell command line is allowed by a wildcard pattern only when it is
// plain words; anything the shell could read as more (another command, a
// substitution, a redirection, an expansion, a quote) needs a pattern
// without wildcards that is the same line.
func TestShellCommand(t *testing.T) {
	p := server("echo **", "go test **", "git status", "ls -?", "echo a && echo b", " printf '%s' x ", "rm *")
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"echo", true},
		{"echo hello world", true},
		{"  go\ttest ./... -run=TestX -count=1  ", true},
		{"go test a:b+c_d.e/f", true},
		{"git status", true},
		{"git status --short", false},
		{"ls -l", true},
		{"echo a && echo b", true}, // exactly
		{" echo a && echo b\t", true},
		{"printf '%s' x", true},
		{"echo a  && echo b", false},
		{"echo a && echo b;", false},
		{"go test x; rm -rf ~", false},
		{"go test x && rm -rf ~", false},
		{"go test x | sh", false},
		{"go test $(rm -rf ~)", false},
		{"go test `rm -rf ~`", false},
		{"go test x > ~/.bashrc", false},
		{"go test x\nrm -rf ~", false},
		{"go test x\x00", false},
		{"rm *", false}, // the pattern rm * means one argument; the shell would glob
		{"rm ?", false},
		{"ls -?", false},
		{"echo =rm", false},
		{"echo a=b", true},
		{"echo é", false},
		{"", false},
		{" \t ", false},
		{"rm x", true},
	} {
		if got, reason := p.DecideLine(".", tc.line); got != tc.want {
			t.Errorf("%q: allowed %v (%s)", tc.line, got, reason)
		}
	}
}

// FuzzShellCommand decides any shell command line: a line a wildcard
// pattern allows consists of plain words only (checked here by a regular
// expression, apart from plainShellLine), and any other allowed line is
// exactly the wildcard-free pattern.
func FuzzShellCommand(f *testing.F) {
	for _, s := range []string{"echo a", "go test ./...", "echo a && echo b", "go test x; rm -rf ~", "echo $(id)", "echo =x", "echo a\nb", "echo\u00a0a", "git status"} {
		f.Add(s)
	}
	p := server("echo **", "go test *", "git status", "echo a && echo b")
	plain := regexp.MustCompile(`^[ \t]*([A-Za-z0-9_./:+-][A-Za-z0-9_./:+=-]*[ \t]+)*([A-Za-z0-9_./:+-][A-Za-z0-9_./:+=-]*)?[ \t]*$`)
	f.Fuzz(func(t *testing.T, line string) {
		ok, reason := p.DecideLine(".", line)
		if !ok {
			return
		}
		if strings.Trim(line, " \t") == "echo a && echo b" {
			return
		}
		if !plain.MatchString(line) {
			t.Fatalf("%q allowed (%s) though it is not plain words", line, reason)
		}
	})
}
