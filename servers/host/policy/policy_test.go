package policy_test

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/servers/host/policy"
)

func parse(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return p
}

func names(fs []policy.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Command+" / "+f.Write)
	}
	return out
}

// TestCheck: the red team's finding 5 (an allowed `git status` beside a
// write under its cwd) and its relatives are found, naming both rules;
// what cannot meet is not; "trust_workspace_code" silences a rule.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"git status beside fs.write (finding 5)",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": ["echo **", "git status"]}}`,
			[]string{`terminal.allow[1] "git status" / fs.write "src/**"`}},
		{"git anywhere meets writes anywhere, whatever its cwd",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": [{"command": "git status", "cwd": ["docs"]}]}}`,
			[]string{`terminal.allow[0] "git status" / fs.write "src/**"`}},
		{"a sh -c line (exact, with shell syntax) that runs git",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": ["cd src && git status"]}}`,
			[]string{`terminal.allow[0] "cd src && git status" / fs.write "src/**"`}},
		{"go test beside an edit permission",
			`{"permissions": [{"id": "edit-src", "kinds": ["edit"], "paths": ["src/**"], "decision": "allow"}], "terminal": {"allow": ["go test **"]}}`,
			[]string{`terminal.allow[0] "go test **" / permissions[edit-src] "src/**"`}},
		{"go version runs nothing",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": ["go version", "go env GOPATH"]}}`, nil},
		{"a permission rule for execute calls of npm test",
			`{"permissions": [{"id": "tests", "kinds": ["execute"], "commands": ["npm test"], "decision": "allow"}], "fs": {"write": ["**/*.js"]}}`,
			[]string{`permissions[tests] command "npm test" / fs.write "**/*.js"`}},
		{"a permission rule that allows any execute call",
			`{"permissions": [{"id": "run", "kinds": ["execute"], "decision": "allow"}], "fs": {"write": ["notes/**"]}}`,
			[]string{`permissions[run] / fs.write "notes/**"`}},
		{"a deny rule is no risk",
			`{"permissions": [{"kinds": ["execute"], "commands": ["make **"], "decision": "deny"}], "fs": {"write": ["**"]}}`, nil},
		{"make in build/ cannot reach src/",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": [{"command": "make test", "cwd": ["build"]}]}}`, nil},
		{"make in src/app reads src/app's Makefile",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": [{"command": "make test", "cwd": ["src/app"]}]}}`,
			[]string{`terminal.allow[0] "make test" / fs.write "src/**"`}},
		{"make in build/ reads package files above it",
			`{"fs": {"write": ["Makefile"]}, "terminal": {"allow": [{"command": "make", "cwd": ["build/x"]}]}}`,
			[]string{`terminal.allow[0] "make" / fs.write "Makefile"`}},
		{"make with a path argument reaches anywhere",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": [{"command": "make -C ../src", "cwd": ["build"]}]}}`,
			[]string{`terminal.allow[0] "make -C ../src" / fs.write "src/**"`}},
		{"a workspace program",
			`{"fs": {"write": ["bin/**"]}, "terminal": {"allow": ["./bin/run"]}}`,
			[]string{`terminal.allow[0] "./bin/run" / fs.write "bin/**"`}},
		{"cp ** writes anywhere",
			`{"terminal": {"allow": ["cp **", "pytest"]}}`,
			[]string{`terminal.allow[1] "pytest" / terminal.allow[0] "cp **"`}},
		{"trusted",
			`{"fs": {"write": ["src/**"]}, "terminal": {"allow": [{"command": "go test ./...", "cwd": ["src"], "trust_workspace_code": true}]}, "permissions": [{"kinds": ["execute"], "commands": ["make"], "decision": "allow", "trust_workspace_code": true}]}`, nil},
		{"nothing written", `{"terminal": {"allow": ["git status", "make **"]}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(parse(t, tc.doc).Check())
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoadRefusesFinding5: the host refuses the red team's policy at
// load, the message naming both rules and the way out.
func TestLoadRefusesFinding5(t *testing.T) {
	_, err := policy.Load("testdata/finding5.json")
	var f *policy.Finding
	if !errors.As(err, &f) {
		t.Fatalf("Load: %v, want a Finding", err)
	}
	for _, want := range []string{`terminal.allow[1] "git status"`, `fs.write "src/**"`, `permissions[edit-src] "src/**"`, `"trust_workspace_code": true`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}

// TestExamplePoliciesPass: examples/host's example policy and the one its
// README shows load.
func TestExamplePoliciesPass(t *testing.T) {
	if _, err := policy.Load("../../../examples/host/example/policy.json"); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../../examples/host/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(readme), "## Policy (`-policy FILE`)")
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("no policy in the README")
	}
	if fs := parse(t, m[1]).Check(); len(fs) > 0 {
		t.Fatalf("the README's policy: %v", names(fs))
	}
}

func TestParseRejects(t *testing.T) {
	for _, doc := range []string{
		`{"terminal": {"allow": [{"command": "ls", "cwd": ["[x"]}]}}`,
		`{"terminal": {"allow": [{"command": "ls", "dir": ["x"]}]}}`,
		`{"terminal": {"allow": [{"command": " "}]}}`,
		`{"terminal": {"allow": [3]}}`,
	} {
		if _, err := policy.Parse([]byte(doc)); err == nil {
			t.Errorf("%s: parsed", doc)
		}
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"**", "src/**", true}, {"src/**", "docs/**", false}, {"src/*.go", "src/a/**", false}, {"src/*.go", "src/a*/**", true},
		{"*", "src/**", true}, {"*", "src/a", false}, {".*/**", "src/**", false}, {".*/**", "**/config", true},
		{"src/.git/**", "src/**", true}, {"a/[bc]/x", "a/b*/x", true}, {"a/[bc]/x", "a/d/x", false},
		{"node_modules/**", "**/*.js", true}, {"build/*", "src/*", false}, {"src", "src/**", true},
	} {
		if got := policy.Overlap(tc.a, tc.b); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v", tc.a, tc.b, got)
		}
		if got := policy.Overlap(tc.b, tc.a); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v", tc.b, tc.a, got)
		}
	}
}
