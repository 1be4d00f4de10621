package main

import (
	"context"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"**", "a/b/c", true},
		{"**", ".", true},
		{"src/**", "src/a.go", true},
		{"src/**", "src/a/b.go", true},
		{"src/**", "src", true},
		{"src/**", "srcx/a.go", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/a/b.go", false},
		{"**/*.md", "README.md", true},
		{"**/*.md", "docs/x/y.md", true},
		{"**/*.md", "docs/x/y.mdx", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"?.txt", "a.txt", true},
		{"[ab].txt", "c.txt", false},
		{"edit_*", "edit_file", true},
		{"[", "[", false}, // malformed: matches nothing
	} {
		if got := permission.Glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("permission.Glob(%q, %q) = %v", tc.pattern, tc.name, got)
		}
	}
	if permission.CheckGlob("a/[") == nil || permission.CheckGlob("") == nil || permission.CheckGlob("a/**/*.go") != nil {
		t.Error("checkGlob")
	}
	for _, bad := range []string{"/a", "a/../b", "./a", "a/", "a//b", "a/["} {
		if permission.CheckPathGlob(bad) == nil {
			t.Errorf("permission.CheckPathGlob(%q) accepts it", bad)
		}
	}
	for _, good := range []string{"**", "src/**/*.go", "README.md", "*"} {
		if err := permission.CheckPathGlob(good); err != nil {
			t.Errorf("permission.CheckPathGlob(%q): %v", good, err)
		}
	}
}

func TestCommandMatch(t *testing.T) {
	p := &policy{}
	p.Terminal.Allow = []string{"echo **", "git status", "go test ./pkg/*", "ls -?"}
	p.commands, _ = terminal.NewCommands(p.Terminal.Allow)
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
		if got := p.command(tc.argv[0], tc.argv[1:]).Allow; got != tc.want {
			t.Errorf("%q: allowed %v", tc.argv, got)
		}
	}
}

func TestPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ text, want string }{
		"decision":  {`{"permissions": [{"id": "r", "decision": "maybe"}]}`, `r: decision must be "allow" or "deny"`},
		"kind":      {`{"permissions": [{"kinds": ["write"], "decision": "allow"}]}`, `permissions[0]: "write" is not an ACP tool kind`},
		"tool glob": {`{"permissions": [{"tools": ["["], "decision": "allow"}]}`, "syntax error in pattern"},
		"fs glob":   {`{"fs": {"read": ["a/["]}}`, "fs: pattern"},
		"empty cmd": {`{"terminal": {"allow": ["  "]}}`, "empty command pattern"},
		// Path patterns match workspace-relative paths: these could never
		// match anything, so the rule would silently do nothing.
		"absolute fs":   {`{"fs": {"read": ["/etc/**"]}}`, `fs: pattern "/etc/**": path patterns are relative to the workspace`},
		"dotdot fs":     {`{"fs": {"write": ["../**"]}}`, `fs: pattern "../**"`},
		"dot rule path": {`{"permissions": [{"paths": ["./src/**"], "decision": "allow"}]}`, `permissions[0]: pattern "./src/**"`},
		"empty element": {`{"permissions": [{"paths": ["src//x"], "decision": "deny"}]}`, `pattern "src//x"`},
		"unknown":       {`{"permission": []}`, `unknown object member name "permission"`},
		"unknown rule":  {`{"permissions": [{"decision": "allow", "path": ["x"]}]}`, `unknown object member name "path"`},
	} {
		path := writeFile(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json"), tc.text)
		if _, err := loadPolicy(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if _, err := loadPolicy("example/policy.json"); err != nil {
		t.Fatal(err)
	}
}

// toolCall builds a permission request's tool call.
func toolCall(title string, kind acp.ToolKind, harnTool string, raw string, locations ...string) *acp.ToolCallUpdate {
	tc := &acp.ToolCallUpdate{ToolCallID: "c", Title: wire.Some(title), RawInput: jsontext.Value(raw)}
	if kind != "" {
		tc.Kind = wire.Some(kind)
	}
	if harnTool != "" {
		tc.Meta = wire.Some(acp.ToolCallMeta{Harn: &acp.HarnToolLifecycle{ToolName: &harnTool}})
	}
	var locs []acp.ToolCallLocation
	for _, l := range locations {
		locs = append(locs, acp.ToolCallLocation{Path: l})
	}
	if locs != nil {
		tc.Locations = wire.Some(locs)
	}
	return tc
}

func TestPermissionDecisions(t *testing.T) {
	pol, err := loadPolicy("example/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := testApp(t, pol)
	root := a.ws.Dir()
	if err := os.Mkdir(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	// A symlink inside the workspace that points out of it.
	if err := os.Symlink(outside, filepath.Join(root, "src", "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tc   *acp.ToolCallUpdate
		want bool
		rule string
	}{
		{"edit in src", toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"src/main.go"}`), true, "rule edit-src"},
		{"edit by Harn tool name", toolCall("Edit main.go", acp.ToolKindEdit, "write_file", "", filepath.Join(root, "src/main.go")), true, "rule edit-src"},
		{"title is not the Harn tool name", toolCall("edit_file", acp.ToolKindEdit, "patch", `{"path":"src/main.go"}`), false, "no rule"},
		{"edit outside src", toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"README.md"}`), false, "no rule"},
		{"some paths outside src", toolCall("edit_file", acp.ToolKindEdit, "", `{"paths":["src/a.go","go.mod"]}`), false, "no rule"},
		{"edit without paths", toolCall("edit_file", acp.ToolKindEdit, "", `{}`), false, "no rule"},
		{"edit through a symlink out", toolCall("edit_file", acp.ToolKindEdit, "", `{"file_path":"src/escape/x.go"}`), false, "no rule"},
		{"edit with ..", toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"src/../../x.go"}`), false, "no rule"},
		{"read anywhere inside", toolCall("read_file", acp.ToolKindRead, "", `{"path":"docs/a.md"}`), true, "rule read-anything"},
		{"read outside", toolCall("read_file", acp.ToolKindRead, "", "", "/etc/passwd"), false, "no rule"},
		{"delete", toolCall("delete_file", acp.ToolKindDelete, "", `{"path":"src/a.go"}`), false, "rule never-delete"},
		{"execute", toolCall("bash", acp.ToolKindExecute, "", `{"command":"ls"}`), false, "no rule"},
		{"no kind", toolCall("edit_file", "", "", `{"path":"src/a.go"}`), false, "no rule"},
	} {
		d := a.policy.permission(a.ws, tc.tc)
		if d.Allow != tc.want || !strings.HasPrefix(d.Reason, tc.rule) {
			t.Errorf("%s: %+v, want allow %v by %q", tc.name, d, tc.want, tc.rule)
		}
	}
	// A deny rule with paths cannot be slipped past by adding a harmless
	// path, or a path outside the workspace, to the call.
	secrets := &policy{Permissions: []permissionRule{
		{ID: "no-secrets", Paths: []string{"secrets/**"}, Decision: "deny"},
		{ID: "edits", Kinds: []string{"edit"}, Decision: "allow"},
	}}
	for _, tc := range []struct {
		name, input string
		want        bool
		rule        string
	}{
		{"a secret", `{"path":"secrets/key"}`, false, "rule no-secrets"},
		{"a secret and a harmless path", `{"paths":["src/a.go","secrets/key"]}`, false, "rule no-secrets"},
		{"a secret and a path outside", `{"path":"secrets/key","destination":"/etc/x"}`, false, "rule no-secrets"},
		{"only a path outside", `{"path":"/etc/x"}`, false, "rule no-secrets"},
		{"harmless paths", `{"paths":["src/a.go","docs/b.md"]}`, true, "rule edits"},
	} {
		d := secrets.permission(a.ws, toolCall("edit_file", acp.ToolKindEdit, "", tc.input))
		if d.Allow != tc.want || !strings.HasPrefix(d.Reason, tc.rule) {
			t.Errorf("%s: %+v, want allow %v by %q", tc.name, d, tc.want, tc.rule)
		}
	}
	// Without a policy everything is denied.
	if d := (&policy{}).permission(a.ws, toolCall("read_file", acp.ToolKindRead, "", `{"path":"a"}`)); d.Allow {
		t.Error("the empty policy allows")
	}
}

func permOptions(kinds ...acp.PermissionOptionKind) []acp.PermissionOption {
	var out []acp.PermissionOption
	for _, k := range kinds {
		out = append(out, acp.PermissionOption{OptionID: acp.PermissionOptionID("opt-" + string(k)), Name: string(k), Kind: k})
	}
	return out
}

func selected(res *acp.RequestPermissionResponse) string {
	switch {
	case res.Outcome.Selected != nil:
		return string(res.Outcome.Selected.OptionID)
	case res.Outcome.Cancelled != nil:
		return "cancelled"
	}
	return "?"
}

func TestPermissionAnswer(t *testing.T) {
	const (
		ao = acp.PermissionOptionKindAllowOnce
		aa = acp.PermissionOptionKindAllowAlways
		ro = acp.PermissionOptionKindRejectOnce
		ra = acp.PermissionOptionKindRejectAlways
	)
	for _, tc := range []struct {
		allow bool
		opts  []acp.PermissionOption
		want  string
	}{
		{true, permOptions(aa, ao, ro), "opt-allow_once"},
		{true, permOptions(aa, ra), "opt-allow_always"},
		{true, permOptions(ro), "opt-reject_once"}, // nothing allows it: denied
		{true, permOptions(), "cancelled"},
		{false, permOptions(ao, ra, ro), "opt-reject_once"},
		{false, permOptions(ao, ra), "opt-reject_always"},
		{false, permOptions(ao, aa), "cancelled"},
		// A reject option named "allow" (Harn grants on that id) is never
		// selected to deny; nor is a grant-kind option.
		{false, []acp.PermissionOption{{OptionID: "allow", Kind: ro, Name: "No"}}, "cancelled"},
		{false, []acp.PermissionOption{{OptionID: "allow", Kind: ro, Name: "No"}, {OptionID: "no", Kind: ra, Name: "Never"}}, "no"},
		{true, []acp.PermissionOption{{OptionID: "allow", Kind: ao, Name: "Yes"}, {OptionID: "x", Kind: aa, Name: "Always"}}, "allow"},
	} {
		if got := selected(permissionAnswer(decision{Allow: tc.allow}, &acp.RequestPermissionRequest{Options: tc.opts})); got != tc.want {
			t.Errorf("allow %v, options %v: %s, want %s", tc.allow, tc.opts, got, tc.want)
		}
	}
}

// The permission handler fails closed: a panic while deciding denies, and
// after the host cancelled the prompt every request is "cancelled".
func TestRequestPermissionFailsClosed(t *testing.T) {
	pol, err := loadPolicy("example/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	a, out := testApp(t, pol)
	harnOptions := []acp.PermissionOption{
		{OptionID: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}
	req := &acp.RequestPermissionRequest{SessionID: "s", ToolCall: *toolCall("edit_file", acp.ToolKindEdit, "", `{"path":"src/main.go"}`), Options: harnOptions}
	res, err := a.requestPermission(context.Background(), req)
	if err != nil || selected(res) != "allow" {
		t.Fatalf("allowed edit: %+v %v", res, err)
	}
	broken := &app{policy: a.policy, render: a.render, log: a.log} // no workspace: resolve panics
	res, err = broken.requestPermission(context.Background(), req)
	if err != nil || selected(res) != "reject" {
		t.Fatalf("a panic while deciding answered %+v %v, want the reject option", res, err)
	}
	a.cancelling.Store(true)
	res, err = a.requestPermission(context.Background(), req)
	if err != nil || selected(res) != "cancelled" {
		t.Fatalf("after cancelling: %+v %v", res, err)
	}
	text := rendered(a, out)
	for _, want := range []string{
		`permission "edit_file" (edit) src/main.go: allowed (rule edit-src) -> option "allow"`,
		`permission: denied (the host failed to decide: runtime error`,
		`permission "edit_file" (edit) src/main.go: denied (the prompt is being cancelled) -> cancelled`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q:\n%s", want, text)
		}
	}
}

// A shell command line is allowed by a wildcard pattern only when it is
// plain words; anything the shell could read as more (another command, a
// substitution, a redirection, an expansion, a quote) needs a pattern
// without wildcards that is the same line.
func TestShellCommand(t *testing.T) {
	p := terminalPolicy("echo **", "go test **", "git status", "ls -?", "echo a && echo b", " printf '%s' x ", "rm *")
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
		if got := p.shellCommand(tc.line); got.Allow != tc.want {
			t.Errorf("%q: allowed %v (%s)", tc.line, got.Allow, got.Reason)
		}
	}
}
