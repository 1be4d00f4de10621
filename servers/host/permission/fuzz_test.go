package permission_test

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzPolicy: whatever the raw input, deciding never panics; a grant
// implies that every declared path is inside the workspace and allowed;
// and a secret path hidden anywhere in the input (under any key, at any
// depth, inside a longer string) is never granted.
func FuzzPolicy(f *testing.F) {
	for _, s := range []string{
		`{"path":"README.md"}`, `{"file_path":"src/a.go","target":"x"}`, `{"a":[{"b":["c"]}]}`,
		`{"command":"go test ./..."}`, `"just a string"`, `[1,2,{"x":null}]`, `{"path":`, ``,
	} {
		f.Add(s, "file", uint8(2), "x ")
	}
	p := policyOf(f)
	f.Fuzz(func(t *testing.T, raw, key string, depth uint8, prefix string) {
		for _, kind := range []acp.ToolKind{acp.ToolKindRead, acp.ToolKindEdit, acp.ToolKindExecute} {
			c := permission.NewCall(nil, request(kind, raw), 0)
			v := p.Decide(c)
			if v.Allow && v.Rule != "tests" {
				for _, d := range c.Paths {
					rel, err := p.Resolve(d)
					if err != nil || strings.HasPrefix(rel, "secrets/") || strings.HasSuffix(rel, ".pem") {
						t.Fatalf("%s granted with path %q (%q, %v)", raw, d, rel, err)
					}
				}
			}
			// Hide a secret path in a document and check it is denied.
			if strings.ContainsAny(prefix, "/\\.~") || len(prefix) > 64 {
				continue
			}
			var doc any = prefix + " secrets/key"
			for i := range depth % 6 {
				if i%2 == 0 {
					doc = map[string]any{key: doc, "path": "README.md", "file_path": "src/a.go"}
				} else {
					doc = []any{doc}
				}
			}
			b, err := json.Marshal(doc)
			if err != nil {
				continue
			}
			c = permission.NewCall(nil, request(kind, string(jsontext.Value(b))), 0)
			if v := p.Decide(c); v.Allow {
				t.Fatalf("%s granted by %s", b, v.Rule)
			}
		}
	})
}

// FuzzGlob: Glob never panics, agrees with a plain backtracking matcher
// (globReference), "**" matches every name, and a pattern matches itself
// when it has no metacharacters.
func FuzzGlob(f *testing.F) {
	f.Add("src/**/*.go", "src/a/b.go")
	f.Add("a/b", "a/b")
	f.Add("**/a/**/b/**", "a/a/b/a/b")
	f.Add("**/x/**/x", "x/x/y/x")
	f.Add("a/**", "a")
	f.Add("**/[", "a/[")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := permission.Glob(pattern, name)
		// The reference takes time exponential in the "**": keep it small.
		if strings.Count(pattern, "**") <= 6 && strings.Count(name, "/") <= 32 {
			if want := globReference(strings.Split(pattern, "/"), strings.Split(name, "/")); got != want {
				t.Fatalf("Glob(%q, %q) = %v, the reference says %v", pattern, name, got, want)
			}
		}
		if !permission.Glob("**", name) {
			t.Fatalf("** does not match %q", name)
		}
		if !strings.ContainsAny(pattern, `*?[\`) && permission.CheckGlob(pattern) == nil && !permission.Glob(pattern, pattern) {
			t.Fatalf("%q does not match itself", pattern)
		}
	})
}

// FuzzCommandRule: a command is granted by the policy's "go test **" rule
// only as plain words starting with go test; any shell syntax is denied.
func FuzzCommandRule(f *testing.F) {
	for _, s := range []string{"go test ./...", "go test ./...; rm -rf /", "go test $(id)", "rm -rf x", "go  test\t-run X", "go test ./... > out"} {
		f.Add(s, false)
	}
	p := policyOf(f)
	f.Fuzz(func(t *testing.T, line string, argv bool) {
		raw, err := json.Marshal(map[string]any{"command": line})
		if argv {
			raw, err = json.Marshal(map[string]any{"command": strings.Fields(line)})
		}
		if err != nil {
			return
		}
		c := permission.NewCall(nil, request(acp.ToolKindExecute, string(raw)), 0)
		v := p.Decide(c)
		if !v.Allow {
			return
		}
		words := strings.Fields(c.Command)
		if v.Rule != "tests" || !permission.PlainCommandLine(c.Command) || len(words) < 2 || words[0] != "go" || words[1] != "test" {
			t.Fatalf("%s granted by %s as %q", raw, v.Rule, c.Command)
		}
	})
}

// globReference is Glob's definition, matched by trying every way each
// "**" can split the name.
func globReference(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if globReference(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], name[0])
	return ok && err == nil && globReference(pat[1:], name[1:])
}

// FuzzCommandMembers: whatever the raw input, a grant by the "go test **"
// rule means that the command a tool reading the input would run, its
// duplicate members resolved as JSON.parse and encoding/json do (the last
// wins), is a plain go test line.
func FuzzCommandMembers(f *testing.F) {
	for _, s := range []string{
		`{"command":"go test ./..."}`, `{"command":"go test ./...","command":"rm -rf /"}`,
		`{"command":"go test","cmd":"rm -rf /"}`, `{"command":"go","args":["test"],"args":["x;rm"]}`,
		`{"command":"go test","input":{"command":"rm -rf /"}}`, `{"input":{"command":["go","test","./..."]}}`,
		`{"command":["go","test",{"x":"rm"}]}`, `{"CMD":"go test","Command":"rm"}`,
	} {
		f.Add(s)
	}
	p := policyOf(f)
	f.Fuzz(func(t *testing.T, raw string) {
		c := permission.NewCall(nil, request(acp.ToolKindExecute, raw), 0)
		v := p.Decide(c)
		if !v.Allow {
			return
		}
		var doc map[string]any
		if json.Unmarshal([]byte(raw), &doc, jsontext.AllowDuplicateNames(true)) != nil {
			return
		}
		for _, obj := range append([]map[string]any{doc}, nestedObjects(doc)...) {
			line := toolCommand(obj)
			if line == "" {
				continue
			}
			words := strings.Fields(line)
			if !permission.PlainCommandLine(line) || len(words) < 2 || words[0] != "go" || words[1] != "test" {
				t.Fatalf("%s granted by %s (checked %q), a tool would run %q", raw, v.Rule, c.Command, line)
			}
		}
	})
}

func nestedObjects(doc map[string]any) []map[string]any {
	var out []map[string]any
	for _, v := range doc {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// toolCommand is the command line a tool would build from obj: its
// program member and its arguments, words joined with spaces.
func toolCommand(obj map[string]any) string {
	var words []string
	for _, roles := range [][]string{{"command", "cmd"}, {"args", "argv", "arguments"}} {
		for name, v := range obj {
			if !slices.Contains(roles, strings.ToLower(name)) {
				continue
			}
			switch v := v.(type) {
			case string:
				words = append(words, v)
			case []any:
				for _, w := range v {
					words = append(words, fmt.Sprint(w))
				}
			default:
				words = append(words, fmt.Sprint(v))
			}
		}
	}
	return strings.Join(words, " ")
}
